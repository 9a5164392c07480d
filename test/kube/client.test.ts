/**
 * The Kubernetes client against the real API server: rate limit, server-side apply, merge patch,
 * the status subresource, generic get/list/delete through discovery, typed API clients, and
 * typed errors.
 */
import { CoreV1Api, type V1ConfigMap } from '@kubernetes/client-node';
import { KubeClient } from '../../src/kube/client.js';
import { fromApiException, typedApi } from '../../src/kube/typed-api.js';
import { KubeApiError, isConflict, isNotFound } from '../../src/kube/errors.js';
import { TokenBucket } from '../../src/kube/rate-limiter.js';
import type { KubeObject } from '../../src/kube/types.js';
import { CLUSTER_START_TIMEOUT_MS } from '../support/cluster.js';
import { applyMeshCrds, configMap, createNamespace, deleteNamespace, kubeTestEnv, type KubeTestEnv } from './helpers.js';

let env: KubeTestEnv;
let ns: string;

beforeAll(async () => {
  env = await kubeTestEnv();
  ns = await createNamespace(env.client, 'kube-client');
  await applyMeshCrds(env.client);
}, CLUSTER_START_TIMEOUT_MS);

afterAll(async () => {
  await deleteNamespace(env?.client, ns);
  env?.client.close();
});

describe('rate limiter', () => {
  it('hands out the burst at once, then one token per 1/qps, first come first served', async () => {
    let now = 0;
    const bucket = new TokenBucket(10, 3, () => now);
    const granted: number[] = [];
    const takes = Array.from({ length: 6 }, (_, i) => bucket.take().then(() => granted.push(i)));
    await Promise.resolve();
    await Promise.resolve();
    expect(granted).toEqual([0, 1, 2]);
    expect(bucket.tryTake()).toBe(false);
    now = 1000; // the clock moves; the waiting takes were already scheduled at 100, 200, 300 ms
    await Promise.all(takes);
    expect(granted).toEqual([0, 1, 2, 3, 4, 5]);
    expect(bucket.stats()).toMatchObject({ taken: 6, throttled: 3 });
  });

  it('holds the request rate of a client to its QPS', async () => {
    const { client } = await KubeClient.create({ kubeconfig: env.cluster.kubeconfig, qps: 5, burst: 2 });
    try {
      const started = performance.now();
      const done: number[] = [];
      await Promise.all(
        Array.from({ length: 12 }, () => client.request({ method: 'GET', path: `/api/v1/namespaces/${ns}` }).then(() => done.push(performance.now() - started))),
      );
      const elapsed = performance.now() - started;
      // 2 at once, then 10 more at 5 per second: the last one cannot start before 2 s.
      expect(elapsed).toBeGreaterThanOrEqual(1950);
      expect(elapsed).toBeLessThan(6000);
      // No second is busier than QPS + burst.
      done.sort((a, b) => a - b);
      const inFirstSecond = done.filter((t) => t < 1000).length;
      expect(inFirstSecond).toBeLessThanOrEqual(2 + 5);
      expect(client.limiter.stats()).toMatchObject({ taken: 12, throttled: 10 });
    } finally {
      client.close();
    }
  });

  it('also throttles the typed API clients of client-node', async () => {
    const { client } = await KubeClient.create({ kubeconfig: env.cluster.kubeconfig, qps: 4, burst: 1 });
    try {
      const started = performance.now();
      const names = await Promise.all(Array.from({ length: 5 }, () => typedApi(client, CoreV1Api).readNamespace({ name: ns }).then((n) => n.metadata?.name)));
      expect(names).toEqual([ns, ns, ns, ns, ns]);
      expect(performance.now() - started).toBeGreaterThanOrEqual(950);
      expect(client.limiter.stats().taken).toBe(5);
    } finally {
      client.close();
    }
  });
});

describe('server-side apply', () => {
  it('is idempotent: a second apply without change keeps the resourceVersion', async () => {
    const obj = configMap(ns, 'ssa', { a: '1' });
    const first = await env.client.applyObject(obj, { fieldManager: 'test-a' });
    const second = await env.client.applyObject(obj, { fieldManager: 'test-a' });
    expect(second.metadata?.resourceVersion).toBe(first.metadata?.resourceVersion);
    const changed = await env.client.applyObject(configMap(ns, 'ssa', { a: '2' }), { fieldManager: 'test-a' });
    expect(changed.metadata?.resourceVersion).not.toBe(first.metadata?.resourceVersion);
    expect((changed as V1ConfigMap).data).toEqual({ a: '2' });
  });

  it('refuses to take over another manager’s field without force, and takes it with force', async () => {
    await env.client.applyObject(configMap(ns, 'owned', { k: 'from-a' }), { fieldManager: 'manager-a' });
    const err = await env.client.applyObject(configMap(ns, 'owned', { k: 'from-b' }), { fieldManager: 'manager-b' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KubeApiError);
    expect(isConflict(err)).toBe(true);
    expect((err as KubeApiError).apiMessage).toContain('manager-a');
    const forced = await env.client.applyObject(configMap(ns, 'owned', { k: 'from-b' }), { fieldManager: 'manager-b', force: true });
    expect((forced as V1ConfigMap).data).toEqual({ k: 'from-b' });
  });

  it('applies and merge-patches the status subresource separately from the spec', async () => {
    const vs = {
      apiVersion: 'networking.mesh.io/v1',
      kind: 'VirtualService',
      metadata: { name: 'status-vs', namespace: ns },
      spec: { hosts: ['a.example.com'], http: [{ route: [{ destination: { host: 'a.example.com' } }] }] },
    };
    await env.client.applyObject(vs, { fieldManager: 'test' });
    // status in a main-resource apply is ignored by the server
    await env.client.applyObject({ ...vs, status: { ignored: true } }, { fieldManager: 'test' });
    type WithStatus = KubeObject & { status?: Record<string, unknown>; spec?: unknown };
    expect((await env.client.get<WithStatus>({ ...vs, name: 'status-vs', namespace: ns })).status).toBeUndefined();
    const applied = await env.client.applyStatus<WithStatus>(
      { apiVersion: vs.apiVersion, kind: vs.kind, metadata: vs.metadata, status: { observedGeneration: 1, conditions: [{ type: 'Reconciled', status: 'True' }] } } as WithStatus,
      { fieldManager: 'status-writer' },
    );
    expect(applied.status).toEqual({ observedGeneration: 1, conditions: [{ type: 'Reconciled', status: 'True' }] });
    const patched = await env.client.patchStatus<WithStatus>({ ...vs, name: 'status-vs', namespace: ns }, { status: { observedGeneration: 2 } });
    expect(patched.status).toMatchObject({ observedGeneration: 2, conditions: [{ type: 'Reconciled', status: 'True' }] });
    expect(patched.spec).toEqual(vs.spec);
  });
});

describe('generic calls through discovery', () => {
  it('merge patch adds and removes fields (null deletes)', async () => {
    await env.client.create(configMap(ns, 'merge', { keep: '1', drop: '2' }, { one: '1' }));
    const ref = { apiVersion: 'v1', kind: 'ConfigMap', name: 'merge', namespace: ns };
    const patched = await env.client.mergePatch<V1ConfigMap>(ref, { metadata: { labels: { two: '2' } }, data: { drop: null, add: '3' } });
    expect(patched.metadata?.labels).toEqual({ one: '1', two: '2' });
    expect(patched.data).toEqual({ keep: '1', add: '3' });
  });

  it('gets, lists and deletes any kind; missing objects are typed NotFound errors', async () => {
    await env.client.create(configMap(ns, 'generic', { x: 'y' }, { pick: 'me' }));
    const ref = { apiVersion: 'v1', kind: 'ConfigMap', name: 'generic', namespace: ns };
    expect((await env.client.get<V1ConfigMap>(ref)).data).toEqual({ x: 'y' });
    const list = await env.client.list('v1', 'ConfigMap', { namespace: ns, labelSelector: 'pick=me' });
    expect(list.items.map((i) => i.metadata?.name)).toEqual(['generic']);
    expect(await env.client.delete(ref)).toBe(true);
    expect(await env.client.delete(ref)).toBe(false);
    const err = await env.client.get(ref).catch((e: unknown) => e);
    expect(isNotFound(err)).toBe(true);
    expect(err).toMatchObject({ statusCode: 404, reason: 'NotFound' });
    expect(await env.client.find(ref)).toBeUndefined();
  });

  it('resolves CRD kinds and names the served kinds when a kind is unknown', async () => {
    const info = await env.client.resource('networking.mesh.io/v1', 'VirtualService');
    expect(info).toMatchObject({ group: 'networking.mesh.io', version: 'v1', plural: 'virtualservices', namespaced: true });
    const err = await env.client.resource('networking.mesh.io/v1', 'VirtualServce').catch((e: unknown) => e);
    expect(isNotFound(err)).toBe(true);
    expect((err as Error).message).toMatch(/serves no kind VirtualServce in networking\.mesh\.io\/v1 \(it serves: .*VirtualService/);
    const gv = await env.client.resource('nothing.mesh.io/v9', 'Thing').catch((e: unknown) => e);
    expect((gv as Error).message).toContain('does not serve nothing.mesh.io/v9');
  });

  it('reports refused objects with reason and the field of each cause', async () => {
    const err = await env.client.create(configMap(ns, 'Bad_Name', {})).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KubeApiError);
    const e = err as KubeApiError;
    expect(e.statusCode).toBe(422);
    expect(e.reason).toBe('Invalid');
    expect(e.causes.map((c) => c.field)).toContain('metadata.name');
  });

  it('turns the errors of client-node’s typed clients into KubeApiError', async () => {
    const err = await typedApi(env.client, CoreV1Api).readNamespacedConfigMap({ name: 'absent', namespace: ns }).catch((e: unknown) => e);
    const typed = fromApiException(err);
    expect(typed?.statusCode).toBe(404);
    expect(typed?.reason).toBe('NotFound');
  });
});
