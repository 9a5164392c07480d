/**
 * The Cluster registry's pod/EndpointSlice dependency path under churn, on the local control plane:
 * a Deployment scaled up and down in quick succession (pods and slices change many times, in no
 * fixed order between the two informers, and freed addresses go to new pods at once), while the
 * registry's informers also start late. Once the cluster settles, the registry lists exactly the
 * slices' ready addresses, each with its own pod's labels: no pod or slice event is lost.
 */
import { randomBytes } from 'node:crypto';
import type { V1EndpointSlice, V1Namespace, V1Node, V1Pod, V1Service } from '@kubernetes/client-node';
import { KubeClient } from '../../src/kube/client.js';
import { dropManagedFields, Informer, resourceRef } from '../../src/kube/informer.js';
import type { KubeObject } from '../../src/kube/types.js';
import type { Service } from '../../src/model/service.js';
import { KubeRegistry } from '../../src/registry/kube/registry.js';
import { CLUSTER_START_TIMEOUT_MS, ensureCluster } from '../support/cluster.js';
import { eventually } from '../support/eventually.js';

const ns = `reg-churn-${randomBytes(3).toString('hex')}`;
let client: KubeClient;
const informers: Array<Informer<KubeObject>> = [];
let registry: KubeRegistry | undefined;

function informer<T extends KubeObject>(apiVersion: string, plural: string, kind: string, namespaced: boolean): Informer<T> {
  const inf = new Informer<T>(client, { resource: resourceRef(apiVersion, plural, { namespaced, kind }), namespace: namespaced ? ns : undefined, transform: dropManagedFields });
  informers.push(inf as unknown as Informer<KubeObject>);
  return inf;
}

const deployment = (name: string, replicas: number): KubeObject & Record<string, unknown> => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name, namespace: ns },
  spec: {
    replicas,
    selector: { matchLabels: { app: 'churn', deployment: name } },
    template: { metadata: { labels: { app: 'churn', deployment: name } }, spec: { containers: [{ name: 'app', image: 'example.invalid/app:1', ports: [{ containerPort: 8080 }] }] } },
  },
});

const scale = (name: string, replicas: number): Promise<unknown> => client.mergePatch({ apiVersion: 'apps/v1', kind: 'Deployment', name, namespace: ns }, { spec: { replicas } });

/** address → owning pod's `deployment` label, from the API server: the slices' ready endpoints and the pods they name. */
async function truth(): Promise<Map<string, string>> {
  const slices = (await client.request<{ items: V1EndpointSlice[] }>({ method: 'GET', path: `/apis/discovery.k8s.io/v1/namespaces/${ns}/endpointslices` })).items;
  const pods = (await client.request<{ items: V1Pod[] }>({ method: 'GET', path: `/api/v1/namespaces/${ns}/pods` })).items;
  const byName = new Map(pods.map((p) => [p.metadata?.name ?? '', p]));
  const out = new Map<string, string>();
  for (const e of slices.flatMap((s) => s.endpoints ?? [])) {
    if (e.conditions?.ready === false) continue;
    const pod = byName.get(e.targetRef?.name ?? '');
    for (const a of e.addresses) out.set(a, pod?.metadata?.labels?.deployment ?? '?');
  }
  return out;
}

function listed(r: KubeRegistry): Map<string, string> {
  const service = r.services().find((s: Service) => s.namespace === ns && s.name === 'churn');
  return new Map((service ? r.endpoints(service) : []).filter((e) => e.healthy).map((e) => [e.address, e.labels.deployment ?? '?']));
}

const show = (m: Map<string, string>): string => JSON.stringify([...m].sort());

beforeAll(async () => {
  const cluster = await ensureCluster();
  client = (await KubeClient.create({ kubeconfig: cluster.kubeconfig, qps: 0 })).client;
  await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  await client.create({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'churn', namespace: ns }, spec: { selector: { app: 'churn' }, ports: [{ name: 'http', port: 80, targetPort: 8080 }] } } as KubeObject);
}, CLUSTER_START_TIMEOUT_MS);

afterAll(async () => {
  registry?.stop();
  await Promise.all(informers.map((i) => i.stop()));
  await client?.delete({ apiVersion: 'v1', kind: 'Namespace', name: ns }).catch(() => undefined);
  client?.close();
}, 120_000);

test('after bursts of scaling, the registry lists exactly the ready addresses of the slices, with their own pods', async () => {
  await client.create(deployment('a', 4));
  await client.create(deployment('b', 2));
  // The registry starts in the middle of the churn: its caches list whatever is there, then watch.
  const churn = (async () => {
    for (const [a, b] of [[12, 1], [2, 8], [15, 0], [3, 5], [9, 3]] as const) {
      await Promise.all([scale('a', a), scale('b', b)]);
      await new Promise((r) => setTimeout(r, 150));
    }
  })();
  await new Promise((r) => setTimeout(r, 200));
  const r = new KubeRegistry(
    {
      services: informer<V1Service>('v1', 'services', 'Service', true),
      endpointSlices: informer<V1EndpointSlice>('discovery.k8s.io/v1', 'endpointslices', 'EndpointSlice', true),
      pods: informer<V1Pod>('v1', 'pods', 'Pod', true),
      nodes: informer<V1Node>('v1', 'nodes', 'Node', false),
      namespaces: informer<V1Namespace>('v1', 'namespaces', 'Namespace', false),
    },
    undefined,
    { useEndpointSlices: true, edsForHeadless: false, selectWorkloadEntries: false },
  );
  registry = r;
  for (const i of informers) i.start();
  await Promise.all(informers.map((i) => i.waitForSync({ timeoutMs: 60_000 })));
  await r.start();
  await churn;

  // The cluster settles at 9 + 3 ready pods; then the registry must agree with it.
  const settled = await eventually(
    'the cluster to settle at 12 ready endpoints',
    async () => {
      const t = await truth();
      return t.size === 12 && [...t.values()].filter((d) => d === 'a').length === 9 ? t : undefined;
    },
    { timeoutMs: 90_000, intervalMs: 100, diagnostics: () => 'slices not settled' },
  );
  await eventually('the registry to list the same endpoints', () => show(listed(r)) === show(settled), {
    timeoutMs: 10_000,
    intervalMs: 100,
    diagnostics: () => `registry ${show(listed(r))} vs slices ${show(settled)}`,
  });
}, 180_000);
