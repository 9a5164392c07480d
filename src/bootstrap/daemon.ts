/**
 * Assembles and runs the daemon: config sources and registries feed the model; the model feeds the
 * ADS server; HTTP servers expose metrics, readiness and debug views.
 */
import * as grpc from '@grpc/grpc-js';
import { stat } from 'node:fs/promises';
import type { Logger } from 'pino';
import { MemoryConfigStore } from '../config/store.js';
import type { Proxy } from '../model/proxy.js';
import { FileConfigSource } from '../config/file-source.js';
import { configReportText, type ConfigRejection } from '../config/types.js';
import type { Metrics } from '../metrics/metrics.js';
import { createDaemonMetrics } from './daemon-metrics.js';
import { MeshModel } from '../model/mesh-model.js';
import { credentialAccess } from '../security/credential-access.js';
import { JwksResolver } from '../security/jwks-resolver.js';
import type { ServiceRegistry } from '../model/registry.js';
import { AggregateRegistry } from '../registry/aggregate.js';
import { MockRegistry } from '../registry/mock.js';
import { ServiceEntryRegistry } from '../registry/service-entry.js';
import { registerDebug } from '../server/debug.js';
import { closeSilentConnections, grpcNetServers } from '../server/first-bytes.js';
import { debugViews, type DebugDeps, type DistributionLookup } from '../server/debug-views.js';
import { createControlZ, type ControlZ } from '../server/controlz.js';
import { xdsDebugHandler } from '../server/xds-debug.js';
import type { DebugHandler } from '../xds/ads-server.js';
import type { DistributionTracker } from '../controllers/config-status/distribution.js';
import { HttpService } from '../server/http.js';
import { formatListen } from '../server/listen.js';
import { getBuildInfo } from '../version/build-info.js';
import { DiscoveryServer } from '../xds/ads-server.js';
import { ResourceCache } from '../xds/cache.js';
import { generatorsFor, listenerConflictsFor } from './generators.js';
import type { DaemonConfig } from './daemon-config.js';
import { openMeshSources, type MeshSources } from './mesh-config-map.js';
import { KubeClient } from '../kube/client.js';
import type { MeshNetworks } from '../config/mesh-networks.js';
import type { RemoteClustersSetup } from './cluster.js';
import type { DaemonControllers } from '../controllers/daemon-controllers.js';
import type { GatewayApiSide, GatewayApiSideInput } from '../config/gateway-api/daemon-side.js';
import { PushActivity } from '../model/push-activity.js';
import { bindSecurePort, startIdentity, type IdentitySide } from './identity.js';
import type { WebhookSide } from './webhooks.js';
import { getLogger } from '../log/logger.js';
import { releaseStartupMemoryLater } from '../util/start-up-memory.js';

export interface RunningDaemon {
  readonly grpcPort: number;
  /** The secured port (TLS: ADS and the certificate service), when it is open. */
  readonly secureGrpcPort?: number;
  /** The webhook server's port (`--httpsAddr`), when it is open. */
  readonly webhookPort?: number;
  /** Workload identity: the CA, the certificate service, the serving certificate. */
  readonly identity: IdentitySide;
  readonly httpPort?: number;
  readonly monitoringPort: number;
  /** The ControlZ port, when ControlZ listens (see DaemonConfig.ctrlz). */
  readonly ctrlzPort?: number;
  readonly metrics: Metrics;
  readonly ads: DiscoveryServer;
  readonly model: MeshModel;
  /** Mesh networks in force (`--networksConfig` file, else the mesh ConfigMap's `meshNetworks` key). */
  meshNetworks(): MeshNetworks;
  stop(): Promise<void>;
}


export interface DaemonLoggers {
  readonly main: Logger;
  readonly ads: Logger;
  readonly model: Logger;
  readonly source: Logger;
}

/** The daemon could not start: a setting it cannot work with (the message names it). */
export class DaemonStartError extends Error {}

export async function startDaemon(cfg: DaemonConfig, logs: DaemonLoggers, startedAt = Date.now()): Promise<RunningDaemon> {
  // Checked before anything is created under it (the CA keeps its files there).
  if (cfg.configDir) {
    const dir = await stat(cfg.configDir).catch(() => undefined);
    if (!dir?.isDirectory()) throw new DaemonStartError(`--configDir ${cfg.configDir} ${dir ? 'is not a directory' : 'does not exist'}`);
  }
  const { metrics, ca: caMetrics } = createDaemonMetrics();
  const info = getBuildInfo();
  metrics.build.set({ component: 'meshd', tag: info.version }, 1);

  // Config sources
  const store = new MemoryConfigStore();
  const onReject = (r: ConfigRejection): void => {
    metrics.rejectedConfigs.inc({ type: r.kind ?? 'unknown' });
    logs.source.warn(
      { origin: r.origin, kind: r.kind, name: r.name, namespace: r.namespace, issues: r.issues },
      `config rejected: ${r.origin}${r.kind ? ` ${r.kind}` : ''}${r.name ? ` ${r.namespace ? `${r.namespace}/` : ''}${r.name}` : ''}: ${r.issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`,
    );
  };
  const meshSources = await openDaemonMeshSources(cfg, logs, metrics);
  const mesh = meshSources.mesh.current();
  for (const note of cfg.securityNotes ?? []) logs.main.info(`identity: ${note}`);
  for (const warning of cfg.securityWarnings ?? []) logs.main.warn(`identity: ${warning}`);
  // Pushes in flight, from the model's first pending request until the transport is idle (docs/adr/0140).
  const pushes = new PushActivity();
  let identity: IdentitySide;
  try {
    identity = await startIdentity({
      settings: cfg.security,
      cluster: cfg.registries.includes('Cluster') ? cfg.cluster : undefined,
      namespace: cfg.namespace,
      configDir: cfg.configDir,
      trustDomain: () => meshSources.mesh.current().trustDomain,
      caMetrics,
      syncErrors: metrics.controllerSyncErrors,
      webhooks: cfg.webhooks.addr !== null,
      pushes,
    });
  } catch (err) {
    await meshSources.stop();
    throw err;
  }

  // With --registries Cluster the config kinds come from the CRDs, unless --configDir replaces them.
  const useCluster = cfg.registries.includes('Cluster');
  // Accepted documents the validation warns about are logged, not counted: they are in force.
  const onWarn = (r: ConfigRejection): void => {
    logs.source.warn({ origin: r.origin, kind: r.kind, name: r.name, namespace: r.namespace, warnings: r.issues }, `config has warnings: ${configReportText(r)}`);
  };
  const fileSource = cfg.configDir ? new FileConfigSource({ dir: cfg.configDir, store, defaultNamespace: 'default', onReject, onWarn, onDirLost: () => metrics.configDirLost.inc(), onChangePending: () => pushes.begin() }) : undefined;
  if (fileSource) await fileSource.start();
  else if (!useCluster) store.markSynced();
  // Modules only a cluster or the webhooks need are loaded when used: a daemon on file config does
  // not pay their memory (docs/adr/0130).
  const cluster = useCluster
    ? await (await import('./cluster.js')).createClusterSide(
        { ...cfg.cluster, clusterId: cfg.clusterId, domain: cfg.domain, trustDomain: mesh.trustDomain, configFromCrds: !fileSource, mcsHost: cfg.env.ENABLE_MCS_HOST },
        store,
        metrics,
        logs.source,
        onReject,
      )
    : undefined;
  if (cluster) {
    logs.main.info('waiting for the cluster caches to sync');
    await cluster.start();
  }
  const gatewayApi = cluster && cfg.cluster.serviceApis ? await startGatewayApi(cfg, cluster, store, logs, onReject) : undefined;

  // Registries
  const registries: ServiceRegistry[] = [];
  if (cluster) registries.push(cluster.registry);
  if (cfg.registries.includes('Mock')) registries.push(new MockRegistry(cfg.domain, cfg.clusterId));
  registries.push(new ServiceEntryRegistry(store, cfg.domain, cfg.clusterId, logs.source));
  const registry = new AggregateRegistry(registries, {
    configClusterId: cfg.clusterId,
    mcsServiceDiscovery: cfg.env.ENABLE_MCS_SERVICE_DISCOVERY,
    multiclusterHeadless: cfg.env.ENABLE_MULTICLUSTER_HEADLESS,
  });
  await registry.start();
  // Remote clusters from Secrets (src/controllers/remote-clusters/): ready waits for them, at most DISC_REMOTE_CLUSTER_TIMEOUT.
  const remotes = cluster ? (await import('./cluster.js')).createRemoteClusters(remoteClustersSetup(cfg, mesh.trustDomain), cluster.client, registry, metrics, logs.source) : undefined;
  await remotes?.start();

  // Gateway credentials: the Secrets connected gateways name, served over SDS (docs/adr/0105)
  const credentials = cluster ? new (await import('../registry/kube/credentials.js')).KubeCredentialSource({ client: cluster.client, log: logs.source, errors: metrics.sdsCertificateErrors }) : undefined;

  // Model and xDS; the JWKS resolver fetches the key sets of jwksUris for the model (docs/adr/0100)
  const jwks = cfg.generator.authn
    ? new JwksResolver({
        refreshMs: cfg.jwks.refreshMs,
        counters: { success: () => metrics.jwksFetchSuccess.inc(), fail: () => metrics.jwksFetchFail.inc(), retry: () => metrics.outgoingRetries.inc({ request_type: 'jwks' }) },
        log: getLogger('model'),
      })
    : undefined;
  const model = new MeshModel(
    store,
    registry,
    mesh,
    { debounceAfterMs: cfg.debounceAfterMs, debounceMaxMs: cfg.debounceMaxMs, edsDebounce: cfg.edsDebounce, features: cfg.features, credentials, jwks, remoteJwks: cfg.generator.remoteJwks, activity: pushes },
    metrics,
    logs.model,
  );
  model.start();
  meshSources.mesh.onChange((m) => model.setMeshSettings(m));

  const cacheStats = cfg.xdsCache.stats;
  const cache = new ResourceCache(
    cfg.xdsCache.size,
    cfg.xdsCache.enabled,
    {
      hit: (type) => cacheStats && metrics.cacheReads.inc({ type: `${type}_hit` }),
      miss: (type) => cacheStats && metrics.cacheReads.inc({ type: `${type}_miss` }),
      evict: (type) => metrics.cacheEvictions.inc({ type }),
      size: (n) => metrics.cacheSize.set(n),
    },
    new Set(cfg.xdsCache.cds ? [] : ['cds']),
  );
  // Filled in once the controllers exist (they need the model, which the ADS server feeds from).
  const late: { controllers?: DaemonControllers; debug?: DebugHandler; watchCredentials?: () => void } = {};
  // gateways, and sidecars whose workload-selecting DestinationRules name a credential (docs/adr/0152)
  const namesCredentials = (proxy: Proxy): boolean => proxy.type === 'router' || (proxy.type === 'sidecar' && model.current().push.credentialReferences(proxy).length > 0);
  const ads = new DiscoveryServer({
    model: () => model.current(),
    generatorsFor,
    cache,
    settings: cfg.generator,
    metrics,
    log: logs.ads,
    options: { ...cfg.ads, controlPlaneId: cfg.podName || `meshd-${process.pid}` },
    debug: (typeUrl, caller) => late.debug?.(typeUrl, caller) ?? { code: grpc.status.UNAVAILABLE, message: 'the daemon is starting' },
    access: credentialAccess(metrics.sdsCertificateErrors, logs.ads),
    listenerConflicts: listenerConflictsFor,
    observer: {
      connected: (proxy) => {
        if (namesCredentials(proxy)) late.watchCredentials?.();
        return late.controllers?.workloadEntries?.connected(proxy);
      },
      disconnected: (proxy) => {
        if (namesCredentials(proxy)) late.watchCredentials?.();
        late.controllers?.distribution?.onDisconnect(proxy.id);
        return late.controllers?.workloadEntries?.disconnected(proxy);
      },
      // Distribution tracking: which snapshot each proxy holds, per type.
      acked: (proxy, typeUrl, version) => late.controllers?.distribution?.onAck(proxy.id, typeUrl, version),
    },
  });
  model.onPush((req) => {
    ads.push(req);
    // held until the transport has delivered it (the model's own span ends here; docs/adr/0180)
    pushes.delivering(() => ads.idle());
  });
  if (credentials) {
    // the Secrets read are those the connected gateways' configuration names, in their namespaces
    late.watchCredentials = () => {
      const push = model.current().push;
      const keys = new Set<string>();
      // gateways, and sidecars selected by a DestinationRule that names a credential (docs/adr/0152)
      for (const c of ads.connections.values()) for (const k of push.credentialReferences(c.proxy)) keys.add(k);
      credentials.want(keys);
    };
    model.onPush((req) => {
      if (req.full) late.watchCredentials?.();
    });
  }

  // The webhooks (--httpsAddr): injection and validation, with the serving certificate of the identity side.
  let webhooks: WebhookSide | undefined;
  try {
    webhooks = identity.serving
      ? await (await import('./webhooks.js')).startWebhooks({ cfg, serving: identity.serving, client: cluster?.client, mesh: () => meshSources.mesh.current(), metrics, log: getLogger('validationServer') })
      : undefined;
  } catch (err) {
    model.stop();
    jwks?.stop();
    await cluster?.stop();
    await meshSources.stop();
    identity.stop();
    throw err;
  }

  // Everything that writes back to the cluster (src/controllers/daemon-controllers.ts).
  const controllers = cluster
    ? (await import('../controllers/daemon-controllers.js')).createDaemonControllers({
        env: cfg.env,
        client: cluster.client,
        store,
        registry,
        model,
        mesh: () => model.meshSettings(),
        domain: cfg.domain,
        gatewayApi: gatewayApi?.source,
        meshConfig: { clusterLocalHosts: () => meshSources.mesh.current().clusterLocalHosts ?? [], onChange: (l) => meshSources.mesh.onChange(() => l()) },
        trustBundle: identity.trustBundle,
        metrics,
        logs: { status: logs.source, wle: logs.source, leader: logs.main, ca: getLogger('ca'), webhooks: getLogger('validationController') },
        webhookCaBundle: webhooks
          ? { source: webhooks.caBundle, mutatingName: cfg.webhooks.injectionConfigName, validatingName: cfg.webhooks.validationConfigName, revision: cfg.env.REVISION || 'default' }
          : undefined,
      })
    : undefined;
  late.controllers = controllers;
  await controllers?.start();

  // Debug views, served over HTTP (ENABLE_DEBUG_ON_HTTP) and over the xDS debug channel.
  const controlPlaneId = cfg.podName || `meshd-${process.pid}`;
  const debugDeps: DebugDeps = {
    ads,
    model,
    store,
    generatorsFor,
    cache,
    settings: cfg.generator,
    identity: controlPlaneId,
    distribution: controllers?.distribution && cfg.ads.distributionTracking ? distributionLookup(controllers.distribution) : undefined,
  };
  late.debug = xdsDebugHandler(debugViews(debugDeps), cfg.namespace);

  const serverOptions: grpc.ServerOptions = {
    'grpc.max_concurrent_streams': cfg.grpcMaxStreams,
    'grpc.max_receive_message_length': cfg.grpcMaxRecvMsgSize,
    'grpc.keepalive_time_ms': cfg.keepalive.intervalMs,
    'grpc.keepalive_timeout_ms': cfg.keepalive.timeoutMs,
    ...(cfg.keepalive.maxConnectionAgeMs < 2 ** 31 ? { 'grpc.max_connection_age_ms': cfg.keepalive.maxConnectionAgeMs } : {}),
  };
  const server = new grpc.Server(serverOptions);
  server.addService(ads.serviceDefinition(), ads.handlers(identity.plaintextAuth));
  const grpcPort = await new Promise<number>((resolve, reject) =>
    server.bindAsync(formatListen(cfg.grpcAddr), grpc.ServerCredentials.createInsecure(), (err, port) => (err ? reject(err) : resolve(port))),
  );
  // The secured port (--secureGRPCAddr): the same ADS over TLS, and the certificate service.
  const secure = cfg.security.secureGrpcAddr && identity.serving ? await bindSecurePort(identity, formatListen(cfg.security.secureGrpcAddr), ads, serverOptions) : undefined;
  // Connections that send nothing are closed on every listener (src/server/first-bytes.ts).
  const halfOpen = (listener: string) => (): void => metrics.halfOpenClosed.inc({ listener });
  for (const s of grpcNetServers(server)) closeSilentConnections(s, halfOpen('grpc'));
  for (const s of secure ? grpcNetServers(secure.server) : []) closeSilentConnections(s, halfOpen('secure-grpc'));

  // HTTP: monitoring (metrics, readiness) and debug
  let ready = false;
  const monitoring = new HttpService('monitoring', halfOpen('monitoring'))
    .route('/metrics', () => scrape(metrics))
    .route('/ready', () => (ready ? { body: 'ready\n' } : { status: 503, body: 'not ready\n' }))
    .route('/version', () => ({ body: info }));
  const monitoringPort = await monitoring.listen(cfg.monitoringAddr);
  // --httpAddr serves readiness and liveness whatever the debug switch says (the rendered probes point there);
  // the debug views only with ENABLE_DEBUG_ON_HTTP.
  // `/healthz` is the liveness check: it answers while the event loop turns, ready or not.
  const debug = new HttpService(cfg.debugOnHttp ? 'debug' : 'http', halfOpen('http'))
    .route('/ready', () => (ready ? { body: 'ready\n' } : { status: 503, body: 'not ready\n' }))
    .route('/healthz', () => ({ body: 'ok\n' }));
  if (cfg.debugOnHttp) registerDebug(debug, debugDeps, { allowRemote: cfg.debugRemote ?? false });
  const httpPort = await debug.listen(cfg.httpAddr);
  const ctrlz = cfg.ctrlz ? await startControlZ(cfg, metrics, logs) : undefined;

  ready = true;
  metrics.startupDuration.set((Date.now() - startedAt) / 1000);
  logs.main.info(
    { grpc: grpcPort, secureGrpc: secure?.port, webhooks: webhooks?.port, ca: identity.caSource, monitoring: monitoringPort, http: httpPort, ctrlz: ctrlz?.port, services: model.current().push.services.length, registries: cfg.registries },
    'mesh-discovery ready',
  );
  // Start-up's garbage and grown young generation back to the system, once, unless proxies already
  // keep the daemon busy (ADR 0194).
  const cancelRelease = releaseStartupMemoryLater(logs.main, () => ads.connections.size > 0);

  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      ready = false;
      cancelRelease();
      logs.main.info({ within: `${cfg.shutdownMs}ms` }, 'shutting down');
      await controllers?.stop();
      model.stop();
      jwks?.stop();
      fileSource?.stop();
      await remotes?.stop();
      await gatewayApi?.stop();
      await credentials?.stop();
      await cluster?.stop();
      await meshSources.stop();
      registry.stop();
      ads.close();
      await Promise.race([
        Promise.all([
          new Promise<void>((resolve) => server.tryShutdown(() => resolve())),
          new Promise<void>((resolve) => (secure ? secure.server.tryShutdown(() => resolve()) : resolve())),
        ]),
        new Promise<void>((resolve) => setTimeout(resolve, Math.max(0, cfg.shutdownMs - 200)).unref()),
      ]);
      server.forceShutdown();
      secure?.server.forceShutdown();
      await webhooks?.stop();
      identity.stop();
      await Promise.all([monitoring.close(), debug.close(), ctrlz?.controlz.close()]);
    })();
    return stopping;
  };

  return { grpcPort, secureGrpcPort: secure?.port, webhookPort: webhooks?.port, identity, httpPort, monitoringPort, ctrlzPort: ctrlz?.port, metrics, ads, model, meshNetworks: () => meshSources.networks.current(), stop };
}

/** The distribution tracker as the debug views read it. */
function distributionLookup(tracker: DistributionTracker): DistributionLookup {
  return {
    proxies: () => tracker.proxyCount(),
    all: () => tracker.report().configs,
    status: (ref) => {
      const entry = tracker.report().configs[ref];
      return entry ? { generation: entry[0], upToDate: entry[1] } : undefined;
    },
  };
}

/** One scrape of the registry, counted in scrapes_total (and scrape_failures_total when it throws). */
async function scrape(metrics: Metrics): Promise<{ contentType: string; body: string }> {
  metrics.scrapes.inc();
  try {
    return { contentType: metrics.registry.contentType, body: await metrics.registry.metrics() };
  } catch (err) {
    metrics.scrapeFailures.inc();
    throw err;
  }
}

/**
 * ControlZ on `--ctrlz_address`:`--ctrlz_port` (src/server/controlz.ts), with `/debug/pprof/` under
 * `--profile`. A listener that cannot open (the port taken by another daemon on the host) is logged
 * and the daemon runs on without it: introspection is never a reason to stop serving proxies.
 */
async function startControlZ(cfg: DaemonConfig, metrics: Metrics, logs: DaemonLoggers): Promise<{ controlz: ControlZ; port: number } | undefined> {
  const addr = cfg.ctrlz!;
  const controlz = createControlZ(
    {
      metrics: async () => {
        const r = await scrape(metrics);
        return { contentType: r.contentType, text: r.body };
      },
      profile: cfg.profile ?? false,
      silentClosed: () => metrics.halfOpenClosed.inc({ listener: 'ctrlz' }),
    },
    addr.host,
  );
  try {
    const port = await controlz.http.listen({ host: addr.host, port: addr.port });
    logs.main.info({ address: `${addr.host || '*'}:${port}`, profile: cfg.profile ?? false }, 'ControlZ listening');
    return { controlz, port };
  } catch (err) {
    await controlz.close();
    logs.main.error({ address: `${addr.host || '*'}:${addr.port}`, err: (err as Error).message }, 'ControlZ could not listen; running without it');
    return undefined;
  }
}

/**
 * Mesh config and networks: the `--meshConfig` / `--networksConfig` files when they exist, else
 * (with `--registries Cluster`) the mesh ConfigMap of the daemon namespace (./mesh-config-map.ts);
 * refused ConfigMap content counts in disc_total_rejected_configs (type MeshConfig / MeshNetworks).
 */
async function openDaemonMeshSources(cfg: DaemonConfig, logs: DaemonLoggers, metrics: Metrics): Promise<MeshSources> {
  let client: KubeClient | undefined;
  const sources = await openMeshSources({
    meshConfigFile: cfg.meshConfigFile,
    networksConfigFile: cfg.networksConfigFile,
    base: { domain: cfg.domain, clusterId: cfg.clusterId },
    log: logs.main,
    onFileLost: (file) => metrics.meshConfigLost.inc({ file }),
    cluster: cfg.registries.includes('Cluster')
      ? {
          client: async () => (client ??= (await KubeClient.create({ kubeconfig: cfg.cluster.kubeconfig || undefined, qps: cfg.cluster.qps, burst: cfg.cluster.burst, userAgent: 'mesh-discovery' })).client),
          namespace: cfg.namespace,
          revision: cfg.env.REVISION,
          onReject: (key) => metrics.rejectedConfigs.inc({ type: key === 'mesh' ? 'MeshConfig' : 'MeshNetworks' }),
          onError: () => metrics.controllerSyncErrors.inc({ controller: 'mesh-config' }),
        }
      : undefined,
  });
  return {
    ...sources,
    async stop() {
      await sources.stop();
      client?.close();
    },
  };
}

/** What the remote clusters need from the daemon's configuration. */
function remoteClustersSetup(cfg: DaemonConfig, trustDomain: string): RemoteClustersSetup {
  return {
    clusterId: cfg.clusterId,
    namespace: cfg.cluster.registriesNamespace,
    syncTimeoutMs: cfg.cluster.remoteSyncTimeoutMs,
    qps: cfg.cluster.qps,
    burst: cfg.cluster.burst,
    resyncMs: cfg.cluster.resyncMs,
    domain: cfg.domain,
    trustDomain,
    useEndpointSlices: cfg.cluster.useEndpointSlices,
    edsForHeadless: cfg.cluster.edsForHeadless,
    workloadEntries: cfg.env.DISC_ENABLE_CROSS_CLUSTER_WORKLOAD_ENTRY,
    serviceExports: cfg.env.ENABLE_MCS_SERVICE_DISCOVERY,
  };
}

/**
 * The gateway-api side (DISC_ENABLED_SERVICE_APIS, src/config/gateway-api/): reads the gateway-api
 * kinds when their CRDs are served and keeps the derived Gateway/VirtualService configs in the store.
 */
async function startGatewayApi(
  cfg: DaemonConfig,
  cluster: { readonly client: GatewayApiSideInput['client']; readonly caches: GatewayApiSideInput['caches'] },
  store: MemoryConfigStore,
  logs: DaemonLoggers,
  onReject: (r: ConfigRejection) => void,
): Promise<GatewayApiSide> {
  const { startGatewayApiSide } = await import('../config/gateway-api/daemon-side.js');
  return startGatewayApiSide({ client: cluster.client, store, caches: cluster.caches, domain: cfg.domain, resyncMs: cfg.cluster.resyncMs, log: logs.source, onReject });
}
