/**
 * Work queue semantics (dedup, one worker per key, re-processing of keys re-added during
 * processing, per-key backoff, shutdown with drain) and the Controller helper driven by a real
 * informer of the API server.
 */
import { Controller } from '../../src/kube/controller.js';
import { Informer, resourceRef } from '../../src/kube/informer.js';
import type { KubeObject } from '../../src/kube/types.js';
import { WorkQueue } from '../../src/kube/workqueue.js';
import { CLUSTER_START_TIMEOUT_MS } from '../support/cluster.js';
import { configMap, createNamespace, deleteNamespace, kubeTestEnv, type KubeTestEnv } from './helpers.js';
import { eventually } from '../support/eventually.js';

const tick = (ms = 0) => new Promise((r) => setTimeout(r, ms));

/** Runs `workers` loops over the queue; `work` gets each key. Returns a promise of their end. */
function runWorkers(q: WorkQueue<string>, workers: number, work: (key: string) => Promise<void>): Promise<void[]> {
  return Promise.all(
    Array.from({ length: workers }, async () => {
      for (;;) {
        const key = await q.get();
        if (key === undefined) return;
        try {
          await work(key);
        } finally {
          q.done(key);
        }
      }
    }),
  );
}

describe('work queue', () => {
  it('stores a key added many times while it waits once', async () => {
    const q = new WorkQueue<string>();
    for (let i = 0; i < 5; i++) {
      q.add('a');
      q.add('b');
    }
    expect(q.length).toBe(2);
    const seen: string[] = [];
    const workers = runWorkers(q, 2, async (k) => {
      seen.push(k);
    });
    await eventually('both keys', () => seen.length === 2, { timeoutMs: 15_000 });
    await q.shutdown();
    await workers;
    expect(seen.sort()).toEqual(['a', 'b']);
  });

  it('never hands one key to two workers, and processes a key re-added during processing once more after', async () => {
    const q = new WorkQueue<string>();
    let active = 0;
    let maxActive = 0;
    const runs: string[] = [];
    const workers = runWorkers(q, 4, async (k) => {
      active++;
      maxActive = Math.max(maxActive, active);
      runs.push(`start ${k}`);
      await tick(50);
      runs.push(`end ${k}`);
      active--;
    });
    q.add('x');
    await tick(10); // x is being processed by one worker
    q.add('x');
    q.add('x');
    await eventually('two runs of x', () => runs.filter((r) => r === 'end x').length === 2, { timeoutMs: 2000 });
    await tick(100);
    expect(runs).toEqual(['start x', 'end x', 'start x', 'end x']);
    expect(maxActive).toBe(1);
    await q.shutdown();
    await workers;
  });

  it('processes different keys in parallel', async () => {
    const q = new WorkQueue<string>();
    let active = 0;
    let maxActive = 0;
    const workers = runWorkers(q, 3, async () => {
      active++;
      maxActive = Math.max(maxActive, active);
      await tick(40);
      active--;
    });
    ['a', 'b', 'c'].forEach((k) => q.add(k));
    await eventually('all done', () => q.stats().processing === 0 && q.length === 0 && maxActive > 0, { timeoutMs: 15_000 });
    await tick(60);
    expect(maxActive).toBe(3);
    await q.shutdown();
    await workers;
  });

  it('re-adds failed keys after a per-key exponential delay, and forget resets it', async () => {
    const q = new WorkQueue<string>({ baseDelayMs: 40, maxDelayMs: 10_000 });
    const times: number[] = [];
    const start = performance.now();
    const workers = runWorkers(q, 1, async (k) => {
      times.push(performance.now() - start);
      if (times.length < 4) q.addRateLimited(k);
      else q.forget(k);
    });
    q.add('flaky');
    await eventually('four tries', () => times.length === 4, { timeoutMs: 3000 });
    const gaps = times.slice(1).map((t, i) => t - times[i]);
    // 40, 80, 160 ms
    expect(gaps[0]).toBeGreaterThanOrEqual(38);
    expect(gaps[1]).toBeGreaterThanOrEqual(78);
    expect(gaps[2]).toBeGreaterThanOrEqual(158);
    expect(gaps[2]).toBeGreaterThan(gaps[1]);
    expect(q.numRequeues('flaky')).toBe(0);
    // Another key starts from the base delay.
    expect(q.numRequeues('other')).toBe(0);
    await q.shutdown();
    await workers;
  });

  it('shutdown without drain stops handing out keys; with drain it finishes the queued keys first', async () => {
    const q1 = new WorkQueue<string>();
    const done1: string[] = [];
    ['a', 'b', 'c'].forEach((k) => q1.add(k));
    const w1 = runWorkers(q1, 1, async (k) => {
      await tick(30);
      done1.push(k);
    });
    await tick(5);
    await q1.shutdown();
    await w1;
    expect(done1).toEqual(['a']);
    q1.add('late');
    expect(q1.length).toBe(0);

    const q2 = new WorkQueue<string>();
    const done2: string[] = [];
    ['a', 'b', 'c'].forEach((k) => q2.add(k));
    const w2 = runWorkers(q2, 1, async (k) => {
      await tick(30);
      done2.push(k);
    });
    await tick(5);
    await q2.shutdown({ drain: true });
    expect(done2).toEqual(['a', 'b', 'c']);
    await w2;
  });
});

describe('controller', () => {
  let env: KubeTestEnv;
  let ns: string;

  beforeAll(async () => {
    env = await kubeTestEnv();
    ns = await createNamespace(env.client, 'kube-workqueue');
  }, CLUSTER_START_TIMEOUT_MS);

  afterAll(async () => {
    await deleteNamespace(env?.client, ns);
    env?.client.close();
  });

  it('reconciles informer events by key, retries failures with backoff and drops after maxRetries', async () => {
    type Cm = KubeObject & { data?: Record<string, string> };
    const informer = new Informer<Cm>(env.client, { resource: resourceRef('v1', 'configmaps', { kind: 'ConfigMap' }), namespace: ns, labelSelector: 'role=source' });
    const attempts = new Map<string, number>();
    const failures: string[] = [];
    let concurrentSameKey = false;
    const inFlight = new Set<string>();
    const controller = new Controller({
      name: 'mirror',
      workers: 3,
      maxRetries: 2,
      queue: { baseDelayMs: 20 },
      onError: (err, key, info) => failures.push(`${key} ${info.retries} ${info.willRetry}`),
      reconcile: async (key) => {
        if (inFlight.has(key)) concurrentSameKey = true;
        inFlight.add(key);
        try {
          const n = (attempts.get(key) ?? 0) + 1;
          attempts.set(key, n);
          const [namespace, name] = key.split('/');
          const src = informer.get(namespace, name);
          if (name === 'hopeless') throw new Error('cannot mirror this one');
          if (name === 'flaky' && n < 3) throw new Error(`attempt ${n} failed`);
          const target = { apiVersion: 'v1', kind: 'ConfigMap', name: `${name}-mirror`, namespace };
          if (!src) await env.client.delete(target);
          else await env.client.applyObject(configMap(namespace, `${name}-mirror`, src.data ?? {}, { role: 'mirror' }), { fieldManager: 'mirror', force: true });
        } finally {
          inFlight.delete(key);
        }
      },
    });
    controller.watch(informer);
    informer.start();
    controller.start();
    await informer.waitForSync({ timeoutMs: 10_000 });
    await env.client.create(configMap(ns, 'steady', { v: '1' }, { role: 'source' }));
    await env.client.create(configMap(ns, 'flaky', { v: '1' }, { role: 'source' }));
    await env.client.create(configMap(ns, 'hopeless', { v: '1' }, { role: 'source' }));
    const mirror = (name: string) => env.client.find<Cm>({ apiVersion: 'v1', kind: 'ConfigMap', name: `${name}-mirror`, namespace: ns });
    await eventually('mirrors of steady and flaky', async () => (await mirror('steady')) && (await mirror('flaky')), { timeoutMs: 10_000 });
    expect(attempts.get(`${ns}/flaky`)).toBe(3);
    await eventually('hopeless dropped', () => controller.stats().dropped === 1, { timeoutMs: 5000 });
    expect(attempts.get(`${ns}/hopeless`)).toBe(3); // first try + 2 retries
    expect(failures).toEqual(
      expect.arrayContaining([`${ns}/flaky 0 true`, `${ns}/flaky 1 true`, `${ns}/hopeless 0 true`, `${ns}/hopeless 1 true`, `${ns}/hopeless 2 false`]),
    );
    // Level-based: a change is reconciled from the current state; a delete removes the mirror.
    await env.client.mergePatch({ apiVersion: 'v1', kind: 'ConfigMap', name: 'steady', namespace: ns }, { data: { v: '2' } });
    await eventually('updated mirror', async () => (await mirror('steady'))?.data?.v === '2', { timeoutMs: 10_000 });
    await env.client.delete({ apiVersion: 'v1', kind: 'ConfigMap', name: 'steady', namespace: ns });
    await eventually('mirror removed', async () => (await mirror('steady')) === undefined, { timeoutMs: 10_000 });
    expect(concurrentSameKey).toBe(false);
    await controller.stop({ drain: true });
    await informer.stop();
  });
});
