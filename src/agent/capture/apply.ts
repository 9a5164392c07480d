/**
 * Applies capture rulesets (./rules.ts) to this network namespace: per family, reads the nat table
 * (`iptables-save -t nat`) to find an earlier run's jumps, then feeds the ruleset to
 * `iptables-restore --noflush` (one transaction: either all rules are in or none). Needs
 * CAP_NET_ADMIN (the `mesh-init` container has it) and the iptables programs of the proxy image.
 * Returns what it did; a failure throws CaptureApplyError with the program's own message.
 */
import { spawn } from 'node:child_process';
import { withPreviousRemoved, type Ruleset } from './rules.js';
import type { Family } from './options.js';

export class CaptureApplyError extends Error {
  override readonly name = 'CaptureApplyError';
}

export interface Applied {
  readonly family: Family;
  readonly command: string;
  /** Jumps of an earlier run that this run replaced. */
  readonly replacedPrevious: boolean;
  /** The input that was restored. */
  readonly text: string;
}

interface RunResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

const TIMEOUT_MS = 30_000;

function run(command: string, args: ReadonlyArray<string>, input?: string): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, [...args], { stdio: ['pipe', 'pipe', 'pipe'], timeout: TIMEOUT_MS });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', (err: NodeJS.ErrnoException) => {
      reject(err.code === 'ENOENT' ? new CaptureApplyError(`${command} is not installed (the capture rules need the iptables programs; Debian: apt-get install iptables)`) : err);
    });
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.on('error', () => undefined);
    child.stdin.end(input ?? '');
  });
}

/** Applies each ruleset in turn (IPv4 first); stops at the first failure. */
export async function applyRulesets(rulesets: ReadonlyArray<Ruleset>): Promise<Applied[]> {
  const applied: Applied[] = [];
  for (const r of rulesets) {
    const saved = await run(r.saveCommand, ['-t', 'nat']);
    if (saved.code !== 0) throw new CaptureApplyError(`${r.saveCommand} -t nat failed (exit ${String(saved.code)}): ${saved.stderr.trim() || 'no message'}`);
    const text = withPreviousRemoved(r, saved.stdout);
    const restored = await run(r.restoreCommand, ['--noflush'], text);
    if (restored.code !== 0) {
      throw new CaptureApplyError(`${r.restoreCommand} --noflush refused the ${r.family} rules (exit ${String(restored.code)}): ${restored.stderr.trim() || 'no message'}`);
    }
    applied.push({ family: r.family, command: `${r.restoreCommand} --noflush`, replacedPrevious: text !== r.text, text });
  }
  return applied;
}
