import type { CliIO } from '../../src/cli/runner.js';

/** A CliIO that keeps what is written, for in-process runs of the programs. */
export function captureIO(env: Record<string, string | undefined> = {}) {
  const out: string[] = [];
  const err: string[] = [];
  const io: CliIO = { out: (t) => void out.push(t), err: (t) => void err.push(t), env };
  return { io, stdout: () => out.join(''), stderr: () => err.join('') };
}
