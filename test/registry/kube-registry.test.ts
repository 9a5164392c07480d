/**
 * The Cluster registry (src/registry/kube/registry.ts) fed by real informers (src/kube/informer.ts)
 * of the local control plane: Services, Deployments whose pods kwok makes Ready, EndpointSlices and
 * Endpoints made by kube-controller-manager. One namespace for the file, deleted afterwards.
 */
import { randomBytes } from 'node:crypto';
import type { V1Endpoints, V1EndpointSlice, V1Namespace, V1Node, V1Pod, V1Service } from '@kubernetes/client-node';
import { MemoryConfigStore } from '../../src/config/store.js';
import { KubeClient } from '../../src/kube/client.js';
import { dropManagedFields, Informer, resourceRef } from '../../src/kube/informer.js';
import type { KubeObject } from '../../src/kube/types.js';
import { createMetrics } from '../../src/metrics/metrics.js';
import type { RegistryEvent } from '../../src/model/registry.js';
import type { Endpoint, Service } from '../../src/model/service.js';
import { clusterRegistryMetrics } from '../../src/registry/kube/metrics.js';
import { KubeRegistry, type KubeRegistryCaches } from '../../src/registry/kube/registry.js';
import { CLUSTER_START_TIMEOUT_MS, ensureCluster } from '../support/cluster.js';
import { eventually } from '../support/eventually.js';

const ns = `reg-kube-${randomBytes(3).toString('hex')}`;
const HOST = `web.${ns}.svc.cluster.local`;
const SA = `spiffe://cluster.local/ns/${ns}/sa/web-sa`;
const WAIT_MS = 90_000;

let client: KubeClient;
const informers: Array<Informer<KubeObject>> = [];
const registries: KubeRegistry[] = [];
let caches: KubeRegistryCaches;
let endpointsInformer: Informer<V1Endpoints>;
let registry: KubeRegistry;
let store: MemoryConfigStore;
const metrics = createMetrics({ defaultMetrics: false });
const events: RegistryEvent[] = [];

function informer<T extends KubeObject>(apiVersion: string, plural: string, kind: string, namespaced: boolean): Informer<T> {
  const inf = new Informer<T>(client, {
    resource: resourceRef(apiVersion, plural, { namespaced, kind }),
    namespace: namespaced ? ns : undefined,
    transform: dropManagedFields,
    watchdogMs: 60_000,
  });
  informers.push(inf as unknown as Informer<KubeObject>);
  return inf;
}

function svc(r: KubeRegistry, name: string): Service | undefined {
  return r.services().find((s) => s.namespace === ns && s.name === name);
}

function addresses(eps: ReadonlyArray<Endpoint>): string[] {
  return [...new Set(eps.map((e) => e.address))].sort();
}

/** The service with exactly `n` distinct healthy addresses (every port served), once it has them. */
async function withEndpoints(r: KubeRegistry, name: string, n: number): Promise<{ service: Service; endpoints: ReadonlyArray<Endpoint> }> {
  return eventually(`${name} with ${n} endpoints`, () => {
    const service = svc(r, name);
    if (!service) return undefined;
    const endpoints = r.endpoints(service);
    const ok = addresses(endpoints).length === n && endpoints.length === n * service.ports.length && endpoints.every((e) => e.healthy);
    return ok ? { service, endpoints } : undefined;
  }, { timeoutMs: WAIT_MS });
}

const create = (obj: KubeObject & Record<string, unknown>) => client.create(obj);

function webDeployment(replicas: number): KubeObject & Record<string, unknown> {
  const labels = { app: 'web', version: 'v1', 'security.mesh.io/tlsMode': 'mesh' };
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web', namespace: ns },
    spec: {
      replicas,
      selector: { matchLabels: { app: 'web' } },
      template: {
        metadata: { labels },
        spec: { serviceAccountName: 'web-sa', containers: [{ name: 'web', image: 'example.invalid/web:1', ports: [{ containerPort: 8080 }, { containerPort: 9090 }] }] },
      },
    },
  };
}

async function gaugeValue(g: { get(): Promise<{ values: Array<{ value: number }> }> }): Promise<number> {
  return (await g.get()).values[0]?.value ?? 0;
}

beforeAll(async () => {
  const cluster = await ensureCluster();
  client = (await KubeClient.create({ kubeconfig: cluster.kubeconfig })).client;
  await create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns, labels: { 'topology.mesh.io/network': 'net-test' } } });
  await create({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'web-sa', namespace: ns } });
  caches = {
    services: informer<V1Service>('v1', 'services', 'Service', true),
    endpointSlices: informer<V1EndpointSlice>('discovery.k8s.io/v1', 'endpointslices', 'EndpointSlice', true),
    pods: informer<V1Pod>('v1', 'pods', 'Pod', true),
    nodes: informer<V1Node>('v1', 'nodes', 'Node', false),
    namespaces: informer<V1Namespace>('v1', 'namespaces', 'Namespace', false),
  };
  endpointsInformer = informer<V1Endpoints>('v1', 'endpoints', 'Endpoints', true);
  for (const inf of informers) inf.start();
  await Promise.all(informers.map((inf) => inf.waitForSync({ timeoutMs: 60_000 })));
  store = new MemoryConfigStore();
  store.markSynced();
  registry = new KubeRegistry(caches, store, {
    useEndpointSlices: true,
    edsForHeadless: false,
    selectWorkloadEntries: true,
    metrics: clusterRegistryMetrics(metrics),
  });
  registries.push(registry);
  registry.onEvent((e) => events.push(e));
  await registry.start();
}, CLUSTER_START_TIMEOUT_MS);

afterAll(async () => {
  for (const r of registries) r.stop();
  await Promise.all(informers.map((inf) => inf.stop()));
  await client?.delete({ apiVersion: 'v1', kind: 'Namespace', name: ns }).catch(() => undefined);
  client?.close();
}, 120_000);

describe('Cluster registry on a real API server', () => {
  test('is synced once started on synced caches; its id is the cluster id', () => {
    expect(registry.hasSynced()).toBe(true);
    expect(registry.id).toBe('Cluster');
  });

  test('a Service with named ports and a 2-replica Deployment: 2 healthy endpoints with pod labels, identity, locality and network', async () => {
    await create({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'web', namespace: ns, labels: { team: 'shop' }, annotations: { 'networking.mesh.io/exportTo': '.' } },
      spec: {
        selector: { app: 'web' },
        ports: [
          { name: 'http-api', port: 80, targetPort: 8080 },
          { name: 'rpc', port: 9090, targetPort: 9090, appProtocol: 'grpc' },
        ],
      },
    });
    await create(webDeployment(2));
    const { service, endpoints } = await withEndpoints(registry, 'web', 2);
    const apiService = caches.services.get(ns, 'web');
    expect(service).toMatchObject({
      hostname: HOST,
      namespace: ns,
      ports: [
        { name: 'http-api', port: 80, protocol: 'HTTP' },
        { name: 'rpc', port: 9090, protocol: 'GRPC' },
      ],
      addresses: [apiService?.spec?.clusterIP],
      resolution: 'ClientSideLB',
      meshExternal: false,
      exportTo: ['.'],
      labels: { team: 'shop' },
      serviceAccounts: [SA],
      clusterId: 'Cluster',
      registry: 'Cluster',
    });
    expect(service.addresses[0]).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
    const podIps = caches.pods
      .list(ns)
      .map((p) => p.status?.podIP)
      .sort();
    expect(addresses(endpoints)).toEqual(podIps);
    for (const e of endpoints) {
      expect(e).toMatchObject({
        port: e.servicePortName === 'http-api' ? 8080 : 9090,
        labels: expect.objectContaining({ app: 'web', version: 'v1' }),
        serviceAccount: SA,
        network: 'net-test',
        tlsMode: 'mesh',
        clusterId: 'Cluster',
        healthy: true,
      });
      // The simulated nodes carry topology.kubernetes.io/zone=zone-<n>.
      expect(e.locality.zone).toMatch(/^zone-\d+$/);
      expect(e.workload).toMatch(new RegExp(`^web-[a-z0-9]+-[a-z0-9]+\\.${ns}$`));
    }
    const counted = await metrics.clusterRegistryEvents.get();
    expect(counted.values.find((v) => v.labels.type === 'Services' && v.labels.event === 'add')?.value).toBeGreaterThanOrEqual(1);
    expect(counted.values.find((v) => v.labels.type === 'EndpointSlices')?.value).toBeGreaterThanOrEqual(1);
  });

  test('scaling to 3 replicas is an endpoint-only change with 3 endpoints', async () => {
    const before = svc(registry, 'web');
    const from = events.length;
    await client.mergePatch({ apiVersion: 'apps/v1', kind: 'Deployment', name: 'web', namespace: ns }, { spec: { replicas: 3 } });
    const { service } = await withEndpoints(registry, 'web', 3);
    const after = events.slice(from);
    expect(after.length).toBeGreaterThan(0);
    expect(after.every((e) => !e.servicesChanged)).toBe(true);
    expect(after.some((e) => e.endpointHosts.includes(HOST))).toBe(true);
    expect(service).toBe(before);
  });

  test('with DISC_USE_ENDPOINT_SLICE=false the endpoints come from Endpoints and are the same', async () => {
    const fromEndpoints = new KubeRegistry({ ...caches, endpointSlices: undefined, endpoints: endpointsInformer }, undefined, {
      useEndpointSlices: false,
      edsForHeadless: false,
      selectWorkloadEntries: false,
    });
    registries.push(fromEndpoints);
    await fromEndpoints.start();
    const { endpoints } = await withEndpoints(fromEndpoints, 'web', 3);
    const service = svc(registry, 'web') as Service;
    expect(endpoints).toEqual(registry.endpoints(service));
  });

  test('endpoints whose pod is not in the pod cache yet are pending until it arrives; hasSynced waits for every cache', async () => {
    const latePods = informer<V1Pod>('v1', 'pods', 'Pod', true);
    const lateMetrics = createMetrics({ defaultMetrics: false });
    const late = new KubeRegistry({ ...caches, pods: latePods }, undefined, {
      clusterId: 'late',
      useEndpointSlices: true,
      edsForHeadless: false,
      selectWorkloadEntries: false,
      metrics: clusterRegistryMetrics(lateMetrics),
    });
    registries.push(late);
    const lateEvents: RegistryEvent[] = [];
    late.onEvent((e) => lateEvents.push(e));
    await late.start();
    expect(late.hasSynced()).toBe(false);
    const held = svc(late, 'web') as Service;
    expect(held).toBeDefined();
    expect(late.endpoints(held)).toEqual([]);
    expect(await gaugeValue(lateMetrics.clusterEndpointsPendingPod)).toBe(3);

    latePods.start();
    await latePods.waitForSync({ timeoutMs: 30_000 });
    const { endpoints } = await withEndpoints(late, 'web', 3);
    expect(late.hasSynced()).toBe(true);
    expect(endpoints.every((e) => e.serviceAccount === SA && e.clusterId === 'late')).toBe(true);
    expect(await gaugeValue(lateMetrics.clusterEndpointsPendingPod)).toBe(0);
    expect(lateEvents.some((e) => e.endpointHosts.includes(HOST))).toBe(true);
    // The first identities of the service's workloads change its subject alternative names.
    expect(svc(late, 'web')?.serviceAccounts).toEqual([SA]);
  });

  test('a headless service is Passthrough without addresses and lists one endpoint per pod', async () => {
    await create({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'web-headless', namespace: ns },
      spec: { clusterIP: 'None', selector: { app: 'web' }, ports: [{ name: 'tcp-raw', port: 7000, targetPort: 8080 }] },
    });
    const { service, endpoints } = await withEndpoints(registry, 'web-headless', 3);
    expect(service).toMatchObject({ hostname: `web-headless.${ns}.svc.cluster.local`, addresses: [], resolution: 'Passthrough', ports: [{ name: 'tcp-raw', port: 7000, protocol: 'TCP' }] });
    expect(endpoints.map((e) => e.port)).toEqual([8080, 8080, 8080]);
  });

  test('an ExternalName service resolves by DNS to the external name', async () => {
    await create({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'billing-db', namespace: ns },
      spec: { type: 'ExternalName', externalName: 'db.billing.example.com', ports: [{ name: 'tcp-pg', port: 5432 }] },
    });
    const service = await eventually('billing-db', () => svc(registry, 'billing-db'), { timeoutMs: WAIT_MS });
    expect(service).toMatchObject({ resolution: 'DNS', meshExternal: true, addresses: [], ports: [{ name: 'tcp-pg', port: 5432, protocol: 'TCP' }] });
    expect(registry.endpoints(service).map((e) => [e.address, e.port, e.servicePortName])).toEqual([['db.billing.example.com', 5432, 'tcp-pg']]);
  });

  test('a selectorless service with its own EndpointSlice: no-pod endpoints keep service labels, not-ready ones are unhealthy', async () => {
    await create({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'legacy', namespace: ns, labels: { app: 'legacy' } },
      spec: { ports: [{ name: 'http', port: 80 }] },
    });
    await create({
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: { name: 'legacy-manual', namespace: ns, labels: { 'kubernetes.io/service-name': 'legacy' } },
      addressType: 'IPv4',
      ports: [{ name: 'http', port: 8000, protocol: 'TCP' }],
      endpoints: [
        { addresses: ['192.0.2.10'], conditions: { ready: true } },
        { addresses: ['192.0.2.11'], conditions: { ready: false } },
      ],
    });
    const eps = await eventually('legacy endpoints', () => {
      const s = svc(registry, 'legacy');
      const list = s ? registry.endpoints(s) : [];
      return list.length === 2 ? list : undefined;
    }, { timeoutMs: WAIT_MS });
    expect(eps.map((e) => [e.address, e.port, e.healthy])).toEqual([
      ['192.0.2.10', 8000, true],
      ['192.0.2.11', 8000, false],
    ]);
    expect(eps.every((e) => e.labels.app === 'legacy' && e.serviceAccount === '' && e.network === 'net-test')).toBe(true);
    expect(await gaugeValue(metrics.endpointNoPod)).toBe(2);
    expect(await gaugeValue(metrics.clusterEndpointsWithNoPods)).toBe(2);
  });

  test('WorkloadEntries matching a service selector become endpoints (an endpoint-only change)', async () => {
    const from = events.length;
    store.upsert({
      meta: { gvk: { group: 'networking.mesh.io', version: 'v1', kind: 'WorkloadEntry' }, name: 'vm-1', namespace: ns, labels: {}, annotations: {}, generation: 0, resourceVersion: '' },
      spec: { address: '203.0.113.7', labels: { app: 'web', version: 'vm' }, ports: { 'http-api': 18080 } },
    });
    const vm = await eventually('workload entry endpoints', () => {
      const list = registry.endpoints(svc(registry, 'web') as Service).filter((e) => e.address === '203.0.113.7');
      return list.length === 2 ? list : undefined;
    }, { timeoutMs: WAIT_MS });
    expect(vm.map((e) => [e.servicePortName, e.port])).toEqual([
      ['http-api', 18080],
      ['rpc', 9090],
    ]);
    expect(vm[0]).toMatchObject({ labels: { app: 'web', version: 'vm' }, workload: `vm-1.${ns}`, healthy: true });
    const after = events.slice(from);
    expect(after.some((e) => !e.servicesChanged && e.endpointHosts.includes(HOST))).toBe(true);
    expect(after.every((e) => !e.servicesChanged)).toBe(true);
  });

  test('a pod label edit and a namespace network label edit update the endpoints only', async () => {
    const service = svc(registry, 'web') as Service;
    const podName = caches.pods.list(ns)[0]?.metadata?.name ?? '';
    const podIp = caches.pods.get(ns, podName)?.status?.podIP;
    const from = events.length;
    await client.mergePatch({ apiVersion: 'v1', kind: 'Pod', name: podName, namespace: ns }, { metadata: { labels: { canary: 'yes' } } });
    await eventually('the pod label on its endpoints', () => registry.endpoints(service).some((e) => e.address === podIp && e.labels.canary === 'yes'), { timeoutMs: WAIT_MS });
    await client.mergePatch({ apiVersion: 'v1', kind: 'Namespace', name: ns }, { metadata: { labels: { 'topology.mesh.io/network': 'net-moved' } } });
    await eventually('the new network on the endpoints', () => registry.endpoints(service).some((e) => e.network === 'net-moved'), { timeoutMs: WAIT_MS });
    expect(registry.endpoints(service).filter((e) => e.address !== '203.0.113.7').every((e) => e.network === 'net-moved')).toBe(true);
    const after = events.slice(from);
    expect(after.every((e) => !e.servicesChanged)).toBe(true);
    expect(svc(registry, 'web')).toBe(service);
  });

  test('deleting the Service removes it and its endpoints', async () => {
    const service = svc(registry, 'web') as Service;
    const from = events.length;
    await client.delete({ apiVersion: 'v1', kind: 'Service', name: 'web', namespace: ns });
    await eventually('web to be gone', () => svc(registry, 'web') === undefined, { timeoutMs: WAIT_MS });
    expect(registry.endpoints(service)).toEqual([]);
    expect(events.slice(from).some((e) => e.servicesChanged && e.endpointHosts.includes(HOST))).toBe(true);
    expect(svc(registry, 'web-headless')).toBeDefined();
  });
});
