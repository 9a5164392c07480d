/**
 * Two operator replicas (src/bootstrap/operator.ts, as `mesh-operator server` runs them) with
 * leader election on the Lease `mesh-operator-lock-<revision>`: one leads and reconciles, the
 * other stands by with no controller running; when the leader stops (releasing the lease) the
 * other takes over and reconciles the next change.
 */
import { startOperatorServer, type OperatorServer } from '../../../src/bootstrap/operator.js';
import type { KubeClient } from '../../../src/kube/client.js';
import type { KubeObject } from '../../../src/kube/types.js';
import { CLUSTER_START_TIMEOUT_MS } from '../../support/cluster.js';
import { createNamespace, deleteNamespace, kubeTestEnv, until } from '../../kube/helpers.js';
import { applyCr, ensureCrd, getCr, hex, meshOperator, removeCr, waitForPhase } from './helpers.js';
import pino from 'pino';

let client: KubeClient;
let kubeconfig: string;
let ns: string;
const revision = `le${hex()}`;
const replicas: OperatorServer[] = [];

async function replica(identity: string): Promise<OperatorServer> {
  const r = await startOperatorServer({
    watchedNamespaces: [ns],
    operatorNamespace: ns,
    revision,
    clusterconfig: kubeconfig,
    monitoring: null,
    identity,
    requeueDelayMs: 300,
    qps: 0,
    lease: { leaseDurationMs: 4000, renewDeadlineMs: 3000, retryPeriodMs: 500 },
    log: pino({ level: 'silent' }),
  });
  replicas.push(r);
  return r;
}

const applied = (r: OperatorServer): number => r.controller.applied.get(`${ns}/mesh`) ?? 0;

beforeAll(async () => {
  const env = await kubeTestEnv();
  client = env.client;
  kubeconfig = env.cluster.kubeconfig;
  ns = await createNamespace(client, 'op-leader');
  await ensureCrd(client);
}, CLUSTER_START_TIMEOUT_MS);

afterAll(async () => {
  if (!client) return;
  await removeCr(client, ns, 'mesh');
  await Promise.all(replicas.map((r) => r.stop()));
  await deleteNamespace(client, ns);
  client.close();
}, 60_000);

describe('operator replicas with leader election', () => {
  it('lets one replica reconcile, and the other take over when it stops', async () => {
    const a = await replica('replica-a');
    const b = await replica('replica-b');
    await until('a leader', () => a.leadership.isLeader() || b.leadership.isLeader(), 20_000);
    const [leader, standby] = a.leadership.isLeader() ? [a, b] : [b, a];
    expect(standby.leadership.isLeader()).toBe(false);
    expect(standby.controller.running).toBe(false);
    expect(standby.ready()).toBe(true);
    await until('the leader to sync', () => leader.ready(), 20_000);
    const lease = await client.get<KubeObject & { spec?: { holderIdentity?: string } }>({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', namespace: ns, name: `mesh-operator-lock-${revision}` });
    expect(lease.spec?.holderIdentity).toBe(leader === a ? 'replica-a' : 'replica-b');

    // Profile "empty" renders nothing: quick to reconcile, and Healthy at once.
    await applyCr(client, meshOperator(ns, 'mesh', { profile: 'empty', revision, namespace: ns }));
    await waitForPhase(client, ns, 'mesh', 'Healthy', 30_000);
    expect(applied(leader)).toBeGreaterThan(0);
    expect(applied(standby)).toBe(0);
    expect(standby.controller.running).toBe(false);
    expect(standby.leadership.leadershipTerms()).toBe(0);

    await leader.stop();
    await until('the standby to lead', () => standby.leadership.isLeader(), 20_000);
    await applyCr(client, meshOperator(ns, 'mesh', { profile: 'empty', revision, namespace: ns, hub: 'registry.example' }));
    const cr = await waitForPhase(client, ns, 'mesh', 'Healthy', 30_000);
    expect(cr.status?.observedGeneration).toBe(2);
    expect(applied(standby)).toBeGreaterThan(0);
    expect(standby.leadership.leadershipTerms()).toBe(1);
    expect(await getCr(client, ns, 'mesh')).toBeDefined();
  }, 90_000);
});
