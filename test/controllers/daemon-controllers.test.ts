/**
 * The daemon's wiring of status, distribution, auto-registration and leadership from its
 * environment (src/controllers/daemon-controllers.ts), as the daemon bootstrap and the xDS server
 * use it, on the local API server.
 */
import type { KubeConfigSource } from '../../src/config/kube-source.js';
import { parseDaemonEnv } from '../../src/config/daemon-env.js';
import type { MemoryConfigStore } from '../../src/config/store.js';
import { createDaemonControllers } from '../../src/controllers/daemon-controllers.js';
import type { KubeClient } from '../../src/kube/client.js';
import { createMetrics } from '../../src/metrics/metrics.js';
import { DEFAULT_MESH_SETTINGS } from '../../src/model/mesh-settings.js';
import { parseProxy } from '../../src/model/proxy.js';
import { reportName } from '../../src/controllers/config-status/distribution-reports.js';
import { deleteNamespace } from '../kube/helpers.js';
import { API_VERSION, condition, eventually, meshTestEnv, watchedStore, type StatusObject } from './kube-env.js';
import { CLUSTER_START_TIMEOUT_MS } from '../support/cluster.js';

let client: KubeClient;
let ns: string;
let store: MemoryConfigStore;
let source: KubeConfigSource;

beforeAll(async () => {
  const env = await meshTestEnv('daemon-ctl');
  client = env.client;
  ns = env.namespace;
  ({ store, source } = await watchedStore(client, ns));
}, CLUSTER_START_TIMEOUT_MS);

afterAll(async () => {
  await source?.stop();
  await deleteNamespace(client, ns);
  client?.close();
});

test('with DISC_ENABLE_STATUS the leader writes distribution status, proxies register entries, and stop cleans up', async () => {
  const env = parseDaemonEnv({
    POD_NAME: 'meshd-test-0',
    POD_NAMESPACE: ns,
    DISC_ENABLE_STATUS: 'true',
    DISC_STATUS_UPDATE_INTERVAL: '100ms',
    DISC_WORKLOAD_ENTRY_GRACE_PERIOD: '1s',
  });
  const metrics = createMetrics({ defaultMetrics: false });
  const c = createDaemonControllers({
    env,
    client,
    store,
    registry: { services: () => [] },
    mesh: () => DEFAULT_MESH_SETTINGS,
    metrics,
    lease: { leaseDurationMs: 2000, renewDeadlineMs: 1500, retryPeriodMs: 300 },
  });
  expect(c.identity).toBe('meshd-test-0');
  expect(c.status).toBeDefined();
  expect(c.distribution).toBeDefined();
  expect(c.workloadEntries).toBeDefined();
  await client.create({ apiVersion: API_VERSION, kind: 'VirtualService', metadata: { name: 'route', namespace: ns }, spec: { hosts: ['a'], http: [{ route: [{ destination: { host: 'a' } }] }] } });
  await client.create({ apiVersion: API_VERSION, kind: 'WorkloadGroup', metadata: { name: 'vms', namespace: ns }, spec: { template: { serviceAccount: 'vm' } } });
  await c.start();
  try {
    await eventually('leading with both duties', () => c.leadership.isLeader() && c.leadership.runningDuties().join(',') === 'status,wle-cleanup');
    const message = async (text: string) =>
      eventually(`"${text}"`, async () => {
        const o = await client.get<StatusObject>({ apiVersion: API_VERSION, kind: 'VirtualService', namespace: ns, name: 'route' });
        return condition(o, 'Reconciled')?.message === text ? o : undefined;
      });
    await message('0/0 proxies up to date');

    // What the xDS server does: a snapshot is served and acknowledged; a proxy of a group connects.
    c.distribution?.recordSnapshot('snapshot-1');
    c.distribution?.onAck('sidecar~10.8.0.1~vm-1.' + ns + '~' + ns + '.svc.cluster.local', 'type.googleapis.com/envoy.config.listener.v3.Listener', 'snapshot-1');
    await message('1/1 proxies up to date');
    const vm = parseProxy(`sidecar~10.8.0.1~vm-1.${ns}~${ns}.svc.cluster.local`, { WORKLOAD_GROUP: 'vms', NAMESPACE: ns });
    await c.workloadEntries?.connected(vm);
    const entry = await client.find({ apiVersion: API_VERSION, kind: 'WorkloadEntry', namespace: ns, name: 'vms-10.8.0.1' });
    expect(entry?.metadata?.annotations?.['mesh.io/workloadController']).toBe('meshd-test-0');
    expect((await metrics.autoRegistrationSuccess.get()).values[0]?.value).toBe(1);
    // The report other leaders would read is published.
    await eventually('the distribution report', async () => (await client.find({ apiVersion: 'v1', kind: 'ConfigMap', namespace: ns, name: reportName('meshd-test-0') })) !== undefined);
    await c.workloadEntries?.disconnected(vm);
  } finally {
    await c.stop();
  }
  expect(c.leadership.isLeader()).toBe(false);
  expect(await client.find({ apiVersion: 'v1', kind: 'ConfigMap', namespace: ns, name: reportName('meshd-test-0') })).toBeUndefined();
});
