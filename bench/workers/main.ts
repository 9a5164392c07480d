/**
 * Do worker threads pay for generating and encoding xDS? (issue 18; docs/adr/0198)
 *
 * Builds the bench/xds mesh (N ServiceEntries, a DestinationRule each, a VirtualService every tenth,
 * optionally VIPs) and then the first CDS and RDS of S scopes (one sidecar of namespace ns-k per
 * scope), with the daemon's own generators, store, registries and snapshot code from dist/:
 *
 * - `main`: on the main thread, as the daemon does today (one memo and one resource cache, so later
 *   scopes reuse the clusters and routes the first one encoded).
 * - `workers W` (W = 1, 2, …): the snapshot's inputs (the parsed config objects) are posted to W
 *   worker threads (structured clone: counted), each builds its own model from them (counted), the
 *   scopes are dealt round-robin, and each worker sends a scope's resources back as one transferred
 *   ArrayBuffer (encoded `Any` bytes back to back, plus names and versions), which the main thread
 *   turns into resources again and de-duplicates by version, as a shared cache would keep them.
 *
 * It reports, per mode: wall time until every scope's resources are on the main thread, the main
 * thread's CPU (what blocks the event loop), the CPU of every thread together, and for workers the
 * snapshot cost (clone on the main thread, model build in the worker) apart from generation.
 * Prints figures, asserts nothing; run by hand:
 *
 *   npm run build
 *   npm run bench:workers -- [--services 5000] [--scopes 4] [--workers 1,2] [--vips] [--rounds 2]
 */
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import pino from 'pino';
import { parseArgs } from 'node:util';
import { parseConfigDocuments } from '../../src/config/parse.js';
import { MemoryConfigStore } from '../../src/config/store.js';
import type { ConfigObject } from '../../src/config/types.js';
import { createMetrics } from '../../src/metrics/metrics.js';
import { MeshModel } from '../../src/model/mesh-model.js';
import { DEFAULT_MESH_SETTINGS } from '../../src/model/mesh-settings.js';
import { parseProxy, type Proxy } from '../../src/model/proxy.js';
import { DEFAULT_FEATURES } from '../../src/model/push-context.js';
import { AggregateRegistry } from '../../src/registry/aggregate.js';
import { ServiceEntryRegistry } from '../../src/registry/service-entry.js';
import { generatorsFor } from '../../src/bootstrap/generators.js';
import { ResourceCache, type EncodedResource } from '../../src/xds/cache.js';
import { DEFAULT_GENERATOR_SETTINGS } from '../../src/xds/generators/types.js';
import { TypeUrl } from '../../src/xds/types.js';
import { MeshConfig } from '../xds/mesh-config.js';
import { HTTP_PORT, serviceHost } from '../xds/naming.js';

interface Built {
  generate(scope: number): { cds: ReadonlyArray<EncodedResource>; rds: ReadonlyArray<EncodedResource> };
  stop(): void;
}

/** The daemon's model over `objects`, and the first CDS + RDS of a scope's sidecar. */
function buildModel(objects: ConfigObject[], services: number, vips: boolean): Built {
  const store = new MemoryConfigStore();
  store.applySource('bench', objects);
  store.markSynced();
  const mesh = DEFAULT_MESH_SETTINGS;
  const se = new ServiceEntryRegistry(store, mesh.domain, mesh.clusterId);
  const registry = new AggregateRegistry([se]);
  void registry.start();
  const model = new MeshModel(store, registry, mesh, { debounceAfterMs: 0, debounceMaxMs: 0, edsDebounce: true, features: DEFAULT_FEATURES }, createMetrics({ defaultMetrics: false }), pino({ level: 'silent' }));
  model.start();
  const cache = new ResourceCache(60_000, true, undefined, new Set(['cds']));
  // the names a sidecar asks for: the shared table, or with VIPs every service's own configuration
  const routeNames = new Set<string>([String(HTTP_PORT)]);
  if (vips) for (let i = 0; i < services; i++) routeNames.add(`${serviceHost(i)}:${HTTP_PORT}`);
  return {
    generate(scope) {
      const ns = `ns-${scope}`;
      const proxy: Proxy = parseProxy(`sidecar~10.201.0.${scope + 1}~bench-${scope}.${ns}~${ns}.svc.cluster.local`, { NAMESPACE: ns });
      const { push, endpoints } = model.current();
      const gen = generatorsFor(proxy);
      const input = { proxy, push, endpoints, cache, settings: DEFAULT_GENERATOR_SETTINGS };
      const cds = gen[TypeUrl.Cluster]({ ...input, names: undefined });
      const rds = gen[TypeUrl.Route]({ ...input, names: routeNames });
      return { cds, rds };
    },
    stop() {
      model.stop();
      registry.stop();
    },
  };
}

/** One message carrying a list of resources: the bytes back to back in one buffer to transfer. */
interface Packed {
  readonly bytes: ArrayBuffer;
  readonly ends: Uint32Array;
  readonly names: string[];
  readonly versions: string[];
}

function pack(list: ReadonlyArray<EncodedResource>): Packed {
  let total = 0;
  for (const r of list) total += r.any.length;
  const bytes = new ArrayBuffer(total);
  const view = new Uint8Array(bytes);
  const ends = new Uint32Array(list.length);
  let off = 0;
  list.forEach((r, i) => {
    view.set(r.any, off);
    off += r.any.length;
    ends[i] = off;
  });
  return { bytes, ends, names: list.map((r) => r.name), versions: list.map((r) => r.version) };
}

/** Resources again, one object per distinct version (what a shared cache on the main thread keeps). */
function unpack(p: Packed, shared: Map<string, EncodedResource>): EncodedResource[] {
  const out: EncodedResource[] = [];
  let start = 0;
  for (let i = 0; i < p.ends.length; i++) {
    const version = p.versions[i];
    const end = p.ends[i];
    let r = shared.get(version);
    if (!r) {
      r = { name: p.names[i], version, any: Buffer.from(p.bytes, start, end - start) };
      shared.set(version, r);
    }
    out.push(r);
    start = end;
  }
  return out;
}

const threadCpuMs = (): number => {
  const u = process.threadCpuUsage();
  return (u.user + u.system) / 1000;
};
const processCpuMs = (): number => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

// ---------------------------------------------------------------------------------------------
// Worker side

type ToWorker = { kind: 'snapshot'; objects: ConfigObject[]; services: number; vips: boolean } | { kind: 'scope'; scope: number } | { kind: 'stop' };
type FromWorker = { kind: 'ready'; buildCpuMs: number } | { kind: 'scope'; scope: number; cds: Packed; rds: Packed; cpuMs: number };

if (!isMainThread && workerData === 'bench-workers') {
  let built: Built | undefined;
  parentPort!.on('message', (m: ToWorker) => {
    if (m.kind === 'snapshot') {
      const t = threadCpuMs();
      built?.stop();
      built = buildModel(m.objects, m.services, m.vips);
      parentPort!.postMessage({ kind: 'ready', buildCpuMs: threadCpuMs() - t } satisfies FromWorker);
    } else if (m.kind === 'scope') {
      const t = threadCpuMs();
      const { cds, rds } = built!.generate(m.scope);
      const msg: FromWorker = { kind: 'scope', scope: m.scope, cds: pack(cds), rds: pack(rds), cpuMs: 0 };
      msg.cpuMs = threadCpuMs() - t;
      parentPort!.postMessage(msg, [msg.cds.bytes, msg.rds.bytes]);
    } else {
      built?.stop();
      process.exit(0);
    }
  });
}

// ---------------------------------------------------------------------------------------------
// Main side

interface ModeResult {
  readonly mode: string;
  readonly wallMs: number;
  readonly mainCpuMs: number;
  readonly allCpuMs: number;
  /** Workers: main-thread time to post the snapshot; CPU to build the model (main: its own; workers: the sum over them, besides the main thread's own). */
  readonly snapshotPostMs?: number;
  readonly snapshotBuildCpuMs?: number;
  /** Workers: worker CPU generating and packing (sum), main-thread CPU unpacking. */
  readonly generateCpuMs: number;
  readonly unpackMs?: number;
  readonly mbReceived: number;
  readonly distinctResources: number;
}

async function runMain(objects: ConfigObject[], services: number, vips: boolean, scopes: number): Promise<ModeResult> {
  const t0 = performance.now();
  const c0 = threadCpuMs();
  const p0 = processCpuMs();
  const built = buildModel(objects, services, vips);
  const afterBuild = threadCpuMs();
  const versions = new Set<string>();
  let bytes = 0;
  for (let s = 0; s < scopes; s++) {
    const { cds, rds } = built.generate(s);
    for (const r of [...cds, ...rds]) {
      if (!versions.has(r.version)) bytes += r.any.length;
      versions.add(r.version);
    }
    await new Promise((r) => setImmediate(r));
  }
  const res: ModeResult = {
    mode: 'main thread',
    wallMs: performance.now() - t0,
    mainCpuMs: threadCpuMs() - c0,
    allCpuMs: processCpuMs() - p0,
    snapshotBuildCpuMs: afterBuild - c0,
    generateCpuMs: threadCpuMs() - afterBuild,
    mbReceived: bytes / 1e6,
    distinctResources: versions.size,
  };
  built.stop();
  return res;
}

async function runWorkers(objects: ConfigObject[], services: number, vips: boolean, scopes: number, count: number): Promise<ModeResult> {
  const workers = Array.from({ length: count }, () => new Worker(new URL(import.meta.url), { workerData: 'bench-workers' }));
  await Promise.all(workers.map((w) => new Promise((r) => w.once('online', r))));
  const t0 = performance.now();
  const c0 = threadCpuMs();
  const p0 = processCpuMs();
  // the snapshot: posted to every worker (the clone happens here, on the main thread)
  const ready = workers.map((w) => new Promise<number>((r) => w.once('message', (m: FromWorker) => r(m.kind === 'ready' ? m.buildCpuMs : 0))));
  const postStart = threadCpuMs();
  for (const w of workers) w.postMessage({ kind: 'snapshot', objects, services, vips } satisfies ToWorker);
  const snapshotPostMs = threadCpuMs() - postStart;
  // the main thread keeps its own snapshot (everything else reads it) while the workers build theirs
  const own = buildModel(objects, services, vips);
  const buildCpu = await Promise.all(ready);
  // the scopes, round-robin; each worker works through its share in order
  const shared = new Map<string, EncodedResource>();
  let unpackMs = 0;
  let generateCpuMs = 0;
  let bytes = 0;
  const done = workers.map(
    (w, wi) =>
      new Promise<void>((resolve) => {
        let left = 0;
        for (let s = wi; s < scopes; s += count) left++;
        if (left === 0) resolve();
        w.on('message', (m: FromWorker) => {
          if (m.kind !== 'scope') return;
          const u = threadCpuMs();
          unpack(m.cds, shared);
          unpack(m.rds, shared);
          unpackMs += threadCpuMs() - u;
          bytes += m.cds.bytes.byteLength + m.rds.bytes.byteLength;
          generateCpuMs += m.cpuMs;
          if (--left === 0) resolve();
        });
        for (let s = wi; s < scopes; s += count) w.postMessage({ kind: 'scope', scope: s } satisfies ToWorker);
      }),
  );
  await Promise.all(done);
  const res: ModeResult = {
    mode: `${count} worker${count > 1 ? 's' : ''}`,
    wallMs: performance.now() - t0,
    mainCpuMs: threadCpuMs() - c0,
    allCpuMs: processCpuMs() - p0,
    snapshotPostMs,
    snapshotBuildCpuMs: buildCpu.reduce((a, b) => a + b, 0),
    generateCpuMs,
    unpackMs,
    mbReceived: bytes / 1e6,
    distinctResources: shared.size,
  };
  own.stop();
  for (const w of workers) w.postMessage({ kind: 'stop' } satisfies ToWorker);
  await Promise.all(workers.map((w) => new Promise((r) => w.once('exit', r))));
  return res;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      services: { type: 'string', default: '5000' },
      scopes: { type: 'string', default: '4' },
      workers: { type: 'string', default: '1,2' },
      vips: { type: 'boolean', default: false },
      rounds: { type: 'string', default: '2' },
    },
  });
  const services = Number(values.services);
  const scopes = Number(values.scopes);
  const rounds = Number(values.rounds);
  const counts = values.workers.split(',').map(Number);
  for (const [name, v] of [['--services', services], ['--scopes', scopes], ['--rounds', rounds], ...counts.map((c) => ['--workers', c] as const)] as const) {
    if (!Number.isInteger(v) || v < 1) throw new Error(`${name}: expected a positive integer, got ${String(v)}`);
  }
  if (scopes > 10) throw new Error('--scopes: at most 10 (the bench mesh has namespaces ns-0 … ns-9)');
  const dir = await mkdtemp(join(tmpdir(), 'mesh-bench-workers-'));
  const objects: ConfigObject[] = [];
  try {
    await new MeshConfig(dir, services, values.vips).writeAll();
    for (const f of (await readdir(dir)).sort()) {
      const parsed = parseConfigDocuments(await readFile(join(dir, f), 'utf8'), f, 'default');
      objects.push(...parsed.objects);
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  const load = loadavg()[0];
  console.log(`bench/workers: ${services} services${values.vips ? ' with VIPs' : ''}, first CDS + RDS of ${scopes} scopes; ${objects.length} config objects; ${availableParallelism()} cores, load ${load.toFixed(2)}, node ${process.version}`);
  const results: ModeResult[] = [];
  for (let r = 0; r < rounds; r++) {
    results.push(await runMain(objects, services, values.vips, scopes));
    for (const c of counts) results.push(await runWorkers(objects, services, values.vips, scopes, c));
  }
  const fmt = (n: number | undefined): string => (n === undefined ? '–' : n.toFixed(0));
  console.log('mode          wall ms  main-thread CPU ms  all threads CPU ms  snapshot: post ms / build CPU ms  generate CPU ms  unpack ms  MB received  distinct');
  for (const r of results) {
    console.log(
      `${r.mode.padEnd(12)}  ${fmt(r.wallMs).padStart(7)}  ${fmt(r.mainCpuMs).padStart(18)}  ${fmt(r.allCpuMs).padStart(18)}  ${`${fmt(r.snapshotPostMs)} / ${fmt(r.snapshotBuildCpuMs)}`.padStart(32)}  ${fmt(r.generateCpuMs).padStart(15)}  ${fmt(r.unpackMs).padStart(9)}  ${r.mbReceived.toFixed(1).padStart(11)}  ${String(r.distinctResources).padStart(8)}`,
    );
  }
  console.log(JSON.stringify({ bench: 'workers', services, scopes, vips: values.vips, load_avg_1m: load, cores: availableParallelism(), node: process.version, results }));
}

if (isMainThread) {
  main().catch((e: unknown) => {
    console.error(e instanceof Error ? e.message : String(e));
    process.exit(1);
  });
}
