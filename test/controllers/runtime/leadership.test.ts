/**
 * Leader gating (src/controllers/runtime/leadership.ts) on the local API server: two daemons'
 * Leadership holders on meshd's Lease each register the real `status` controller; one leads and
 * writes status, the other takes over when the first stops. Duties that fail restart; without a
 * lease a process leads from start to stop.
 */
import type { KubeConfigSource } from '../../../src/config/kube-source.js';
import type { MemoryConfigStore } from '../../../src/config/store.js';
import { meshdLeaseName } from '../../../src/controllers/daemon-controllers.js';
import { Leadership } from '../../../src/controllers/runtime/leadership.js';
import type { KubeClient } from '../../../src/kube/client.js';
import type { KubeObject } from '../../../src/kube/types.js';
import { StatusController } from '../../../src/controllers/config-status/status-controller.js';
import { deleteNamespace } from '../../kube/helpers.js';
import { API_VERSION, condition, eventually, meshTestEnv, watchedStore, type StatusObject } from '../kube-env.js';
import { CLUSTER_START_TIMEOUT_MS } from '../../support/cluster.js';

const FAST_LEASE = { leaseDurationMs: 2000, renewDeadlineMs: 1500, retryPeriodMs: 300 };

let client: KubeClient;
let ns: string;
let store: MemoryConfigStore;
let source: KubeConfigSource;
const holders: Leadership[] = [];

beforeAll(async () => {
  const env = await meshTestEnv('leader');
  client = env.client;
  ns = env.namespace;
  ({ store, source } = await watchedStore(client, ns));
}, CLUSTER_START_TIMEOUT_MS);

afterAll(async () => {
  await Promise.all(holders.map((h) => h.stop()));
  await source?.stop();
  await deleteNamespace(client, ns);
  client?.close();
});

function daemon(identity: string, revision: string): { leadership: Leadership; status: StatusController } {
  const leadership = new Leadership({ lease: { client, namespace: ns, name: meshdLeaseName(revision), identity, ...FAST_LEASE }, dutyRestartMs: 50 });
  const status = new StatusController({ client, store, qps: 50, burst: 10, workers: 2 });
  leadership.add(status);
  holders.push(leadership);
  return { leadership, status };
}

const getVs = (name: string): Promise<StatusObject> => client.get<StatusObject>({ apiVersion: API_VERSION, kind: 'VirtualService', namespace: ns, name });

describe('leadership', () => {
  test('lease names follow the revision', () => {
    expect(meshdLeaseName(undefined)).toBe('meshd-leader');
    expect(meshdLeaseName('default')).toBe('meshd-leader');
    expect(meshdLeaseName('canary')).toBe('meshd-leader-canary');
  });

  test('of two daemons only the leader writes status; the other takes over when the leader stops', async () => {
    const one = daemon('meshd-one', 'rev1');
    const two = daemon('meshd-two', 'rev1');
    one.leadership.start();
    two.leadership.start();
    const [leader, follower] = await eventually('one leader', () => {
      if (one.leadership.isLeader() && !two.leadership.isLeader()) return [one, two] as const;
      if (two.leadership.isLeader() && !one.leadership.isLeader()) return [two, one] as const;
      return undefined;
    });
    const lease = await client.get<KubeObject & { spec?: { holderIdentity?: string } }>({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', namespace: ns, name: 'meshd-leader-rev1' });
    expect(lease.spec?.holderIdentity).toBe(leader.leadership.identity);
    await eventually('the follower to see the leader', () => follower.leadership.leader() === leader.leadership.identity);

    await client.create({ apiVersion: API_VERSION, kind: 'VirtualService', metadata: { name: 'route', namespace: ns }, spec: { hosts: ['a'], http: [{ route: [{ destination: { host: 'a' } }] }] } });
    await eventually('status of generation 1', async () => (await getVs('route')).status?.observedGeneration === 1);
    expect(leader.status.stats().writes).toBeGreaterThanOrEqual(1);
    expect(leader.leadership.runningDuties()).toEqual(['status']);
    expect(follower.leadership.runningDuties()).toEqual([]);
    expect(follower.status.stats()).toMatchObject({ reconciles: 0, writes: 0 });

    const stoppedAt = Date.now();
    await leader.leadership.stop();
    expect(leader.leadership.runningDuties()).toEqual([]);
    await eventually('the follower to lead', () => follower.leadership.isLeader());
    // The lease was released, so the takeover does not wait for it to expire.
    expect(Date.now() - stoppedAt).toBeLessThan(FAST_LEASE.leaseDurationMs + 1500);

    const writesBefore = leader.status.stats().writes;
    await client.mergePatch({ apiVersion: API_VERSION, kind: 'VirtualService', namespace: ns, name: 'route' }, { spec: { hosts: ['a', 'b'] } });
    const o = await eventually('status of generation 2', async () => {
      const vs = await getVs('route');
      return vs.status?.observedGeneration === 2 ? vs : undefined;
    });
    expect(condition(o, 'Reconciled')).toMatchObject({ status: 'True', observedGeneration: 2 });
    expect(follower.status.stats().reconciles).toBeGreaterThanOrEqual(1);
    expect(leader.status.stats().writes).toBe(writesBefore);
    await follower.leadership.stop();
  });

  test('a duty that fails while leading is started again; a duty added while leading starts at once', async () => {
    const leadership = new Leadership({ lease: { client, namespace: ns, name: meshdLeaseName('solo'), identity: 'meshd-solo', ...FAST_LEASE }, dutyRestartMs: 50 });
    holders.push(leadership);
    let runs = 0;
    leadership.add({
      name: 'wle-cleanup',
      run: async (signal) => {
        runs++;
        if (runs === 1) throw new Error('first run fails');
        await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
      },
    });
    leadership.start();
    await eventually('the duty running again', () => runs === 2 && leadership.runningDuties().includes('wle-cleanup'));
    let lateSignal: AbortSignal | undefined;
    leadership.add({
      name: 'webhook-patch',
      run: (signal) => {
        lateSignal = signal;
        return new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
      },
    });
    expect(leadership.runningDuties()).toEqual(['webhook-patch', 'wle-cleanup']);
    await leadership.stop();
    expect(lateSignal?.aborted).toBe(true);
    expect(leadership.runningDuties()).toEqual([]);
    expect(runs).toBe(2);
  });

  test('without a lease, a process leads from start to stop', async () => {
    const leadership = new Leadership({ identity: 'local' });
    let started = 0;
    let stoppedWith: boolean | undefined;
    leadership.add({
      name: 'solo-duty',
      run: async (signal) => {
        started++;
        await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
        stoppedWith = signal.aborted;
      },
    });
    expect(leadership.isLeader()).toBe(false);
    leadership.start();
    expect(leadership.isLeader()).toBe(true);
    expect(leadership.leader()).toBe('local');
    expect(leadership.runningDuties()).toEqual(['solo-duty']);
    await leadership.stop();
    expect([started, stoppedWith, leadership.isLeader()]).toEqual([1, true, false]);
  });
});
