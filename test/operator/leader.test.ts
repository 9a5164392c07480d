/**
 * Two operator replicas with leader election on the Lease `mesh-operator-lock-<revision>`: one
 * leads and reconciles, the other stands by with no controller; when the leader stops (releasing
 * the lease) the other takes over and reconciles the next change.
 */
import type { KubeClient } from '../../src/kube/client.js';
import type { KubeObject } from '../../src/kube/types.js';
import { OperatorReplica } from '../../src/operator/elected.js';
import { createEngineAdapter } from '../../src/operator/engine-adapter.js';
import { createOperatorMetrics } from '../../src/operator/metrics.js';
import { CLUSTER_START_TIMEOUT_MS } from '../support/cluster.js';
import { createNamespace, deleteNamespace, kubeTestEnv } from '../kube/helpers.js';
import { applyCr, ensureCrd, getCr, hex, meshOperator, removeCr, specSources, waitForPhase } from './helpers.js';
import { eventually } from '../support/eventually.js';

let client: KubeClient;
let ns: string;
const revision = `le${hex()}`;
const replicas: OperatorReplica[] = [];

async function replica(identity: string): Promise<OperatorReplica> {
  const r = new OperatorReplica({
    client,
    engine: createEngineAdapter(client),
    metrics: createOperatorMetrics(),
    sources: await specSources(),
    watchedNamespaces: [ns],
    revision,
    defaultTag: 'test',
    requeueDelayMs: 300,
    resyncMs: 0,
    operatorNamespace: ns,
    identity,
    leaseDurationMs: 4000,
    renewDeadlineMs: 3000,
    retryPeriodMs: 500,
  });
  replicas.push(r);
  return r;
}

const applied = (r: OperatorReplica): number => r.current()?.applied.get(`${ns}/mesh`) ?? 0;

beforeAll(async () => {
  ({ client } = await kubeTestEnv());
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
    a.start();
    b.start();
    await eventually('a leader', () => a.isLeader() || b.isLeader(), { timeoutMs: 20_000 });
    const [leader, standby] = a.isLeader() ? [a, b] : [b, a];
    expect(standby.isLeader()).toBe(false);
    expect(standby.current()).toBeUndefined();
    expect(standby.ready()).toBe(true);
    const lease = await client.get<KubeObject & { spec?: { holderIdentity?: string } }>({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', namespace: ns, name: `mesh-operator-lock-${revision}` });
    expect(lease.spec?.holderIdentity).toBe(leader === a ? 'replica-a' : 'replica-b');

    // Profile "empty" renders nothing: quick to reconcile, and Healthy at once.
    await applyCr(client, meshOperator(ns, 'mesh', { profile: 'empty', revision, namespace: ns }));
    await waitForPhase(client, ns, 'mesh', 'Healthy', 30_000);
    expect(applied(leader)).toBeGreaterThan(0);
    expect(standby.current()).toBeUndefined();
    expect(standby.leadershipTerms()).toBe(0);

    await leader.stop();
    await eventually('the standby to lead', () => standby.isLeader(), { timeoutMs: 20_000 });
    await applyCr(client, meshOperator(ns, 'mesh', { profile: 'empty', revision, namespace: ns, hub: 'registry.example' }));
    const cr = await waitForPhase(client, ns, 'mesh', 'Healthy', 30_000);
    expect(cr.status?.observedGeneration).toBe(2);
    expect(applied(standby)).toBeGreaterThan(0);
    expect(standby.leadershipTerms()).toBe(1);
    expect(await getCr(client, ns, 'mesh')).toBeDefined();
  }, 90_000);
});
