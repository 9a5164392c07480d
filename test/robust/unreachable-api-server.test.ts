/**
 * meshctl against an API server that cannot be reached (a kubeconfig naming a closed loopback
 * port): every command that talks to the cluster ends with one line naming the server and the
 * reason, and a non-zero exit code, never a stack trace. Runs the built meshctl as a process.
 */
import { jest } from '@jest/globals';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { distProgram } from '../cli/dist.js';
import { REPO_ROOT, freePort } from '../support/daemon.js';

jest.setTimeout(120_000);

let dir: string;
let kubeconfig: string;
let server: string;

beforeAll(async () => {
  // A port that was free a moment ago and that nothing listens on: connections are refused.
  server = `https://127.0.0.1:${await freePort()}`;
  dir = mkdtempSync(join(tmpdir(), 'meshctl-unreachable-'));
  kubeconfig = join(dir, 'kubeconfig');
  writeFileSync(
    kubeconfig,
    [
      'apiVersion: v1',
      'kind: Config',
      'clusters:',
      `- name: closed\n  cluster: {server: "${server}", insecure-skip-tls-verify: true}`,
      'users:',
      '- name: someone\n  user: {token: not-a-real-token}',
      'contexts:',
      '- name: closed\n  context: {cluster: closed, user: someone}',
      'current-context: closed',
      '',
    ].join('\n'),
  );
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

function meshctl(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [distProgram('meshctl-bundle'), ...args, '--clusterconfig', kubeconfig], {
    cwd: REPO_ROOT,
    env: { ...process.env, KUBECONFIG: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (c: string) => (stdout += c));
  child.stderr!.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  return new Promise((resolve) => {
    const t = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.on('exit', (code) => {
      clearTimeout(t);
      resolve({ code, stdout, stderr });
    });
  });
}

// Commands that reach the cluster through different code paths (their own client handling, the
// shared helper, a lazily made client, the installer's state reader).
const COMMANDS: string[][] = [
  ['verify-install'],
  ['x', 'uninstall', '--purge'],
  ['proxy-status'],
  ['x', 'revision', 'list'],
  ['x', 'injector', 'list'],
  ['tag', 'list'],
  ['operator', 'init'],
  ['x', 'wait', 'virtualservice', 'reviews'],
  ['bug-report', '--timeout', '5s'],
];

describe('meshctl with an unreachable API server', () => {
  test.each(COMMANDS.map((c) => [c.join(' '), c] as const))('%s: one line naming the server and the reason, exit 1', async (_name, args) => {
    const r = await meshctl(args);
    expect(r.code).toBe(1);
    const lines = r.stderr.trimEnd().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(new RegExp(`^error: cannot reach the Kubernetes API server ${server.replace(/[.:/]/g, '\\$&')}: .*ECONNREFUSED`));
    expect(r.stderr).not.toMatch(/^\s+at /m);
  });
});
