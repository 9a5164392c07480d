/**
 * A program whose reader goes away (`meshctl manifest generate | head`) stops quietly with status
 * 141, as a program SIGPIPE ends: no EPIPE stack trace. Runs the built programs over real pipes.
 */
import { spawn, spawnSync } from 'node:child_process';
import { distProgram, type Program } from './dist.js';

const CASES: ReadonlyArray<readonly [Program, string[]]> = [
  ['meshctl', ['manifest', 'generate']],
  ['meshctl-bundle', ['manifest', 'generate']],
  ['meshctl-bundle', ['completion', 'zsh']],
  ['meshctl', ['completion', 'bash']],
  ['meshctl', ['--help']],
  ['meshctl', ['version', '--remote=false', '-o', 'yaml']],
  ['mesh-discovery', ['completion', 'zsh']],
  ['mesh-discovery', ['help', 'discovery']],
  ['mesh-discovery', ['version']],
  ['mesh-operator', ['version', '-o', 'json']],
];

/** Runs the program with its standard output on a pipe whose read end is closed before it writes. */
function runIntoClosedPipe(program: Program, args: string[]): Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [distProgram(program), ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, KUBECONFIG: '/nonexistent' } });
    child.stdout.destroy(); // the reader goes away at once; the program starts writing later
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (t: string) => void (stderr += t));
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stderr }));
  });
}

describe('a closed output pipe', () => {
  it.each(CASES)('%s %j exits 141 without a word', async (program, args) => {
    expect(await runIntoClosedPipe(program, args)).toEqual({ code: 141, signal: null, stderr: '' });
  });

  it('ends a long output that head cuts short the same way; the lines read are intact', () => {
    const r = spawnSync('bash', ['-c', `set -o pipefail; "${process.execPath}" "${distProgram('meshctl')}" manifest generate | head -n 3; echo "status \${PIPESTATUS[0]}" >&2`], {
      encoding: 'utf8',
    });
    expect(r.stdout).toBe('apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n');
    expect(r.stderr).toBe('status 141\n');
  });

  it('leaves a reader that reads everything with status 0', () => {
    const r = spawnSync(process.execPath, [distProgram('meshctl'), 'completion', 'bash'], { encoding: 'utf8' });
    expect({ status: r.status, stderr: r.stderr }).toEqual({ status: 0, stderr: '' });
    expect(r.stdout.length).toBeGreaterThan(1000);
  });
});
