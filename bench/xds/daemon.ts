/**
 * Runs the built daemon (dist/cli/mesh-discovery.js) as a child process on free loopback ports,
 * measures start → ready, and reads its CPU time and resident memory from /proc.
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { closeSync, cpSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, relative } from 'node:path';

export interface ProcSample {
  /** utime + stime, seconds. */
  readonly cpuS: number;
  /** VmRSS, bytes. */
  readonly rss: number;
  /** VmHWM (peak RSS), bytes. */
  readonly hwm: number;
}

let clockTicks: number | undefined;

function ticksPerSecond(): number {
  if (clockTicks === undefined) {
    try {
      clockTicks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      clockTicks = 100;
    }
  }
  return clockTicks;
}

/** CPU seconds and memory of a process, from /proc/<pid>/stat and /proc/<pid>/status. */
export function sampleProcess(pid: number): ProcSample {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // fields after "(comm)": state is field 3, utime field 14, stime field 15
  const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const utime = Number(rest[11]);
  const stime = Number(rest[12]);
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (key: string): number => {
    const m = new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status);
    return m ? Number(m[1]) * 1024 : NaN;
  };
  return { cpuS: (utime + stime) / ticksPerSecond(), rss: kb('VmRSS'), hwm: kb('VmHWM') };
}

/** CPU seconds the whole machine spent busy (all cores), from the first line of /proc/stat. */
export function machineBusyS(): number {
  const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0];
  const f = line.trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal
  const busy = f[0] + f[1] + f[2] + f[5] + f[6] + (f[7] ?? 0);
  return busy / ticksPerSecond();
}

/**
 * Measures, over a phase, the CPU time of processes other than the daemon and the driver: the
 * benchmark's figures are only meaningful on an otherwise idle machine, so each phase reports it.
 */
export class OtherLoad {
  private readonly t0 = process.hrtime.bigint();
  private readonly busy0 = machineBusyS();
  private readonly own0: number;

  constructor(private readonly pids: ReadonlyArray<number>) {
    this.own0 = this.own();
  }

  private own(): number {
    let sum = 0;
    for (const pid of this.pids) {
      try {
        sum += sampleProcess(pid).cpuS;
      } catch {
        // gone
      }
    }
    return sum;
  }

  /** Average number of cores used by other processes since construction. */
  cores(): number {
    const wallS = Number(process.hrtime.bigint() - this.t0) / 1e9;
    const other = machineBusyS() - this.busy0 - (this.own() - this.own0);
    return wallS > 0 ? Math.max(0, other / wallS) : NaN;
  }
}

/** Which daemon build a run measured. */
export interface DaemonBuild {
  /** Directory holding the snapshot (`dist/`, `package.json`, `node_modules` link). */
  readonly root: string;
  /** Short hash of the snapshot's file names, sizes and contents. */
  readonly fingerprint: string;
  /** `git rev-parse --short HEAD`, or `unknown`. */
  readonly gitHead: string;
  /** Files under src/ with uncommitted changes when the snapshot was taken. */
  readonly srcDirty: number;
  /** Newest modification time among dist/ files, ISO. */
  readonly builtAt: string;
}

function listFiles(dir: string, out: string[] = []): string[] {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) listFiles(p, out);
    else if (e.isFile() && !e.name.endsWith('.map')) out.push(p);
  }
  return out;
}

function treeFingerprint(dir: string): { hash: string; newest: number } {
  const h = createHash('sha1');
  let newest = 0;
  for (const f of listFiles(dir).sort()) {
    h.update(relative(dir, f));
    h.update(readFileSync(f));
    newest = Math.max(newest, statSync(f).mtimeMs);
  }
  return { hash: h.digest('hex').slice(0, 12), newest };
}

function git(repoRoot: string, args: string[]): string | undefined {
  try {
    return execFileSync('git', args, { cwd: repoRoot, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return undefined;
  }
}

/**
 * Copies the built daemon (dist/, without source maps) into `into`, so that a rebuild of dist/ by
 * someone else during a long run cannot change the daemon under test half-way. The copy resolves
 * packages through a `node_modules` link to the repository's and has the repository's package.json
 * (module type, version). The benchmark's own compiled files (`benchDir`) are copied to
 * `into/bench/dist/xds`, where their imports of `../../../dist/gen/…` reach the same snapshot.
 * Retries while dist/ is being rewritten.
 */
export async function snapshotDaemon(repoRoot: string, benchDir: string, into: string): Promise<DaemonBuild> {
  const dist = join(repoRoot, 'dist');
  for (let attempt = 1; ; attempt++) {
    if (!existsSync(join(dist, 'cli', 'mesh-discovery.js'))) throw new Error(`${join(dist, 'cli', 'mesh-discovery.js')} does not exist: run \`npm run build\` first`);
    const before = treeFingerprint(dist);
    mkdirSync(into, { recursive: true });
    cpSync(dist, join(into, 'dist'), { recursive: true, filter: (src) => !src.endsWith('.map') });
    const after = treeFingerprint(dist);
    const copy = treeFingerprint(join(into, 'dist'));
    if (before.hash === after.hash && copy.hash === before.hash) {
      writeFileSync(join(into, 'package.json'), readFileSync(join(repoRoot, 'package.json')));
      cpSync(benchDir, join(into, 'bench', 'dist', 'xds'), { recursive: true, filter: (src) => !src.endsWith('.tmp') });
      if (!existsSync(join(into, 'node_modules'))) symlinkSync(join(repoRoot, 'node_modules'), join(into, 'node_modules'), 'dir');
      const dirty = git(repoRoot, ['status', '--porcelain', '--', 'src']);
      return {
        root: into,
        fingerprint: before.hash,
        gitHead: git(repoRoot, ['rev-parse', '--short', 'HEAD']) ?? 'unknown',
        srcDirty: dirty === undefined ? NaN : dirty.split('\n').filter(Boolean).length,
        builtAt: new Date(before.newest).toISOString(),
      };
    }
    if (attempt >= 5) throw new Error('dist/ kept changing while it was copied (a build running?); try again later');
    await new Promise((r) => setTimeout(r, 5000));
  }
}

/** A loopback port that was free a moment ago (the benchmarks that start processes of their own use it too). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => (port ? resolve(port) : reject(new Error('no port assigned'))));
    });
  });
}

async function get(url: string, timeoutMs: number): Promise<{ status: number; body: string }> {
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(), timeoutMs);
  try {
    const res = await fetch(url, { signal: ac.signal });
    return { status: res.status, body: await res.text() };
  } finally {
    clearTimeout(timer);
  }
}

export interface DaemonOptions {
  /** Directory with `dist/cli/mesh-discovery.js` (a snapshot, see snapshotDaemon). */
  readonly daemonRoot: string;
  /** `cli`: tsc's output dist/cli/mesh-discovery.js; `bin`: the bundle dist/bin/mesh-discovery.js. */
  readonly entry: 'cli' | 'bin';
  readonly configDir: string;
  readonly logFile: string;
  /** Extra environment for the daemon (DISC_DEBOUNCE_AFTER, …). */
  readonly env: Readonly<Record<string, string>>;
  /** Directory for a V8 CPU profile (node `--cpu-prof`), or undefined. */
  readonly cpuProfDir?: string;
  readonly readyTimeoutMs: number;
}

export class Daemon {
  private exitCode: number | undefined;
  private readonly exited: Promise<number>;
  /** Stops of running responsiveness probes. */
  private readonly probes = new Set<() => void>();

  private constructor(
    private readonly child: ChildProcess,
    readonly pid: number,
    readonly grpcAddr: string,
    readonly httpAddr: string,
    readonly monitoringAddr: string,
    readonly logFile: string,
    /** Spawn → `/ready` answered 200, ms. */
    public readyMs: number,
  ) {
    this.exited = new Promise((resolve) => {
      child.on('exit', (code, signal) => {
        this.exitCode = code ?? (signal ? 128 + 15 : 1);
        resolve(this.exitCode);
      });
    });
  }

  static async start(o: DaemonOptions): Promise<Daemon> {
    const cli = join(o.daemonRoot, 'dist', o.entry, 'mesh-discovery.js');
    if (!existsSync(cli)) throw new Error(`${cli} does not exist: run \`npm run build\` first`);
    const ports = new Set<number>();
    while (ports.size < 3) ports.add(await freePort());
    const [g, h, m] = [...ports];
    const grpcAddr = `127.0.0.1:${g}`;
    const httpAddr = `127.0.0.1:${h}`;
    const monitoringAddr = `127.0.0.1:${m}`;
    const args = [
      cli,
      'discovery',
      '--registries',
      'Mock',
      '--configDir',
      o.configDir,
      '--grpcAddr',
      grpcAddr,
      '--httpAddr',
      httpAddr,
      '--monitoringAddr',
      monitoringAddr,
      '--meshConfig',
      '/nonexistent',
      '--shutdownDuration',
      '5s',
    ];
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(process.env)) if (v !== undefined && k !== 'NODE_OPTIONS') env[k] = v;
    env.ENABLE_CA_SERVER = 'false';
    Object.assign(env, o.env);
    // Node 20 refuses --cpu-prof in NODE_OPTIONS: it goes on the command line
    const nodeArgs = o.cpuProfDir ? ['--cpu-prof', `--cpu-prof-dir=${o.cpuProfDir}`, '--cpu-prof-name=daemon.cpuprofile'] : [];
    const log = openSync(o.logFile, 'a');
    const started = process.hrtime.bigint();
    const child = spawn(process.execPath, [...nodeArgs, ...args], { cwd: o.daemonRoot, env, stdio: ['ignore', log, log] });
    closeSync(log);
    const d = new Daemon(child, child.pid ?? -1, grpcAddr, httpAddr, monitoringAddr, o.logFile, NaN);
    const deadline = Date.now() + o.readyTimeoutMs;
    for (;;) {
      if (d.exitCode !== undefined) throw new Error(`daemon exited with code ${d.exitCode} before it was ready; see ${o.logFile}:\n${d.logTail()}`);
      try {
        if ((await get(`http://${monitoringAddr}/ready`, 1000)).status === 200) break;
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline) {
        await d.stop(2000);
        throw new Error(`daemon not ready within ${o.readyTimeoutMs} ms; see ${o.logFile}:\n${d.logTail()}`);
      }
      await new Promise((r) => setTimeout(r, 20));
    }
    d.readyMs = Number(process.hrtime.bigint() - started) / 1e6;
    return d;
  }

  /**
   * Polls `/ready` every `intervalMs` until `stop()`; resolves to the longest answer time seen, ms.
   * A daemon whose event loop is blocked answers late: this shows for how long it was blocked.
   */
  responsiveness(intervalMs = 100): { stop: () => Promise<number> } {
    let stopped = false;
    let worst = 0;
    const halt = (): void => {
      stopped = true;
    };
    this.probes.add(halt);
    const loop = (async () => {
      while (!stopped && this.running()) {
        const t = process.hrtime.bigint();
        try {
          await get(`http://${this.monitoringAddr}/ready`, 300_000);
        } catch {
          // counted as answered now
        }
        worst = Math.max(worst, Number(process.hrtime.bigint() - t) / 1e6);
        await new Promise((r) => setTimeout(r, intervalMs));
      }
    })();
    return {
      stop: async () => {
        halt();
        this.probes.delete(halt);
        await loop;
        return worst;
      },
    };
  }

  running(): boolean {
    return this.exitCode === undefined;
  }

  sample(): ProcSample {
    return sampleProcess(this.pid);
  }

  logTail(chars = 3000): string {
    try {
      const text = readFileSync(this.logFile, 'utf8');
      return text.slice(-chars);
    } catch {
      return '';
    }
  }

  async pushStatus(): Promise<{ version: string; services: number; connections: number; queued: number; cacheEntries: number }> {
    const res = await get(`http://${this.httpAddr}/debug/push_status`, 5000);
    if (res.status !== 200) throw new Error(`GET /debug/push_status: HTTP ${res.status}`);
    return JSON.parse(res.body) as { version: string; services: number; connections: number; queued: number; cacheEntries: number };
  }

  /** Sum of the samples of one metric (labels ignored), or NaN when absent or unreachable. */
  async metric(name: string): Promise<number> {
    try {
      const res = await get(`http://${this.monitoringAddr}/metrics`, 5000);
      let sum = NaN;
      for (const line of res.body.split('\n')) {
        if (!line.startsWith(name)) continue;
        const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)/.exec(line);
        if (m && m[1] === name) sum = (Number.isNaN(sum) ? 0 : sum) + Number(m[3]);
      }
      return sum;
    } catch {
      return NaN;
    }
  }

  /** SIGTERM, then SIGKILL after `killAfterMs`; resolves to the exit code. */
  async stop(killAfterMs = 20_000): Promise<number> {
    for (const halt of this.probes) halt();
    this.probes.clear();
    if (this.exitCode !== undefined) return this.exitCode;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), killAfterMs);
    const code = await this.exited;
    clearTimeout(timer);
    return code;
  }
}
