/**
 * The status controller (src/controllers/config-status/status-controller.ts) against the local API server: the mesh
 * CRDs, objects created and edited as an operator would, the daemon's CRD config source feeding
 * the store, and the status read back from the API server.
 */
import { KUBE_ORIGIN, type KubeConfigSource } from '../../../src/config/kube-source.js';
import { parseConfigObject } from '../../../src/config/parse.js';
import { MemoryConfigStore } from '../../../src/config/store.js';
import type { KubeClient } from '../../../src/kube/client.js';
import { DEFAULT_MESH_SETTINGS } from '../../../src/model/mesh-settings.js';
import { DistributionTracker } from '../../../src/controllers/config-status/distribution.js';
import { MeshDistribution, ReportPublisher } from '../../../src/controllers/config-status/distribution-reports.js';
import { StatusController, type StatusControllerOptions } from '../../../src/controllers/config-status/status-controller.js';
import { deleteNamespace } from '../../kube/helpers.js';
import { CLUSTER_START_TIMEOUT_MS } from '../../support/cluster.js';
import { API_VERSION, condition, eventually, meshTestEnv, watchedStore, type StatusObject } from '../kube-env.js';

const LDS = 'type.googleapis.com/envoy.config.listener.v3.Listener';

let client: KubeClient;
let ns: string;
let store: MemoryConfigStore;
let source: KubeConfigSource;

beforeAll(async () => {
  const env = await meshTestEnv('status');
  client = env.client;
  ns = env.namespace;
  ({ store, source } = await watchedStore(client, ns));
}, CLUSTER_START_TIMEOUT_MS);

afterAll(async () => {
  await source?.stop();
  await deleteNamespace(client, ns);
  client?.close();
});

/** Runs a status controller until the returned stop function is called. */
function runController(extra: Partial<StatusControllerOptions> = {}): { controller: StatusController; stop: () => Promise<void> } {
  const controller = new StatusController({ client, store, qps: 50, burst: 10, workers: 4, ...extra });
  const abort = new AbortController();
  const done = controller.run(abort.signal);
  return {
    controller,
    stop: async () => {
      abort.abort();
      await done;
    },
  };
}

const get = (kind: string, name: string): Promise<StatusObject> => client.get<StatusObject>({ apiVersion: API_VERSION, kind, namespace: ns, name });
const create = (kind: string, name: string, spec: Record<string, unknown>): Promise<StatusObject> =>
  client.create<StatusObject>({ apiVersion: API_VERSION, kind, metadata: { name, namespace: ns }, spec });
const patchSpec = (kind: string, name: string, spec: Record<string, unknown>): Promise<StatusObject> =>
  client.mergePatch<StatusObject>({ apiVersion: API_VERSION, kind, namespace: ns, name }, { spec });

/** Waits until the store holds `generation` of an object (the source saw the edit). */
const storeAt = (kind: string, name: string, generation: number) =>
  eventually(`${kind} ${name} generation ${generation} in the store`, () => (store.get(kind, ns, name)?.meta.generation ?? 0) >= generation);

describe('status controller', () => {
  test('writes Reconciled and observedGeneration, and again after an edit bumps the generation', async () => {
    await create('VirtualService', 'reviews-route', { hosts: ['reviews'], http: [{ route: [{ destination: { host: 'reviews' } }] }] });
    const run = runController();
    try {
      const first = await eventually('status of generation 1', async () => {
        const o = await get('VirtualService', 'reviews-route');
        return o.status?.observedGeneration === 1 ? o : undefined;
      });
      const c1 = condition(first, 'Reconciled');
      expect(c1).toMatchObject({ status: 'True', reason: 'Accepted', observedGeneration: 1, message: 'generation 1 accepted by the control plane' });
      expect(Date.parse(c1?.lastTransitionTime ?? '')).toBeGreaterThan(Date.now() - 120_000);

      const edited = await patchSpec('VirtualService', 'reviews-route', { hosts: ['reviews', 'reviews.example.com'] });
      expect(edited.metadata?.generation).toBe(2);
      const second = await eventually('status of generation 2', async () => {
        const o = await get('VirtualService', 'reviews-route');
        return o.status?.observedGeneration === 2 ? o : undefined;
      });
      expect(condition(second, 'Reconciled')).toMatchObject({ status: 'True', observedGeneration: 2, message: 'generation 2 accepted by the control plane' });
      // The condition stayed True, so its transition time is the first one.
      expect(condition(second, 'Reconciled')?.lastTransitionTime).toBe(c1?.lastTransitionTime);
      expect(run.controller.stats().errors).toBe(0);
    } finally {
      await run.stop();
    }
  });

  test('writes nothing when nothing changed: a metadata-only edit and a new leader term leave the resourceVersion alone', async () => {
    const run = runController();
    let rv: string | undefined;
    try {
      await eventually('status of reviews-route', async () => (await get('VirtualService', 'reviews-route')).status?.observedGeneration === 2);
      // Counted before the edit: its watch event may be handled before the patch call returns.
      const before = run.controller.stats();
      const labelled = await client.mergePatch<StatusObject>({ apiVersion: API_VERSION, kind: 'VirtualService', namespace: ns, name: 'reviews-route' }, { metadata: { labels: { team: 'shop' } } });
      rv = labelled.metadata?.resourceVersion;
      expect(labelled.metadata?.generation).toBe(2);
      // The label edit reaches the store, which queues the object again.
      await eventually('the label in the store', () => store.get('VirtualService', ns, 'reviews-route')?.meta.labels.team === 'shop');
      await eventually('the object reconciled again', () => run.controller.stats().reconciles > before.reconciles);
      await new Promise((r) => setTimeout(r, 500));
      expect(run.controller.stats().writes).toBe(before.writes);
      expect((await get('VirtualService', 'reviews-route')).metadata?.resourceVersion).toBe(rv);
    } finally {
      await run.stop();
    }
    // A new term knows nothing it wrote: it reads each object once and finds the status current.
    const next = runController();
    try {
      await eventually('every object checked', () => next.controller.stats().unchanged >= 1);
      await new Promise((r) => setTimeout(r, 500));
      expect(next.controller.stats().writes).toBe(0);
      expect((await get('VirtualService', 'reviews-route')).metadata?.resourceVersion).toBe(rv);
    } finally {
      await next.stop();
    }
  });

  test('analysis: a route to a subset no DestinationRule defines gets a validation message, cleared once the rule defines it', async () => {
    await create('ServiceEntry', 'ratings', { hosts: ['ratings.example.com'], ports: [{ number: 80, name: 'http', protocol: 'HTTP' }], resolution: 'DNS' });
    await create('DestinationRule', 'ratings', { host: 'ratings.example.com', subsets: [{ name: 'v1', labels: { version: 'v1' } }] });
    await create('VirtualService', 'ratings-route', { hosts: ['ratings.example.com'], http: [{ route: [{ destination: { host: 'ratings.example.com', subset: 'v2' } }] }] });
    const run = runController({ analysis: { services: { services: () => [] }, mesh: () => DEFAULT_MESH_SETTINGS, debounceMs: 50 } });
    try {
      const flagged = await eventually('a validation message on ratings-route', async () => {
        const o = await get('VirtualService', 'ratings-route');
        return (o.status?.validationMessages ?? []).length > 0 ? o : undefined;
      });
      expect(flagged.status?.validationMessages).toEqual([
        {
          code: 'MESH0103',
          level: 'ERROR',
          path: 'spec.http[0].route[0].destination.subset',
          message: 'subset "v2" of host ratings.example.com is not defined by DestinationRule ' + `${ns}/ratings (its subsets: v1)`,
        },
      ]);
      expect(condition(flagged, 'Reconciled')?.status).toBe('True');
      // The rule and the entry themselves are fine.
      expect((await get('DestinationRule', 'ratings')).status?.validationMessages).toBeUndefined();

      await patchSpec('DestinationRule', 'ratings', { subsets: [{ name: 'v1', labels: { version: 'v1' } }, { name: 'v2', labels: { version: 'v2' } }] });
      const cleared = await eventually('the message cleared', async () => {
        const o = await get('VirtualService', 'ratings-route');
        return o.status?.validationMessages === undefined ? o : undefined;
      });
      expect(cleared.status?.observedGeneration).toBe(1);
    } finally {
      await run.stop();
    }
  });

  test('distribution: Reconciled tells how many proxies of all daemons hold the current generation', async () => {
    await create('VirtualService', 'details-route', { hosts: ['details'], http: [{ route: [{ destination: { host: 'details' } }] }] });
    await storeAt('VirtualService', 'details-route', 1);
    const ref = 'VirtualService/' + ns + '/details-route';
    // Two daemons over the same objects: A leads and writes status; B publishes its report.
    const a = new DistributionTracker({ store, identity: 'meshd-a', retentionMs: 60_000 });
    const b = new DistributionTracker({ store, identity: 'meshd-b', retentionMs: 60_000 });
    a.start();
    b.start();
    const publisher = new ReportPublisher({ client, tracker: b, namespace: ns, identity: 'meshd-b', intervalMs: 100, staleAfterMs: 30_000 });
    const mesh = new MeshDistribution({ client, tracker: a, namespace: ns, identity: 'meshd-a', staleAfterMs: 30_000 });
    a.recordSnapshot('a-1');
    b.recordSnapshot('b-1');
    a.onAck('proxy-a', LDS, 'a-1');
    b.onAck('proxy-b', LDS, 'b-1');
    publisher.start();
    const run = runController({
      distribution: {
        source: mesh,
        intervalMs: 100,
        start: async (signal) => {
          mesh.start();
          await mesh.waitForSync(signal);
        },
        stop: () => mesh.stop(),
      },
    });
    const reconciled = async (message: string) =>
      eventually(`"${message}"`, async () => {
        const o = await get('VirtualService', 'details-route');
        return condition(o, 'Reconciled')?.message === message ? o : undefined;
      });
    try {
      const all = await reconciled('2/2 proxies up to date');
      expect(condition(all, 'Reconciled')).toMatchObject({ status: 'True', reason: 'Distributed', observedGeneration: 1 });

      await patchSpec('VirtualService', 'details-route', { hosts: ['details', 'details.example.com'] });
      await storeAt('VirtualService', 'details-route', 2);
      const none = await reconciled('0/2 proxies up to date');
      expect(condition(none, 'Reconciled')).toMatchObject({ status: 'False', reason: 'Distributing', observedGeneration: 2 });
      expect(a.report().configs[ref]).toEqual([2, 0]);

      a.recordSnapshot('a-2');
      a.onAck('proxy-a', LDS, 'a-2');
      await reconciled('1/2 proxies up to date');

      b.recordSnapshot('b-2');
      b.onAck('proxy-b', LDS, 'b-2');
      const done = await reconciled('2/2 proxies up to date');
      expect(condition(done, 'Reconciled')).toMatchObject({ status: 'True', reason: 'Distributed', observedGeneration: 2 });
      expect(condition(done, 'Reconciled')?.lastTransitionTime).toBeDefined();

      // B goes away: its report is deleted and only A's proxy counts.
      await publisher.stop();
      await reconciled('1/1 proxies up to date');
    } finally {
      await run.stop();
      await publisher.stop();
      a.stop();
      b.stop();
    }
  });

  test('an object deleted before its status is written is skipped: no error, nothing re-created', async () => {
    // A store that still holds an object the API server has deleted (the watch event not yet in).
    const stale = new MemoryConfigStore();
    const parsed = parseConfigObject(
      { apiVersion: API_VERSION, kind: 'VirtualService', metadata: { name: 'short-lived', namespace: ns, generation: 1 }, spec: { hosts: ['short'], http: [{ route: [{ destination: { host: 'short' } }] }] } },
      KUBE_ORIGIN,
      ns,
    );
    if ('issues' in parsed) throw new Error(JSON.stringify(parsed.issues));
    stale.upsert({ ...parsed, meta: { ...parsed.meta, resourceVersion: '1' } }, KUBE_ORIGIN);
    stale.markSynced();
    const controller = new StatusController({ client, store: stale, qps: 50, burst: 10, workers: 1 });
    const abort = new AbortController();
    const done = controller.run(abort.signal);
    try {
      await eventually('the object judged gone', () => controller.stats().gone === 1);
      expect(controller.stats()).toMatchObject({ writes: 0, errors: 0 });
      expect(await client.find({ apiVersion: API_VERSION, kind: 'VirtualService', namespace: ns, name: 'short-lived' })).toBeUndefined();
    } finally {
      abort.abort();
      await done;
    }
  });
});
