import js from '@eslint/js';
import importX from 'eslint-plugin-import-x';
import tseslint from 'typescript-eslint';
import { layerConfigs } from './eslint/layers.mjs';

export default tseslint.config(
  { ignores: ['dist/**', 'bench/dist/**', 'src/gen/**', 'node_modules/**', 'coverage/**', 'tools/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { process: 'readonly', console: 'readonly', Buffer: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly', setInterval: 'readonly', clearInterval: 'readonly', setImmediate: 'readonly', URL: 'readonly', fetch: 'readonly', AbortController: 'readonly', TextEncoder: 'readonly', TextDecoder: 'readonly', performance: 'readonly' } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-explicit-any': 'error',
      'no-console': 'off',
    },
  },
  // Layers point down (eslint/layers.mjs). Imports are resolved as TypeScript resolves them: the
  // `.js` of an import names the `.ts` source.
  {
    files: ['src/**/*.ts'],
    plugins: { 'import-x': importX },
    settings: { 'import-x/resolver-next': [importX.createNodeResolver({ extensionAlias: { '.js': ['.ts', '.js'] } })] },
    // One logger: library code logs through src/log (pino); the CLI writes through its runner.
    rules: { 'no-console': 'error' },
  },
  ...layerConfigs(),
  { files: ['**/*.cjs'], languageOptions: { sourceType: 'commonjs', globals: { module: 'writable', require: 'readonly', __dirname: 'readonly' } }, rules: { '@typescript-eslint/no-require-imports': 'off' } },
);
