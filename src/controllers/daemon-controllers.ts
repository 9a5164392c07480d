/**
 * The daemon's controllers (everything meshd writes back to its cluster), built from its
 * environment (DaemonEnv) in one call, for the daemon bootstrap to start and stop, with the hooks
 * the xDS server calls:
 *
 *   const c = createDaemonControllers({ env, client, store, registry, model, mesh, metrics });
 *   await c.start();
 *   // xDS server observer: c.distribution?.onAck(...) / onDisconnect(...)  (DistributionReporter)
 *   //             c.workloadEntries?.connected(proxy) / disconnected(proxy) (ConnectionObserver)
 *   //             c.workloadEntries?.healthReport(proxy, report)           (HealthObserver)
 *   await c.stop();
 *
 * Every controller follows the reconcile contract of src/controllers/runtime/ and counts its
 * failures in controller_sync_errors_total{controller}. Leader only (one Leadership on the Lease
 * `meshd-leader[-<REVISION>]` in POD_NAMESPACE, identity POD_NAME):
 *   status              config status (DISC_ENABLE_STATUS)                  ./config-status/
 *   gateway-api-status  gateway-api status (DISC_ENABLE_GATEWAY_API_STATUS) ./gateway-api-status/
 *   wle-cleanup         old auto-registered entries                         ./workload-entry/cleanup.ts
 *   mcs-autoexport      ServiceExports (ENABLE_MCS_AUTOEXPORT)              ./service-export/
 *   ca-root-cert        `mesh-ca-root-cert` in every namespace (with a CA)  ./ca-root-cert/
 *   webhook-ca-bundle   caBundle of the webhook configurations (--httpsAddr) ./webhook-ca-bundle/
 * Every daemon:
 *   distribution-report this daemon's distribution report                   ./config-status/
 *   wle                 its workloads' entries (auto-registration)          ./workload-entry/
 * (Remote clusters, ./remote-clusters/, run on every daemon too; the cluster side builds them.)
 * A new controller is a module under src/controllers/<what it reconciles>/ and one line here.
 */
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import type { WorkloadInfo } from '../analysis/types.js';
import type { DaemonEnv } from '../config/daemon-env.js';
import type { GatewayApiSource } from '../config/gateway-api/source.js';
import { KUBE_ORIGIN } from '../config/kube-source.js';
import type { ConfigStore } from '../config/types.js';
import type { KubeClient } from '../kube/client.js';
import type { Metrics } from '../metrics/metrics.js';
import type { MeshSettings } from '../model/mesh-settings.js';
import type { Endpoint, Service } from '../model/service.js';
import { RootCertController, type TrustBundleSource } from './ca-root-cert/controller.js';
import { DistributionTracker, type SnapshotSource } from './config-status/distribution.js';
import { MeshDistribution, ReportPublisher } from './config-status/distribution-reports.js';
import { StatusController } from './config-status/status-controller.js';
import { GatewayApiStatusWriter } from './gateway-api-status/controller.js';
import { Leadership } from './runtime/index.js';
import { ServiceExportController } from './service-export/controller.js';
import { WorkloadEntryCleanup } from './workload-entry/cleanup.js';
import { WorkloadEntryController } from './workload-entry/controller.js';
import { WebhookCaBundleController, type CaBundleSource } from './webhook-ca-bundle/controller.js';

type EnvPart = Pick<
  DaemonEnv,
  | 'POD_NAME'
  | 'POD_NAMESPACE'
  | 'REVISION'
  | 'DISC_ENABLE_STATUS'
  | 'DISC_ENABLE_ANALYSIS'
  | 'DISC_ENABLE_CONFIG_DISTRIBUTION_TRACKING'
  | 'DISC_ENABLE_GATEWAY_API_STATUS'
  | 'DISC_STATUS_QPS'
  | 'DISC_STATUS_BURST'
  | 'DISC_STATUS_MAX_WORKERS'
  | 'DISC_STATUS_UPDATE_INTERVAL'
  | 'DISC_DISTRIBUTION_HISTORY_RETENTION'
  | 'DISC_ENABLE_WORKLOAD_ENTRY_AUTOREGISTRATION'
  | 'DISC_ENABLE_WORKLOAD_ENTRY_HEALTHCHECKS'
  | 'DISC_WORKLOAD_ENTRY_GRACE_PERIOD'
  | 'DISC_SCOPE_GATEWAY_TO_NAMESPACE'
  | 'ENABLE_MCS_AUTOEXPORT'
>;

/** The service registry as these parts read it (AggregateRegistry fits). */
export interface RegistryView {
  services(): ReadonlyArray<Service>;
  endpoints?(service: Service): ReadonlyArray<Endpoint>;
  onEvent?(handler: () => void): () => void;
}

/** The mesh config as the MCS auto-export reads it. */
export interface MeshConfigView {
  clusterLocalHosts(): ReadonlyArray<string>;
  onChange(listener: () => void): () => void;
}

export interface DaemonControllersInput {
  readonly env: EnvPart;
  readonly client: KubeClient;
  readonly store: ConfigStore;
  readonly registry: RegistryView;
  /** The model, so distribution tracking learns each snapshot version. */
  readonly model?: SnapshotSource;
  readonly mesh: () => MeshSettings;
  /** `--domain`, for the MCS auto-export's cluster-local host patterns. */
  readonly domain?: string;
  /** With gateway-api on: the source whose objects get status (DISC_ENABLE_GATEWAY_API_STATUS). */
  readonly gatewayApi?: GatewayApiSource;
  /** With ENABLE_MCS_AUTOEXPORT: the mesh config's cluster-local hosts. */
  readonly meshConfig?: MeshConfigView;
  /** With a CA (built-in or external): the trust bundle every namespace's `mesh-ca-root-cert` carries. */
  readonly trustBundle?: TrustBundleSource;
  readonly metrics?: Metrics;
  readonly logs?: { readonly status?: Logger; readonly wle?: Logger; readonly leader?: Logger; readonly ca?: Logger; readonly webhooks?: Logger };
  /** With the webhook server: the bundle the webhook configurations need, and their names. */
  readonly webhookCaBundle?: { readonly source: CaBundleSource; readonly mutatingName: string; readonly validatingName: string; readonly revision: string };
  /** Leader election timing (tests). */
  readonly lease?: { readonly leaseDurationMs?: number; readonly renewDeadlineMs?: number; readonly retryPeriodMs?: number };
}

export interface DaemonControllers {
  readonly identity: string;
  readonly leadership: Leadership;
  readonly status?: StatusController;
  /** DistributionReporter for the xDS ACK path (with DISC_ENABLE_CONFIG_DISTRIBUTION_TRACKING). */
  readonly distribution?: DistributionTracker;
  /** ConnectionObserver and HealthObserver for the xDS connect path (with auto-registration). */
  readonly workloadEntries?: WorkloadEntryController;
  readonly gatewayApiStatus?: GatewayApiStatusWriter;
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** `meshd-leader`, or `meshd-leader-<revision>` for a named revision other than `default`. */
export function meshdLeaseName(revision: string | undefined): string {
  return revision && revision !== 'default' ? `meshd-leader-${revision}` : 'meshd-leader';
}

/** Workloads (endpoint labels, service namespace) for the analyzers' selector checks. */
function workloadsOf(registry: RegistryView): () => ReadonlyArray<WorkloadInfo> {
  return () => {
    const out: WorkloadInfo[] = [];
    const endpoints = registry.endpoints?.bind(registry);
    if (!endpoints) return out;
    for (const s of registry.services()) for (const e of endpoints(s)) out.push({ namespace: s.namespace, labels: e.labels });
    return out;
  };
}

export function createDaemonControllers(input: DaemonControllersInput): DaemonControllers {
  const { env, client, store } = input;
  const identity = env.POD_NAME || hostname();
  const namespace = env.POD_NAMESPACE;
  const syncErrors = input.metrics?.controllerSyncErrors;
  if (!namespace) throw new Error('leadership: namespace (POD_NAMESPACE) is required');
  const leadership = new Leadership({
    lease: { client, namespace, name: meshdLeaseName(env.REVISION), identity, ...input.lease },
    log: input.logs?.leader,
  });
  const cleanups: Array<() => Promise<void> | void> = [];
  const starters: Array<() => Promise<void> | void> = [];

  let distribution: DistributionTracker | undefined;
  let publisher: ReportPublisher | undefined;
  const intervalMs = Math.max(10, env.DISC_STATUS_UPDATE_INTERVAL);
  const staleAfterMs = Math.max(env.DISC_DISTRIBUTION_HISTORY_RETENTION, 10 * intervalMs);
  if (env.DISC_ENABLE_CONFIG_DISTRIBUTION_TRACKING) {
    const tracker = new DistributionTracker({ store, identity, retentionMs: env.DISC_DISTRIBUTION_HISTORY_RETENTION, include: (o) => o.meta.origin === KUBE_ORIGIN });
    distribution = tracker;
    // The leader needs every daemon's report only to write status.
    if (env.DISC_ENABLE_STATUS) publisher = new ReportPublisher({ client, tracker, namespace, identity, intervalMs, staleAfterMs, log: input.logs?.status, syncErrors });
    starters.push(() => {
      tracker.start();
      if (input.model) cleanups.push(tracker.followModel(input.model));
      publisher?.start();
    });
    cleanups.push(() => tracker.stop(), () => publisher?.stop());
  }

  let status: StatusController | undefined;
  if (env.DISC_ENABLE_STATUS) {
    const mesh = distribution ? new MeshDistribution({ client, tracker: distribution, namespace, identity, staleAfterMs, log: input.logs?.status }) : undefined;
    status = new StatusController({
      client,
      store,
      qps: env.DISC_STATUS_QPS,
      burst: env.DISC_STATUS_BURST,
      workers: env.DISC_STATUS_MAX_WORKERS,
      log: input.logs?.status,
      syncErrors,
      analysis: env.DISC_ENABLE_ANALYSIS
        ? {
            services: { services: () => input.registry.services(), onEvent: input.registry.onEvent?.bind(input.registry) },
            mesh: input.mesh,
            workloads: input.registry.endpoints ? workloadsOf(input.registry) : undefined,
            scopeGatewayToNamespace: env.DISC_SCOPE_GATEWAY_TO_NAMESPACE,
          }
        : undefined,
      distribution: mesh
        ? {
            source: mesh,
            intervalMs,
            start: async (signal) => {
              mesh.start();
              await mesh.waitForSync(signal).catch(() => undefined);
            },
            stop: () => mesh.stop(),
          }
        : undefined,
    });
    leadership.add(status);
  }

  let gatewayApiStatus: GatewayApiStatusWriter | undefined;
  if (input.gatewayApi && env.DISC_ENABLE_GATEWAY_API_STATUS) {
    gatewayApiStatus = new GatewayApiStatusWriter({ client, source: input.gatewayApi, qps: env.DISC_STATUS_QPS, burst: env.DISC_STATUS_BURST, log: input.logs?.status, syncErrors });
    leadership.add(gatewayApiStatus);
  }

  let workloadEntries: WorkloadEntryController | undefined;
  if (env.DISC_ENABLE_WORKLOAD_ENTRY_AUTOREGISTRATION) {
    const m = input.metrics;
    const counters = m
      ? {
          success: m.autoRegistrationSuccess,
          updates: m.autoRegistrationUpdates,
          unregister: m.autoRegistrationUnregister,
          deletes: m.autoRegistrationDeletes,
          errors: m.autoRegistrationErrors,
        }
      : undefined;
    const wle = new WorkloadEntryController({
      client,
      identity,
      healthChecks: env.DISC_ENABLE_WORKLOAD_ENTRY_HEALTHCHECKS,
      gracePeriodMs: env.DISC_WORKLOAD_ENTRY_GRACE_PERIOD,
      counters,
      syncErrors,
      log: input.logs?.wle,
    });
    workloadEntries = wle;
    leadership.add(
      new WorkloadEntryCleanup({
        client,
        identity,
        isConnected: (key) => wle.isConnected(key),
        gracePeriodMs: env.DISC_WORKLOAD_ENTRY_GRACE_PERIOD,
        controllerPodNamespace: env.POD_NAME ? namespace : undefined,
        counters,
        syncErrors,
        log: input.logs?.wle,
      }),
    );
    starters.push(async () => {
      await wle.start().catch((err: unknown) => input.logs?.wle?.warn({ err: String(err) }, 'wle: marking entries of the previous run failed'));
    });
    cleanups.push(() => wle.stop());
  }

  if (input.webhookCaBundle) {
    const w = input.webhookCaBundle;
    const m = input.metrics;
    leadership.add(
      new WebhookCaBundleController({
        client,
        source: w.source,
        mutatingName: w.mutatingName,
        validatingName: w.validatingName,
        revision: w.revision,
        metrics: m ? { load: m.webhookConfigLoad, loadError: m.webhookConfigLoadError, updates: m.webhookConfigUpdates, updateError: m.webhookConfigUpdateError } : undefined,
        syncErrors,
        log: input.logs?.webhooks,
      }),
    );
  }

  if (env.ENABLE_MCS_AUTOEXPORT && input.meshConfig) {
    const meshConfig = input.meshConfig;
    leadership.add(
      new ServiceExportController({
        client,
        domain: input.domain ?? 'cluster.local',
        clusterLocalHosts: () => meshConfig.clusterLocalHosts(),
        onMeshChange: (l) => meshConfig.onChange(l),
        log: input.logs?.leader,
        syncErrors,
      }),
    );
  }

  if (input.trustBundle) {
    leadership.add(new RootCertController({ client, bundle: input.trustBundle, log: input.logs?.ca ?? input.logs?.leader, syncErrors }));
  }

  let running = false;
  return {
    identity,
    leadership,
    status,
    distribution,
    workloadEntries,
    gatewayApiStatus,
    async start() {
      if (running) return;
      running = true;
      for (const s of starters) await s();
      leadership.start();
    },
    async stop() {
      if (!running) return;
      running = false;
      await leadership.stop();
      for (const c of cleanups.reverse()) await c();
    },
  };
}
