/**
 * `mesh-operator server`: the operator controller as a process. It loads the cluster credentials
 * (`--clusterconfig`, else KUBECONFIG, in-cluster or ~/.kube/config), serves /metrics and /ready on
 * `--monitoringAddr` (default :15014), competes for leadership on the Lease
 * `mesh-operator-lock[-<revision>]` (src/controllers/runtime/leadership.ts, the same wrapper as
 * meshd's duties) and, while leading, runs the MeshOperator controller
 * (src/controllers/installation/mesh-operator.ts). It runs in a pod (the Deployment of
 * `meshctl operator dump`) or as a local process against any cluster. Without leader election
 * (`--leaderElect=false`) the controller simply runs. SIGTERM/SIGINT stop it: the lease is
 * released so another replica takes over at once. Logs go through the project's logger (scope
 * `default`).
 */
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { MeshOperatorController, loadSpecSources } from '../controllers/installation/mesh-operator.js';
import { createOperatorMetrics, type OperatorMetrics } from '../controllers/installation/metrics.js';
import { Leadership } from '../controllers/runtime/index.js';
import { leaseName, normalRevision } from '../install/operator-names.js';
import { KubeClient } from '../kube/client.js';
import { flushLogs, getLogger } from '../log/logger.js';
import { HttpService } from '../server/http.js';
import { getBuildInfo } from '../version/build-info.js';

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
  /** Lease timing (tests). */
  readonly lease?: { readonly leaseDurationMs?: number; readonly renewDeadlineMs?: number; readonly retryPeriodMs?: number };
  readonly log?: Logger;
}

export interface OperatorServer {
  readonly leadership: Leadership;
  readonly controller: MeshOperatorController;
  readonly metrics: OperatorMetrics;
  readonly client: KubeClient;
  /** The bound monitoring port (undefined without a monitoring server). */
  readonly monitoringPort?: number;
  /** Ready: a standby replica is ready; a leader once its caches are synced. */
  ready(): boolean;
  stop(): Promise<void>;
}

export function defaultIdentity(env: Readonly<Record<string, string | undefined>> = process.env): string {
  return env.POD_NAME || `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
}

export async function startOperatorServer(opts: OperatorServerOptions): Promise<OperatorServer> {
  const log = opts.log ?? getLogger('default');
  const build = getBuildInfo();
  const { client, loaded } = await KubeClient.create({ kubeconfig: opts.clusterconfig || undefined, context: opts.context || undefined, qps: opts.qps, burst: opts.burst, userAgent: `mesh-operator/${build.version}` });
  const metrics = createOperatorMetrics({ defaultMetrics: true, version: build.version });
  const controller = new MeshOperatorController({
    client,
    metrics,
    sources: await loadSpecSources(opts.manifests),
    watchedNamespaces: opts.watchedNamespaces,
    revision: opts.revision,
    defaultTag: build.version,
    requeueDelayMs: opts.requeueDelayMs,
    log,
  });
  const identity = opts.identity ?? defaultIdentity();
  const leadership = new Leadership({
    lease:
      opts.leaderElection === false
        ? undefined
        : { client, namespace: opts.operatorNamespace, name: leaseName(normalRevision(opts.revision)), identity, ...opts.lease },
    identity,
    log,
  });
  leadership.add(controller);
  const ready = (): boolean => !leadership.isLeader() || controller.hasSynced();
  let http: HttpService | undefined;
  let monitoringPort: number | undefined;
  if (opts.monitoring) {
    http = new HttpService('mesh-operator')
      .route('/metrics', async () => ({ contentType: metrics.registry.contentType, body: await metrics.registry.metrics() }))
      .route('/ready', () => (ready() ? { body: 'ok\n' } : { status: 503, body: 'caches not synced\n' }));
    monitoringPort = await http.listen(opts.monitoring);
  }
  leadership.start();
  log.info(
    { version: build.version, cluster: loaded.server, watchedNamespaces: opts.watchedNamespaces.join(','), operatorNamespace: opts.operatorNamespace, monitoring: monitoringPort },
    'mesh-operator started',
  );
  let stopped: Promise<void> | undefined;
  return {
    leadership,
    controller,
    metrics,
    client,
    monitoringPort,
    ready,
    stop: () =>
      (stopped ??= (async () => {
        await leadership.stop();
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
  await flushLogs();
}
