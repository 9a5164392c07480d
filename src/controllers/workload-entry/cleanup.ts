/**
 * The leader's `wle-cleanup` duty: a controller keyed by entry (`namespace/name`, the reconcile
 * contract of src/controllers/runtime/) over an informer of WorkloadEntries. For each
 * auto-registered entry:
 *
 * - disconnected longer than DISC_WORKLOAD_ENTRY_GRACE_PERIOD: deleted, conditional on the version
 *   judged (uid and resourceVersion), so that a reconnect meanwhile wins; counted in
 *   auto_registration_deletes_total. Disconnected for less: looked at again when the grace period
 *   ends (`again`);
 * - held by this daemon's identity but not connected here (a stream ended without its callback):
 *   marked disconnected now;
 * - held by another daemon, with `controllerPodNamespace` (daemons run in pods named by their
 *   identity): marked disconnected now when that pod no longer exists, else looked at again after
 *   `cleanupIntervalMs`.
 * User-made entries (no auto-registration annotation) are never touched.
 */
import type { Logger } from 'pino';
import type { KubeClient } from '../../kube/client.js';
import { dropManagedFields, Informer, resourceRef } from '../../kube/informer.js';
import { splitKey } from '../../kube/types.js';
import { again, Controller, fromCache, type Duty, type Outcome, type SyncErrorCounter } from '../runtime/index.js';
import { DISCONNECTED_AT, NETWORKING_API_VERSION, WORKLOAD_CONTROLLER, annotation, isAutoRegistered, type WorkloadEntryObject } from './entry.js';
import type { AutoRegistrationCounters } from './types.js';
import { deleteIfUnchanged, markDisconnected } from './writes.js';

export const WLE_CLEANUP_CONTROLLER = 'wle-cleanup';

export interface WorkloadEntryCleanupOptions {
  readonly client: KubeClient;
  /** This daemon's identity (POD_NAME). */
  readonly identity: string;
  /** True while the entry's workload is connected to this daemon (WorkloadEntryController.isConnected). */
  readonly isConnected: (key: string) => boolean;
  /** DISC_WORKLOAD_ENTRY_GRACE_PERIOD in ms. */
  readonly gracePeriodMs: number;
  /** How often an entry held by another live daemon is looked at again (default: the grace period, at least 100 ms). */
  readonly cleanupIntervalMs?: number;
  /** Namespace of the daemon pods (identities are pod names there); unset outside a pod. */
  readonly controllerPodNamespace?: string;
  /** Only entries of this namespace (default: all namespaces). */
  readonly namespace?: string;
  readonly counters?: AutoRegistrationCounters;
  readonly syncErrors?: SyncErrorCounter;
  readonly log?: Logger;
  readonly now?: () => Date;
}

export class WorkloadEntryCleanup implements Duty {
  readonly name = WLE_CLEANUP_CONTROLLER;
  private readonly now: () => Date;
  private readonly intervalMs: number;
  /** Pod liveness of daemon identities, for half an interval. */
  private readonly alive = new Map<string, { readonly at: number; readonly live: Promise<boolean> }>();

  constructor(private readonly opts: WorkloadEntryCleanupOptions) {
    this.now = opts.now ?? (() => new Date());
    this.intervalMs = opts.cleanupIntervalMs ?? Math.max(100, opts.gracePeriodMs);
  }

  async run(signal: AbortSignal): Promise<void> {
    const entries = new Informer<WorkloadEntryObject>(this.opts.client, {
      resource: resourceRef(NETWORKING_API_VERSION, 'workloadentries', { namespaced: true, kind: 'WorkloadEntry' }),
      namespace: this.opts.namespace,
      transform: dropManagedFields,
      name: 'wle-cleanup workloadentries',
      onError: (err, phase) => this.opts.log?.warn({ err: err.message, phase }, `wle-cleanup: WorkloadEntry informer: ${err.message} (retrying)`),
    });
    const controller = new Controller<string>({
      name: WLE_CLEANUP_CONTROLLER,
      reconciler: { reconcile: (key) => this.reconcile(entries, key) },
      sources: [fromCache(entries, (e) => (e.type === 'delete' ? undefined : `${e.object.metadata?.namespace ?? ''}/${e.object.metadata?.name ?? ''}`))],
      workers: 2,
      retry: { baseDelayMs: 100, maxDelayMs: Math.max(this.intervalMs, 10_000) },
      syncErrors: this.opts.syncErrors,
      log: this.opts.log,
    });
    entries.start();
    try {
      await entries.waitForSync({ signal });
      await controller.run(signal);
    } catch (err) {
      if (!signal.aborted) throw err;
    } finally {
      await controller.stop();
      await entries.stop();
      this.alive.clear();
    }
  }

  private async reconcile(entries: Informer<WorkloadEntryObject>, key: string): Promise<Outcome | void> {
    const { namespace, name } = splitKey(key);
    const e = entries.get(namespace, name);
    if (!e || !isAutoRegistered(e)) return;
    const now = this.now();
    const disconnectedAt = annotation(e, DISCONNECTED_AT);
    const controller = annotation(e, WORKLOAD_CONTROLLER) ?? '';
    if (disconnectedAt) {
      const since = Date.parse(disconnectedAt);
      if (!Number.isFinite(since)) return;
      const left = this.opts.gracePeriodMs - (now.getTime() - since);
      if (left > 0) return again(left + 10);
      if (this.opts.isConnected(key)) return; // back here; registration takes the entry again
      if (await deleteIfUnchanged(this.opts.client, e)) {
        this.opts.counters?.deletes.inc();
        this.opts.log?.info({ entry: key, disconnectedAt }, 'wle: removed the entry of a workload disconnected longer than the grace period');
      }
      return;
    }
    if (controller === this.opts.identity) {
      // Ours but not connected here (e.g. a stream ended without its callback).
      if (this.opts.isConnected(key)) return;
      await markDisconnected(this.opts.client, namespace, name, now.toISOString(), { controller }, () => this.opts.counters?.unregister.inc());
      return;
    }
    if (!this.opts.controllerPodNamespace || !controller) return;
    if (await this.controllerAlive(controller)) return again(this.intervalMs);
    if (await markDisconnected(this.opts.client, namespace, name, now.toISOString(), { controller }, () => this.opts.counters?.unregister.inc())) {
      this.opts.log?.info({ entry: key, controller }, 'wle: the daemon holding this entry is gone; marked disconnected');
    }
  }

  /** Whether the pod of daemon `identity` exists (memoized for half an interval). */
  private controllerAlive(identity: string): Promise<boolean> {
    const t = performance.now();
    const known = this.alive.get(identity);
    if (known && t - known.at < this.intervalMs / 2) return known.live;
    const live = this.opts.client
      .find({ apiVersion: 'v1', kind: 'Pod', namespace: this.opts.controllerPodNamespace, name: identity })
      .then(
        (pod) => pod !== undefined && !pod.metadata?.deletionTimestamp,
        () => true, // unknown: assume alive rather than take a live workload's entry
      );
    this.alive.set(identity, { at: t, live });
    return live;
  }
}
