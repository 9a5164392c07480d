/**
 * An informer and the CRD config source ride out a restart of kube-apiserver: they keep retrying
 * with backoff while it is down, then catch up with what changed without replaying what they
 * already had. The only test that stops the API server (it takes about 20 s).
 */
import { KubeConfigSource } from '../../src/config/kube-source.js';
import { MemoryConfigStore } from '../../src/config/store.js';
import { Informer, resourceRef } from '../../src/kube/informer.js';
import type { KubeObject } from '../../src/kube/types.js';
import { APISERVER_RESTART_TIMEOUT_MS, CLUSTER_START_TIMEOUT_MS, startApiServer, stopApiServer } from '../support/cluster.js';
import { applyMeshCrds, configMap, createNamespace, deleteNamespace, describeEvent, kubeTestEnv, type KubeTestEnv } from './helpers.js';
import { eventually } from '../support/eventually.js';

let env: KubeTestEnv;
let ns: string;

beforeAll(async () => {
  env = await kubeTestEnv();
  await applyMeshCrds(env.client);
  ns = await createNamespace(env.client, 'kube-restart');
}, CLUSTER_START_TIMEOUT_MS);

afterAll(async () => {
  await deleteNamespace(env?.client, ns);
  env?.client.close();
});

const vs = (name: string, host: string) => ({
  apiVersion: 'networking.mesh.io/v1',
  kind: 'VirtualService',
  metadata: { name, namespace: ns },
  spec: { hosts: [host], http: [{ route: [{ destination: { host } }] }] },
});

it(
  'keeps an informer and the CRD config source working across an API server restart',
  async () => {
    await env.client.create(configMap(ns, 'before', { v: '1' }, { test: 'restart' }));
    await env.client.create(configMap(ns, 'untouched', { v: '1' }, { test: 'restart' }));
    await env.client.applyObject(vs('vs-before', 'before.example.com'), { fieldManager: 'test' });
    const errors: string[] = [];
    const informer = new Informer<KubeObject>(env.client, {
      resource: resourceRef('v1', 'configmaps', { kind: 'ConfigMap' }),
      namespace: ns,
      labelSelector: 'test=restart',
      backoff: { initialMs: 200, maxMs: 2000 },
      onError: (err) => errors.push(err.message),
    });
    const events: string[] = [];
    informer.onEvent((e) => events.push(describeEvent(e)));
    const store = new MemoryConfigStore();
    const source = new KubeConfigSource({ client: env.client, store, namespaces: [ns], informer: { backoff: { initialMs: 200, maxMs: 2000 } }, onError: () => undefined });
    try {
      informer.start();
      await informer.waitForSync({ timeoutMs: 10_000 });
      await source.start({ timeoutMs: 30_000 });
      expect(events).toEqual(['add before', 'add untouched']);
      events.length = 0;

      await stopApiServer();
      await eventually('a failed reconnect', () => informer.stats().restarts >= 1, { timeoutMs: 20_000 });
      await startApiServer();

      // Changes right after the restart, while the clients may still be backing off.
      await env.client.create(configMap(ns, 'after', { v: '1' }, { test: 'restart' }));
      await env.client.mergePatch({ apiVersion: 'v1', kind: 'ConfigMap', name: 'before', namespace: ns }, { data: { v: '2' } });
      await env.client.applyObject(vs('vs-after', 'after.example.com'), { fieldManager: 'test' });
      await eventually('the informer to catch up', () => events.length >= 2, { timeoutMs: 60_000 });
      await env.client.delete({ apiVersion: 'v1', kind: 'ConfigMap', name: 'before', namespace: ns });
      await eventually('the delete', () => events.length >= 3, { timeoutMs: 30_000 });
      expect(events).toEqual(['add after', 'update before', 'delete before']);
      expect(informer.list().map((o) => o.metadata?.name)).toEqual(['after', 'untouched']);

      await eventually('vs-after in the store', () => store.get('VirtualService', ns, 'vs-after'), { timeoutMs: 60_000 });
      expect(store.get('VirtualService', ns, 'vs-before')).toBeDefined();
      await env.client.delete({ apiVersion: 'networking.mesh.io/v1', kind: 'VirtualService', name: 'vs-before', namespace: ns });
      await eventually('vs-before removed from the store', () => !store.get('VirtualService', ns, 'vs-before'), { timeoutMs: 30_000 });
      expect(store.hasSynced()).toBe(true);
      expect(errors.length).toBeGreaterThanOrEqual(1);
    } finally {
      await informer.stop();
      await source.stop();
    }
  },
  APISERVER_RESTART_TIMEOUT_MS + 120_000,
);
