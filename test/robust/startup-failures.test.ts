/**
 * Start-up failures of the built daemon: a missing --configDir and a port in use end the process
 * with a non-zero code and one line saying why (no stack trace), instead of a stack trace and a
 * process that neither listens nor exits.
 */
import { jest } from '@jest/globals';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DAEMON_CLI, REPO_ROOT, freePort } from '../support/daemon.js';

jest.setTimeout(60_000);

async function run(args: string[]): Promise<{ code: number | null; stderr: string; ms: number }> {
  const started = Date.now();
  const free = await Promise.all([freePort(), freePort(), freePort(), freePort(), freePort()]);
  const defaults = ['--grpcAddr', `127.0.0.1:${free[0]}`, '--httpAddr', `127.0.0.1:${free[1]}`, '--monitoringAddr', `127.0.0.1:${free[2]}`, '--httpsAddr', `127.0.0.1:${free[3]}`];
  const child = spawn(process.execPath, [DAEMON_CLI, 'discovery', '--registries', 'Mock', '--meshConfig', join(tmpdir(), 'no-mesh-config'), '--ctrlz_port', String(free[4]), ...defaults, ...args], {
    cwd: REPO_ROOT,
    env: { ...process.env, ENABLE_CA_SERVER: 'false' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  const code = await new Promise<number | null>((resolve) => {
    const t = setTimeout(() => {
      child.kill('SIGKILL');
      resolve(null);
    }, 20_000);
    child.on('exit', (c) => {
      clearTimeout(t);
      resolve(c);
    });
  });
  return { code, stderr, ms: Date.now() - started };
}

/** The error lines (the log lines before them are the daemon's usual start-up log). */
const errorLines = (stderr: string): string[] => stderr.split('\n').filter((l) => l.startsWith('error:') || /^\s+at /.test(l));

describe('start-up failures', () => {
  it('a missing --configDir: one line naming it, exit 1, nothing created', async () => {
    const dir = join(tmpdir(), `mesh-no-such-dir-${process.pid}`);
    const r = await run(['--configDir', dir]);
    expect(r.code).toBe(1);
    expect(errorLines(r.stderr)).toEqual([`error: mesh-discovery did not start: --configDir ${dir} does not exist`]);
    expect(existsSync(dir)).toBe(false);
  });

  it('the xDS port in use: one line naming the address, exit 1, no process left', async () => {
    const taken: Server = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as { port: number }).port;
    try {
      const r = await run(['--grpcAddr', `127.0.0.1:${port}`]);
      expect(r.code).toBe(1); // null: the process did not exit within 20 s
      const lines = errorLines(r.stderr);
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(new RegExp(`^error: mesh-discovery did not start: .*EADDRINUSE.*127\\.0\\.0\\.1:${port}`));
    } finally {
      taken.close();
    }
  });
});
