/**
 * Runs the built daemon (`dist/cli/mesh-discovery.js discovery`) as a child process for tests:
 * free loopback ports, the Mock registry, a config directory, readiness through `GET /ready` on the
 * monitoring address, and a graceful SIGTERM stop that reports the exit code.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { metricValue } from './metrics-text.js';

/** The repository root (this file lives in test/support/). */
export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const DAEMON_CLI = join(REPO_ROOT, 'dist', 'cli', 'mesh-discovery.js');

export interface StartDaemonOptions {
  /** The daemon's entry file (default `dist/cli/mesh-discovery.js`, tsc's output; `dist/bin/mesh-discovery.js` is the bundle the package and image run). */
  readonly entry?: string;
  /** Directory of config YAML files (`--configDir`). */
  readonly configDir?: string;
  /** Environment on top of the test process's own; `undefined` removes a variable. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Extra command-line arguments, appended after the harness's own. */
  readonly args?: ReadonlyArray<string>;
  /** `--registries` (default `Mock`). */
  readonly registries?: string | ReadonlyArray<string>;
  /** `--meshConfig`; default a path that does not exist, so the built-in mesh defaults apply. */
  readonly meshConfig?: string;
  /** How long to wait for `/ready` (default 20 s). */
  readonly readyTimeoutMs?: number;
  /** `--shutdownDuration` (default `1s`). */
  readonly shutdownDuration?: string;
}

export interface Daemon {
  readonly pid: number;
  /** `127.0.0.1:<port>` of the plaintext xDS gRPC listener. */
  readonly grpcAddr: string;
  /** `127.0.0.1:<port>` of the debug HTTP listener. */
  readonly httpAddr: string;
  /** `127.0.0.1:<port>` of the monitoring listener (`/ready`, `/metrics`). */
  readonly monitoringAddr: string;
  /** `127.0.0.1:<port>` of ControlZ (`--ctrlz_port`; an `--ctrlz_*` of `args` comes later and wins). */
  readonly ctrlzAddr: string;
  /** `127.0.0.1:<port>` given as `--httpsAddr` (the webhook server; open only with a serving certificate). */
  readonly httpsAddr: string;
  /** Everything the daemon wrote to stdout and stderr so far (bounded to the last few MiB). */
  logs(): string;
  /** Whether the process is still running. */
  running(): boolean;
  /** The Prometheus text of `/metrics`. */
  metrics(): Promise<string>;
  /** Sum of the samples of metric `name` whose labels include `labels` (0 when absent). */
  metric(name: string, labels?: Readonly<Record<string, string>>): Promise<number>;
  /** `GET /debug/<path>` on the debug listener; JSON is parsed, anything else returned as text. */
  debug(path: string): Promise<unknown>;
  /** Whether `/ready` answers 200 now. */
  ready(): Promise<boolean>;
  /** SIGTERM, wait for exit (SIGKILL after `killAfterMs`, default 15 s); resolves to the exit code (128+n for a signal). */
  stop(killAfterMs?: number): Promise<number>;
}

const MAX_LOG = 4 << 20;

/** A port that was free on 127.0.0.1 a moment ago. */
export function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const srv = createServer();
    srv.unref();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => (port ? resolvePort(port) : reject(new Error('no port assigned'))));
    });
  });
}

async function distinctFreePorts(n: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < n) ports.add(await freePort());
  return [...ports];
}

const SIGNALS: Readonly<Record<string, number>> = { SIGHUP: 1, SIGINT: 2, SIGQUIT: 3, SIGKILL: 9, SIGSEGV: 11, SIGPIPE: 13, SIGTERM: 15 };

function exitCodeOf(code: number | null, signal: NodeJS.Signals | null): number {
  if (code !== null) return code;
  return 128 + (signal ? (SIGNALS[signal] ?? 0) : 0);
}

function tailOf(text: string, max = 8000): string {
  return text.length <= max ? text : `…${text.slice(text.length - max)}`;
}

async function httpGet(url: string, timeoutMs = 5000): Promise<{ status: number; contentType: string; body: string }> {
  const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
  return { status: res.status, contentType: res.headers.get('content-type') ?? '', body: await res.text() };
}

export class DaemonStartError extends Error {}

/**
 * Starts the daemon and resolves once `/ready` answers 200. Ports are picked free just before the
 * spawn; should one be taken in between (the daemon exits mentioning EADDRINUSE), it retries with
 * new ports, at most three times.
 */
export async function startDaemon(options: StartDaemonOptions = {}): Promise<Daemon> {
  const entry = options.entry ?? DAEMON_CLI;
  if (!existsSync(entry)) {
    throw new DaemonStartError(`${entry} does not exist: run \`npm run build\` before the end-to-end tests`);
  }
  let lastError: unknown;
  for (let attempt = 1; attempt <= 3; attempt++) {
    try {
      return await startOnce(options);
    } catch (err) {
      lastError = err;
      if (!(err instanceof PortClashError)) throw err;
    }
  }
  throw lastError;
}

class PortClashError extends DaemonStartError {}

async function startOnce(options: StartDaemonOptions): Promise<Daemon> {
  const [grpcPort, httpPort, monitoringPort, ctrlzPort, httpsPort] = await distinctFreePorts(5);
  const grpcAddr = `127.0.0.1:${grpcPort}`;
  // Never the default :15017, which another daemon of the machine may hold; a test may give its own.
  const own = options.args?.indexOf('--httpsAddr') ?? -1;
  const httpsAddr = own >= 0 ? (options.args?.[own + 1] ?? '') : `127.0.0.1:${httpsPort}`;
  const httpAddr = `127.0.0.1:${httpPort}`;
  const monitoringAddr = `127.0.0.1:${monitoringPort}`;
  const registries = typeof options.registries === 'string' ? options.registries : (options.registries ?? ['Mock']).join(',');
  const meshConfig = options.meshConfig ?? join(tmpdir(), `mesh-e2e-no-mesh-config-${process.pid}-${grpcPort}`);

  const args = [
    options.entry ?? DAEMON_CLI,
    'discovery',
    '--registries',
    registries,
    ...(options.configDir ? ['--configDir', options.configDir] : []),
    '--grpcAddr',
    grpcAddr,
    '--httpAddr',
    httpAddr,
    '--monitoringAddr',
    monitoringAddr,
    ...(own >= 0 ? [] : ['--httpsAddr', httpsAddr]),
    '--meshConfig',
    meshConfig,
    '--ctrlz_address',
    '127.0.0.1',
    '--ctrlz_port',
    String(ctrlzPort),
    '--shutdownDuration',
    options.shutdownDuration ?? '1s',
    ...(options.args ?? []),
  ];
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries({ ...process.env, ENABLE_CA_SERVER: 'false', ...(options.env ?? {}) })) {
    if (v !== undefined) env[k] = v;
  }

  const child: ChildProcess = spawn(process.execPath, args, { cwd: REPO_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  const append = (chunk: string): void => {
    log += chunk;
    if (log.length > MAX_LOG) log = log.slice(log.length - MAX_LOG / 2);
  };
  child.stdout?.setEncoding('utf8');
  child.stderr?.setEncoding('utf8');
  child.stdout?.on('data', append);
  child.stderr?.on('data', append);

  let exitCode: number | undefined;
  const exited = new Promise<number>((resolveExit) => {
    child.on('exit', (code, signal) => {
      exitCode = exitCodeOf(code, signal);
      resolveExit(exitCode);
    });
    child.on('error', (err) => {
      append(`\n[spawn error] ${err.message}\n`);
      exitCode ??= 127;
      resolveExit(exitCode);
    });
  });

  const readyTimeoutMs = options.readyTimeoutMs ?? 20_000;
  const deadline = Date.now() + readyTimeoutMs;
  let lastProbe: string;
  for (;;) {
    if (exitCode !== undefined) {
      const msg = `daemon exited with code ${exitCode} before it was ready (${args.slice(1).join(' ')}); logs:\n${tailOf(log)}`;
      if (/EADDRINUSE|address already in use/i.test(log)) throw new PortClashError(msg);
      throw new DaemonStartError(msg);
    }
    try {
      const res = await httpGet(`http://${monitoringAddr}/ready`, 1000);
      if (res.status === 200) break;
      lastProbe = `HTTP ${res.status}: ${res.body.slice(0, 200)}`;
    } catch (err) {
      lastProbe = err instanceof Error ? err.message : String(err);
    }
    if (Date.now() >= deadline) {
      child.kill('SIGKILL');
      await exited;
      throw new DaemonStartError(
        `daemon not ready within ${readyTimeoutMs} ms (last /ready probe: ${lastProbe}); command: node ${args.join(' ')}; logs:\n${tailOf(log)}`,
      );
    }
    await new Promise((r) => setTimeout(r, 100));
  }

  let stopping: Promise<number> | undefined;
  const daemon: Daemon = {
    pid: child.pid ?? -1,
    grpcAddr,
    httpAddr,
    monitoringAddr,
    ctrlzAddr: `127.0.0.1:${ctrlzPort}`,
    httpsAddr,
    logs: () => log,
    running: () => exitCode === undefined,
    metrics: async () => {
      const res = await httpGet(`http://${monitoringAddr}/metrics`);
      if (res.status !== 200) throw new Error(`GET /metrics: HTTP ${res.status}: ${res.body.slice(0, 500)}`);
      return res.body;
    },
    metric: async (name, labels) => metricValue(await daemon.metrics(), name, labels),
    debug: async (path) => {
      const rel = path.replace(/^\/+/, '').replace(/^debug\//, '');
      const res = await httpGet(`http://${httpAddr}/debug/${rel}`);
      if (res.status !== 200) throw new Error(`GET /debug/${rel}: HTTP ${res.status}: ${res.body.slice(0, 500)}`);
      if (res.contentType.includes('json')) return JSON.parse(res.body) as unknown;
      try {
        return JSON.parse(res.body) as unknown;
      } catch {
        return res.body;
      }
    },
    ready: async () => {
      try {
        return (await httpGet(`http://${monitoringAddr}/ready`, 2000)).status === 200;
      } catch {
        return false;
      }
    },
    stop: (killAfterMs = 15_000) => {
      stopping ??= (async () => {
        if (exitCode !== undefined) return exitCode;
        child.kill('SIGTERM');
        const killer = setTimeout(() => {
          append('\n[harness] no exit after SIGTERM; sending SIGKILL\n');
          child.kill('SIGKILL');
        }, killAfterMs);
        const code = await exited;
        clearTimeout(killer);
        return code;
      })();
      return stopping;
    },
  };
  return daemon;
}

// ---------------------------------------------------------------------------------------------
// Config files

let tmpCounter = 0;

/**
 * Writes `content` to `path` atomically: a temporary sibling (hidden, not ending in .yaml) is
 * written and then renamed over the target, so a watcher never reads half a file.
 */
export async function writeFileAtomic(path: string, content: string | Uint8Array): Promise<void> {
  const tmp = join(dirname(path), `.${basename(path)}.${process.pid}.${++tmpCounter}.tmp`);
  await writeFile(tmp, content);
  await rename(tmp, path);
}

/** Renders objects as a multi-document YAML text. */
export function toYamlDocuments(docs: ReadonlyArray<unknown>): string {
  return docs.map((d) => stringify(d)).join('---\n');
}

export interface ConfigDir {
  readonly path: string;
  /** Writes `name` atomically; objects are rendered as (multi-document) YAML, strings written as is. */
  write(name: string, content: string | object | ReadonlyArray<object>): Promise<void>;
  remove(name: string): Promise<void>;
  cleanup(): Promise<void>;
}

/** A fresh temporary config directory. */
export async function makeConfigDir(prefix = 'mesh-e2e-config-'): Promise<ConfigDir> {
  const path = await mkdtemp(join(tmpdir(), prefix));
  const fileOf = (name: string): string => {
    if (name.includes('/') || name.includes('\\') || name.startsWith('.')) throw new Error(`config file name must be a plain name: ${name}`);
    return join(path, name);
  };
  return {
    path,
    write: (name, content) => {
      const text = typeof content === 'string' ? content : toYamlDocuments(Array.isArray(content) ? content : [content]);
      return writeFileAtomic(fileOf(name), text);
    },
    remove: (name) => rm(fileOf(name), { force: true }),
    cleanup: () => rm(path, { recursive: true, force: true }),
  };
}
