/**
 * Trust distribution (docs/adr/0065), a leader-only duty: every active namespace holds the
 * ConfigMap `mesh-ca-root-cert` whose `root-cert.pem` is the CA's trust bundle (current root
 * first, then the roots kept during a rotation), so workloads read the roots they must trust from
 * their own namespace. A deleted map is created again, an edited one is restored, and a change of
 * the bundle (a rotation, another replica's root adopted) rewrites them all.
 *
 * `run(signal)` starts informers on Namespaces and on the ConfigMaps of that one name (a field
 * selector: the daemon never caches other maps), then runs a controller keyed by namespace name on
 * the reconcile contract of src/controllers/runtime/ until the signal aborts. Sources: every
 * namespace, changes of its map, and the bundle's change events (every namespace again).
 *
 * Only `root-cert.pem` and the map's label belong to the controller: other keys or labels someone
 * added are left as they are. Terminating namespaces are skipped (the API server refuses creates
 * there).
 *
 * Another writer that keeps changing a map (a second control plane with another CA in the same
 * cluster) would make two controllers rewrite it after each other without end: a map that needs
 * restoring again within FIGHT_WINDOW_MS of this controller's last write to it waits 2, 4, 8 …
 * seconds (at most five minutes) before the next write, and the fight is logged once per streak.
 */
import type { Logger } from 'pino';
import type { KubeClient } from '../../kube/client.js';
import { isAlreadyExists, isConflict, isNotFound } from '../../kube/errors.js';
import { dropManagedFields, Informer, resourceRef } from '../../kube/informer.js';
import type { KubeObject } from '../../kube/types.js';
import { again, Controller, fromCache, fromEvents, type Duty, type Outcome, type SyncErrorCounter } from '../runtime/index.js';

export const ROOT_CERT_CONFIGMAP = 'mesh-ca-root-cert';
export const ROOT_CERT_KEY = 'root-cert.pem';
/** Label on the maps this controller writes. */
export const ROOT_CERT_LABEL = 'mesh.io/config';
export const CA_ROOT_CERT_CONTROLLER = 'ca-root-cert';
const FIELD_MANAGER = 'mesh-discovery';
/** A map rewritten again this soon after the controller's last write is being fought over. */
export const FIGHT_WINDOW_MS = 30_000;
const MAX_FIGHT_DELAY_MS = 300_000;

/** The wait before the next rewrite of a map after `streak` rewrites in quick succession. */
export function fightDelayMs(streak: number): number {
  return streak <= 0 ? 0 : Math.min(MAX_FIGHT_DELAY_MS, 1000 * 2 ** Math.min(streak, 20));
}

/** The roots workloads must trust, as one PEM text, and when that text changes. */
export interface TrustBundleSource {
  pem(): string;
  /** Told after every change of the bundle; returns the unsubscribe function (absent: it never changes). */
  onChange?(listener: () => void): () => void;
}

export interface RootCertControllerOptions {
  readonly client: KubeClient;
  readonly bundle: TrustBundleSource;
  readonly log?: Logger;
  /** controller_sync_errors_total (label `ca-root-cert`). */
  readonly syncErrors?: SyncErrorCounter;
  /** Parallel writes (default 4; one namespace still has one at a time). */
  readonly workers?: number;
}

interface NamespaceObject extends KubeObject {
  readonly status?: { readonly phase?: string };
}

interface ConfigMapObject extends KubeObject {
  readonly data?: Readonly<Record<string, string>>;
}

export class RootCertController implements Duty {
  readonly name = CA_ROOT_CERT_CONTROLLER;
  /** This controller's last rewrite of each namespace's map (one entry per namespace that has one). */
  private readonly rewrites = new Map<string, { readonly at: number; readonly streak: number }>();

  constructor(private readonly opts: RootCertControllerOptions) {}

  /** The leader duty: resolves once `signal` aborts and everything stopped. */
  async run(signal: AbortSignal): Promise<void> {
    const { client, log } = this.opts;
    const onError = (kind: string) => (err: Error) => log?.warn({ err: err.message }, `${CA_ROOT_CERT_CONTROLLER}: ${kind} informer: ${err.message} (retrying)`);
    const namespaces = new Informer<NamespaceObject>(client, {
      resource: resourceRef('v1', 'namespaces', { namespaced: false, kind: 'Namespace' }),
      transform: dropManagedFields,
      name: `${CA_ROOT_CERT_CONTROLLER} namespaces`,
      onError: onError('Namespace'),
    });
    const maps = new Informer<ConfigMapObject>(client, {
      resource: resourceRef('v1', 'configmaps', { namespaced: true, kind: 'ConfigMap' }),
      fieldSelector: `metadata.name=${ROOT_CERT_CONFIGMAP}`,
      transform: dropManagedFields,
      name: `${CA_ROOT_CERT_CONTROLLER} configmaps`,
      onError: onError('ConfigMap'),
    });
    const all = (): string[] => namespaces.list().map((n) => n.metadata?.name ?? '').filter((n) => n !== '');
    const controller = new Controller<string>({
      name: CA_ROOT_CERT_CONTROLLER,
      reconciler: { reconcile: (ns, { signal: s }) => this.reconcile(ns, namespaces, maps, s) },
      sources: [
        fromCache(namespaces, (e) => (e.type === 'delete' ? undefined : e.object.metadata?.name)),
        fromCache(maps, (e) => e.object.metadata?.namespace),
        ...(this.opts.bundle.onChange ? [fromEvents<string>((emit) => this.opts.bundle.onChange!(() => emit(all())))] : []),
      ],
      workers: this.opts.workers ?? 4,
      syncErrors: this.opts.syncErrors,
      log,
    });
    namespaces.start();
    maps.start();
    try {
      await Promise.all([namespaces.waitForSync({ signal }), maps.waitForSync({ signal })]);
      log?.info({ namespaces: namespaces.list().length }, `${CA_ROOT_CERT_CONTROLLER}: keeping ConfigMap ${ROOT_CERT_CONFIGMAP} in every namespace (leader)`);
      await controller.run(signal);
    } catch (err) {
      if (!signal.aborted) throw err;
    } finally {
      await controller.stop();
      await Promise.all([namespaces.stop(), maps.stop()]);
    }
  }

  /** Brings the map of namespace `ns` to the current bundle. */
  private async reconcile(ns: string, namespaces: Informer<NamespaceObject>, maps: Informer<ConfigMapObject>, signal: AbortSignal): Promise<Outcome | void> {
    const namespace = namespaces.get('', ns);
    if (!namespace || namespace.metadata?.deletionTimestamp || namespace.status?.phase === 'Terminating') {
      this.rewrites.delete(ns);
      return;
    }
    const pem = this.opts.bundle.pem();
    if (pem === '') return;
    const existing = maps.get(ns, ROOT_CERT_CONFIGMAP);
    const { client, log } = this.opts;
    if (!existing) {
      try {
        await client.create<ConfigMapObject>(
          { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: ROOT_CERT_CONFIGMAP, namespace: ns, labels: { [ROOT_CERT_LABEL]: 'true' } }, data: { [ROOT_CERT_KEY]: pem } },
          { fieldManager: FIELD_MANAGER, signal },
        );
        log?.debug({ namespace: ns }, `${CA_ROOT_CERT_CONTROLLER}: created ${ns}/${ROOT_CERT_CONFIGMAP}`);
      } catch (err) {
        // The cache was behind: its add event queues the namespace again, and that reconcile compares.
        if (!isAlreadyExists(err)) throw err;
      }
      return;
    }
    if (existing.data?.[ROOT_CERT_KEY] === pem && existing.metadata?.labels?.[ROOT_CERT_LABEL] === 'true') return;
    const now = Date.now();
    const last = this.rewrites.get(ns);
    if (last) {
      const wait = last.at + fightDelayMs(last.streak) - now;
      if (wait > 0) return again(wait);
    }
    const streak = last && now - last.at < FIGHT_WINDOW_MS ? last.streak + 1 : 0;
    if (streak === 2) {
      log?.warn({ namespace: ns }, `${CA_ROOT_CERT_CONTROLLER}: ${ns}/${ROOT_CERT_CONFIGMAP} keeps being changed by another writer (a second control plane with another CA?); rewriting it with growing delays`);
    }
    try {
      await client.replace<ConfigMapObject>(
        {
          ...existing,
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { ...existing.metadata, labels: { ...existing.metadata?.labels, [ROOT_CERT_LABEL]: 'true' } },
          data: { ...existing.data, [ROOT_CERT_KEY]: pem },
        },
        { fieldManager: FIELD_MANAGER, signal },
      );
      this.rewrites.set(ns, { at: now, streak });
      log?.info({ namespace: ns }, `${CA_ROOT_CERT_CONTROLLER}: ${ns}/${ROOT_CERT_CONFIGMAP} set to the current trust bundle`);
    } catch (err) {
      // Changed or deleted since the cache saw it: its event queues the namespace again.
      if (!isConflict(err) && !isNotFound(err)) throw err;
    }
  }
}
