/** Jest runs TypeScript through SWC in native ESM mode (see docs/adr/0002-test-toolchain.md). */
export default {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  transform: {
    '^.+\\.ts$': ['@swc/jest', { jsc: { parser: { syntax: 'typescript' }, target: 'es2022' }, module: { type: 'es6' } }],
  },
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  testMatch: ['<rootDir>/test/**/*.test.ts', '<rootDir>/e2e/**/*.test.ts'],
  testTimeout: 60000,
  // The whole suite runs in one process on small machines (one worker): keep-alive sockets of the
  // Kubernetes clients that tests leave idle must not keep it alive after the run and teardown.
  forceExit: true,
  globalSetup: '<rootDir>/test/support/global-setup.mjs',
  globalTeardown: '<rootDir>/test/support/global-teardown.mjs',
  reporters: ['default', '<rootDir>/test/support/summary-reporter.cjs'],
};
