/**
 * End-to-end on the local control plane (test/support/cluster.ts): the daemon runs with
 * `--registries Cluster` against a real kube-apiserver, reads a Service, the EndpointSlices of a
 * Deployment's pods and the mesh CRDs, and a proxyless grpc-js-xds client routes as configured to
 * the pods. The pods' containers are played by Echo backends, each in a network namespace holding
 * its pod's IP (e2e/support/pod-player.ts), so calls reach the pod the daemon chose across the
 * namespace's link and the reply names it.
 *
 * Needs `npm run build` first (the daemon runs from dist/) and root, to make the namespaces (see
 * test/support/netns.ts). Without it the routing tests are skipped with one line saying why, and the
 * registry checks still run through the daemon's debug endpoints.
 */
import { randomBytes } from 'node:crypto';
import {
  APISERVER_RESTART_TIMEOUT_MS,
  ensureCluster,
  kubeRequest,
  podNetwork,
  readKubeconfig,
  startApiServer,
  stopApiServer,
  type KubeconfigCredentials,
} from '../test/support/cluster.js';
import { metricValue, startDaemon, type Daemon } from '../test/support/daemon.js';
import { apply, applyCrds, createNamespace, deleteNamespace, deployment, readyAddresses, scale } from './support/kube.js';
import { PLAYED_CONDITION, playPods, type PodPlayer } from './support/pod-player.js';
import { pollUntil } from './support/wait.js';
import { startXdsClient, type CallResult, type XdsClient } from './support/xds-client.js';

const ns = `e2e-cluster-${randomBytes(3).toString('hex')}`;
const HOST = `echo.${ns}.svc.cluster.local`;
const PORT = 7070;
const TARGET = `${HOST}:${PORT}`;
// Calls reach played pods only where this process can give them network namespaces (root).
const network = podNetwork();
const routable = network.network !== undefined;
if (!routable) process.stderr.write(`e2e/cluster-registry: tests that route calls to pods are skipped: ${network.reason}\n`);
const routing = routable ? it : it.skip;

let creds: KubeconfigCredentials;
let kubeconfig: string;
let daemon: Daemon | undefined;
let client: XdsClient | undefined;
let pods: PodPlayer | undefined;

/** Calls per version label, from the pod names (`echo-v1-<hash>-<id>`). */
function byVersion(r: CallResult): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [pod, n] of Object.entries(r.results)) {
    const version = /^echo-(v\d)-/.exec(pod)?.[1] ?? pod;
    out[version] = (out[version] ?? 0) + n;
  }
  return out;
}

function diagnostics(): string {
  const played = pods ? `--- pods played: ${pods.serving().join(', ') || 'none'}; problems: ${pods.problems().join(' | ') || 'none'}\n` : '';
  return `${played}--- daemon log tail ---\n${daemon?.logs().slice(-6000) ?? ''}\n--- client stderr ---\n${client?.stderr().slice(-2000) ?? ''}`;
}

const vs = (weights: Record<string, number>): Record<string, unknown> => ({
  apiVersion: 'networking.mesh.io/v1',
  kind: 'VirtualService',
  metadata: { name: 'echo', namespace: ns },
  spec: {
    hosts: [HOST],
    http: [{ route: Object.entries(weights).map(([subset, weight]) => ({ destination: { host: HOST, subset, port: { number: PORT } }, weight })) }],
  },
});

beforeAll(async () => {
  const cluster = await ensureCluster();
  kubeconfig = cluster.kubeconfig;
  creds = await readKubeconfig(kubeconfig);
  await applyCrds(creds);
  await createNamespace(creds, ns);
  await apply(creds, {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'echo', namespace: ns },
    spec: { selector: { app: 'echo' }, ports: [{ name: 'grpc-echo', port: PORT, targetPort: 7070 }] },
  });
  // Played pods become Ready only once their backend listens, as behind a readiness probe.
  const played = routable ? { readinessGate: PLAYED_CONDITION } : {};
  await apply(creds, deployment(ns, 'echo-v1', 2, { app: 'echo', version: 'v1' }, played));
  await apply(creds, deployment(ns, 'echo-v2', 1, { app: 'echo', version: 'v2' }, played));
  if (routable) pods = await playPods(creds, ns, 'app=echo', 7070, { pollMs: 50 });
  await apply(creds, {
    apiVersion: 'networking.mesh.io/v1',
    kind: 'DestinationRule',
    metadata: { name: 'echo', namespace: ns },
    spec: { host: HOST, subsets: [{ name: 'v1', labels: { version: 'v1' } }, { name: 'v2', labels: { version: 'v2' } }] },
  });
  await apply(creds, vs({ v1: 80, v2: 20 }) as never);
  await pollUntil(async () => (await readyAddresses(creds, ns, 'echo')).length === 3, { timeoutMs: 60_000, what: '3 ready endpoints in the slices', diagnostics });
  daemon = await startDaemon({
    registries: 'Cluster',
    args: ['--clusterconfig', kubeconfig, '--resync', '10s'],
    env: {
      DISC_ENABLE_STATUS: 'true',
      DISC_ENABLE_ANALYSIS: 'true',
      DISC_ENABLE_CONFIG_DISTRIBUTION_TRACKING: 'true',
      DISC_STATUS_UPDATE_INTERVAL: '500ms',
      DISC_ENABLE_WORKLOAD_ENTRY_AUTOREGISTRATION: 'true',
      DISC_WORKLOAD_ENTRY_GRACE_PERIOD: '2s',
      POD_NAMESPACE: ns,
      POD_NAME: 'meshd-e2e-0',
    },
    readyTimeoutMs: 60_000,
  });
  client = await startXdsClient({ xdsAddr: daemon.grpcAddr, nodeId: `sidecar~198.18.255.1~client.${ns}~${ns}.svc.cluster.local` });
}, 180_000);

afterAll(async () => {
  await client?.close();
  if (daemon) await daemon.stop();
  await pods?.stop();
  if (creds) await deleteNamespace(creds, ns);
}, 60_000);

describe('Cluster registry', () => {
  it('lists the Service with the Deployment pods as endpoints, with pod labels and identity', async () => {
    interface Dumped {
      readonly hostname: string;
      readonly endpoints: ReadonlyArray<{ address: string; labels: Record<string, string>; serviceAccount: string; healthy: boolean }>;
    }
    const addresses = await readyAddresses(creds, ns, 'echo');
    const echo = await pollUntil(
      async () => {
        const dump = (await (await fetch(`http://${daemon!.httpAddr}/debug/endpointz`)).json()) as Dumped[];
        const svc = dump.find((s) => s.hostname === HOST);
        return svc && svc.endpoints.length === addresses.length ? svc : undefined;
      },
      { timeoutMs: 20_000, what: 'the daemon to list the pods of echo', diagnostics },
    );
    expect(echo.endpoints.map((e) => e.address).sort()).toEqual(addresses);
    expect(echo.endpoints.map((e) => e.labels.version).sort()).toEqual(['v1', 'v1', 'v2']);
    for (const e of echo.endpoints) {
      expect(e.healthy).toBe(true);
      expect(e.serviceAccount).toBe(`spiffe://cluster.local/ns/${ns}/sa/default`);
    }
  });

  it('writes a Reconciled condition with the observed generation into the VirtualService status', async () => {
    interface Stored {
      metadata: { generation: number };
      status?: { observedGeneration?: number; conditions?: Array<{ type: string; status: string }>; validationMessages?: unknown[] };
    }
    const vsPath = `/apis/networking.mesh.io/v1/namespaces/${ns}/virtualservices/echo`;
    const stored = await pollUntil(
      async () => {
        const obj = (await kubeRequest(creds, 'GET', vsPath)).body as Stored;
        return obj.status?.observedGeneration === obj.metadata.generation && obj.status?.conditions?.some((c) => c.type === 'Reconciled' && c.status === 'True') ? obj : undefined;
      },
      { timeoutMs: 30_000, what: 'status Reconciled on the VirtualService', diagnostics },
    );
    expect(stored.status?.validationMessages ?? []).toEqual([]);
  }, 60_000);

  it('reports in the status how many connected proxies acknowledged the current generation', async () => {
    interface Stored {
      status?: { conditions?: Array<{ type: string; message?: string }> };
    }
    const vsPath = `/apis/networking.mesh.io/v1/namespaces/${ns}/virtualservices/echo`;
    // The client subscribes through a call; its ACKs of the snapshot holding the VirtualService count.
    await client!.call(TARGET, { count: 1 }).catch(() => undefined);
    await pollUntil(
      async () => {
        const obj = (await kubeRequest(creds, 'GET', vsPath)).body as Stored;
        return obj.status?.conditions?.find((c) => c.type === 'Reconciled')?.message === '1/1 proxies up to date';
      },
      { timeoutMs: 30_000, what: 'Reconciled to say 1/1 proxies up to date', diagnostics },
    );
  }, 60_000);

  routing('routes 80/20 between the Deployments as the VirtualService says', async () => {
    await client!.callUntil(TARGET, { count: 30 }, (r) => r.failed === 0 && Object.keys(byVersion(r)).length === 2, 30_000, 'both versions to answer');
    const r = await client!.call(TARGET, { count: 200, concurrency: 4 });
    expect(r.errors).toEqual({});
    const v = byVersion(r);
    expect(v.v1 ?? 0).toBeGreaterThanOrEqual(140);
    expect(v.v1 ?? 0).toBeLessThanOrEqual(180);
    // both v1 pods take calls
    expect(Object.keys(r.results).filter((p) => p.startsWith('echo-v1-'))).toHaveLength(2);
  }, 90_000);

  routing('a VirtualService edit in the cluster reaches the client', async () => {
    await apply(creds, vs({ v2: 100 }) as never);
    await client!.callUntil(TARGET, { count: 20 }, (r) => r.failed === 0 && byVersion(r).v2 === 20, 15_000, 'all calls to v2');
    await apply(creds, vs({ v1: 80, v2: 20 }) as never);
    await client!.callUntil(TARGET, { count: 40 }, (r) => r.failed === 0 && (byVersion(r).v1 ?? 0) > 20, 15_000, 'v1 back in use');
  }, 60_000);

  routing('scaling the Deployment changes the endpoints the client uses within 1 s', async () => {
    await apply(creds, vs({ v1: 100 }) as never);
    await client!.callUntil(TARGET, { count: 20 }, (r) => r.failed === 0 && byVersion(r).v1 === 20, 15_000, 'all calls to v1');
    const before = new Set(await readyAddresses(creds, ns, 'echo'));
    await scale(creds, ns, 'echo-v1', 3);
    // The clock starts when the new pod is a ready endpoint in the cluster: what comes before is
    // the cluster's own work (scheduling, the simulated kubelet, the pod player starting the pod's
    // backend, which the pod's readiness gate waits for, the slice controller).
    const added = await pollUntil(
      async () => (await readyAddresses(creds, ns, 'echo')).find((a) => !before.has(a)),
      { timeoutMs: 60_000, intervalMs: 20, what: 'a new ready endpoint', diagnostics },
    );
    const t0 = Date.now();
    expect(pods!.serving()).toHaveLength(4);
    const r = await client!.callUntil(
      TARGET,
      { count: 12, concurrency: 6, deadlineMs: 500 },
      (res) => Object.keys(res.results).filter((p) => p.startsWith('echo-v1-')).length === 3,
      10_000,
      `calls to reach the new pod at ${added}`,
    );
    const elapsed = Date.now() - t0;
    expect(r.failed).toBe(0);
    expect(elapsed).toBeLessThan(1000);
    await scale(creds, ns, 'echo-v1', 2);
  }, 120_000);
});

describe('workload-entry auto-registration', () => {
  it('gives a workload connecting with a WorkloadGroup a WorkloadEntry, removed after the grace period once it leaves', async () => {
    await apply(creds, {
      apiVersion: 'networking.mesh.io/v1',
      kind: 'WorkloadGroup',
      metadata: { name: 'vm', namespace: ns },
      spec: { template: { labels: { app: 'vm-app' }, serviceAccount: 'default', ports: { grpc: 7070 } } },
    } as never);
    const ip = '198.18.250.7';
    interface Entry {
      metadata: { name: string };
      spec: { address?: string; labels?: Record<string, string> };
    }
    const entries = async (): Promise<Entry[]> =>
      ((await kubeRequest(creds, 'GET', `/apis/networking.mesh.io/v1/namespaces/${ns}/workloadentries`)).body as { items?: Entry[] }).items ?? [];
    const vm = await startXdsClient({ xdsAddr: daemon!.grpcAddr, nodeId: `sidecar~${ip}~vm-1.${ns}~${ns}.svc.cluster.local`, metadata: { WORKLOAD_GROUP: 'vm', NAMESPACE: ns } });
    try {
      await vm.call(TARGET, { count: 1 }); // the first call opens the xDS stream
      const entry = await pollUntil(async () => (await entries()).find((e) => e.spec.address === ip), {
        timeoutMs: 20_000,
        what: 'a WorkloadEntry for the connected workload',
        diagnostics,
      });
      expect(entry.spec.labels?.app).toBe('vm-app');
    } finally {
      await vm.close();
    }
    await pollUntil(async () => !(await entries()).some((e) => e.spec.address === ip), { timeoutMs: 30_000, what: 'the entry to be removed after the grace period', diagnostics });
  }, 90_000);
});

describe('API server restart', () => {
  it(
    'keeps serving the last config while the API server is down, then resyncs without a push storm',
    async () => {
      const pushesBefore = metricValue(await (await fetch(`http://${daemon!.monitoringAddr}/metrics`)).text(), 'disc_xds_pushes');
      await stopApiServer();
      try {
        if (routable) {
          const r = await client!.call(TARGET, { count: 20 });
          expect(r.failed).toBe(0);
        }
        const ready = await fetch(`http://${daemon!.monitoringAddr}/ready`);
        expect(ready.status).toBe(200);
      } finally {
        await startApiServer({ restartControllers: true });
      }
      // A change made after the restart reaches the client: the watches healed.
      await apply(creds, vs({ v2: 100 }) as never);
      if (routable) {
        await client!.callUntil(TARGET, { count: 20 }, (r) => r.failed === 0 && byVersion(r).v2 === 20, 60_000, 'all calls to v2 after the restart');
      } else {
        await pollUntil(async () => (await (await fetch(`http://${daemon!.httpAddr}/debug/configz`)).text()).includes('"v2"'), { timeoutMs: 60_000 });
      }
      const pushesAfter = metricValue(await (await fetch(`http://${daemon!.monitoringAddr}/metrics`)).text(), 'disc_xds_pushes');
      // Relisting unchanged objects must not push again: the one edit (and at most a few coalesced
      // pushes) per type the client watches, not a push per object in the cluster.
      expect(pushesAfter - pushesBefore).toBeLessThanOrEqual(8);
    },
    APISERVER_RESTART_TIMEOUT_MS + 120_000,
  );
});
