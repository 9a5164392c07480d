/**
 * `mesh-operator server`: the operator controller as a process. It loads the cluster credentials
 * (`--clusterconfig`, else KUBECONFIG, in-cluster or ~/.kube/config), serves /metrics and /ready on
 * `--monitoringAddr` (default :15014), competes for leadership and, while leading, reconciles the
 * MeshOperator resources of `--watchedNamespaces`. It runs in a pod (the Deployment of
 * `meshctl operator dump`) or as a local process against any cluster. SIGTERM/SIGINT stop it:
 * the lease is released so another replica takes over at once.
 */
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { getBuildInfo } from '../version/build-info.js';
import { KubeClient } from '../kube/client.js';
import { HttpService } from '../server/http.js';
import { createEngineAdapter } from './engine-adapter.js';
import { OperatorReplica } from './elected.js';
import { streamLog, type OperatorLog } from './log.js';
import { createOperatorMetrics, type OperatorMetrics } from './metrics.js';
import { loadSpecSources } from './resolve-cr.js';

export interface OperatorServerOptions {
  readonly watchedNamespaces: readonly string[];
  readonly operatorNamespace: string;
  /** '' or absent: the default revision. */
  readonly revision?: string;
  readonly clusterconfig?: string;
  readonly context?: string;
  /** Monitoring listen address; port 0 picks a free port; null: no monitoring server. */
  readonly monitoring: { readonly host: string; readonly port: number } | null;
  readonly manifests?: string;
  readonly leaderElection?: boolean;
  readonly identity?: string;
  readonly requeueDelayMs?: number;
  readonly qps?: number;
  readonly burst?: number;
  readonly log?: OperatorLog;
}

export interface OperatorServer {
  readonly replica: OperatorReplica;
  readonly metrics: OperatorMetrics;
  readonly client: KubeClient;
  /** The bound monitoring port (undefined without a monitoring server). */
  readonly monitoringPort?: number;
  stop(): Promise<void>;
}

export function defaultIdentity(env: Readonly<Record<string, string | undefined>> = process.env): string {
  return env.POD_NAME || `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
}

export async function startOperatorServer(opts: OperatorServerOptions): Promise<OperatorServer> {
  const log = opts.log ?? streamLog();
  const build = getBuildInfo();
  const { client, loaded } = KubeClient.create({ kubeconfig: opts.clusterconfig || undefined, context: opts.context || undefined, qps: opts.qps, burst: opts.burst, userAgent: `mesh-operator/${build.version}` });
  const metrics = createOperatorMetrics({ defaultMetrics: true, version: build.version });
  const sources = await loadSpecSources(opts.manifests);
  const replica = new OperatorReplica({
    client,
    engine: createEngineAdapter(client),
    metrics,
    sources,
    watchedNamespaces: opts.watchedNamespaces,
    revision: opts.revision,
    defaultTag: build.version,
    operatorNamespace: opts.operatorNamespace,
    identity: opts.identity ?? defaultIdentity(),
    leaderElection: opts.leaderElection,
    requeueDelayMs: opts.requeueDelayMs,
    log,
  });
  let http: HttpService | undefined;
  let monitoringPort: number | undefined;
  if (opts.monitoring) {
    http = new HttpService('mesh-operator')
      .route('/metrics', async () => ({ contentType: metrics.registry.contentType, body: await metrics.registry.metrics() }))
      .route('/ready', () => (replica.ready() ? { body: 'ok\n' } : { status: 503, body: 'caches not synced\n' }));
    monitoringPort = await http.listen(opts.monitoring);
  }
  replica.start();
  log.info('mesh-operator started', {
    version: build.version,
    cluster: loaded.server,
    watchedNamespaces: opts.watchedNamespaces.join(','),
    operatorNamespace: opts.operatorNamespace,
    monitoring: monitoringPort,
  });
  let stopped: Promise<void> | undefined;
  return {
    replica,
    metrics,
    client,
    monitoringPort,
    stop: () =>
      (stopped ??= (async () => {
        await replica.stop();
        await http?.close();
        client.close();
        log.info('mesh-operator stopped');
      })()),
  };
}

/** Runs until SIGTERM or SIGINT. */
export async function runOperatorServer(opts: OperatorServerOptions): Promise<void> {
  const server = await startOperatorServer(opts);
  await new Promise<void>((resolve) => {
    const onSignal = (): void => {
      process.off('SIGTERM', onSignal);
      process.off('SIGINT', onSignal);
      resolve();
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
  });
  await server.stop();
}
