/**
 * Remote clusters from Secrets: watches the Secrets labelled `mesh.io/multiCluster=true` in one
 * namespace of the daemon's own cluster (./secrets.ts) and keeps one remote cluster (a client, its
 * watches and a Kubernetes registry; built by a `RemoteClusterFactory`) per data key. It runs on
 * every daemon, on the reconcile contract (src/controllers/runtime/), keyed by Secret
 * (`namespace/name`), one Secret at a time; a reconcile compares what the cached Secret names
 * with the clusters this Secret owns:
 *
 * - key added → the cluster is built and started; once synced its registry joins the aggregate;
 * - kubeconfig changed → a new cluster is built; the old one keeps serving until the new one synced,
 *   then is replaced and stopped (an unusable new kubeconfig removes the cluster);
 * - key or Secret removed → the cluster is stopped and its services and endpoints leave the aggregate.
 *
 * A key equal to the daemon's own cluster ID is ignored; a cluster ID already taken by another
 * Secret is ignored too (both logged once). An unusable kubeconfig is a terminal failure of the
 * Secret, naming the Secret, the key and the reason, after the Secret's other keys are handled: it
 * is not retried until the Secret changes. Any other failure is retried with backoff.
 *
 * `start()` resolves once the Secrets are listed and the clusters they name have synced, or once
 * `syncTimeoutMs` passed (0: no limit); each cluster not synced by then counts one sync timeout and
 * joins later, when it syncs.
 */
import type { V1Secret } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { KubeClient } from '../../kube/client.js';
import { dropManagedFields, Informer, resourceRef } from '../../kube/informer.js';
import { splitKey } from '../../kube/types.js';
import type { AggregateRegistry } from '../../registry/aggregate.js';
import { Controller, fromCache, TerminalError, type SyncErrorCounter } from '../runtime/index.js';
import { clustersOfSecret, MULTI_CLUSTER_SELECTOR } from './secrets.js';
import type { RemoteCluster, RemoteClusterFactory } from './types.js';

export interface RemoteClusterMetrics {
  /** meshd_managed_clusters: the own cluster plus the remote ones. */
  managedClusters(count: number): void;
  /** remote_cluster_sync_timeouts_total. */
  syncTimedOut(): void;
}

export interface RemoteClustersOptions {
  /** Client of the daemon's own cluster, where the Secrets are. */
  readonly client: KubeClient;
  /** `--clusterRegistriesNamespace`. */
  readonly namespace: string;
  /** `--clusterID`: a Secret key equal to it is ignored. */
  readonly localClusterId: string;
  readonly aggregate: Pick<AggregateRegistry, 'addRegistry' | 'removeRegistry'>;
  readonly factory: RemoteClusterFactory;
  /** DISC_REMOTE_CLUSTER_TIMEOUT in ms; 0 waits without limit. */
  readonly syncTimeoutMs: number;
  readonly metrics?: RemoteClusterMetrics;
  readonly log: Logger;
  /** Failures of the Secret watch (it retries). */
  readonly onWatchError?: (err: Error) => void;
  /** controller_sync_errors_total (label `remote-clusters`). */
  readonly syncErrors?: SyncErrorCounter;
  /** First retry delay of a failed Secret (default 100 ms, doubling to 5 min). */
  readonly retryBaseDelayMs?: number;
}

/** What the controller holds for one cluster ID. */
interface Entry {
  readonly clusterId: string;
  /** `namespace/name` of the Secret and the data key. */
  readonly secret: string;
  readonly digest: string;
  readonly cluster: RemoteCluster;
  /** The cluster this one replaces; it serves until this one synced. */
  retired?: RemoteCluster;
  /** True once the cluster's registry is in the aggregate. */
  joined: boolean;
  /** Resolves true once synced and joined, false when stopped first. */
  readonly synced: Promise<boolean>;
  removed: boolean;
}

/** A cluster as `clusters()` reports it. */
export interface RemoteClusterInfo {
  readonly clusterId: string;
  readonly secret: string;
  readonly server: string;
  readonly synced: boolean;
}

export const REMOTE_CLUSTERS_CONTROLLER = 'remote-clusters';

export class RemoteClusterController {
  private readonly secrets: Informer<V1Secret>;
  private readonly controller: Controller<string>;
  private readonly entries = new Map<string, Entry>();
  /** Cluster IDs each Secret owns. */
  private readonly bySecret = new Map<string, Set<string>>();
  /** Notices already logged per Secret (own cluster ID, IDs taken by another Secret). */
  private readonly noticed = new Map<string, Set<string>>();
  private stopped = false;

  constructor(private readonly opts: RemoteClustersOptions) {
    this.secrets = new Informer<V1Secret>(opts.client, {
      resource: resourceRef('v1', 'secrets', { namespaced: true, kind: 'Secret' }),
      namespace: opts.namespace,
      labelSelector: MULTI_CLUSTER_SELECTOR,
      transform: dropManagedFields,
      name: `remote-cluster secrets in ${opts.namespace}`,
      onError: (err, phase) => {
        opts.onWatchError?.(err);
        opts.log.warn({ namespace: opts.namespace, phase, err: err.message }, `remote-cluster secrets: ${phase}: ${err.message} (retrying)`);
      },
    });
    // One worker: Secrets are handled one at a time, as cluster IDs are claimed across Secrets.
    this.controller = new Controller<string>({
      name: REMOTE_CLUSTERS_CONTROLLER,
      reconciler: { reconcile: (key) => this.reconcile(key) },
      sources: [fromCache(this.secrets)],
      retry: { baseDelayMs: opts.retryBaseDelayMs ?? 100, maxDelayMs: 300_000 },
      syncErrors: opts.syncErrors,
      log: opts.log,
      describeKey: (key) => `secret ${key}`,
    });
    this.report();
  }

  /** Lists the Secrets and waits for their clusters to sync, at most `syncTimeoutMs` (see the module comment). */
  async start(signal?: AbortSignal): Promise<void> {
    this.secrets.start();
    await this.secrets.waitForSync({ signal });
    this.controller.start();
    await this.controller.whenIdle();
    const pending = [...this.entries.values()];
    if (pending.length === 0) return;
    const t0 = Date.now();
    const all = Promise.all(pending.map((e) => e.synced));
    const limit = this.opts.syncTimeoutMs;
    let timer: NodeJS.Timeout | undefined;
    const timedOut = limit > 0 ? new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), limit))) : undefined;
    const outcome = await (timedOut ? Promise.race([all, timedOut]) : all);
    clearTimeout(timer);
    if (outcome !== 'timeout') {
      this.opts.log.info({ clusters: pending.map((e) => e.clusterId), ms: Date.now() - t0 }, `remote clusters synced in ${Date.now() - t0} ms`);
      return;
    }
    for (const e of pending) {
      if (e.joined || e.removed) continue;
      this.opts.metrics?.syncTimedOut();
      this.opts.log.warn(
        { cluster: e.clusterId, secret: e.secret, server: e.cluster.server, timeout: `${limit}ms` },
        `remote cluster ${e.clusterId} (${e.secret}) not synced after ${limit} ms (DISC_REMOTE_CLUSTER_TIMEOUT); ready without it, it joins once synced`,
      );
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.controller.stop();
    await this.secrets.stop();
    await Promise.all([...this.entries.values()].map((e) => this.dispose(e)));
    this.entries.clear();
    this.bySecret.clear();
  }

  /** The remote clusters, by cluster ID. */
  clusters(): RemoteClusterInfo[] {
    return [...this.entries.values()]
      .sort((a, b) => (a.clusterId < b.clusterId ? -1 : 1))
      .map((e) => ({ clusterId: e.clusterId, secret: e.secret, server: e.cluster.server, synced: e.joined }));
  }

  // ---- one Secret → its clusters ----

  /** Logs `message` once while the Secret keeps giving reason to (`id` names the notice). */
  private notice(secretKey: string, id: string, log: () => void, seen: Set<string>): void {
    seen.add(id);
    if (this.noticed.get(secretKey)?.has(id)) return;
    log();
  }

  private async reconcile(secretKey: string): Promise<void> {
    if (this.stopped) return;
    const { namespace, name } = splitKey(secretKey);
    const secret = this.secrets.get(namespace, name);
    const wanted = secret ? clustersOfSecret(secret) : [];
    const owned = this.bySecret.get(secretKey) ?? new Set<string>();
    this.bySecret.set(secretKey, owned);
    const log = this.opts.log;
    const noticed = new Set<string>();
    const unusable: string[] = [];

    // Keys that are gone.
    const wantedIds = new Set(wanted.map((w) => w.clusterId));
    for (const id of [...owned]) {
      if (wantedIds.has(id)) continue;
      const entry = this.entries.get(id);
      if (entry) await this.remove(entry, `key ${id} removed from secret ${secretKey}`); // a failure is retried: still owned
      owned.delete(id);
    }

    // Keys added or changed.
    for (const w of wanted) {
      const where = `secret ${secretKey} key ${w.clusterId}`;
      if (w.clusterId === this.opts.localClusterId) {
        this.notice(secretKey, `own ${w.clusterId}`, () => log.info({ secret: secretKey, key: w.clusterId }, `${where}: ignored, it is this daemon's own cluster (--clusterID)`), noticed);
        continue;
      }
      const current = this.entries.get(w.clusterId);
      if (current && current.secret !== secretKey) {
        this.notice(
          secretKey,
          `taken ${w.clusterId} ${current.secret}`,
          () => log.warn({ secret: secretKey, key: w.clusterId, owner: current.secret }, `${where}: ignored, cluster ${w.clusterId} is already defined by secret ${current.secret}`),
          noticed,
        );
        continue;
      }
      if (current && current.digest === w.digest) continue;
      let cluster: RemoteCluster;
      try {
        cluster = await this.opts.factory(w.clusterId, w.kubeconfig, where);
      } catch (err) {
        unusable.push(`${where}: unusable kubeconfig: ${(err as Error).message}`);
        if (current) await this.remove(current, `${where} now holds an unusable kubeconfig`);
        owned.delete(w.clusterId);
        continue;
      }
      let retired: RemoteCluster | undefined;
      if (current) {
        try {
          if (current.joined) {
            retired = current.cluster;
          } else {
            // Never synced: stop it; what it was to replace keeps serving until the new one synced.
            await current.cluster.stop();
            retired = current.retired;
            current.retired = undefined;
          }
        } catch (err) {
          await cluster.stop().catch(() => undefined); // not started; the retry builds it again
          throw err;
        }
        current.removed = true;
        log.info({ cluster: w.clusterId, secret: secretKey }, `remote cluster ${w.clusterId}: kubeconfig changed in ${where}; restarting`);
      }
      owned.add(w.clusterId);
      this.entries.set(w.clusterId, this.launch(w.clusterId, secretKey, w.digest, cluster, retired));
    }
    if (owned.size === 0) this.bySecret.delete(secretKey);
    if (noticed.size > 0) this.noticed.set(secretKey, noticed);
    else this.noticed.delete(secretKey);
    this.report();
    if (unusable.length > 0) throw new TerminalError(unusable.join('; '));
  }
  /** Starts a cluster; joins the aggregate once synced (replacing and stopping `retired`). */
  private launch(clusterId: string, secret: string, digest: string, cluster: RemoteCluster, retired: RemoteCluster | undefined): Entry {
    const log = this.opts.log;
    log.info({ cluster: clusterId, secret, server: cluster.server }, `remote cluster ${clusterId}: starting (${cluster.server})`);
    const t0 = Date.now();
    const entry: Entry = {
      clusterId,
      secret,
      digest,
      cluster,
      retired,
      joined: false,
      removed: false,
      synced: cluster.start().then(
        async () => {
          if (entry.removed) return false;
          await this.opts.aggregate.addRegistry(cluster.registry, { kubernetes: { clusterId, exported: cluster.exported } });
          entry.joined = true;
          const old = entry.retired;
          entry.retired = undefined;
          await old?.stop();
          log.info(
            { cluster: clusterId, secret, ms: Date.now() - t0, services: cluster.registry.services().length },
            `remote cluster ${clusterId} synced in ${Date.now() - t0} ms`,
          );
          return true;
        },
        () => false,
      ),
    };
    return entry;
  }

  private async remove(entry: Entry, why: string): Promise<void> {
    await this.dispose(entry); // first: when it fails, the entry stays and the retry removes it
    if (this.entries.get(entry.clusterId) === entry) this.entries.delete(entry.clusterId);
    this.opts.log.info({ cluster: entry.clusterId, secret: entry.secret }, `remote cluster ${entry.clusterId} removed: ${why}`);
    this.report();
    // Secrets that named the same cluster ID and were ignored for it may take it now.
    for (const [secretKey, seen] of this.noticed) {
      if ([...seen].some((id) => id.startsWith(`taken ${entry.clusterId} `))) this.controller.enqueue(secretKey);
    }
  }

  /** Takes the cluster out of the aggregate and stops it and the one it replaces (again on a retry). */
  private async dispose(entry: Entry): Promise<void> {
    entry.removed = true;
    if (entry.joined || entry.retired) this.opts.aggregate.removeRegistry(entry.cluster.registry.id);
    entry.joined = false;
    await Promise.all([entry.cluster.stop(), entry.retired?.stop()]);
    entry.retired = undefined;
  }

  private report(): void {
    this.opts.metrics?.managedClusters(1 + this.entries.size);
  }
}
