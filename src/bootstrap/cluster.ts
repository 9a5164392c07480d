/**
 * The daemon's Kubernetes side (`--registries Cluster`): one client (`--clusterconfig`, else
 * KUBECONFIG, else in-cluster; `--clusterApiQPS`/`--clusterApiBurst`), the informers the Cluster
 * registry reads (Services, EndpointSlices or Endpoints, Pods, Nodes, Namespaces), the registry
 * itself, and — unless `--configDir` replaces it — the CRD config source feeding the store.
 * `start()` resolves once every cache has loaded its first list; the daemon reports ready only then.
 */
import type { V1Endpoints, V1EndpointSlice, V1Namespace, V1Node, V1Pod, V1Service } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { KINDS } from '../config/kinds.js';
import { KubeConfigSource, type KubeConfigSourceCounters } from '../config/kube-source.js';
import { MemoryConfigStore } from '../config/store.js';
import { configReportText, type ConfigRejection } from '../config/types.js';
import { KubeClient } from '../kube/client.js';
import { dropManagedFields, Informer, resourceRef, type InformerPhase } from '../kube/informer.js';
import type { KubeObject, ObjectCache } from '../kube/types.js';
import type { Metrics } from '../metrics/metrics.js';
import { clusterRegistryMetrics } from '../registry/kube/metrics.js';
import { KubeRegistry } from '../registry/kube/registry.js';
import type { AggregateRegistry } from '../registry/aggregate.js';
import { RemoteClusterController } from '../controllers/remote-clusters/controller.js';
import type { RemoteClusterFactory } from '../controllers/remote-clusters/types.js';

export interface ClusterOptions {
  readonly kubeconfig: string;
  readonly qps: number;
  readonly burst: number;
  readonly resyncMs: number;
  readonly clusterId: string;
  readonly domain: string;
  readonly trustDomain: string;
  /** Read config kinds from the CRDs (false when `--configDir` is the config source). */
  readonly configFromCrds: boolean;
  readonly useEndpointSlices: boolean;
  readonly edsForHeadless: boolean;
  readonly selectWorkloadEntries: boolean;
  /** ENABLE_MCS_HOST: services also under `<svc>.<ns>.svc.clusterset.local`. */
  readonly mcsHost?: boolean;
}

export interface ClusterSide {
  readonly client: KubeClient;
  readonly registry: KubeRegistry;
  /** The Service and Namespace caches, for readers beside the registry (gateway-api conversion). */
  readonly caches: { readonly services: ObjectCache<V1Service>; readonly namespaces: ObjectCache<V1Namespace> };
  /** Resolves once every informer synced (the registry is started then). */
  start(signal?: AbortSignal): Promise<void>;
  stop(): Promise<void>;
}

/** Strips what the registry never reads, so the caches stay small. */
function slimPod(pod: V1Pod): V1Pod {
  const p = dropManagedFields(pod);
  return {
    apiVersion: p.apiVersion,
    kind: p.kind,
    metadata: p.metadata,
    spec: p.spec ? { serviceAccountName: p.spec.serviceAccountName, nodeName: p.spec.nodeName, hostNetwork: p.spec.hostNetwork, containers: [] } : undefined,
    status: p.status ? { phase: p.status.phase, podIP: p.status.podIP, podIPs: p.status.podIPs, conditions: p.status.conditions } : undefined,
  };
}

function slimNode(node: V1Node): V1Node {
  const n = dropManagedFields(node);
  return { apiVersion: n.apiVersion, kind: n.kind, metadata: n.metadata };
}

export async function createClusterSide(
  opts: ClusterOptions,
  store: MemoryConfigStore,
  metrics: Metrics,
  log: Logger,
  onReject: (r: ConfigRejection) => void,
): Promise<ClusterSide> {
  const { client, loaded } = await KubeClient.create({
    kubeconfig: opts.kubeconfig || undefined,
    qps: opts.qps,
    burst: opts.burst,
    userAgent: 'mesh-discovery',
  });
  log.info({ source: loaded.source, server: loaded.server }, `Kubernetes API server ${loaded.server} (${loaded.source})`);

  const onError =
    (what: string) =>
    (err: Error, phase: InformerPhase): void => {
      metrics.controllerSyncErrors.inc({ controller: 'cluster-registry' });
      if (phase !== 'handler') metrics.outgoingRetries.inc({ request_type: 'kube_watch' });
      log.warn({ informer: what, phase, err: err.message }, `${what} informer: ${phase}: ${err.message} (retrying)`);
    };
  const informer = <T extends KubeObject>(apiVersion: string, plural: string, kind: string, namespaced: boolean, transform?: (o: T) => T): Informer<T> =>
    new Informer<T>(client, {
      resource: resourceRef(apiVersion, plural, { namespaced, kind }),
      transform: transform ?? dropManagedFields,
      resyncMs: opts.resyncMs,
      name: plural,
      onError: onError(kind),
    });

  const services = informer<V1Service>('v1', 'services', 'Service', true);
  const useSlices = opts.useEndpointSlices;
  const endpointSlices = useSlices ? informer<V1EndpointSlice>('discovery.k8s.io/v1', 'endpointslices', 'EndpointSlice', true) : undefined;
  const endpoints = useSlices ? undefined : informer<V1Endpoints>('v1', 'endpoints', 'Endpoints', true);
  const pods = informer<V1Pod>('v1', 'pods', 'Pod', true, slimPod);
  const nodes = informer<V1Node>('v1', 'nodes', 'Node', false, slimNode);
  const namespaces = informer<V1Namespace>('v1', 'namespaces', 'Namespace', false);
  /** Start, wait and stop: what the daemon does with every informer, whatever its object type. */
  interface Lifecycle {
    start(): void;
    waitForSync(opts: { readonly signal?: AbortSignal }): Promise<void>;
    stop(): Promise<void>;
  }
  const informers: Lifecycle[] = [services, endpointSlices, endpoints, pods, nodes, namespaces].filter((i): i is NonNullable<typeof i> => i !== undefined);

  const registry = new KubeRegistry({ services, endpointSlices, endpoints, pods, nodes, namespaces }, store, {
    clusterId: opts.clusterId,
    domain: opts.domain,
    trustDomain: opts.trustDomain,
    useEndpointSlices: opts.useEndpointSlices,
    edsForHeadless: opts.edsForHeadless,
    selectWorkloadEntries: opts.selectWorkloadEntries,
    mcsHost: opts.mcsHost,
    metrics: clusterRegistryMetrics(metrics),
  });

  const configSource = opts.configFromCrds
    ? new KubeConfigSource({
        client,
        store,
        onReject,
        onWarn: (r) => log.warn({ origin: r.origin, kind: r.kind, name: r.name, namespace: r.namespace, warnings: r.issues }, `config has warnings: ${configReportText(r)}`),
        counters: configSourceCounters(metrics),
        onError: (err, kind) => {
          metrics.controllerSyncErrors.inc({ controller: 'config-crds' });
          log.warn({ kind, err: err.message }, `config informer: ${err.message} (retrying)`);
        },
      })
    : undefined;

  return {
    client,
    registry,
    caches: { services, namespaces },
    async start(signal) {
      const t0 = Date.now();
      for (const i of informers) i.start();
      const sources = [...informers.map((i) => i.waitForSync({ signal })), ...(configSource ? [configSource.start({ signal })] : [])];
      await Promise.all(sources);
      await registry.start();
      log.info({ ms: Date.now() - t0, services: registry.services().length }, `cluster caches synced in ${Date.now() - t0} ms`);
    },
    async stop() {
      registry.stop();
      await Promise.all([...informers.map((i) => i.stop()), configSource?.stop()]);
    },
  };
}

// ---- remote clusters (src/controllers/remote-clusters/, docs/adr/0018-remote-clusters.md) ----

export interface RemoteClusterOptions {
  readonly qps: number;
  readonly burst: number;
  readonly resyncMs: number;
  readonly domain: string;
  readonly trustDomain: string;
  readonly useEndpointSlices: boolean;
  readonly edsForHeadless: boolean;
  /** DISC_ENABLE_CROSS_CLUSTER_WORKLOAD_ENTRY: read the cluster's WorkloadEntries and select them by its Services. */
  readonly workloadEntries: boolean;
  /** ENABLE_MCS_SERVICE_DISCOVERY: watch the cluster's ServiceExports. */
  readonly serviceExports: boolean;
}

/** ServiceExport of the Kubernetes multi-cluster services API. */
const SERVICE_EXPORT = resourceRef('multicluster.x-k8s.io/v1alpha1', 'serviceexports', { namespaced: true, kind: 'ServiceExport' });

/**
 * Builds remote clusters for the remote-cluster controller: per cluster a client from the Secret's
 * kubeconfig, the informers the Cluster registry reads, a KubeRegistry under the cluster's ID and,
 * when enabled, a WorkloadEntry source and a ServiceExport watch. The cluster syncs when the
 * registry's informers (and WorkloadEntries) did; ServiceExports do not hold it back (a cluster
 * without that CRD exports nothing).
 */
export function remoteClusterFactory(opts: RemoteClusterOptions, metrics: Metrics, log: Logger): RemoteClusterFactory {
  return async (clusterId, kubeconfig, source) => {
    const { client, loaded } = await KubeClient.create({ kubeconfigText: kubeconfig, textSource: source, qps: opts.qps, burst: opts.burst, userAgent: 'mesh-discovery' });
    const clog = log.child({ cluster: clusterId });
    const onError =
      (what: string) =>
      (err: Error, phase: InformerPhase): void => {
        metrics.controllerSyncErrors.inc({ controller: 'remote-cluster-registry' });
        if (phase !== 'handler') metrics.outgoingRetries.inc({ request_type: 'kube_watch' });
        clog.warn({ informer: what, phase, err: err.message }, `remote cluster ${clusterId}: ${what} informer: ${phase}: ${err.message} (retrying)`);
      };
    const informer = <T extends KubeObject>(apiVersion: string, plural: string, kind: string, namespaced: boolean, transform?: (o: T) => T): Informer<T> =>
      new Informer<T>(client, {
        resource: resourceRef(apiVersion, plural, { namespaced, kind }),
        transform: transform ?? dropManagedFields,
        resyncMs: opts.resyncMs,
        name: `${plural} of ${clusterId}`,
        onError: onError(kind),
      });
    const services = informer<V1Service>('v1', 'services', 'Service', true);
    const endpointSlices = opts.useEndpointSlices ? informer<V1EndpointSlice>('discovery.k8s.io/v1', 'endpointslices', 'EndpointSlice', true) : undefined;
    const endpoints = opts.useEndpointSlices ? undefined : informer<V1Endpoints>('v1', 'endpoints', 'Endpoints', true);
    const pods = informer<V1Pod>('v1', 'pods', 'Pod', true, slimPod);
    const nodes = informer<V1Node>('v1', 'nodes', 'Node', false, slimNode);
    const namespaces = informer<V1Namespace>('v1', 'namespaces', 'Namespace', false);
    const informers = [services, endpointSlices, endpoints, pods, nodes, namespaces].filter((i): i is NonNullable<typeof i> => i !== undefined);

    const store = opts.workloadEntries ? new MemoryConfigStore() : undefined;
    const wleSource = store
      ? new KubeConfigSource({ client, store, kinds: [KINDS.WorkloadEntry], onError: (err) => onError('WorkloadEntry')(err, 'watch') })
      : undefined;
    let exportErrors = 0;
    const exports = opts.serviceExports
      ? new Informer<KubeObject>(client, {
          resource: SERVICE_EXPORT,
          transform: dropManagedFields,
          name: `serviceexports of ${clusterId}`,
          // Logged once: a cluster without the ServiceExport CRD simply exports nothing.
          onError: (err, phase) => {
            if (exportErrors++ === 0) clog.info({ phase, err: err.message }, `remote cluster ${clusterId}: ServiceExports not readable (${err.message}); none exported`);
          },
        })
      : undefined;

    const registry = new KubeRegistry({ services, endpointSlices, endpoints, pods, nodes, namespaces }, store, {
      clusterId,
      domain: opts.domain,
      trustDomain: opts.trustDomain,
      useEndpointSlices: opts.useEndpointSlices,
      edsForHeadless: opts.edsForHeadless,
      selectWorkloadEntries: opts.workloadEntries,
    });
    return {
      clusterId,
      server: loaded.server,
      registry,
      exported: exports && {
        isExported: (namespace, name) => exports.get(namespace, name) !== undefined,
        onChange: (handler) =>
          exports.onEvent((e) => {
            if (e.type !== 'update') handler(e.object.metadata?.namespace ?? '', e.object.metadata?.name ?? '');
          }),
      },
      async start() {
        for (const i of informers) i.start();
        exports?.start();
        await Promise.all([...informers.map((i) => i.waitForSync()), ...(wleSource ? [wleSource.start()] : [])]);
        await registry.start();
      },
      async stop() {
        registry.stop();
        await Promise.all([...informers.map((i) => i.stop()), exports?.stop(), wleSource?.stop()]);
        client.close();
      },
    };
  };
}

export interface RemoteClustersSetup extends RemoteClusterOptions {
  readonly clusterId: string;
  /** `--clusterRegistriesNamespace`. */
  readonly namespace: string;
  /** DISC_REMOTE_CLUSTER_TIMEOUT in ms (0: no limit). */
  readonly syncTimeoutMs: number;
}

/**
 * The remote-cluster controller of the daemon: Secrets in `namespace` of the own cluster (through
 * `client`) name the remote clusters; their registries join `aggregate`. Metrics:
 * meshd_managed_clusters and remote_cluster_sync_timeouts_total.
 */
export function createRemoteClusters(
  setup: RemoteClustersSetup,
  client: KubeClient,
  aggregate: AggregateRegistry,
  metrics: Metrics,
  log: Logger,
): RemoteClusterController {
  return new RemoteClusterController({
    client,
    namespace: setup.namespace,
    localClusterId: setup.clusterId,
    aggregate,
    factory: remoteClusterFactory(setup, metrics, log),
    syncTimeoutMs: setup.syncTimeoutMs,
    metrics: { managedClusters: (n) => metrics.managedClusters.set(n), syncTimedOut: () => metrics.remoteClusterSyncTimeouts.inc() },
    log,
    onWatchError: () => metrics.controllerSyncErrors.inc({ controller: 'remote-clusters' }),
    syncErrors: metrics.controllerSyncErrors,
  });
}

/** The config CRD sources' counters on the daemon's metrics (docs/adr/0175). */
function configSourceCounters(metrics: Metrics): KubeConfigSourceCounters {
  return {
    event: (kind, type) => metrics.clusterConfigEvents.inc({ type: kind, event: type }),
    converted: (kind, ok) => (ok ? metrics.sourceConverterSuccess : metrics.sourceConverterFailure).inc({ kind }),
    handled: (kind, ok) => (ok ? metrics.sourceEventSuccess : metrics.sourceEventError).inc({ kind }),
    retry: () => metrics.outgoingRetries.inc({ request_type: 'kube_watch' }),
  };
}
