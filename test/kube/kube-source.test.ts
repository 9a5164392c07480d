/**
 * The CRD config source against the real API server: objects applied to the cluster become store
 * objects, invalid ones are rejected with the field and reason while the last good version stays,
 * deletes delete, and only the watched namespaces count.
 */
import { KUBE_ORIGIN, KubeConfigSource } from '../../src/config/kube-source.js';
import { MemoryConfigStore } from '../../src/config/store.js';
import type { ConfigEvent, ConfigRejection } from '../../src/config/types.js';
import { KubeApiError } from '../../src/kube/errors.js';
import type { KubeObject } from '../../src/kube/types.js';
import { CLUSTER_START_TIMEOUT_MS } from '../support/cluster.js';
import { applyMeshCrds, createNamespace, deleteNamespace, kubeTestEnv, type KubeTestEnv } from './helpers.js';
import { eventually } from '../support/eventually.js';

interface VsSpec {
  hosts?: string[];
  http?: Array<{ route?: Array<{ destination?: { host?: string }; weight?: number }> }>;
}

let env: KubeTestEnv;
let ns: string;
let outside: string;
let store: MemoryConfigStore;
let source: KubeConfigSource;
const rejections: ConfigRejection[] = [];
const warnings: ConfigRejection[] = [];
const events: string[] = [];

function vs(name: string, spec: unknown, namespace = ns): KubeObject & { spec: unknown } {
  return { apiVersion: 'networking.mesh.io/v1', kind: 'VirtualService', metadata: { name, namespace }, spec };
}

const route = (host: string): VsSpec => ({ hosts: [host], http: [{ route: [{ destination: { host } }] }] });
const apply = (obj: KubeObject) => env.client.applyObject(obj, { fieldManager: 'kube-source-test', force: true });
const vsRef = (name: string, namespace = ns) => ({ apiVersion: 'networking.mesh.io/v1', kind: 'VirtualService', name, namespace });

beforeAll(async () => {
  env = await kubeTestEnv();
  await applyMeshCrds(env.client);
  ns = await createNamespace(env.client, 'kube-source');
  outside = await createNamespace(env.client, 'kube-source-outside');
  await apply(vs('before-start', route('early.example.com')));
  store = new MemoryConfigStore();
  store.onEvent((e: ConfigEvent) => events.push(`${e.type} ${e.kind} ${e.object.meta.name}`));
  source = new KubeConfigSource({
    client: env.client,
    store,
    namespaces: [ns],
    onReject: (r) => rejections.push(r),
    onWarn: (w) => warnings.push(w),
    informer: { backoff: { initialMs: 100, maxMs: 1000 } },
  });
}, CLUSTER_START_TIMEOUT_MS);

afterAll(async () => {
  await source?.stop();
  await deleteNamespace(env?.client, ns);
  await deleteNamespace(env?.client, outside);
  env?.client.close();
});

describe('kube config source', () => {
  it('loads what the cluster holds and marks the store synced once every kind is listed', async () => {
    expect(store.hasSynced()).toBe(false);
    await source.start({ timeoutMs: 30_000 });
    expect(store.hasSynced()).toBe(true);
    expect(source.stats().size).toBe(13);
    const early = store.get<VsSpec>('VirtualService', ns, 'before-start');
    expect(early?.spec.hosts).toEqual(['early.example.com']);
    expect(early?.meta.origin).toBe(KUBE_ORIGIN);
  });

  it('turns a VirtualService applied to the cluster into a store object, and follows its updates', async () => {
    const applied = await apply(vs('web', route('web.example.com')));
    const stored = await eventually('web in the store', () => store.get<VsSpec>('VirtualService', ns, 'web'), { timeoutMs: 15_000 });
    expect(stored.spec).toEqual(route('web.example.com'));
    expect(stored.meta).toMatchObject({ namespace: ns, name: 'web', resourceVersion: applied.metadata?.resourceVersion, origin: KUBE_ORIGIN });
    expect(stored.meta.gvk).toEqual({ group: 'networking.mesh.io', version: 'v1', kind: 'VirtualService' });
    await apply(vs('web', route('web2.example.com')));
    await eventually('the update', () => store.get<VsSpec>('VirtualService', ns, 'web')?.spec.hosts?.[0] === 'web2.example.com', { timeoutMs: 15_000 });
    expect(events.filter((e) => e.endsWith('VirtualService web'))).toEqual(['add VirtualService web', 'update VirtualService web']);
  });

  it('rejects an invalid object naming the field and keeps the last good version', async () => {
    await eventually('web2 in the store', () => store.get<VsSpec>('VirtualService', ns, 'web')?.spec.hosts?.[0] === 'web2.example.com', { timeoutMs: 15_000 });
    const before = rejections.length;
    // The CRD schema accepts any string as a host; the daemon's semantic checks do not.
    await apply(vs('web', { ...route('web2.example.com'), hosts: ['bad_host!'] }));
    const r = await eventually('a rejection', () => rejections[before], { timeoutMs: 15_000 });
    expect(r).toMatchObject({ origin: KUBE_ORIGIN, kind: 'VirtualService', namespace: ns, name: 'web' });
    expect(r.issues).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ path: 'spec.hosts[0]', message: expect.stringContaining('not a valid DNS name') }),
        { path: '', message: 'the last valid version stays in effect' },
      ]),
    );
    expect(store.get<VsSpec>('VirtualService', ns, 'web')?.spec.hosts).toEqual(['web2.example.com']);

    // A new invalid object never enters the store; weights that all are 0 are named too.
    await apply(
      vs('split', { hosts: ['split.example.com'], http: [{ route: [{ destination: { host: 'a' }, weight: 0 }, { destination: { host: 'b' }, weight: 0 }] }] }),
    );
    const split = await eventually('the second rejection', () => rejections.find((x) => x.name === 'split'), { timeoutMs: 15_000 });
    expect(split.issues).toEqual([expect.objectContaining({ path: 'spec.http[0].route', message: 'the weights of several destinations add up to 0: give at least one a weight' })]);
    expect(store.get('VirtualService', ns, 'split')).toBeUndefined();

    // Weights that do not add up to 100 bring it in, with a warning.
    await apply(
      vs('split', { hosts: ['split.example.com'], http: [{ route: [{ destination: { host: 'a' }, weight: 70 }, { destination: { host: 'b' }, weight: 20 }] }] }),
    );
    await eventually('split in the store', () => store.get('VirtualService', ns, 'split'), { timeoutMs: 15_000 });
    const warned = await eventually('the warning', () => warnings.find((x) => x.name === 'split'), { timeoutMs: 15_000 });
    expect(warned.issues).toEqual([{ path: 'spec.http[0].route', message: 'weights add up to 90, not 100: traffic is split in proportion to them' }]);
    expect(rejections.length - before).toBe(2);
  });

  it('leaves type errors to the CRD schema, which refuses them before the daemon sees them', async () => {
    const err = await env.client.create(vs('typed', { hosts: 'not-a-list' })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KubeApiError);
    expect((err as KubeApiError).statusCode).toBe(422);
    expect((err as KubeApiError).causes.map((c) => c.field)).toContain('spec.hosts');
    // Server-side apply refuses it as well (the API server answers 500 there, naming the field).
    const applied = await apply(vs('typed', { hosts: 'not-a-list' })).catch((e: unknown) => e);
    expect((applied as KubeApiError).apiMessage).toContain('.spec.hosts: expected list');
    expect(await env.client.find(vsRef('typed'))).toBeUndefined();
  });

  it('deletes on delete', async () => {
    await apply(vs('gone', route('gone.example.com')));
    await eventually('gone in the store', () => store.get('VirtualService', ns, 'gone'), { timeoutMs: 15_000 });
    await env.client.delete(vsRef('gone'));
    await eventually('gone removed', () => !store.get('VirtualService', ns, 'gone'), { timeoutMs: 15_000 });
    expect(events.filter((e) => e.endsWith('VirtualService gone'))).toEqual(['add VirtualService gone', 'delete VirtualService gone']);
  });

  it('reads other kinds too, and ignores namespaces it does not watch', async () => {
    await apply(vs('elsewhere', route('elsewhere.example.com'), outside));
    await apply({
      apiVersion: 'networking.mesh.io/v1',
      kind: 'DestinationRule',
      metadata: { name: 'web-dr', namespace: ns },
      spec: { host: 'web.example.com', subsets: [{ name: 'v1', labels: { version: 'v1' } }] },
    } as KubeObject);
    await apply(vs('after-elsewhere', route('after.example.com')));
    await eventually('the DestinationRule', () => store.get('DestinationRule', ns, 'web-dr'), { timeoutMs: 15_000 });
    // One watch stream delivers in order: had it covered the other namespace, "elsewhere" (applied
    // first) would be in the store by the time "after-elsewhere" is.
    await eventually('after-elsewhere', () => store.get('VirtualService', ns, 'after-elsewhere'), { timeoutMs: 15_000 });
    expect(store.list('VirtualService').map((o) => o.meta.namespace)).not.toContain(outside);
  });
});
