/**
 * The reconcile contract and its runner (src/controllers/runtime/): dedup of a key while it waits,
 * a key queued while it is reconciled is reconciled once more, per-key exponential backoff that
 * does not slow other keys, the overall token bucket that spreads the retries of many keys,
 * terminal errors (logged, counted in controller_sync_errors_total{controller}, not retried until
 * queued again), `again(ms)`, sources that replay a cache, and leader gating with two replicas on a
 * real Lease. Where a cluster is involved it is the local API server.
 */
import pino from 'pino';
import { again, Controller, every, fromCache, Leadership, TerminalError, Trigger, type ReconcileContext } from '../../../src/controllers/runtime/index.js';
import { Informer, resourceRef } from '../../../src/kube/informer.js';
import type { KubeObject } from '../../../src/kube/types.js';
import { createMetrics } from '../../../src/metrics/metrics.js';
import { CLUSTER_START_TIMEOUT_MS } from '../../support/cluster.js';
import { configMap, createNamespace, deleteNamespace, kubeTestEnv, until, type KubeTestEnv } from '../../kube/helpers.js';

const tick = (ms = 0) => new Promise((r) => setTimeout(r, ms));
const silent = pino({ level: 'silent' });

/** A controller over an explicit trigger, with the reconcile function under test. */
function controllerOf(reconcile: (key: string, ctx: ReconcileContext) => unknown, extra: Partial<ConstructorParameters<typeof Controller<string>>[0]> = {}) {
  const trigger = new Trigger<string>();
  const controller = new Controller<string>({
    name: 'under-test',
    reconciler: { reconcile: async (key, ctx) => (await reconcile(key, ctx)) as ReturnType<typeof again> | void },
    sources: [trigger],
    log: silent,
    ...extra,
  });
  return { controller, trigger };
}

async function syncErrors(metrics: ReturnType<typeof createMetrics>, controller: string): Promise<number> {
  const m = await metrics.controllerSyncErrors.get();
  return m.values.filter((v) => v.labels.controller === controller).reduce((n, v) => n + v.value, 0);
}

describe('the reconcile contract', () => {
  it('reconciles a key queued many times while it waits once, and once more when queued during its reconcile', async () => {
    const runs: string[] = [];
    let release: () => void = () => undefined;
    const { controller, trigger } = controllerOf(async (key) => {
      runs.push(key);
      if (runs.length === 1) await new Promise<void>((r) => (release = r));
    });
    for (let i = 0; i < 5; i++) trigger.enqueue('a'); // before start: dropped, nobody listens
    controller.start();
    trigger.enqueue('a');
    await until('the first reconcile', () => runs.length === 1);
    for (let i = 0; i < 5; i++) trigger.enqueue('a'); // during the reconcile: once more afterwards
    release();
    await controller.whenIdle();
    await tick(20);
    expect(runs).toEqual(['a', 'a']);
    await controller.stop();
  });

  it('retries a failing key with per-key exponential delays, without slowing other keys', async () => {
    const times = new Map<string, number[]>();
    const retries: number[] = [];
    const start = performance.now();
    const { controller, trigger } = controllerOf(
      (key, ctx) => {
        const t = times.get(key) ?? [];
        t.push(performance.now() - start);
        times.set(key, t);
        if (key === 'flaky') {
          retries.push(ctx.retries);
          if (t.length < 4) throw new Error(`attempt ${t.length} failed`);
        }
      },
      { retry: { baseDelayMs: 40, maxDelayMs: 10_000 } },
    );
    controller.start();
    trigger.enqueue('flaky');
    await until('the first failure', () => (times.get('flaky')?.length ?? 0) >= 2, 2000);
    trigger.enqueue('steady');
    await until('steady reconciled', () => times.has('steady'), 500);
    await until('four tries of flaky', () => times.get('flaky')?.length === 4, 3000);
    const t = times.get('flaky') ?? [];
    const gaps = t.slice(1).map((x, i) => x - t[i]);
    // 40, 80, 160 ms
    expect(gaps[0]).toBeGreaterThanOrEqual(38);
    expect(gaps[1]).toBeGreaterThanOrEqual(78);
    expect(gaps[2]).toBeGreaterThanOrEqual(158);
    expect(retries).toEqual([0, 1, 2, 3]);
    // `steady` was reconciled at once, while flaky waited for its retry.
    expect((times.get('steady') ?? [])[0]).toBeLessThan(t[2]);
    expect(controller.stats()).toMatchObject({ failures: 3, terminal: 0 });
    await controller.stop();
  });

  it('spreads the retries of many failing keys through one token bucket', async () => {
    const firstTry = new Map<string, number>();
    const retryAt = new Map<string, number>();
    const { controller, trigger } = controllerOf(
      (key) => {
        if (!firstTry.has(key)) {
          firstTry.set(key, performance.now());
          throw new Error('down');
        }
        retryAt.set(key, performance.now());
      },
      { workers: 4, retry: { baseDelayMs: 1, maxDelayMs: 1, qps: 20, burst: 2 } },
    );
    controller.start();
    const keys = Array.from({ length: 10 }, (_, i) => `k${i}`);
    for (const k of keys) trigger.enqueue(k);
    await until('every key retried', () => retryAt.size === keys.length, 5000);
    const times = [...retryAt.values()].sort((a, b) => a - b);
    // 2 at once (the burst), the other 8 at 20 per second: at least 350 ms from first to last.
    expect(times[times.length - 1] - Math.min(...firstTry.values())).toBeGreaterThanOrEqual(350);
    await controller.stop();
  });

  it('logs and counts a terminal error and does not retry it until the key is queued again', async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    const lines: string[] = [];
    const log = pino({ level: 'info' }, { write: (l: string) => void lines.push(l) });
    let runs = 0;
    const { controller, trigger } = controllerOf(
      () => {
        runs++;
        throw new TerminalError('spec.replicas: expected number');
      },
      { name: 'terminal-test', syncErrors: metrics.controllerSyncErrors, log, retry: { baseDelayMs: 5 } },
    );
    controller.start();
    trigger.enqueue('bad');
    await until('the first run', () => runs === 1);
    await tick(200);
    expect(runs).toBe(1);
    expect(await syncErrors(metrics, 'terminal-test')).toBe(1);
    expect(lines.join('')).toContain('terminal-test: bad: spec.replicas: expected number (not retried until it changes)');
    trigger.enqueue('bad'); // the object changed
    await until('the second run', () => runs === 2);
    expect(await syncErrors(metrics, 'terminal-test')).toBe(2);
    expect(controller.stats()).toMatchObject({ terminal: 2, failures: 0 });
    await controller.stop();
  });

  it('counts ordinary errors under the controller name and stops counting once the key succeeds', async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    let runs = 0;
    const { controller, trigger } = controllerOf(
      () => {
        runs++;
        if (runs < 3) throw new Error('conflict');
      },
      { name: 'retry-test', syncErrors: metrics.controllerSyncErrors, retry: { baseDelayMs: 5 } },
    );
    controller.start();
    trigger.enqueue('x');
    await until('success after two failures', () => runs === 3);
    await tick(50);
    expect(runs).toBe(3);
    expect(await syncErrors(metrics, 'retry-test')).toBe(2);
    expect(await syncErrors(metrics, 'other')).toBe(0);
    await controller.stop();
  });

  it('reconciles a key again after the delay `again` asks for, with its failure count reset', async () => {
    const seen: Array<{ at: number; retries: number }> = [];
    const start = performance.now();
    const { controller, trigger } = controllerOf(
      (_key, ctx) => {
        seen.push({ at: performance.now() - start, retries: ctx.retries });
        if (seen.length === 1) throw new Error('once');
        if (seen.length < 4) return again(150);
      },
      { retry: { baseDelayMs: 5 } },
    );
    controller.start();
    trigger.enqueue('pending');
    await until('four reconciles', () => seen.length === 4, 3000);
    expect(seen.map((s) => s.retries)).toEqual([0, 1, 0, 0]);
    expect(seen[2].at - seen[1].at).toBeGreaterThanOrEqual(148);
    expect(seen[3].at - seen[2].at).toBeGreaterThanOrEqual(148);
    await tick(250);
    expect(seen).toHaveLength(4); // done: no more
    expect(controller.stats()).toMatchObject({ requeues: 2, failures: 1 });
    await controller.stop();
  });

  it('queues every key of a periodic resync, and aborts a running reconcile on stop', async () => {
    const counts = new Map<string, number>();
    let aborted = false;
    const controller = new Controller<string>({
      name: 'resync',
      log: silent,
      sources: [every(50, () => ['a', 'b'])],
      reconciler: {
        reconcile: async (key, { signal }) => {
          counts.set(key, (counts.get(key) ?? 0) + 1);
          if (key === 'b' && (counts.get('b') ?? 0) >= 3) {
            await new Promise<void>((r) => signal.addEventListener('abort', () => r(), { once: true }));
            aborted = signal.aborted;
          }
        },
      },
    });
    controller.start();
    await until('three resyncs of b', () => (counts.get('b') ?? 0) >= 3, 2000);
    expect(counts.get('a')).toBeGreaterThanOrEqual(2);
    await controller.stop();
    expect(aborted).toBe(true);
  });
});

describe('the contract on a real API server', () => {
  let env: KubeTestEnv;
  let ns: string;
  const leaderships: Leadership[] = [];

  beforeAll(async () => {
    env = await kubeTestEnv();
    ns = await createNamespace(env.client, 'runtime');
  }, CLUSTER_START_TIMEOUT_MS);

  afterAll(async () => {
    await Promise.all(leaderships.map((l) => l.stop()));
    await deleteNamespace(env?.client, ns);
    env?.client.close();
  });

  type Cm = KubeObject & { data?: Record<string, string> };
  const mirror = (name: string) => env.client.find<Cm>({ apiVersion: 'v1', kind: 'ConfigMap', name: `${name}-mirror`, namespace: ns });

  /** A controller that mirrors ConfigMaps labelled `role=<role>` to `<name>-mirror`, level-based. */
  function mirrorController(informer: Informer<Cm>, name: string, reconciled: string[]): Controller<string> {
    return new Controller<string>({
      name,
      log: silent,
      workers: 3,
      sources: [fromCache(informer)],
      retry: { baseDelayMs: 20 },
      reconciler: {
        reconcile: async (key) => {
          reconciled.push(key);
          const [namespace, cmName] = key.split('/');
          const src = informer.get(namespace, cmName);
          const target = { apiVersion: 'v1', kind: 'ConfigMap', name: `${cmName}-mirror`, namespace };
          if (!src) await env.client.delete(target);
          else await env.client.applyObject(configMap(namespace, `${cmName}-mirror`, src.data ?? {}, { role: 'mirror' }), { fieldManager: name, force: true });
        },
      },
    });
  }

  it('reconciles from the cache: objects there before the start, edits and deletes', async () => {
    const informer = new Informer<Cm>(env.client, { resource: resourceRef('v1', 'configmaps', { kind: 'ConfigMap' }), namespace: ns, labelSelector: 'role=source' });
    await env.client.create(configMap(ns, 'early', { v: '1' }, { role: 'source' }));
    informer.start();
    await informer.waitForSync({ timeoutMs: 10_000 });
    const controller = mirrorController(informer, 'mirror', []);
    controller.start(); // after the cache synced: it is replayed
    await until('the mirror of an object cached before the start', async () => (await mirror('early'))?.data?.v === '1', 10_000);
    await env.client.mergePatch({ apiVersion: 'v1', kind: 'ConfigMap', name: 'early', namespace: ns }, { data: { v: '2' } });
    await until('the updated mirror', async () => (await mirror('early'))?.data?.v === '2', 10_000);
    await env.client.delete({ apiVersion: 'v1', kind: 'ConfigMap', name: 'early', namespace: ns });
    await until('the mirror removed', async () => (await mirror('early')) === undefined, 10_000);
    await controller.stop();
    await informer.stop();
  });

  it('runs a controller only on the replica that leads, and on the other once it takes over', async () => {
    const informer = new Informer<Cm>(env.client, { resource: resourceRef('v1', 'configmaps', { kind: 'ConfigMap' }), namespace: ns, labelSelector: 'role=gated' });
    informer.start();
    await informer.waitForSync({ timeoutMs: 10_000 });
    const reconciled = { a: [] as string[], b: [] as string[] };
    const replica = (id: 'a' | 'b'): Leadership => {
      const l = new Leadership({
        lease: { client: env.client, namespace: ns, name: 'runtime-test', identity: `replica-${id}`, leaseDurationMs: 2000, renewDeadlineMs: 1500, retryPeriodMs: 300 },
        dutyRestartMs: 50,
      });
      l.add(mirrorController(informer, `gated-${id}`, reconciled[id]));
      leaderships.push(l);
      return l;
    };
    const a = replica('a');
    const b = replica('b');
    a.start();
    b.start();
    const [leader, standby, mine, theirs] = await until('one leader', () => {
      if (a.isLeader() && !b.isLeader()) return [a, b, reconciled.a, reconciled.b] as const;
      if (b.isLeader() && !a.isLeader()) return [b, a, reconciled.b, reconciled.a] as const;
      return undefined;
    });
    await env.client.create(configMap(ns, 'gated', { v: '1' }, { role: 'gated' }));
    await until('the leader to mirror it', async () => (await mirror('gated'))?.data?.v === '1', 10_000);
    expect(mine).toContain(`${ns}/gated`);
    expect(theirs).toEqual([]);
    expect(standby.runningDuties()).toEqual([]);

    await leader.stop();
    await until('the standby to lead', () => standby.isLeader(), 10_000);
    // Its controller starts with the cache replayed: the object is reconciled without an event.
    await until('the new leader to reconcile the cached object', () => theirs.includes(`${ns}/gated`), 10_000);
    await env.client.mergePatch({ apiVersion: 'v1', kind: 'ConfigMap', name: 'gated', namespace: ns }, { data: { v: '2' } });
    await until('the new leader to mirror the edit', async () => (await mirror('gated'))?.data?.v === '2', 10_000);
    const before = mine.length;
    await tick(300);
    expect(mine.length).toBe(before); // the old leader's controller stopped with its term
    await standby.stop();
    await informer.stop();
  });
});
