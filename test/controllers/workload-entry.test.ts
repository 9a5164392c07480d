/**
 * Workload entry auto-registration (src/controllers/workload-entry/) on the local API server:
 * proxies (parsed from real node ids and metadata) connect and disconnect, the entries are read
 * back from the API server, and the leader's cleanup controller deletes only what has been gone
 * longer than the grace period, across daemon restarts and several daemon identities.
 */
import { WorkloadEntryCleanup, type WorkloadEntryCleanupOptions } from '../../src/controllers/workload-entry/cleanup.js';
import { WorkloadEntryController, type WorkloadEntryControllerOptions } from '../../src/controllers/workload-entry/controller.js';
import { AUTO_REGISTRATION_GROUP, CONNECTED_AT, DISCONNECTED_AT, WORKLOAD_CONTROLLER } from '../../src/controllers/workload-entry/entry.js';
import type { KubeClient } from '../../src/kube/client.js';
import type { KubeObject } from '../../src/kube/types.js';
import { createMetrics } from '../../src/metrics/metrics.js';
import { parseProxy, type Proxy } from '../../src/model/proxy.js';
import { deleteNamespace } from '../kube/helpers.js';
import { API_VERSION, condition, eventually, meshTestEnv, type StatusObject } from './kube-env.js';
import { CLUSTER_START_TIMEOUT_MS } from '../support/cluster.js';

const GRACE_MS = 1200;

let client: KubeClient;
let ns: string;
let groupUid: string | undefined;
const metrics = createMetrics({ defaultMetrics: false });
const counters = {
  success: metrics.autoRegistrationSuccess,
  updates: metrics.autoRegistrationUpdates,
  unregister: metrics.autoRegistrationUnregister,
  deletes: metrics.autoRegistrationDeletes,
  errors: metrics.autoRegistrationErrors,
};

interface Entry extends StatusObject {
  spec?: { address?: string; labels?: Record<string, string>; serviceAccount?: string; network?: string; ports?: Record<string, number> };
}

beforeAll(async () => {
  const env = await meshTestEnv('wle');
  client = env.client;
  ns = env.namespace;
  const group = await client.create<KubeObject & { spec: unknown }>({
    apiVersion: API_VERSION,
    kind: 'WorkloadGroup',
    metadata: { name: 'vms', namespace: ns },
    spec: {
      metadata: { labels: { app: 'legacy' }, annotations: { 'team.example.com/owner': 'payments' } },
      template: { serviceAccount: 'legacy-sa', ports: { http: 8080 }, labels: { tier: 'backend' } },
      probe: { periodSeconds: 5, httpGet: { port: 8080, path: '/ready' } },
    },
  });
  groupUid = group.metadata?.uid;
}, CLUSTER_START_TIMEOUT_MS);

afterAll(async () => {
  for (const c of running) await c.stop();
  await deleteNamespace(client, ns);
  client?.close();
});

function proxy(ip: string, extra: Record<string, unknown> = {}): Proxy {
  return parseProxy(`sidecar~${ip}~vm-${ip.replace(/\./g, '-')}.${ns}~${ns}.svc.cluster.local`, {
    WORKLOAD_GROUP: 'vms',
    NAMESPACE: ns,
    LABELS: { app: 'legacy', version: 'v1' },
    NETWORK: 'vm-net',
    ...extra,
  });
}

const running: WorkloadEntryController[] = [];

function controller(identity: string, extra: Partial<WorkloadEntryControllerOptions> = {}): WorkloadEntryController {
  const c = new WorkloadEntryController({ client, identity, gracePeriodMs: GRACE_MS, counters, namespace: ns, retryBaseDelayMs: 50, ...extra });
  running.push(c);
  return c;
}

/** Runs the leader's cleanup of `wle`'s daemon until the returned stop function is called. */
function runCleanup(wle: WorkloadEntryController, extra: Partial<WorkloadEntryCleanupOptions> = {}): () => Promise<void> {
  const cleanup = new WorkloadEntryCleanup({
    client,
    identity: wle.identity,
    isConnected: (key) => wle.isConnected(key),
    gracePeriodMs: GRACE_MS,
    cleanupIntervalMs: 200,
    counters,
    namespace: ns,
    ...extra,
  });
  const abort = new AbortController();
  const duty = cleanup.run(abort.signal);
  return async () => {
    abort.abort();
    await duty;
  };
}

const find = (name: string): Promise<Entry | undefined> => client.find<Entry>({ apiVersion: API_VERSION, kind: 'WorkloadEntry', namespace: ns, name });
const annotations = (e: Entry | undefined): Readonly<Record<string, string>> => e?.metadata?.annotations ?? {};
const count = async (c: { get(): Promise<{ values: Array<{ value: number }> }> }): Promise<number> => (await c.get()).values[0]?.value ?? 0;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('workload entry auto-registration', () => {
  test('a proxy naming a WorkloadGroup gets an entry built from the template, owned by the group, annotated with this daemon', async () => {
    const before = await count(counters.success);
    const wle = controller('meshd-a');
    await wle.connected(proxy('10.9.0.1'));
    const e = await find('vms-10.9.0.1');
    expect(e?.spec).toEqual({ address: '10.9.0.1', labels: { tier: 'backend', app: 'legacy', version: 'v1' }, serviceAccount: 'legacy-sa', network: 'vm-net', ports: { http: 8080 } });
    expect(e?.metadata?.labels).toEqual({ app: 'legacy', version: 'v1' });
    expect(annotations(e)).toMatchObject({ [AUTO_REGISTRATION_GROUP]: 'vms', [WORKLOAD_CONTROLLER]: 'meshd-a', 'team.example.com/owner': 'payments' });
    expect(Date.parse(annotations(e)[CONNECTED_AT])).toBeGreaterThan(Date.now() - 60_000);
    expect(annotations(e)[DISCONNECTED_AT]).toBeUndefined();
    expect(e?.metadata?.ownerReferences).toEqual([expect.objectContaining({ kind: 'WorkloadGroup', name: 'vms', uid: groupUid })]);
    expect(await count(counters.success)).toBe(before + 1);
    expect(wle.liveEntries()).toEqual([`${ns}/vms-10.9.0.1`]);

    // A second stream of the same workload changes nothing; only the last disconnect counts.
    const rv = e?.metadata?.resourceVersion;
    await wle.connected(proxy('10.9.0.1'));
    expect((await find('vms-10.9.0.1'))?.metadata?.resourceVersion).toBe(rv);
    await wle.disconnected(proxy('10.9.0.1'));
    expect(annotations(await find('vms-10.9.0.1'))[DISCONNECTED_AT]).toBeUndefined();
    await wle.disconnected(proxy('10.9.0.1'));
    expect(Date.parse(annotations(await find('vms-10.9.0.1'))[DISCONNECTED_AT])).toBeGreaterThan(Date.now() - 60_000);
  });

  test('proxies without a group, and entries a user created under the same name, are left alone', async () => {
    const wle = controller('meshd-a');
    await wle.connected(parseProxy(`sidecar~10.9.0.8~plain.${ns}~${ns}.svc.cluster.local`, { NAMESPACE: ns }));
    expect(await find('vms-10.9.0.8')).toBeUndefined();

    await client.create({ apiVersion: API_VERSION, kind: 'WorkloadEntry', metadata: { name: 'vms-10.9.0.9', namespace: ns }, spec: { address: '10.9.0.9' } });
    const errors = await count(counters.errors);
    await wle.connected(proxy('10.9.0.9'));
    const e = await find('vms-10.9.0.9');
    expect(e?.spec).toEqual({ address: '10.9.0.9' });
    expect(annotations(e)[WORKLOAD_CONTROLLER]).toBeUndefined();
    expect(await count(counters.errors)).toBe(errors + 1);
  });

  test('health reports set the Healthy condition with the group\'s probe', async () => {
    const wle = controller('meshd-a');
    const p = proxy('10.9.0.2');
    await wle.connected(p);
    await wle.healthReport(p, { healthy: false, message: 'connection refused' });
    const down = await find('vms-10.9.0.2');
    expect(condition(down, 'Healthy')).toMatchObject({ status: 'False', reason: 'HealthCheckFailed', message: 'httpGet :8080/ready: connection refused' });
    await wle.healthReport(p, { healthy: true });
    const up = await find('vms-10.9.0.2');
    expect(condition(up, 'Healthy')).toMatchObject({ status: 'True', reason: 'HealthCheckSucceeded', message: 'httpGet :8080/ready: passed' });
    await wle.disconnected(p);
  });

  test('a proxy whose WorkloadGroup does not exist yet is registered once the group appears (the failure is retried)', async () => {
    const wle = controller('meshd-a');
    const late = parseProxy(`sidecar~10.9.1.1~vm-late.${ns}~${ns}.svc.cluster.local`, { WORKLOAD_GROUP: 'late', NAMESPACE: ns });
    const errors = await count(counters.errors);
    await wle.connected(late);
    expect(await count(counters.errors)).toBeGreaterThan(errors);
    expect(await find('late-10.9.1.1')).toBeUndefined();
    await client.create({ apiVersion: API_VERSION, kind: 'WorkloadGroup', metadata: { name: 'late', namespace: ns }, spec: { template: { serviceAccount: 'late-sa' } } });
    const e = await eventually('the entry registered by a retry', async () => find('late-10.9.1.1'), 10_000);
    expect(e.spec?.serviceAccount).toBe('late-sa');
    expect(annotations(e)[WORKLOAD_CONTROLLER]).toBe('meshd-a');
    await wle.disconnected(late);
  });

  test('the cleanup duty deletes an entry once it has been disconnected longer than the grace period', async () => {
    const wle = controller('meshd-a');
    const p = proxy('10.9.0.3');
    await wle.connected(p);
    const unregistered = await count(counters.unregister);
    await wle.disconnected(p);
    expect(await count(counters.unregister)).toBe(unregistered + 1);
    const disconnectedAt = Date.parse(annotations(await find('vms-10.9.0.3'))[DISCONNECTED_AT]);

    const deletes = await count(counters.deletes);
    const stop = runCleanup(wle);
    try {
      await eventually('the entry deleted', async () => (await find('vms-10.9.0.3')) === undefined, 10_000);
      expect(Date.now() - disconnectedAt).toBeGreaterThanOrEqual(GRACE_MS);
    } finally {
      await stop();
    }
    // The API server shows the delete before the controller has its answer; once the duty has
    // stopped, every delete it sent has been answered and counted.
    expect(await count(counters.deletes)).toBeGreaterThanOrEqual(deletes + 1);
  });

  test('a restart with the same identity keeps entries of workloads that reconnect within the grace period and removes the others', async () => {
    const before = controller('meshd-r');
    const back = proxy('10.9.0.4');
    const gone = proxy('10.9.0.5');
    await before.connected(back);
    await before.connected(gone);
    // The process dies without any disconnect callback; a new one starts with the same pod name.
    const after = controller('meshd-r');
    expect(await after.start()).toBe(2);
    expect(annotations(await find('vms-10.9.0.4'))[DISCONNECTED_AT]).toBeDefined();
    await after.connected(back);
    const live = await find('vms-10.9.0.4');
    expect(annotations(live)[DISCONNECTED_AT]).toBeUndefined();
    expect(annotations(live)[WORKLOAD_CONTROLLER]).toBe('meshd-r');

    const stop = runCleanup(after);
    try {
      await eventually('the entry of the workload that did not come back deleted', async () => (await find('vms-10.9.0.5')) === undefined, 10_000);
      expect(annotations(await find('vms-10.9.0.4'))[DISCONNECTED_AT]).toBeUndefined();
    } finally {
      await stop();
    }
    await after.disconnected(back);
  });

  test('another daemon leaves entries of a live daemon alone, takes over a workload that moves to it, and cleans up after a daemon whose pod is gone', async () => {
    // The namespace's default ServiceAccount appears shortly after the namespace; pods wait for it.
    for (let i = 0; i < 100; i++) {
      try {
        await client.get({ apiVersion: 'v1', kind: 'ServiceAccount', namespace: ns, name: 'default' });
        break;
      } catch {
        await sleep(100);
      }
    }
    await client.create({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'meshd-first', namespace: ns },
      spec: { containers: [{ name: 'discovery', image: 'mesh/meshd:test' }] },
    });
    const first = controller('meshd-first');
    const second = controller('meshd-second');
    const lost = controller('meshd-vanished');
    const p6 = proxy('10.9.0.6');
    const p7 = proxy('10.9.0.7');
    await first.connected(p6);
    await lost.connected(p7);

    const unregistered = await count(counters.unregister);
    const stop = runCleanup(second, { controllerPodNamespace: ns });
    try {
      // meshd-vanished has no pod: its entry is marked disconnected now, and deleted once the grace period has passed since...
      const marked = await eventually('the entry of the vanished daemon marked', async () => {
        const e = await find('vms-10.9.0.7');
        return annotations(e)[DISCONNECTED_AT] ? e : undefined;
      });
      expect(annotations(marked)[WORKLOAD_CONTROLLER]).toBe('meshd-vanished');
      expect(await count(counters.unregister)).toBeGreaterThan(unregistered);
      await eventually('the entry of the vanished daemon deleted', async () => (await find('vms-10.9.0.7')) === undefined, 10_000);
      // ...while meshd-first's pod exists: its entry stays as it is.
      expect(annotations(await find('vms-10.9.0.6'))).toMatchObject({ [WORKLOAD_CONTROLLER]: 'meshd-first' });
      expect(annotations(await find('vms-10.9.0.6'))[DISCONNECTED_AT]).toBeUndefined();

      // The workload moves to meshd-second; the end of its old stream on meshd-first changes nothing.
      const updates = await count(counters.updates);
      await second.connected(p6);
      expect(await count(counters.updates)).toBe(updates + 1);
      await first.disconnected(p6);
      const moved = await find('vms-10.9.0.6');
      expect(annotations(moved)[WORKLOAD_CONTROLLER]).toBe('meshd-second');
      expect(annotations(moved)[DISCONNECTED_AT]).toBeUndefined();
    } finally {
      await stop();
    }
    await second.disconnected(p6);
  });
});
