/**
 * The informer against the real API server: ordered add/update/delete, paged lists, selectors,
 * namespace scope, transform, resync, and recovery from broken, refused, silent (half-open) and
 * expired (410 Gone) watches. Network faults are injected by a proxy in front of the API server
 * (fault-proxy.ts); every answer still comes from the real server.
 */
import { KubeClient } from '../../src/kube/client.js';
import { Informer, dropManagedFields, resourceRef, type InformerOptions } from '../../src/kube/informer.js';
import type { InformerEvent, KubeObject } from '../../src/kube/types.js';
import { CLUSTER_START_TIMEOUT_MS } from '../support/cluster.js';
import { FaultProxy } from './fault-proxy.js';
import { applyMeshCrds, configMap, createNamespace, deleteNamespace, describeEvent, kubeTestEnv, type KubeTestEnv } from './helpers.js';
import { eventually } from '../support/eventually.js';

type ConfigMap = KubeObject & { data?: Record<string, string>; metadata: KubeObject['metadata'] & { managedFields?: unknown } };

let env: KubeTestEnv;
let ns: string;
let proxy: FaultProxy;
let proxied: KubeClient;
const running: Array<Informer<KubeObject>> = [];

beforeAll(async () => {
  env = await kubeTestEnv();
  ns = await createNamespace(env.client, 'kube-informer');
  await applyMeshCrds(env.client);
  proxy = new FaultProxy(env.creds);
  await proxy.listen();
  proxied = new KubeClient(proxy.kubeConfig(), { qps: 0 });
}, CLUSTER_START_TIMEOUT_MS);

afterEach(async () => {
  proxy.refuse(false);
  proxy.freeze(false);
  await Promise.all(running.splice(0).map((i) => i.stop()));
});

afterAll(async () => {
  proxied?.close();
  await proxy?.close();
  await deleteNamespace(env?.client, ns);
  env?.client.close();
});

/** A started informer of ConfigMaps carrying label `test=<label>` in the test namespace, with its events. */
function cmInformer(label: string, opts: Partial<InformerOptions<ConfigMap>> = {}, client: KubeClient = env.client) {
  const errors: string[] = [];
  const informer = new Informer<ConfigMap>(client, {
    resource: resourceRef('v1', 'configmaps', { kind: 'ConfigMap' }),
    namespace: ns,
    labelSelector: `test=${label}`,
    backoff: { initialMs: 100, maxMs: 1000 },
    onError: (err) => errors.push(err.message),
    ...opts,
  });
  const events: string[] = [];
  const raw: Array<InformerEvent<ConfigMap>> = [];
  informer.onEvent((e) => {
    events.push(describeEvent(e));
    raw.push(e);
  });
  running.push(informer as unknown as Informer<KubeObject>);
  informer.start();
  return { informer, events, raw, errors };
}

const cm = (name: string, label: string, data: Record<string, string> = { v: '1' }) => configMap(ns, name, data, { test: label });
const ref = (name: string) => ({ apiVersion: 'v1', kind: 'ConfigMap', name, namespace: ns });

describe('informer', () => {
  it('sees add, update and delete in order, and holds the current state', async () => {
    const { informer, events } = cmInformer('order');
    await informer.waitForSync({ timeoutMs: 10_000 });
    expect(informer.list()).toEqual([]);
    await env.client.create(cm('one', 'order'));
    await env.client.mergePatch(ref('one'), { data: { v: '2' } });
    await env.client.create(cm('two', 'order'));
    await env.client.delete(ref('one'));
    await eventually('four events', () => events.length >= 4, { timeoutMs: 15_000 });
    expect(events).toEqual(['add one', 'update one', 'add two', 'delete one']);
    expect(informer.list().map((o) => o.metadata?.name)).toEqual(['two']);
    expect(informer.list(ns).map((o) => o.metadata?.name)).toEqual(['two']);
    expect(informer.list('another-namespace')).toEqual([]);
    expect(informer.get(ns, 'two')?.data).toEqual({ v: '1' });
    expect(informer.get(ns, 'one')).toBeUndefined();
  });

  it('loads the first list in pages, fills in kind and apiVersion, and replays nothing to later subscribers', async () => {
    await Promise.all(['p1', 'p2', 'p3', 'p4', 'p5'].map((n) => env.client.create(cm(n, 'paged'))));
    const before = proxy.requests.length;
    const { informer, events } = cmInformer('paged', { pageSize: 2 }, proxied);
    await informer.waitForSync({ timeoutMs: 10_000 });
    expect(events).toEqual(['add p1', 'add p2', 'add p3', 'add p4', 'add p5']);
    const lists = proxy.requests.slice(before).filter((r) => !r.watch);
    expect(lists).toHaveLength(3);
    expect(lists.every((r) => r.path.includes('limit=2'))).toBe(true);
    expect(lists.slice(1).every((r) => r.path.includes('continue='))).toBe(true);
    expect(informer.list().every((o) => o.kind === 'ConfigMap' && o.apiVersion === 'v1')).toBe(true);
    const late: string[] = [];
    informer.onEvent((e) => late.push(describeEvent(e)));
    await new Promise((r) => setTimeout(r, 200));
    expect(late).toEqual([]);
  });

  it('honours namespace, label and field selectors and strips fields with a transform', async () => {
    const other = await createNamespace(env.client, 'kube-informer-other');
    try {
      await env.client.create(configMap(other, 'elsewhere', {}, { test: 'scope' }));
      await env.client.create(cm('wanted', 'scope'));
      await env.client.create(cm('unwanted', 'scope'));
      await env.client.create(cm('unlabelled', 'nothing'));
      const { informer } = cmInformer('scope', { fieldSelector: 'metadata.name!=unwanted', transform: dropManagedFields });
      await informer.waitForSync({ timeoutMs: 10_000 });
      expect(informer.list().map((o) => `${o.metadata?.namespace}/${o.metadata?.name}`)).toEqual([`${ns}/wanted`]);
      expect(informer.get(ns, 'wanted')?.metadata.managedFields).toBeUndefined();
      expect((await env.client.get<ConfigMap>(ref('wanted'))).metadata.managedFields).toBeDefined();
    } finally {
      await deleteNamespace(env.client, other);
    }
  });

  it('re-delivers cached objects as resync updates', async () => {
    await env.client.create(cm('steady', 'resync'));
    const { informer, raw } = cmInformer('resync', { resyncMs: 200 });
    await informer.waitForSync({ timeoutMs: 10_000 });
    await eventually('two resyncs', () => raw.filter((e) => e.type === 'update' && e.resync).length >= 2, { timeoutMs: 5000 });
    const resyncs = raw.filter((e): e is Extract<InformerEvent<ConfigMap>, { type: 'update' }> => e.type === 'update');
    expect(resyncs.every((e) => e.resync === true && e.object === e.previous && e.object.metadata?.name === 'steady')).toBe(true);
  });

  it('resumes a broken watch from its resourceVersion, backing off while the server is unreachable', async () => {
    await env.client.create(cm('kept', 'broken'));
    await env.client.create(cm('changed', 'broken'));
    await env.client.create(cm('removed', 'broken'));
    const { informer, events } = cmInformer('broken', {}, proxied);
    await informer.waitForSync({ timeoutMs: 10_000 });
    events.length = 0;
    proxy.refuse(true);
    await env.client.create(cm('added', 'broken'));
    await env.client.mergePatch(ref('changed'), { data: { v: '2' } });
    await env.client.delete(ref('removed'));
    await new Promise((r) => setTimeout(r, 2500));
    const restarts = informer.stats().restarts;
    // Backoff from 100 ms doubling to 1 s: about 5 tries in 2.5 s, not one every 100 ms.
    expect(restarts).toBeGreaterThanOrEqual(3);
    expect(restarts).toBeLessThanOrEqual(7);
    expect(events).toEqual([]);
    proxy.refuse(false);
    await eventually('the three changes', () => events.length >= 3, { timeoutMs: 10_000 });
    expect(events).toEqual(['add added', 'update changed', 'delete removed']);
    expect(informer.stats().relists).toBe(0);
    expect(informer.list().map((o) => o.metadata?.name)).toEqual(['added', 'changed', 'kept']);
  });

  it('restarts a watch that went silent (half-open connection) through the watchdog', async () => {
    const { informer, events } = cmInformer('silent', { watchdogMs: 1500 }, proxied);
    await informer.waitForSync({ timeoutMs: 10_000 });
    await new Promise((r) => setTimeout(r, 100));
    proxy.freeze(true); // the open watch stays connected but delivers nothing
    await env.client.create(cm('late', 'silent'));
    await eventually('the add after the watchdog restarted the watch', () => events.includes('add late'), { timeoutMs: 10_000 });
    expect(informer.stats().watchdogTimeouts).toBeGreaterThanOrEqual(1);
    expect(events).toEqual(['add late']);
  });

  it('relists after 410 Gone and emits only the differences', async () => {
    const vs = (name: string, host: string) => ({
      apiVersion: 'networking.mesh.io/v1',
      kind: 'VirtualService',
      metadata: { name, namespace: ns, labels: { test: 'gone' } },
      spec: { hosts: [host], http: [{ route: [{ destination: { host } }] }] },
    });
    const vsRef = (name: string) => ({ apiVersion: 'networking.mesh.io/v1', kind: 'VirtualService', name, namespace: ns });
    for (const n of ['a', 'b', 'c', 'e']) await env.client.create(vs(n, `${n}.example.com`));
    const errors: string[] = [];
    const informer = new Informer<KubeObject>(proxied, {
      resource: resourceRef('networking.mesh.io/v1', 'virtualservices', { kind: 'VirtualService' }),
      namespace: ns,
      backoff: { initialMs: 100, maxMs: 500 },
      onError: (err) => errors.push(err.message),
    });
    running.push(informer);
    const events: string[] = [];
    informer.onEvent((e) => events.push(describeEvent(e)));
    informer.start();
    await informer.waitForSync({ timeoutMs: 10_000 });
    expect(events).toEqual(['add a', 'add b', 'add c', 'add e']);
    events.length = 0;
    const uidBefore = informer.get(ns, 'a')?.metadata?.uid;

    proxy.refuse(true);
    await env.client.delete(vsRef('a'));
    await env.client.create(vs('a', 'a2.example.com')); // same name, new object
    await env.client.mergePatch(vsRef('b'), { spec: { hosts: ['b2.example.com'] } });
    await env.client.delete(vsRef('c'));
    await env.client.create(vs('d', 'd.example.com'));
    // The next watch asks the real API server for resourceVersion 1, older than anything its
    // watch cache of this CRD holds: it answers 410 Gone ("too old resource version").
    proxy.rewriteNextWatchResourceVersion('1');
    const watchesBefore = proxy.requests.length;
    proxy.refuse(false);
    await eventually('the differences after the relist', () => events.length >= 5, { timeoutMs: 15_000 });
    await new Promise((r) => setTimeout(r, 300));
    expect(proxy.watchesSince(watchesBefore)[0]?.path).toContain('resourceVersion=1&');
    expect(informer.stats().gone).toBeGreaterThanOrEqual(1);
    expect(informer.stats().relists).toBe(1);
    // e did not change: no event for it. a was replaced: delete + add.
    expect(events).toEqual(['delete a', 'delete c', 'add a', 'update b', 'add d']);
    expect(informer.get(ns, 'a')?.metadata?.uid).not.toBe(uidBefore);
    expect(informer.list().map((o) => o.metadata?.name)).toEqual(['a', 'b', 'd', 'e']);
  });

  it('keeps retrying a resource the server does not serve, and says so', async () => {
    const errors: string[] = [];
    const informer = new Informer<KubeObject>(env.client, {
      resource: resourceRef('nothing.mesh.io/v1', 'things'),
      namespace: ns,
      backoff: { initialMs: 50, maxMs: 100 },
      onError: (err, phase) => errors.push(`${phase}: ${err.message}`),
    });
    running.push(informer);
    informer.start();
    await expect(informer.waitForSync({ timeoutMs: 600 })).rejects.toThrow('informer things.nothing.mesh.io: not synced after 600 ms');
    expect(informer.hasSynced()).toBe(false);
    expect(informer.stats().restarts).toBeGreaterThanOrEqual(2);
    expect(errors[0]).toMatch(/^list: GET \/apis\/nothing\.mesh\.io\/v1\/namespaces\/.*\/things.*: 404 NotFound/);
  });
});
