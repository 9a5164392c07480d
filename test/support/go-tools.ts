/**
 * Paths to the Go programs under tools/ (for example `xds-validate`, the ADS client that checks
 * the configuration mesh-discovery serves), built on demand by scripts/build-go-tools.sh into a
 * cache outside the repository (MESH_TOOLS_CACHE, default ~/.cache/mesh/tools).
 *
 * The script runs at most once per process; its result is shared by every caller. A first build
 * compiles the whole Envoy API and takes minutes, so call goToolPath from a hook with a long
 * timeout, e.g. `beforeAll(async () => { bin = await goToolPath('xds-validate'); }, GO_TOOL_BUILD_TIMEOUT_MS)`.
 */
import { execFile, spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Enough for a build from an empty Go build cache on a small machine. */
export const GO_TOOL_BUILD_TIMEOUT_MS = 15 * 60_000;

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const buildScript = join(repoRoot, 'scripts', 'build-go-tools.sh');

let built: Promise<Map<string, string>> | undefined;

function runBuildScript(): Promise<Map<string, string>> {
  return new Promise((resolvePaths, reject) => {
    const child = spawn('bash', [buildScript], { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    child.on('error', (err) => reject(new Error(`cannot run ${buildScript}: ${err.message}`)));
    child.on('close', (code, signal) => {
      if (code !== 0) {
        const why = signal ? `was killed by ${signal}` : `exited with ${code}`;
        reject(new Error(`scripts/build-go-tools.sh ${why}:\n${stderr.slice(-8000)}`));
        return;
      }
      const paths = new Map<string, string>();
      for (const line of stdout.split('\n')) {
        const eq = line.indexOf('=');
        if (eq > 0) paths.set(line.slice(0, eq), line.slice(eq + 1).trim());
      }
      resolvePaths(paths);
    });
  });
}

/** Absolute path of the binary of the Go program tools/<name>, building it if needed. */
export async function goToolPath(name: string): Promise<string> {
  built ??= runBuildScript();
  const paths = await built;
  const path = paths.get(name);
  if (path === undefined) {
    const known = [...paths.keys()].join(', ') || 'none';
    throw new Error(`no Go program named "${name}" under tools/ (built: ${known})`);
  }
  return path;
}

/** What xds-validate prints for a server session (`-dump` fills `dump`: type URL -> name -> JSON). */
export interface XdsValidateReport {
  ok: boolean;
  errors: { type: string; name: string; message: string }[];
  resources: Record<string, string[]>;
  dump: Record<string, Record<string, unknown>>;
}

/**
 * Runs tools/xds-validate with `args` and returns its JSON report, also when it exits non-zero
 * (it does when the configuration breaks a rule; the report says which).
 */
export async function runXdsValidate<Report>(bin: string, args: readonly string[]): Promise<Report> {
  return new Promise((resolveReport, reject) => {
    execFile(bin, [...args], { maxBuffer: 64 << 20, encoding: 'utf8' }, (err, stdout) => {
      if (stdout) {
        try {
          resolveReport(JSON.parse(stdout) as Report);
          return;
        } catch (parseError) {
          if (!err) return reject(parseError as Error);
        }
      }
      reject(err ?? new Error('xds-validate printed nothing'));
    });
  });
}

/** What `xds-validate -bootstrap` reports. */
export interface BootstrapReport {
  ok: boolean;
  errors: { name: string; message: string }[];
  resources: Record<string, string[]>;
}

/** Writes the bootstrap `json` to `<dir>/<name>.json` and runs `xds-validate -bootstrap` on it. */
export async function validateBootstrap(bin: string, dir: string, name: string, json: unknown): Promise<BootstrapReport> {
  const file = join(dir, `${name}.json`);
  await writeFile(file, JSON.stringify(json, null, 2));
  return runXdsValidate<BootstrapReport>(bin, ['-bootstrap', file]);
}

/**
 * xds-validate's arguments for the tests' usual sidecar (echo v1 in `default`) on the daemon at
 * `addr`, dumping what it received; `extra` is appended.
 */
export function echoSidecarValidateArgs(addr: string, extra: readonly string[] = []): string[] {
  return [
    ...['-addr', addr, '-node-id', 'sidecar~127.0.0.1~echo-v1-abc.default~default.svc.cluster.local'],
    ...['-metadata', JSON.stringify({ NAMESPACE: 'default', LABELS: { app: 'echo', version: 'v1' } })],
    ...['-timeout', '30s', '-dump'],
    ...extra,
  ];
}
