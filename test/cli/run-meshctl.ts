import { main as meshctl } from '../../src/cli/meshctl.js';
import { captureIO } from './capture.js';

/** Runs meshctl in-process with `env` as its whole environment; its exit code and output. */
export async function runMeshctl(argv: readonly string[], env: Record<string, string | undefined> = {}): Promise<{ code: number; stdout: string; stderr: string; ms: number }> {
  const c = captureIO(env);
  const started = Date.now();
  const code = await meshctl([...argv], c.io);
  return { code, stdout: c.stdout(), stderr: c.stderr(), ms: Date.now() - started };
}
