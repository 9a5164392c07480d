/**
 * xDS benchmark of the mesh-discovery daemon. Run by hand; prints figures, asserts nothing.
 *
 *   npm run bench:xds -- --services 1000 --clients 2000 --kind sidecar
 *   npm run bench:xds -- --matrix --kind sidecar
 *
 * See bench/README.md for what each figure means.
 */
import { DAEMON_RUNTIME_ENV } from '../../src/install/render/runtime-env.js';
import { existsSync, rmSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Daemon, OtherLoad, snapshotDaemon, type DaemonBuild, type ProcSample } from './daemon.js';
import { MeshConfig } from './mesh-config.js';
import { children, GoDriver, goLoadGenerator, NodeDriver, type ClientDriver, type DriverKind } from './drivers.js';
import { clientSpec, clusterName, endpointAddress, grpcTargetIndex, listenerName } from './naming.js';
import { formatSummary, loadProfile, summarize, type ProfileSummary, type Window } from './profile.js';
import type { ClientKind, EditResult, InitialResult, PerType, Probe } from './protocol.js';
import { fmtKB, fmtMB, fmtSeconds, percentile, table } from './stats.js';
import { issue15Load, type HostileSpec, type HostileStats } from './hostile.js';
import { spawn, type ChildProcess } from 'node:child_process';

const HERE = dirname(fileURLToPath(import.meta.url));
/** bench/dist/xds → repository root. */
const REPO_ROOT = resolve(HERE, '..', '..', '..');

/** Targets of issue 18 by workload: VirtualService edit p99, RSS peak, all clients complete. */
interface Targets {
  readonly p99Ms: number;
  readonly rssBytes: number;
  readonly allCompleteMs: number;
}

const MB = 1024 * 1024;

/** The target row of a run's shape; the 1,000-service rows also stand for smaller runs. */
function targetsFor(kind: ClientKind, services: number, vips: boolean): Targets {
  if (kind === 'grpc') return { p99Ms: 200, rssBytes: 300 * MB, allCompleteMs: 5_000 };
  if (services > 1000) return { p99Ms: 1000, rssBytes: 1024 * MB, allCompleteMs: 60_000 };
  return vips ? { p99Ms: 400, rssBytes: 600 * MB, allCompleteMs: 15_000 } : { p99Ms: 500, rssBytes: 600 * MB, allCompleteMs: 15_000 };
}

interface Options {
  services: number;
  clients: number;
  kind: ClientKind;
  matrix: boolean;
  streamsPerChannel: number;
  windowBytes: number;
  hotPercent: number;
  /** ServiceEntries carry a virtual IP each. */
  vips: boolean;
  /** AuthorizationPolicies (and one RequestAuthentication per namespace) in the clients' namespaces. */
  policies: number;
  initialTimeoutS: number;
  editTimeoutS: number;
  /** Matrix: a run's phases get at most what is left of this many seconds from its start. */
  runLimitS?: number;
  /** The daemon build under test (set by main). */
  build?: DaemonBuild;
  quietMs: number;
  settleMs: number;
  budgetS: number;
  cpuProf: boolean;
  keep: boolean;
  daemonEnv: Record<string, string>;
  /** Run the daemon without DAEMON_RUNTIME_ENV. */
  systemMalloc: boolean;
  readyTimeoutS: number;
  /** Which client driver holds the simulated clients. */
  driver: DriverKind;
  /** The Go load generator binary (set by main when driver is go). */
  goBinary?: string;
  /** Clients use DeltaAggregatedResources (Go driver only). */
  delta: boolean;
  /** Run the edits beside hostile clients (bench/xds/hostile.ts in a child process). */
  hostile: boolean;
  /** Added to every client's node metadata. */
  nodeMeta: Record<string, string>;
  /** Repository whose dist/ holds the daemon under test (default: this one). */
  daemonRepo?: string;
  /** Run the bundle the package and image run (dist/bin/mesh-discovery.js) instead of tsc's output. */
  bundle: boolean;
}

const USAGE = `usage: npm run bench:xds -- [options]
  --services N            services (ServiceEntry + DestinationRule each; a VirtualService every tenth) [1000]
  --clients P             simulated xDS clients [1000]
  --kind sidecar|grpc     client kind [sidecar]
  --matrix                services {100,1000,5000} x clients {100,1000,2000} for --kind (skips runs estimated > --budget)
  --budget S              matrix: skip a run estimated to take longer than S seconds [300]
  --streams-per-channel K ADS streams per grpc-js channel (HTTP/2 connection) [100]
  --h2-window BYTES       HTTP/2 flow-control window of the client channels; 0 = Node's 64 KiB default [16777216]
  --policies N            N AuthorizationPolicies selecting the clients (ALLOW/DENY by peer, request principal, claim), one RequestAuthentication per namespace, N PeerAuthentications (mesh, namespace, workload with port overrides) and a service per client app so the clients have inbound ports [0]
  --vips                  give every ServiceEntry a virtual IP (as ClusterIP services have); default: none
  --grpc-hot PCT          grpc: PCT% of the clients dial the edited service (more samples for the edit figures) [0]
  --timeout S             give up on the initial phase after S seconds [300]
  --edit-timeout S        give up on an edit after S seconds [180]
  --quiet MS              an edit window ends once no response arrived for MS [1500]
  --daemon-env K=V        extra environment for the daemon (repeatable), e.g. DISC_PUSH_THROTTLE=200
  --system-malloc         run the daemon without the runtime settings it is deployed with (allocator, V8 semi-spaces: src/install/render/runtime-env.ts)
  --cpu-prof              run the daemon with --cpu-prof and print per-phase top functions
  --keep                  keep the run directory (config, daemon log, profile)
  --driver go|node        client driver: the Go load generator tools/xds-load (built by scripts/build-go-tools.sh) or the one-process Node driver [go]
  --hostile               run the edits beside hostile clients (500 stuck streams, departing proxies with 50,000
                          names each, a NACK storm, 50 MB bodies, 50 half-open connections per listener)
  --delta                 clients use delta xDS (DeltaAggregatedResources; --driver go only; the daemon needs MESH_DELTA_XDS=true)
  --node-meta K=V         add K=V to every client's node metadata (repeatable), e.g. DNS_CAPTURE=true
  --daemon-repo DIR       measure the daemon built in DIR (its dist/) instead of this checkout's, e.g. a clone of main for before/after
  --bundle                run the daemon's bundle (dist/bin/mesh-discovery.js, what the package and image run) instead of tsc's output (dist/cli/)`;

function parseArgs(argv: ReadonlyArray<string>): Options {
  const o: Options = {
    services: 1000,
    clients: 1000,
    kind: 'sidecar',
    matrix: false,
    streamsPerChannel: 100,
    windowBytes: 16 * 1024 * 1024,
    hotPercent: 0,
    vips: false,
    policies: 0,
    initialTimeoutS: 300,
    editTimeoutS: 180,
    quietMs: 1500,
    settleMs: 1000,
    budgetS: 300,
    cpuProf: false,
    keep: false,
    daemonEnv: {},
    systemMalloc: false,
    readyTimeoutS: 120,
    driver: 'go',
    delta: false,
    hostile: false,
    nodeMeta: {},
    bundle: false,
  };
  const num = (flag: string, v: string | undefined): number => {
    const n = Number(v);
    if (v === undefined || !Number.isFinite(n) || n <= 0) throw new Error(`${flag} needs a positive number, got ${v ?? 'nothing'}`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const next = (): string | undefined => argv[++i];
    switch (a) {
      case '--services':
        o.services = Math.floor(num(a, next()));
        break;
      case '--clients':
        o.clients = Math.floor(num(a, next()));
        break;
      case '--kind': {
        const k = next();
        if (k !== 'sidecar' && k !== 'grpc') throw new Error(`--kind must be sidecar or grpc, got ${k ?? 'nothing'}`);
        o.kind = k;
        break;
      }
      case '--matrix':
        o.matrix = true;
        break;
      case '--budget':
        o.budgetS = num(a, next());
        break;
      case '--streams-per-channel':
        o.streamsPerChannel = Math.floor(num(a, next()));
        break;
      case '--h2-window': {
        const v = next();
        o.windowBytes = v === '0' ? 0 : Math.floor(num(a, v));
        break;
      }
      case '--grpc-hot': {
        const v = Number(next());
        if (!Number.isInteger(v) || v < 0 || v > 100) throw new Error('--grpc-hot needs a percentage 0..100');
        o.hotPercent = v;
        break;
      }
      case '--policies': {
        const v = Number(next());
        if (!Number.isInteger(v) || v < 0) throw new Error('--policies needs a count');
        o.policies = v;
        break;
      }
      case '--vips':
        o.vips = true;
        break;
      case '--timeout':
        o.initialTimeoutS = num(a, next());
        break;
      case '--edit-timeout':
        o.editTimeoutS = num(a, next());
        break;
      case '--quiet':
        o.quietMs = num(a, next());
        break;
      case '--daemon-env': {
        const kv = next() ?? '';
        const eq = kv.indexOf('=');
        if (eq <= 0) throw new Error(`--daemon-env needs KEY=VALUE, got ${kv}`);
        o.daemonEnv[kv.slice(0, eq)] = kv.slice(eq + 1);
        break;
      }
      case '--cpu-prof':
        o.cpuProf = true;
        break;
      case '--system-malloc':
        o.systemMalloc = true;
        break;
      case '--keep':
        o.keep = true;
        break;
      case '--driver': {
        const v = next();
        if (v !== 'go' && v !== 'node') throw new Error(`--driver must be go or node, got ${v ?? 'nothing'}`);
        o.driver = v;
        break;
      }
      case '--delta':
        o.delta = true;
        break;
      case '--hostile':
        o.hostile = true;
        break;
      case '--node-meta': {
        const kv = next() ?? '';
        const eq = kv.indexOf('=');
        if (eq <= 0) throw new Error(`--node-meta needs KEY=VALUE, got ${kv}`);
        o.nodeMeta[kv.slice(0, eq)] = kv.slice(eq + 1);
        break;
      }
      case '--bundle':
        o.bundle = true;
        break;
      case '--daemon-repo': {
        const v = next();
        if (!v) throw new Error('--daemon-repo needs a directory');
        o.daemonRepo = resolve(v);
        break;
      }
      case '-h':
      case '--help':
        console.log(USAGE);
        process.exit(0);
        break;
      default:
        throw new Error(`unknown option ${a}\n${USAGE}`);
    }
  }
  if (o.delta && o.driver !== 'go') throw new Error('--delta needs --driver go');
  return o;
}

// ---------------------------------------------------------------------------------------------
// Interruption

for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.once(sig, () => {
    for (const kill of children) kill();
    process.exit(130);
  });
}

// ---------------------------------------------------------------------------------------------
// One run

interface EditFigures {
  readonly label: string;
  readonly file: string;
  readonly result: EditResult;
  readonly daemonCpuS: number;
  /** Cores used on average by other processes of the machine during the edit window. */
  readonly otherCores: number;
  /** Longest time the daemon took to answer `GET /ready` during the window (event loop blocked), ms. */
  readonly maxReadyMs: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
}

export interface RunResult {
  /** --hostile: what the hostile clients did (their last report). */
  readonly hostile?: HostileStats;
  readonly kind: ClientKind;
  readonly services: number;
  readonly clients: number;
  readonly hotPercent?: number;
  readonly vips?: boolean;
  readonly driver?: DriverKind;
  readonly delta?: boolean;
  readonly nodeMeta?: Readonly<Record<string, string>>;
  /** 1-minute load average of the machine when the run started. */
  readonly loadAvg1m?: number;
  readonly build?: DaemonBuild;
  readonly error?: string;
  readonly readyMs?: number;
  readonly initial?: InitialResult & { p50Ms: number; p99Ms: number; maxMs: number };
  readonly daemonCpuInitialS?: number;
  /** Cores used on average by other processes of the machine during the initial phase. */
  readonly otherCoresInitial?: number;
  /** Last client complete → daemon idle (still processing the clients' last requests), ms. */
  readonly busyAfterInitialMs?: number;
  /** Daemon CPU from the first stream to idle after the initial phase. */
  readonly daemonCpuUntilIdleS?: number;
  /** Longest `GET /ready` answer time during the initial phase, ms. */
  readonly maxReadyInitialMs?: number;
  readonly rssBefore?: number;
  readonly rssAfter?: number;
  readonly rssPeak?: number;
  /** RSS a settling pause after the initial phase. */
  readonly rssSettled?: number;
  /** V8 heap used / external memory (prom-client default metrics) before clients and after settling. */
  readonly heapBefore?: number;
  readonly heapSettled?: number;
  readonly externalBefore?: number;
  readonly externalSettled?: number;
  /** V8 heap committed (nodejs_heap_size_total_bytes) after settling. */
  readonly heapTotalSettled?: number;
  readonly bytesPerProxy?: number;
  readonly connectedMetric?: number;
  readonly editVs?: EditFigures;
  readonly editEds?: EditFigures;
  readonly totalS: number;
  /** Of totalS, fixed waits (settling, quiet periods). */
  readonly waitsS: number;
  readonly profile?: ProfileSummary[];
  readonly runDir?: string;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const nowUs = (): number => Number(process.hrtime.bigint() / 1000n);

/**
 * Waits until the daemon's CPU use over 500 ms falls below 0.1 core (it finished processing what
 * the clients sent), at most `timeoutMs`. Resolves to how long that took, ms.
 */
async function waitIdle(d: Daemon, timeoutMs: number): Promise<number> {
  const t0 = Date.now();
  let prev = d.sample().cpuS;
  let prevAt = Date.now();
  for (;;) {
    await sleep(500);
    const cur = d.sample().cpuS;
    const now = Date.now();
    if ((cur - prev) / ((now - prevAt) / 1000) < 0.1 || now - t0 > timeoutMs) return now - t0;
    prev = cur;
    prevAt = now;
  }
}

async function waitFor<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(50);
  }
}

async function runEdit(
  label: string,
  daemon: Daemon,
  driver: ClientDriver,
  probe: Probe,
  serviceIndex: number,
  edit: { file: string; commit: () => Promise<void> },
  o: Options,
  timeoutS: number,
): Promise<EditFigures> {
  const expected: number[] = [];
  for (let c = 0; c < o.clients; c++) if (o.kind === 'sidecar' || grpcTargetIndex(c, o.services, o.hotPercent) === serviceIndex) expected.push(c);
  driver.send({ cmd: 'arm', probe, serviceIndex, expected });
  await driver.next('armed', 10_000);
  const before = daemon.sample();
  const load = new OtherLoad([daemon.pid, driver.pid, process.pid]);
  const probeReady = daemon.responsiveness();
  const writtenAt = process.hrtime.bigint();
  await edit.commit();
  driver.send({ cmd: 'measure', writtenAtNs: writtenAt.toString(), timeoutMs: timeoutS * 1000, quietMs: o.quietMs });
  const { result } = await driver.next('edit', timeoutS * 1000 + 30_000);
  const after = daemon.sample();
  const maxReadyMs = await probeReady.stop();
  const l = result.latenciesMs;
  return { label, file: edit.file, result, daemonCpuS: after.cpuS - before.cpuS, otherCores: load.cores(), maxReadyMs, p50Ms: percentile(l, 50), p99Ms: percentile(l, 99), maxMs: l.length ? l[l.length - 1] : NaN };
}

async function runOnce(services: number, clients: number, opts: Options): Promise<RunResult> {
  const o: Options = { ...opts, services, clients };
  const loadAvg1m = loadavg()[0];
  const started = Date.now();
  /** A phase's timeout: its own limit, cut to what is left of the run limit (at least 10 s). */
  const limit = (ownS: number): number => (o.runLimitS === undefined ? ownS : Math.max(10, Math.min(ownS, o.runLimitS - (Date.now() - started) / 1000)));
  let waitsMs = 0;
  const runDir = await mkdtemp(join(tmpdir(), `mesh-bench-xds-${o.kind}-${services}x${clients}-`));
  const configDir = join(runDir, 'config');
  const profDir = o.cpuProf ? join(runDir, 'prof') : undefined;
  if (profDir) await mkdir(profDir, { recursive: true });
  const mesh = new MeshConfig(configDir, services, o.vips, o.policies, clients);
  await mesh.writeAll();
  const windows: Window[] = [];
  let daemon: Daemon | undefined;
  let driver: ClientDriver | undefined;
  const partial: { -readonly [K in keyof RunResult]?: RunResult[K] } = {};
  let error: string | undefined;
  let killDaemon: (() => void) | undefined;
  let hostile: ChildProcess | undefined;
  let hostileLast: string | undefined;
  let hostileStopping = false;
  try {
    const t0 = nowUs();
    if (!o.build) throw new Error('no daemon snapshot');
    daemon = await Daemon.start({
      daemonRoot: o.build.root,
      entry: o.bundle ? 'bin' : 'cli',
      configDir,
      logFile: join(runDir, 'daemon.log'),
      // The daemon runs with the environment its Deployment gives it, then the user's additions.
      env: { ...(o.systemMalloc ? {} : DAEMON_RUNTIME_ENV), ...o.daemonEnv },
      cpuProfDir: profDir,
      readyTimeoutMs: o.readyTimeoutS * 1000,
    });
    const d = daemon;
    killDaemon = (): void => {
      try {
        process.kill(d.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    };
    children.add(killDaemon);
    partial.readyMs = d.readyMs;
    windows.push({ label: 'start → ready', fromUs: t0, toUs: nowUs() });
    const status = await waitFor('the daemon to load every service', 60_000, async () => {
      const s = await d.pushStatus();
      return s.services >= services ? s : undefined;
    });
    await sleep(o.settleMs);
    waitsMs += o.settleMs + (await waitIdle(d, 60_000));
    partial.heapBefore = await d.metric('nodejs_heap_size_used_bytes');
    partial.externalBefore = await d.metric('nodejs_external_memory_bytes');
    const before: ProcSample = d.sample();
    partial.rssBefore = before.rss;

    driver = o.driver === 'go' ? new GoDriver(o.goBinary!) : new NodeDriver(join(o.build.root, 'bench', 'dist', 'xds', 'driver.js'));
    await driver.next('loaded', 30_000);
    const t1 = nowUs();
    const initialS = limit(o.initialTimeoutS);
    const load = new OtherLoad([d.pid, driver.pid, process.pid]);
    const probeReady = d.responsiveness();
    const clientSpecs = Array.from({ length: clients }, (_, c) => clientSpec(c, o.kind, services, o.hotPercent, o.nodeMeta));
    driver.send({ cmd: 'start', addr: d.grpcAddr, kind: o.kind, clients, services, streamsPerChannel: o.streamsPerChannel, windowBytes: o.windowBytes, hotPercent: o.hotPercent, timeoutMs: initialS * 1000, clientSpecs, delta: o.delta });
    const { result: init } = await driver.next('initial', initialS * 1000 + 60_000);
    const after = d.sample();
    // the daemon may still be working through what the clients sent last (their final ACKs)
    partial.busyAfterInitialMs = await waitIdle(d, limit(120) * 1000);
    partial.daemonCpuUntilIdleS = d.sample().cpuS - before.cpuS;
    windows.push({ label: 'initial (until the daemon is idle)', fromUs: t1, toUs: nowUs() });
    const c = init.completionMs;
    partial.initial = { ...init, p50Ms: percentile(c, 50), p99Ms: percentile(c, 99), maxMs: c.length ? c[c.length - 1] : NaN };
    partial.daemonCpuInitialS = after.cpuS - before.cpuS;
    partial.otherCoresInitial = load.cores();
    partial.maxReadyInitialMs = await probeReady.stop();
    partial.rssAfter = after.rss;
    partial.bytesPerProxy = (after.rss - before.rss) / clients;
    partial.connectedMetric = await d.metric('disc_xds');
    if (init.complete < clients) throw new Error(`only ${init.complete}/${clients} clients completed (${init.failedStreams} failed streams); first errors: ${init.errors.join(' | ')}`);
    if (status.version === undefined) throw new Error('push_status without a version');

    if (o.hostile) {
      const spec: HostileSpec = issue15Load(d.grpcAddr, [d.httpAddr, d.monitoringAddr]);
      hostile = spawn(process.execPath, [join(o.build.root, 'bench', 'dist', 'xds', 'hostile.js'), JSON.stringify(spec)], { stdio: ['pipe', 'pipe', 'inherit'] });
      hostile.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
        // the reports while the load runs (the one after SIGTERM counts nothing as open)
        for (const line of chunk.split('\n')) if (line.startsWith('{') && !hostileStopping) hostileLast = line;
      });
      await sleep(3000); // the stuck streams and half-open connections open
    }

    // edit 1: weights of one VirtualService (RDS)
    await sleep(o.settleMs);
    // beside hostile clients the daemon is never idle
    if (!o.hostile) waitsMs += o.settleMs + (await waitIdle(d, 60_000));
    partial.rssSettled = d.sample().rss;
    partial.heapSettled = await d.metric('nodejs_heap_size_used_bytes');
    partial.externalSettled = await d.metric('nodejs_external_memory_bytes');
    partial.heapTotalSettled = await d.metric('nodejs_heap_size_total_bytes');
    const vsIndex = 0;
    const t2 = nowUs();
    partial.editVs = await runEdit(
      'edit VirtualService 90/10→50/50 (RDS)',
      d,
      driver,
      { type: 'rds', key: listenerName(vsIndex), mustContain: [`${clusterName(vsIndex, 'v1')}=50`, `${clusterName(vsIndex, 'v2')}=50`] },
      vsIndex,
      mesh.editWeights(vsIndex, 50, 50),
      o,
      limit(o.editTimeoutS),
    );
    windows.push({ label: 'edit VirtualService', fromUs: t2, toUs: nowUs() });
    waitsMs += o.quietMs;

    // edit 2: one endpoint address of one ServiceEntry (EDS)
    await sleep(o.settleMs);
    if (!o.hostile) waitsMs += o.settleMs + (await waitIdle(d, 60_000));
    // service 0 again: proxyless clients watching it hold its v1/v2 subset clusters (endpoint 0 is v1)
    const seIndex = 0;
    const newAddress = endpointAddress(seIndex, 3);
    const t3 = nowUs();
    partial.editEds = await runEdit(
      'edit ServiceEntry endpoint (EDS)',
      d,
      driver,
      { type: 'eds', key: clusterName(seIndex, 'v1'), mustContain: [`,${newAddress}:`] },
      seIndex,
      mesh.editEndpoint(seIndex, 0, newAddress),
      o,
      limit(o.editTimeoutS),
    );
    windows.push({ label: 'edit endpoint', fromUs: t3, toUs: nowUs() });
    waitsMs += o.quietMs;
    partial.rssPeak = d.sample().hwm;
  } catch (e) {
    error = e instanceof Error ? e.message : String(e);
  } finally {
    if (hostile) {
      const h = hostile;
      hostileStopping = true;
      await new Promise<void>((done) => {
        h.once('exit', () => done());
        h.kill('SIGTERM');
        setTimeout(() => (h.kill('SIGKILL'), done()), 10_000).unref();
      });
      if (hostileLast) partial.hostile = JSON.parse(hostileLast) as HostileStats;
    }
    await driver?.stop();
    if (daemon) {
      if (!daemon.running() && !error) error = `daemon exited unexpectedly; see ${daemon.logFile}`;
      await daemon.stop();
      if (killDaemon) children.delete(killDaemon);
    }
  }
  if (profDir && daemon) {
    const file = join(profDir, 'daemon.cpuprofile');
    if (existsSync(file)) {
      const prof = loadProfile(file);
      partial.profile = windows.map((w) => summarize(prof, w, 25));
    } else {
      error = `${error ? `${error}; ` : ''}no CPU profile written (${file})`;
    }
  }
  const keep = o.keep || o.cpuProf || error !== undefined;
  if (!keep) await rm(runDir, { recursive: true, force: true });
  return { kind: o.kind, services, clients, hotPercent: o.hotPercent, vips: o.vips, driver: o.driver, delta: o.delta, nodeMeta: o.nodeMeta, loadAvg1m, build: o.build, ...partial, error, totalS: (Date.now() - started) / 1000, waitsS: waitsMs / 1000, runDir: keep ? runDir : undefined };
}

// ---------------------------------------------------------------------------------------------
// Output

const perType = (p: PerType): string => `cds ${p.cds}  eds ${p.eds}  lds ${p.lds}  rds ${p.rds}`;
const pass = (ok: boolean): string => (ok ? 'met' : 'MISSED');

function editRows(e: EditFigures | undefined, name: string): string[][] {
  if (!e) return [];
  const r = e.result;
  return [
    [`${name}: write → ACK p50 / p99 / max`, `${fmtSeconds(e.p50Ms, 3)} / ${fmtSeconds(e.p99Ms, 3)} / ${fmtSeconds(e.maxMs, 3)} s`],
    [`${name}: clients with the change / expected`, `${r.latenciesMs.length} / ${r.expected}${r.timedOut ? ' (TIMED OUT)' : ''}`],
    [`${name}: clients that got any response`, `${r.gotAny} (${r.unexpectedGotAny} not expected)`],
    [`${name}: responses by type`, perType(r.responses)],
    [`${name}: clients by type`, perType(r.clientsByType)],
    [`${name}: bytes sent by type (KB)`, `cds ${fmtKB(r.bytes.cds)}  eds ${fmtKB(r.bytes.eds)}  lds ${fmtKB(r.bytes.lds)}  rds ${fmtKB(r.bytes.rds)}${r.nameTables ? `  nds ${fmtKB(r.nameTableBytes ?? 0)} (${r.nameTables} name tables)` : ''}`],
    [`${name}: first / last response after the write`, `${fmtSeconds(r.firstResponseMs, 3)} / ${fmtSeconds(r.lastResponseMs, 3)} s`],
    [`${name}: longest daemon /ready answer time`, `${fmtSeconds(e.maxReadyMs, 3)} s (event loop blocked at least this long)`],
    [`${name}: daemon CPU`, `${e.daemonCpuS.toFixed(2)} s (driver CPU ${r.driverCpuS.toFixed(2)} s; other processes ${e.otherCores.toFixed(2)} cores)`],
  ];
}

function printRun(r: RunResult): void {
  const rows: string[][] = [];
  if (r.readyMs !== undefined) rows.push(['daemon start → ready', `${fmtSeconds(r.readyMs)} s`]);
  const i = r.initial;
  if (i) {
    rows.push(
      ['initial: all clients complete (wall)', `${fmtSeconds(i.wallMs)} s (${i.complete}/${i.clients} complete, ${i.failedStreams} failed, streams opened in ${fmtSeconds(i.openMs)} s)`],
      ['initial: per client open → complete p50 / p99 / max', `${fmtSeconds(i.p50Ms)} / ${fmtSeconds(i.p99Ms)} / ${fmtSeconds(i.maxMs)} s`],
      ['initial: daemon CPU', `${(r.daemonCpuInitialS ?? NaN).toFixed(2)} s until all complete, ${(r.daemonCpuUntilIdleS ?? NaN).toFixed(2)} s until idle (driver CPU ${i.driverCpuS.toFixed(2)} s; other processes ${(r.otherCoresInitial ?? NaN).toFixed(2)} cores)`],
      ['initial: daemon CPU per proxy', `${(((r.daemonCpuUntilIdleS ?? NaN) / r.clients) * 1000).toFixed(2)} ms (until idle / clients)`],
      ['initial: daemon busy after the last client completed', `${fmtSeconds(r.busyAfterInitialMs ?? NaN)} s (processing the clients' last ACKs)`],
      ['initial: longest daemon /ready answer time', `${fmtSeconds(r.maxReadyInitialMs ?? NaN, 3)} s`],
      ['initial: responses by type', perType(i.responses)],
      ['initial: MB received by type', `cds ${fmtMB(i.bytes.cds)}  eds ${fmtMB(i.bytes.eds)}  lds ${fmtMB(i.bytes.lds)}  rds ${fmtMB(i.bytes.rds)}${i.nameTables ? `  nds ${fmtMB(i.nameTableBytes ?? 0)} (${i.nameTables} name tables)` : ''}`],
      ['daemon RSS before clients / with clients / peak', `${fmtMB(r.rssBefore ?? NaN)} / ${fmtMB(r.rssAfter ?? NaN)} / ${fmtMB(r.rssPeak ?? NaN)} MB`],
      ['bytes per proxy (RSS delta / clients)', `${fmtKB(r.bytesPerProxy ?? NaN)} KB`],
      [
        'after settling: RSS / V8 heap used (committed) / external',
        `${fmtMB(r.rssSettled ?? NaN)} / ${fmtMB(r.heapSettled ?? NaN)} (${fmtMB(r.heapTotalSettled ?? NaN)}) / ${fmtMB(r.externalSettled ?? NaN)} MB (before clients: heap ${fmtMB(r.heapBefore ?? NaN)}, external ${fmtMB(r.externalBefore ?? NaN)} MB; heap per proxy ${fmtKB(((r.heapSettled ?? NaN) - (r.heapBefore ?? NaN)) / r.clients)} KB)`,
      ],
      ['disc_xds (connected clients, daemon metric)', String(r.connectedMetric ?? NaN)],
    );
  }
  rows.push(...editRows(r.editVs, 'VS edit'), ...editRows(r.editEds, 'EDS edit'));
  if (r.editVs && r.rssPeak !== undefined) {
    const t = targetsFor(r.kind, r.services, r.vips === true);
    rows.push([`target: VS edit p99 ≤ ${fmtSeconds(t.p99Ms, 1)} s`, `${pass(r.editVs.p99Ms <= t.p99Ms && r.editVs.result.latenciesMs.length === r.editVs.result.expected)} (${fmtSeconds(r.editVs.p99Ms, 3)} s)`]);
    rows.push([`target: daemon RSS peak ≤ ${fmtMB(t.rssBytes)} MB`, `${pass((r.rssPeak ?? Infinity) <= t.rssBytes)} (peak ${fmtMB(r.rssPeak)} MB)`]);
    if (r.initial) rows.push([`target: all clients complete ≤ ${fmtSeconds(t.allCompleteMs, 0)} s`, `${pass(r.initial.wallMs <= t.allCompleteMs && r.initial.complete === r.clients)} (${fmtSeconds(r.initial.wallMs)} s)`]);
  }
  if (r.error) rows.push(['ERROR', r.error]);
  if (r.runDir) rows.push(['run directory (kept)', r.runDir]);
  rows.push(['bench run time', `${r.totalS.toFixed(1)} s`]);
  console.log(`\nxDS benchmark — kind=${r.kind} services=${r.services} clients=${r.clients}${r.vips ? ' vips' : ''} driver=${r.driver ?? 'node'}${r.delta ? ' delta' : ''}${Object.keys(r.nodeMeta ?? {}).length ? ` node-meta ${JSON.stringify(r.nodeMeta)}` : ''} load ${(r.loadAvg1m ?? NaN).toFixed(2)}${r.kind === 'grpc' && r.hotPercent ? ` (${r.hotPercent}% dial the edited service)` : ''} (${cpus().length} cores, node ${process.version})`);
  console.log(table(['figure', 'value'], rows, true));
  for (const p of r.profile ?? []) console.log(`\n${formatSummary(p, 15)}`);
}

function jsonOf(r: RunResult): Record<string, unknown> {
  const e = (x: EditFigures | undefined): Record<string, unknown> | undefined =>
    x && {
      p50_ms: round(x.p50Ms),
      p99_ms: round(x.p99Ms),
      max_ms: round(x.maxMs),
      acked: x.result.latenciesMs.length,
      expected: x.result.expected,
      got_any: x.result.gotAny,
      unexpected_got_any: x.result.unexpectedGotAny,
      responses: x.result.responses,
      clients_by_type: x.result.clientsByType,
      bytes: x.result.bytes,
      daemon_cpu_s: round(x.daemonCpuS, 3),
      other_cores: round(x.otherCores, 2),
      max_ready_ms: round(x.maxReadyMs),
      first_response_ms: round(x.result.firstResponseMs),
      last_response_ms: round(x.result.lastResponseMs),
      timed_out: x.result.timedOut,
    };
  return {
    bench: 'xds',
    kind: r.kind,
    services: r.services,
    clients: r.clients,
    grpc_hot_percent: r.kind === 'grpc' ? r.hotPercent : undefined,
    vips: r.vips,
    driver: r.driver,
    delta: r.delta,
    hostile: r.hostile,
    node_meta: r.nodeMeta,
    load_avg_1m: r.loadAvg1m,
    cores: cpus().length,
    node: process.version,
    daemon_git: r.build?.gitHead,
    daemon_src_dirty: r.build?.srcDirty,
    daemon_snapshot: r.build?.fingerprint,
    ready_ms: round(r.readyMs),
    initial: r.initial && {
      wall_ms: round(r.initial.wallMs),
      p50_ms: round(r.initial.p50Ms),
      p99_ms: round(r.initial.p99Ms),
      max_ms: round(r.initial.maxMs),
      complete: r.initial.complete,
      failed: r.initial.failedStreams,
      responses: r.initial.responses,
      bytes: r.initial.bytes,
      daemon_cpu_s: round(r.daemonCpuInitialS, 3),
      daemon_cpu_until_idle_s: round(r.daemonCpuUntilIdleS, 3),
      daemon_cpu_ms_per_proxy: round(((r.daemonCpuUntilIdleS ?? NaN) / r.clients) * 1000, 3),
      busy_after_ms: round(r.busyAfterInitialMs),
      driver_cpu_s: round(r.initial.driverCpuS, 3),
      other_cores: round(r.otherCoresInitial, 2),
      max_ready_ms: round(r.maxReadyInitialMs),
    },
    rss_before_bytes: r.rssBefore,
    rss_after_bytes: r.rssAfter,
    rss_peak_bytes: r.rssPeak,
    rss_settled_bytes: r.rssSettled,
    heap_used_before_bytes: r.heapBefore,
    heap_used_settled_bytes: r.heapSettled,
    heap_total_settled_bytes: r.heapTotalSettled,
    external_before_bytes: r.externalBefore,
    external_settled_bytes: r.externalSettled,
    bytes_per_proxy: round(r.bytesPerProxy),
    edit_vs: e(r.editVs),
    edit_eds: e(r.editEds),
    error: r.error,
    total_s: round(r.totalS, 1),
  };
}

function round(x: number | undefined, digits = 1): number | undefined {
  if (x === undefined || !Number.isFinite(x)) return undefined;
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

function summaryTable(results: ReadonlyArray<RunResult & { skipped?: string }>): string {
  const rows = results.map((r) => {
    if (r.skipped) return [`${r.kind} ${r.services}×${r.clients}`, ...Array<string>(14).fill('–'), `skipped: ${r.skipped}`];
    const i = r.initial;
    const v = r.editVs;
    const e = r.editEds;
    return [
      `${r.kind} ${r.services}×${r.clients}`,
      fmtSeconds(r.readyMs ?? NaN),
      i ? fmtSeconds(i.wallMs) : '–',
      i ? `${fmtSeconds(i.p50Ms)}/${fmtSeconds(i.p99Ms)}` : '–',
      (r.daemonCpuInitialS ?? NaN).toFixed(1),
      `${fmtMB(r.rssBefore ?? NaN)}→${fmtMB(r.rssAfter ?? NaN)} (${fmtMB(r.rssPeak ?? NaN)})`,
      fmtKB(r.bytesPerProxy ?? NaN),
      v ? `${fmtSeconds(v.p50Ms, 3)}/${fmtSeconds(v.p99Ms, 3)}/${fmtSeconds(v.maxMs, 3)}` : '–',
      v ? `${v.result.latenciesMs.length}/${v.result.expected}/${v.result.gotAny}` : '–',
      v ? v.daemonCpuS.toFixed(2) : '–',
      v ? `${v.result.responses.cds}/${v.result.responses.eds}/${v.result.responses.lds}/${v.result.responses.rds}` : '–',
      e ? `${fmtSeconds(e.p50Ms, 3)}/${fmtSeconds(e.p99Ms, 3)}/${fmtSeconds(e.maxMs, 3)}` : '–',
      e ? `${e.result.latenciesMs.length}/${e.result.expected}/${e.result.gotAny}` : '–',
      e ? e.daemonCpuS.toFixed(2) : '–',
      e ? `${e.result.responses.cds}/${e.result.responses.eds}/${e.result.responses.lds}/${e.result.responses.rds}` : '–',
      r.error ? `ERROR: ${r.error.slice(0, 80)}` : '',
    ];
  });
  return table(
    [
      'run (kind S×P)',
      'ready s',
      'init wall s',
      'init p50/p99 s',
      'init CPU s',
      'RSS MB before→with (peak)',
      'KB/proxy',
      'VS edit p50/p99/max s',
      'VS ok/exp/any',
      'VS CPU s',
      'VS rx c/e/l/r',
      'EDS edit p50/p99/max s',
      'EDS ok/exp/any',
      'EDS CPU s',
      'EDS rx c/e/l/r',
      '',
    ],
    rows,
  );
}

// ---------------------------------------------------------------------------------------------

function describeBuild(b: DaemonBuild): string {
  const dirty = Number.isNaN(b.srcDirty) ? '' : b.srcDirty > 0 ? ` + ${b.srcDirty} uncommitted src/ file(s)` : ' (src/ clean)';
  return `daemon: git ${b.gitHead}${dirty}, dist/ built ${b.builtAt}, snapshot ${b.fingerprint}`;
}

async function main(): Promise<void> {
  const o = parseArgs(process.argv.slice(2));
  const snapDir = await mkdtemp(join(tmpdir(), 'mesh-bench-xds-daemon-'));
  children.add(() => rmSync(snapDir, { recursive: true, force: true }));
  try {
    o.build = await snapshotDaemon(o.daemonRepo ?? REPO_ROOT, HERE, snapDir);
    if (o.driver === 'go') o.goBinary = goLoadGenerator(REPO_ROOT);
    console.log(describeBuild(o.build));
    await runAll(o);
  } finally {
    await rm(snapDir, { recursive: true, force: true });
  }
}

async function runAll(o: Options): Promise<void> {
  const env = { ...(o.systemMalloc ? {} : DAEMON_RUNTIME_ENV), ...o.daemonEnv };
  console.log(`daemon environment: ${Object.entries(env).map(([k, v]) => `${k}=${v}`).join(' ') || '(none added)'}`);
  if (!o.matrix) {
    const r = await runOnce(o.services, o.clients, o);
    printRun(r);
    console.log(JSON.stringify(jsonOf(r)));
    process.exitCode = r.error ? 1 : 0;
    return;
  }
  const combos: Array<[number, number]> = [];
  for (const s of [100, 1000, 5000]) for (const p of [100, 1000, 2000]) combos.push([s, p]);
  combos.sort((a, b) => a[0] * a[1] - b[0] * b[1] || a[0] - b[0]);
  const results: Array<RunResult & { skipped?: string }> = [];
  for (const [s, p] of combos) {
    // Estimate from the largest completed run with the same number of services (else the largest
    // run): its fixed waits plus the rest of its time, scaled.
    const done = results.filter((r) => !r.skipped && !r.error && r.initial);
    const bySize = (a: RunResult, b: RunResult): number => b.services * b.clients - a.services * a.clients;
    const ref = done.filter((r) => r.services === s).sort(bySize)[0] ?? done.sort(bySize)[0];
    if (ref) {
      // per-proxy work grows faster than linearly with services (see README), and GC with clients
      const sf = s / ref.services;
      const factor = (p / ref.clients) ** 1.2 * (sf > 1 ? sf ** 1.5 : sf);
      const est = ref.waitsS + 10 + (ref.totalS - ref.waitsS) * factor;
      if (est > o.budgetS) {
        console.log(`-- ${o.kind} ${s}×${p}: skipped (estimated ${est.toFixed(0)} s > budget ${o.budgetS} s)`);
        results.push({ kind: o.kind, services: s, clients: p, totalS: 0, waitsS: 0, skipped: `est. ${(est / 60).toFixed(1)} min > ${(o.budgetS / 60).toFixed(1)} min` });
        continue;
      }
    }
    console.log(`-- ${o.kind} ${s}×${p}: running`);
    const r = await runOnce(s, p, { ...o, runLimitS: o.budgetS });
    printRun(r);
    results.push(r);
  }
  console.log(`\nxDS benchmark matrix — kind=${o.kind} (${cpus().length} cores, node ${process.version}); targets: issue 18 (see README)`);
  if (o.build) console.log(describeBuild(o.build));
  console.log(summaryTable(results));
  console.log(JSON.stringify(results.map((r) => (r.skipped ? { bench: 'xds', kind: r.kind, services: r.services, clients: r.clients, skipped: r.skipped } : jsonOf(r)))));
  process.exitCode = results.some((r) => r.error) ? 1 : 0;
}

main().catch((e: unknown) => {
  console.error(e instanceof Error ? e.message : String(e));
  process.exit(2);
});
