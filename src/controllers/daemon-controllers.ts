/**
 * Builds the daemon's status, distribution, auto-registration and leadership parts from its
 * environment (DaemonEnv) in one call, for the daemon bootstrap to start and stop, and hands out
 * the hooks the xDS server calls:
 *
 *   const c = createDaemonControllers({ env, client, store, registry, model, mesh, metrics });
 *   await c.start();
 *   // xDS server observer: c.distribution?.onAck(...) / onDisconnect(...)  (DistributionReporter; wired in bootstrap/daemon.ts)
 *   //             c.workloadEntries?.connected(proxy) / disconnected(proxy) (ConnectionObserver)
 *   //             c.workloadEntries?.healthReport(proxy, report)           (HealthObserver)
 *   await c.stop();
 *
 * Leader-only duties: `status` (DISC_ENABLE_STATUS) and `wle-cleanup`
 * (DISC_ENABLE_WORKLOAD_ENTRY_AUTOREGISTRATION). Every daemon publishes its distribution report and
 * registers its own workloads.
 */
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import type { WorkloadInfo } from '../analysis/types.js';
import { KUBE_ORIGIN } from '../config/kube-source.js';
import type { DaemonEnv } from '../config/daemon-env.js';
import type { ConfigStore } from '../config/types.js';
import type { KubeClient } from '../kube/client.js';
import type { Metrics } from '../metrics/metrics.js';
import type { MeshSettings } from '../model/mesh-settings.js';
import type { Endpoint, Service } from '../model/service.js';
import { DistributionTracker, type SnapshotSource } from '../status/distribution.js';
import { MeshDistribution, ReportPublisher } from '../status/distribution-reports.js';
import { StatusController } from '../status/status-controller.js';
import { Leadership } from './leadership.js';
import { WorkloadEntryController } from './workload-entry/controller.js';

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
>;

/** The service registry as these parts read it (AggregateRegistry fits). */
export interface RegistryView {
  services(): ReadonlyArray<Service>;
  endpoints?(service: Service): ReadonlyArray<Endpoint>;
  onEvent?(handler: () => void): () => void;
}

export interface DaemonControllersInput {
  readonly env: EnvPart;
  readonly client: KubeClient;
  readonly store: ConfigStore;
  readonly registry: RegistryView;
  /** The model, so distribution tracking learns each snapshot version. */
  readonly model?: SnapshotSource;
  readonly mesh: () => MeshSettings;
  readonly metrics?: Metrics;
  readonly logs?: { readonly status?: Logger; readonly wle?: Logger; readonly leader?: Logger };
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
  start(): Promise<void>;
  stop(): Promise<void>;
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
  const leadership = new Leadership({ client, namespace, identity, revision: env.REVISION, log: input.logs?.leader, ...input.lease });
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
    if (env.DISC_ENABLE_STATUS) publisher = new ReportPublisher({ client, tracker, namespace, identity, intervalMs, staleAfterMs, log: input.logs?.status });
    starters.push(() => {
      tracker.start();
      if (input.model) cleanups.push(tracker.followModel(input.model));
      publisher?.start();
    });
    cleanups.push(() => tracker.stop(), () => publisher?.stop());
  }

  let status: StatusController | undefined;
  if (env.DISC_ENABLE_STATUS) {
    const mesh = distribution && env.DISC_ENABLE_CONFIG_DISTRIBUTION_TRACKING ? new MeshDistribution({ client, tracker: distribution, namespace, identity, staleAfterMs, log: input.logs?.status }) : undefined;
    status = new StatusController({
      client,
      store,
      qps: env.DISC_STATUS_QPS,
      burst: env.DISC_STATUS_BURST,
      workers: env.DISC_STATUS_MAX_WORKERS,
      log: input.logs?.status,
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
    const controller = status;
    leadership.addDuty('status', (signal) => controller.run(signal));
    // gateway-api status is a duty of its own (src/config/gateway-api/status.ts), added by the bootstrap.
  }

  let workloadEntries: WorkloadEntryController | undefined;
  if (env.DISC_ENABLE_WORKLOAD_ENTRY_AUTOREGISTRATION) {
    const m = input.metrics;
    const wle = new WorkloadEntryController({
      client,
      identity,
      healthChecks: env.DISC_ENABLE_WORKLOAD_ENTRY_HEALTHCHECKS,
      gracePeriodMs: env.DISC_WORKLOAD_ENTRY_GRACE_PERIOD,
      controllerPodNamespace: env.POD_NAME ? namespace : undefined,
      counters: m
        ? {
            success: m.autoRegistrationSuccess,
            updates: m.autoRegistrationUpdates,
            unregister: m.autoRegistrationUnregister,
            deletes: m.autoRegistrationDeletes,
            errors: m.autoRegistrationErrors,
          }
        : undefined,
      log: input.logs?.wle,
    });
    workloadEntries = wle;
    leadership.addDuty('wle-cleanup', (signal) => wle.runCleanup(signal));
    starters.push(async () => {
      await wle.start().catch((err: unknown) => input.logs?.wle?.warn({ err: String(err) }, 'wle: marking entries of the previous run failed'));
    });
    cleanups.push(() => wle.stop());
  }

  let running = false;
  return {
    identity,
    leadership,
    status,
    distribution,
    workloadEntries,
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
