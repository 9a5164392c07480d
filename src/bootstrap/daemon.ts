/**
 * Assembles and runs the daemon: config sources and registries feed the model; the model feeds the
 * ADS server; HTTP servers expose metrics, readiness and debug views.
 */
import * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { MemoryConfigStore } from '../config/store.js';
import { FileConfigSource } from '../config/file-source.js';
import { CONFIG_KINDS } from '../config/kinds.js';
import type { ConfigRejection } from '../config/types.js';
import { createMetrics, type Metrics } from '../metrics/metrics.js';
import { MeshModel } from '../model/mesh-model.js';
import type { ServiceRegistry } from '../model/registry.js';
import { AggregateRegistry } from '../registry/aggregate.js';
import { MockRegistry } from '../registry/mock.js';
import { ServiceEntryRegistry } from '../registry/service-entry.js';
import { registerDebug } from '../server/debug.js';
import { HttpService } from '../server/http.js';
import { formatListen } from '../server/listen.js';
import { getBuildInfo } from '../version/build-info.js';
import { DiscoveryServer } from '../xds/ads-server.js';
import { ResourceCache } from '../xds/cache.js';
import { generatorsFor } from './generators.js';
import type { DaemonConfig } from './daemon-config.js';
import { MeshConfigWatcher } from './mesh-config.js';
import { createClusterSide } from './cluster.js';
import { createDaemonControllers, type DaemonControllers } from '../controllers/daemon-controllers.js';

export interface RunningDaemon {
  readonly grpcPort: number;
  readonly httpPort?: number;
  readonly monitoringPort: number;
  readonly metrics: Metrics;
  readonly ads: DiscoveryServer;
  readonly model: MeshModel;
  stop(): Promise<void>;
}


export interface DaemonLoggers {
  readonly main: Logger;
  readonly ads: Logger;
  readonly model: Logger;
  readonly source: Logger;
}

export async function startDaemon(cfg: DaemonConfig, logs: DaemonLoggers, startedAt = Date.now()): Promise<RunningDaemon> {
  const metrics = createMetrics();
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
  const meshConfig = new MeshConfigWatcher(cfg.meshConfigFile, { domain: cfg.domain, clusterId: cfg.clusterId }, logs.main);
  const mesh = await meshConfig.load();

  // With --registries Cluster the config kinds come from the CRDs, unless --configDir replaces them.
  const useCluster = cfg.registries.includes('Cluster');
  const fileSource = cfg.configDir ? new FileConfigSource({ dir: cfg.configDir, store, defaultNamespace: 'default', onReject }) : undefined;
  if (fileSource) await fileSource.start();
  else if (!useCluster) store.markSynced();
  const cluster = useCluster
    ? createClusterSide(
        { ...cfg.cluster, clusterId: cfg.clusterId, domain: cfg.domain, trustDomain: mesh.trustDomain, configFromCrds: !fileSource },
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

  // Registries
  const registries: ServiceRegistry[] = [];
  if (cluster) registries.push(cluster.registry);
  if (cfg.registries.includes('Mock')) registries.push(new MockRegistry(cfg.domain, cfg.clusterId));
  registries.push(new ServiceEntryRegistry(store, cfg.domain, cfg.clusterId));
  const registry = new AggregateRegistry(registries);
  await registry.start();

  // Model and xDS
  const model = new MeshModel(
    store,
    registry,
    mesh,
    { debounceAfterMs: cfg.debounceAfterMs, debounceMaxMs: cfg.debounceMaxMs, edsDebounce: cfg.edsDebounce, features: cfg.features },
    metrics,
    logs.model,
  );
  model.start();
  meshConfig.onChange((m) => model.setMeshSettings(m));

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
  const late: { controllers?: DaemonControllers } = {};
  const ads = new DiscoveryServer({
    model: () => model.current(),
    generatorsFor,
    cache,
    settings: cfg.generator,
    metrics,
    log: logs.ads,
    options: { ...cfg.ads, controlPlaneId: cfg.podName || `meshd-${process.pid}` },
    observer: {
      connected: (proxy) => late.controllers?.workloadEntries?.connected(proxy),
      disconnected: (proxy) => late.controllers?.workloadEntries?.disconnected(proxy),
    },
  });
  model.onPush((req) => ads.push(req));

  // Controllers that write back to the cluster: status (leader only), distribution tracking,
  // workload-entry auto-registration (src/controllers/daemon-controllers.ts).
  const controllers = cluster
    ? createDaemonControllers({
        env: cfg.env,
        client: cluster.client,
        store,
        registry,
        model,
        mesh: () => model.meshSettings(),
        metrics,
        logs: { status: logs.source, wle: logs.source, leader: logs.main },
      })
    : undefined;
  late.controllers = controllers;
  await controllers?.start();

  const server = new grpc.Server({
    'grpc.max_concurrent_streams': cfg.grpcMaxStreams,
    'grpc.max_receive_message_length': cfg.grpcMaxRecvMsgSize,
    'grpc.keepalive_time_ms': cfg.keepalive.intervalMs,
    'grpc.keepalive_timeout_ms': cfg.keepalive.timeoutMs,
    ...(cfg.keepalive.maxConnectionAgeMs < 2 ** 31 ? { 'grpc.max_connection_age_ms': cfg.keepalive.maxConnectionAgeMs } : {}),
  });
  server.addService(ads.serviceDefinition(), ads.handlers());
  const grpcPort = await new Promise<number>((resolve, reject) =>
    server.bindAsync(formatListen(cfg.grpcAddr), grpc.ServerCredentials.createInsecure(), (err, port) => (err ? reject(err) : resolve(port))),
  );

  // HTTP: monitoring (metrics, readiness) and debug
  let ready = false;
  const monitoring = new HttpService('monitoring')
    .route('/metrics', async () => ({ contentType: metrics.registry.contentType, body: await metrics.registry.metrics() }))
    .route('/ready', () => (ready ? { body: 'ready\n' } : { status: 503, body: 'not ready\n' }))
    .route('/version', () => ({ body: info }));
  const monitoringPort = await monitoring.listen(cfg.monitoringAddr);
  let debug: HttpService | undefined;
  let httpPort: number | undefined;
  if (cfg.debugOnHttp) {
    debug = new HttpService('debug').route('/ready', () => (ready ? { body: 'ready\n' } : { status: 503, body: 'not ready\n' }));
    registerDebug(debug, { ads, model, store, kinds: CONFIG_KINDS.map((k) => k.kind), generatorsFor, cache, settings: cfg.generator });
    httpPort = await debug.listen(cfg.httpAddr);
  }

  ready = true;
  metrics.startupDuration.set((Date.now() - startedAt) / 1000);
  logs.main.info(
    { grpc: grpcPort, monitoring: monitoringPort, http: httpPort, services: model.current().push.services.length, registries: cfg.registries },
    'mesh-discovery ready',
  );

  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      ready = false;
      logs.main.info({ within: `${cfg.shutdownMs}ms` }, 'shutting down');
      await controllers?.stop();
      model.stop();
      fileSource?.stop();
      await cluster?.stop();
      meshConfig.stop();
      registry.stop();
      ads.close();
      await Promise.race([
        new Promise<void>((resolve) => server.tryShutdown(() => resolve())),
        new Promise<void>((resolve) => setTimeout(resolve, Math.max(0, cfg.shutdownMs - 200)).unref()),
      ]);
      server.forceShutdown();
      await Promise.all([monitoring.close(), debug?.close()]);
    })();
    return stopping;
  };

  return { grpcPort, httpPort, monitoringPort, metrics, ads, model, stop };
}
