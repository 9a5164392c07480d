/**
 * Remote clusters from Secrets, against real API servers: the local control plane is the daemon's
 * own cluster; a second kube-apiserver (test/support/remote-apiserver.ts) is the remote cluster. A
 * Secret labelled mesh.io/multiCluster=true in the local cluster names it; its services' endpoints
 * then merge with the local ones, through the registry and through a running daemon.
 */
import { Writable } from 'node:stream';
import pino from 'pino';
import { startDaemon, type RunningDaemon } from '../../src/bootstrap/daemon.js';
import { createClusterSide, createRemoteClusters, remoteClusterFactory, type ClusterSide, type RemoteClustersSetup } from '../../src/bootstrap/cluster.js';
import { daemonConfigFrom } from '../../src/bootstrap/from-options.js';
import { parseDiscoveryArgs } from '../../src/config/discovery-flags.js';
import { MemoryConfigStore } from '../../src/config/store.js';
import { KubeClient } from '../../src/kube/client.js';
import type { KubeObject } from '../../src/kube/types.js';
import { createMetrics } from '../../src/metrics/metrics.js';
import type { Endpoint, Service } from '../../src/model/service.js';
import { AggregateRegistry } from '../../src/registry/aggregate.js';
import { RemoteClusterController } from '../../src/controllers/remote-clusters/controller.js';
import { freePort } from '../support/daemon.js';
import { metricValue } from '../support/metrics-text.js';
import { applyServiceExportCrd } from '../support/service-export-crd.js';
import { kubeconfigFor, REMOTE_APISERVER_START_TIMEOUT_MS, REMOTE_APISERVER_STOP_TIMEOUT_MS, startRemoteApiServer, type RemoteApiServer } from '../support/remote-apiserver.js';
import { applyMeshCrds, createNamespace, deleteNamespace, kubeTestEnv, uniqueName, type KubeTestEnv } from '../kube/helpers.js';
import { eventually } from '../support/eventually.js';

const LOCAL = 'local-c';
const REMOTE = 'remote-c';
const FM = { fieldManager: 'mesh-tests', force: true };

let env: KubeTestEnv;
let remote: RemoteApiServer | undefined;
let remoteClient: KubeClient;
/** The services' namespace, in both clusters. */
let ns: string;
const secretNamespaces: string[] = [];

function capturedLog(): { log: pino.Logger; text: () => string } {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(chunk.toString('utf8'));
      done();
    },
  });
  return { log: pino({ level: 'info' }, sink), text: () => lines.join('') };
}

interface Port {
  readonly name: string;
  readonly port: number;
}

/** A Service without selector and its EndpointSlice (no controller writes slices for it). */
async function serviceWithSlice(client: KubeClient, name: string, ports: ReadonlyArray<Port>, addresses: ReadonlyArray<string>, extra: Record<string, unknown> = {}): Promise<void> {
  await client.applyObject(
    { apiVersion: 'v1', kind: 'Service', metadata: { name, namespace: ns }, spec: { ports: ports.map((p) => ({ name: p.name, port: p.port, targetPort: p.port })), ...extra } } as KubeObject,
    FM,
  );
  await setSlice(client, name, ports, addresses);
}

async function setSlice(client: KubeClient, name: string, ports: ReadonlyArray<Port>, addresses: ReadonlyArray<string>): Promise<void> {
  await client.applyObject(
    {
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: { name: `${name}-manual`, namespace: ns, labels: { 'kubernetes.io/service-name': name, 'endpointslice.kubernetes.io/managed-by': 'mesh-tests' } },
      addressType: 'IPv4',
      endpoints: addresses.map((a) => ({ addresses: [a], conditions: { ready: true } })),
      ports: ports.map((p) => ({ name: p.name, port: p.port, protocol: 'TCP' })),
    } as KubeObject,
    FM,
  );
}

/** A namespace for remote-cluster Secrets, deleted after the file. */
async function secretNamespace(): Promise<string> {
  const name = await createNamespace(env.client, 'mc-secrets');
  secretNamespaces.push(name);
  return name;
}

async function putSecret(namespace: string, name: string, data: Record<string, string>): Promise<void> {
  const b64 = Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')]));
  await env.client.applyObject(
    { apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace, labels: { 'mesh.io/multiCluster': 'true' } }, type: 'Opaque', data: b64 } as KubeObject,
    FM,
  );
}

async function deleteSecret(namespace: string, name: string): Promise<void> {
  await env.client.delete({ apiVersion: 'v1', kind: 'Secret', namespace, name });
}

const host = (name: string): string => `${name}.${ns}.svc.cluster.local`;

/** `cluster address:port` of endpoints, sorted. */
function described(eps: ReadonlyArray<Endpoint>): string[] {
  return eps.map((e) => `${e.clusterId} ${e.address}:${e.port}`).sort();
}

function setupFor(namespace: string, overrides: Partial<RemoteClustersSetup> = {}): RemoteClustersSetup {
  return {
    clusterId: LOCAL,
    namespace,
    syncTimeoutMs: 60_000,
    qps: 0,
    burst: 100,
    resyncMs: 0,
    domain: 'cluster.local',
    trustDomain: 'cluster.local',
    useEndpointSlices: true,
    edsForHeadless: false,
    workloadEntries: false,
    serviceExports: false,
    ...overrides,
  };
}

beforeAll(async () => {
  env = await kubeTestEnv({ qps: 0 });
  remote = await startRemoteApiServer();
  remoteClient = (await KubeClient.create({ kubeconfig: remote.kubeconfig, qps: 0 })).client;
  await Promise.all([applyMeshCrds(env.client), applyMeshCrds(remoteClient)]);
  ns = uniqueName('mc');
  for (const c of [env.client, remoteClient]) await c.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  // Same host in both clusters; the remote definition has one more port, the local one must win.
  await serviceWithSlice(env.client, 'echo', [{ name: 'http', port: 8080 }], ['198.18.70.1']);
  await serviceWithSlice(remoteClient, 'echo', [{ name: 'http', port: 8080 }, { name: 'grpc', port: 9090 }], ['198.18.80.1', '198.18.80.2']);
  // Only in the remote cluster.
  await serviceWithSlice(remoteClient, 'only-remote', [{ name: 'http', port: 8080 }], ['198.18.80.9']);
}, REMOTE_APISERVER_START_TIMEOUT_MS + 60_000);

afterAll(async () => {
  await deleteNamespace(env.client, ns);
  for (const s of secretNamespaces) await deleteNamespace(env.client, s);
  remoteClient?.close();
  env?.client.close();
  await remote?.stop();
}, REMOTE_APISERVER_STOP_TIMEOUT_MS);

describe('remote clusters in the registry', () => {
  let local: ClusterSide;
  let aggregate: AggregateRegistry;
  let controller: RemoteClusterController | undefined;
  const metrics = createMetrics({ defaultMetrics: false });
  const captured = capturedLog();

  beforeAll(async () => {
    local = await createClusterSide(
      { kubeconfig: env.cluster.kubeconfig, qps: 0, burst: 100, resyncMs: 0, clusterId: LOCAL, domain: 'cluster.local', trustDomain: 'cluster.local', configFromCrds: false, useEndpointSlices: true, edsForHeadless: false, selectWorkloadEntries: false },
      new MemoryConfigStore(),
      metrics,
      pino({ level: 'silent' }),
      () => undefined,
    );
    await local.start();
    aggregate = new AggregateRegistry([local.registry], { configClusterId: LOCAL });
    await aggregate.start();
  }, 60_000);

  afterAll(async () => {
    await controller?.stop();
    aggregate?.stop();
    await local?.stop();
  });

  const echo = (): Service | undefined => aggregate.services().find((s) => s.hostname === host('echo'));

  it('merges the endpoints of a remote cluster named by a Secret, keeping the own cluster’s ports; removing the Secret removes them', async () => {
    const secrets = await secretNamespace();
    await putSecret(secrets, 'remote-one', { [REMOTE]: remote!.kubeconfigText });
    controller = createRemoteClusters(setupFor(secrets), env.client, aggregate, metrics, captured.log);
    const events: Array<{ servicesChanged: boolean; hosts: ReadonlyArray<string> }> = [];
    const off = aggregate.onEvent((e) => events.push({ servicesChanged: e.servicesChanged, hosts: e.endpointHosts }));
    await controller.start();

    const svc = echo();
    expect(svc?.ports.map((p) => p.name)).toEqual(['http']);
    expect(aggregate.services().filter((s) => s.hostname === host('echo'))).toHaveLength(1);
    expect(described(aggregate.endpoints(svc!))).toEqual([`${LOCAL} 198.18.70.1:8080`, `${REMOTE} 198.18.80.1:8080`, `${REMOTE} 198.18.80.2:8080`]);
    const onlyRemote = aggregate.services().find((s) => s.hostname === host('only-remote'));
    expect(onlyRemote?.clusterId).toBe(REMOTE);
    expect(described(aggregate.endpoints(onlyRemote!))).toEqual([`${REMOTE} 198.18.80.9:8080`]);
    expect(events.some((e) => e.servicesChanged && e.hosts.includes(host('echo')))).toBe(true);
    expect(controller.clusters()).toEqual([expect.objectContaining({ clusterId: REMOTE, secret: `${secrets}/remote-one`, synced: true })]);
    expect(metricValue(await metrics.registry.metrics(), 'meshd_managed_clusters')).toBe(2);

    // An endpoint change in the remote cluster reaches the merged service.
    await setSlice(remoteClient, 'echo', [{ name: 'http', port: 8080 }, { name: 'grpc', port: 9090 }], ['198.18.80.1']);
    await eventually('the remote endpoint change', () => described(aggregate.endpoints(echo()!)).length === 2, { timeoutMs: 20_000 });
    expect(described(aggregate.endpoints(echo()!))).toEqual([`${LOCAL} 198.18.70.1:8080`, `${REMOTE} 198.18.80.1:8080`]);

    await deleteSecret(secrets, 'remote-one');
    await eventually('the remote cluster to leave', () => !aggregate.services().some((s) => s.hostname === host('only-remote')), { timeoutMs: 20_000 });
    expect(described(aggregate.endpoints(echo()!))).toEqual([`${LOCAL} 198.18.70.1:8080`]);
    expect(controller.clusters()).toEqual([]);
    expect(metricValue(await metrics.registry.metrics(), 'meshd_managed_clusters')).toBe(1);
    off();
    await controller.stop();
    controller = undefined;
    await setSlice(remoteClient, 'echo', [{ name: 'http', port: 8080 }, { name: 'grpc', port: 9090 }], ['198.18.80.1', '198.18.80.2']);
  }, 90_000);

  it('logs an unusable kubeconfig with secret and key, ignores the own cluster ID, and keeps the other clusters working', async () => {
    const secrets = await secretNamespace();
    await putSecret(secrets, 'mixed', { broken: 'clusters: [', [LOCAL]: remote!.kubeconfigText, [REMOTE]: remote!.kubeconfigText });
    controller = createRemoteClusters(setupFor(secrets), env.client, aggregate, metrics, captured.log);
    await controller.start();

    const log = captured.text();
    expect(log).toMatch(new RegExp(`secret ${secrets}/mixed key broken: unusable kubeconfig: \\S`));
    // A terminal failure of the Secret: counted once, not retried while the Secret stays as it is.
    const errors = (): Promise<number> => metrics.registry.metrics().then((t) => metricValue(t, 'controller_sync_errors_total', { controller: 'remote-clusters' }));
    const counted = await errors();
    expect(counted).toBeGreaterThanOrEqual(1);
    await new Promise((r) => setTimeout(r, 500));
    expect(await errors()).toBe(counted);
    expect(log).toContain(`secret ${secrets}/mixed key ${LOCAL}: ignored, it is this daemon's own cluster`);
    expect(controller.clusters().map((c) => c.clusterId)).toEqual([REMOTE]);
    await eventually('the remote endpoints', () => described(aggregate.endpoints(echo()!)).length === 3, { timeoutMs: 20_000 });

    // The kubeconfig of a key changes: the cluster restarts with it (here: the same server, under another name).
    await putSecret(secrets, 'mixed', { broken: 'clusters: [', [REMOTE]: kubeconfigFor(remote!.server, remote!.creds, 'renamed') });
    await eventually('the restarted cluster', () => captured.text().includes(`remote cluster ${REMOTE}: kubeconfig changed`), { timeoutMs: 20_000 });
    await eventually('the restarted cluster to sync', () => controller!.clusters()[0]?.synced === true, { timeoutMs: 30_000 });
    expect(described(aggregate.endpoints(echo()!))).toHaveLength(3);
    await controller.stop();
    controller = undefined;
    expect(described(aggregate.endpoints(echo()!))).toEqual([`${LOCAL} 198.18.70.1:8080`]);
  }, 90_000);

  it('retries a Secret whose change failed, with backoff, until its cluster has left', async () => {
    const secrets = await secretNamespace();
    await putSecret(secrets, 'flaky', { [REMOTE]: remote!.kubeconfigText });
    const setup = setupFor(secrets);
    const real = remoteClusterFactory(setup, metrics, captured.log);
    let failedStops = 0;
    // The real remote cluster, whose first stop fails (as closing a client over a broken connection may).
    const factory: typeof real = async (id, kubeconfig, source) => {
      const cluster = await real(id, kubeconfig, source);
      return {
        ...cluster,
        stop: async () => {
          if (failedStops === 0) {
            failedStops++;
            throw new Error('injected: stopping the remote cluster failed');
          }
          await cluster.stop();
        },
      };
    };
    const errors = (): Promise<number> => metrics.registry.metrics().then((t) => metricValue(t, 'controller_sync_errors_total', { controller: 'remote-clusters' }));
    const before = await errors();
    controller = new RemoteClusterController({
      client: env.client,
      namespace: secrets,
      localClusterId: LOCAL,
      aggregate,
      factory,
      syncTimeoutMs: 60_000,
      log: captured.log,
      syncErrors: metrics.controllerSyncErrors,
      retryBaseDelayMs: 50,
    });
    await controller.start();
    expect(controller.clusters().map((c) => c.synced)).toEqual([true]);

    await deleteSecret(secrets, 'flaky');
    await eventually('the failure to be retried and the cluster to leave', () => controller!.clusters().length === 0, { timeoutMs: 20_000 });
    expect(failedStops).toBe(1);
    expect(await errors()).toBe(before + 1);
    expect(captured.text()).toContain(`remote-clusters: secret ${secrets}/flaky: injected: stopping the remote cluster failed (retry 1 in`);
    expect(aggregate.services().some((s) => s.hostname === host('only-remote'))).toBe(false);
    await controller.stop();
    controller = undefined;
  }, 90_000);
});

describe('remote clusters: workload entries, MCS exports and headless services', () => {
  let local: ClusterSide;
  const controllers: RemoteClusterController[] = [];
  const metrics = createMetrics({ defaultMetrics: false });
  const silent = pino({ level: 'silent' });

  beforeAll(async () => {
    local = await createClusterSide(
      { kubeconfig: env.cluster.kubeconfig, qps: 0, burst: 100, resyncMs: 0, clusterId: LOCAL, domain: 'cluster.local', trustDomain: 'cluster.local', configFromCrds: false, useEndpointSlices: true, edsForHeadless: false, selectWorkloadEntries: false },
      new MemoryConfigStore(),
      metrics,
      silent,
      () => undefined,
    );
    // Headless in both clusters.
    await serviceWithSlice(env.client, 'hl', [{ name: 'tcp', port: 5000 }], ['198.18.70.5'], { clusterIP: 'None' });
    await serviceWithSlice(remoteClient, 'hl', [{ name: 'tcp', port: 5000 }], ['198.18.80.5'], { clusterIP: 'None' });
    await local.start();
  }, 60_000);

  afterEach(async () => {
    for (const c of controllers.splice(0)) await c.stop();
  });

  afterAll(async () => {
    await local?.stop();
  });

  /** A fresh aggregate over the local registry (not started: the local side runs already) and its controller. */
  async function remoteSetup(
    aggregateOptions: ConstructorParameters<typeof AggregateRegistry>[1],
    overrides: Partial<RemoteClustersSetup>,
  ): Promise<AggregateRegistry> {
    const secrets = await secretNamespace();
    await putSecret(secrets, 'remote', { [REMOTE]: remote!.kubeconfigText });
    const aggregate = new AggregateRegistry([local.registry], { configClusterId: LOCAL, ...aggregateOptions });
    const c = createRemoteClusters(setupFor(secrets, overrides), env.client, aggregate, metrics, silent);
    controllers.push(c);
    await c.start();
    return aggregate;
  }

  const endpointsOf = (aggregate: AggregateRegistry, name: string): string[] => {
    const svc = aggregate.services().find((s) => s.hostname === host(name));
    return svc ? described(aggregate.endpoints(svc)) : [];
  };

  it('selects a remote cluster’s WorkloadEntries by its services only with DISC_ENABLE_CROSS_CLUSTER_WORKLOAD_ENTRY', async () => {
    await remoteClient.applyObject(
      { apiVersion: 'v1', kind: 'Service', metadata: { name: 'vm', namespace: ns }, spec: { selector: { app: 'vm' }, ports: [{ name: 'http', port: 8080 }] } } as KubeObject,
      FM,
    );
    await remoteClient.applyObject(
      { apiVersion: 'networking.mesh.io/v1', kind: 'WorkloadEntry', metadata: { name: 'vm-1', namespace: ns }, spec: { address: '198.18.90.1', labels: { app: 'vm' } } } as KubeObject,
      FM,
    );
    const without = await remoteSetup({}, { workloadEntries: false });
    expect(endpointsOf(without, 'vm')).toEqual([]);
    const withEntries = await remoteSetup({}, { workloadEntries: true });
    expect(endpointsOf(withEntries, 'vm')).toEqual([`${REMOTE} 198.18.90.1:8080`]);
  }, 60_000);

  it('with ENABLE_MCS_SERVICE_DISCOVERY shows a remote cluster’s endpoints only while it exports the service', async () => {
    await applyServiceExportCrd(remoteClient);
    const aggregate = await remoteSetup({ mcsServiceDiscovery: true }, { serviceExports: true });
    expect(endpointsOf(aggregate, 'echo')).toEqual([`${LOCAL} 198.18.70.1:8080`]);
    const events: string[] = [];
    aggregate.onEvent((e) => events.push(...e.endpointHosts));

    const exportRef = { apiVersion: 'multicluster.x-k8s.io/v1alpha1', kind: 'ServiceExport', namespace: ns, name: 'echo' };
    await remoteClient.applyObject({ apiVersion: exportRef.apiVersion, kind: exportRef.kind, metadata: { name: 'echo', namespace: ns } }, FM);
    await eventually('the exported endpoints', () => endpointsOf(aggregate, 'echo').length === 3, { timeoutMs: 20_000 });
    expect(endpointsOf(aggregate, 'echo')).toEqual([`${LOCAL} 198.18.70.1:8080`, `${REMOTE} 198.18.80.1:8080`, `${REMOTE} 198.18.80.2:8080`]);
    expect(events).toContain(host('echo'));
    // Not exported: the remote-only service has no visible endpoints.
    expect(endpointsOf(aggregate, 'only-remote')).toEqual([]);

    await remoteClient.delete(exportRef);
    await eventually('the export to be withdrawn', () => endpointsOf(aggregate, 'echo').length === 1, { timeoutMs: 20_000 });
  }, 60_000);

  it('takes other clusters’ endpoints of a headless service only with ENABLE_MULTICLUSTER_HEADLESS and on the same network', async () => {
    const plain = await remoteSetup({}, {});
    expect(endpointsOf(plain, 'hl')).toEqual([`${LOCAL} 198.18.70.5:5000`]);
    const multi = await remoteSetup({ multiclusterHeadless: true }, {});
    expect(endpointsOf(multi, 'hl')).toEqual([`${LOCAL} 198.18.70.5:5000`, `${REMOTE} 198.18.80.5:5000`]);

    // The remote namespace moves to another network: its endpoints are left out.
    await remoteClient.mergePatch({ apiVersion: 'v1', kind: 'Namespace', name: ns }, { metadata: { labels: { 'topology.mesh.io/network': 'network-2' } } });
    await eventually('the remote endpoint to leave', () => endpointsOf(multi, 'hl').length === 1, { timeoutMs: 20_000 });
    expect(endpointsOf(multi, 'hl')).toEqual([`${LOCAL} 198.18.70.5:5000`]);
    await remoteClient.mergePatch({ apiVersion: 'v1', kind: 'Namespace', name: ns }, { metadata: { labels: { 'topology.mesh.io/network': null } } });
  }, 60_000);
});

describe('remote clusters in the daemon', () => {
  let daemon: RunningDaemon | undefined;

  afterEach(async () => {
    await daemon?.stop();
    daemon = undefined;
  }, 30_000);

  async function runDaemon(secrets: string, extraEnv: Record<string, string> = {}): Promise<{ daemon: RunningDaemon; ms: number; log: () => string }> {
    const missing = `/nonexistent/mesh-${await freePort()}`;
    const { options, env: denv } = parseDiscoveryArgs(
      [
        '--registries', 'Cluster',
        '--clusterconfig', env.cluster.kubeconfig,
        '--clusterID', LOCAL,
        '--clusterRegistriesNamespace', secrets,
        '--grpcAddr', '127.0.0.1:0',
        '--httpAddr', '127.0.0.1:0',
        '--monitoringAddr', '127.0.0.1:0',
        '--meshConfig', missing,
        '--networksConfig', `${missing}-networks`,
      ],
      // The tests write EndpointSlices (no controller runs for the remote API server).
      { POD_NAMESPACE: secrets, DISC_ENABLE_STATUS: 'false', DISC_USE_ENDPOINT_SLICE: 'true', ENABLE_CA_SERVER: 'false', ...extraEnv },
    );
    const captured = capturedLog();
    const logs = { main: captured.log, ads: captured.log, model: captured.log, source: captured.log };
    const t0 = Date.now();
    const d = await startDaemon(daemonConfigFrom(options, denv), logs);
    return { daemon: d, ms: Date.now() - t0, log: captured.text };
  }

  async function endpointz(d: RunningDaemon, hostname: string): Promise<string[]> {
    const res = await fetch(`http://127.0.0.1:${d.httpPort}/debug/endpointz`);
    const body = (await res.json()) as Array<{ hostname: string; endpoints: Endpoint[] }>;
    return described(body.find((s) => s.hostname === hostname)?.endpoints ?? []);
  }

  it('serves the merged endpoints in /debug/endpointz and drops them when the Secret is deleted', async () => {
    const secrets = await secretNamespace();
    await putSecret(secrets, 'remote-one', { [REMOTE]: remote!.kubeconfigText });
    const run = await runDaemon(secrets);
    daemon = run.daemon;
    expect(await endpointz(daemon, host('echo'))).toEqual([`${LOCAL} 198.18.70.1:8080`, `${REMOTE} 198.18.80.1:8080`, `${REMOTE} 198.18.80.2:8080`]);
    expect(await endpointz(daemon, host('only-remote'))).toEqual([`${REMOTE} 198.18.80.9:8080`]);
    expect(metricValue(await daemon.metrics.registry.metrics(), 'meshd_managed_clusters')).toBe(2);

    await deleteSecret(secrets, 'remote-one');
    await eventually('the remote endpoints to leave /debug/endpointz', async () => (await endpointz(daemon!, host('echo'))).length === 1, { timeoutMs: 20_000 });
    expect(await endpointz(daemon, host('echo'))).toEqual([`${LOCAL} 198.18.70.1:8080`]);
    await eventually('the remote-only service to leave', async () => (await endpointz(daemon!, host('only-remote'))).length === 0, { timeoutMs: 20_000 });
  }, 90_000);

  it('becomes ready after DISC_REMOTE_CLUSTER_TIMEOUT when a remote cluster cannot be reached', async () => {
    const secrets = await secretNamespace();
    const nowhere = `https://127.0.0.1:${await freePort()}`;
    await putSecret(secrets, 'unreachable', { 'far-away': kubeconfigFor(nowhere, remote!.creds) });
    const run = await runDaemon(secrets, { DISC_REMOTE_CLUSTER_TIMEOUT: '2s' });
    daemon = run.daemon;
    expect(run.ms).toBeGreaterThanOrEqual(2000);
    const text = await daemon.metrics.registry.metrics();
    expect(metricValue(text, 'remote_cluster_sync_timeouts_total')).toBe(1);
    expect(metricValue(text, 'meshd_managed_clusters')).toBe(2);
    expect(run.log()).toContain('remote cluster far-away');
    // Ready: the monitoring listener answers /ready.
    const ready = await fetch(`http://127.0.0.1:${daemon.monitoringPort}/ready`);
    expect(ready.status).toBe(200);
    expect(await endpointz(daemon, host('echo'))).toEqual([`${LOCAL} 198.18.70.1:8080`]);
  }, 60_000);
});
