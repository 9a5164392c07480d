/**
 * The Go programs under tools/ carry their own tests (xds-validate checks its consistency rules
 * against go-control-plane's reference server). They run here, so CI runs them: a checker that
 * reports wrong problems makes every test built on it fail for the wrong reason, or pass wrongly.
 */
import { execFile } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { GO_TOOL_BUILD_TIMEOUT_MS } from '../support/go-tools.js';

const run = promisify(execFile);
const tools = join(resolve(dirname(fileURLToPath(import.meta.url)), '..', '..'), 'tools');
const withTests = readdirSync(tools).filter((name) => readdirSync(join(tools, name)).some((f) => f.endsWith('_test.go')));

describe('the Go test tools pass their own tests', () => {
  it('has tools with tests to run', () => {
    expect(withTests).toContain('xds-validate');
  });

  it.each(withTests)('go test in tools/%s', async (name) => {
    const env = { ...process.env, GOFLAGS: '-mod=mod -buildvcs=false', CGO_ENABLED: '0', PATH: `${process.env.PATH ?? ''}:/usr/local/go/bin` };
    const { stdout } = await run('go', ['test', '-count=1', './...'], { cwd: join(tools, name), env, maxBuffer: 16 << 20, timeout: GO_TOOL_BUILD_TIMEOUT_MS }).catch((err: Error & { stdout?: string; stderr?: string }) => {
      throw new Error(`go test in tools/${name} failed: ${err.message}\n${err.stdout ?? ''}\n${err.stderr ?? ''}`.slice(-16_000));
    });
    expect(stdout).toMatch(/^ok\s/m);
    expect(stdout).not.toMatch(/^(FAIL|---\s*FAIL)/m);
  }, GO_TOOL_BUILD_TIMEOUT_MS);
});
