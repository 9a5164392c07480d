/**
 * Config source that reads the mesh config kinds from the Kubernetes API (the CRDs in crds/):
 * one informer per kind (per namespace when restricted to namespaces) feeds the config store.
 *
 * Each object is validated exactly like a document of a config file (parse.ts): kind and
 * apiVersion, metadata, the spec schema and the semantic checks. An invalid object is rejected
 * (reported through `onReject` with kind, namespace/name and the field-level issues, once per
 * resourceVersion) and the last valid version of it stays in the store. Deleting the object in
 * the cluster deletes it from the store. The store is marked synced once every informer has
 * loaded its first list; the informers ride out API server restarts on their own.
 */
import type { KubeClient } from '../kube/client.js';
import { dropManagedFields, Informer, type InformerOptions, type InformerStats } from '../kube/informer.js';
import { objectKey, type InformerEvent, type KubeObject } from '../kube/types.js';
import { CONFIG_KINDS, type KindDefinition } from './kinds.js';
import { parseConfigObject } from './parse.js';
import type { MemoryConfigStore } from './store.js';
import type { ConfigObject, ConfigRejection } from './types.js';
import { getLogger } from '../log/logger.js';

/** Store origin (and `meta.origin`) of everything this source delivers. */
export const KUBE_ORIGIN = 'k8s';

/** What the source counts (the daemon binds these to cfg_source_cluster_*, disc_cluster_cfg_events, num_outgoing_retries). */
export interface KubeConfigSourceCounters {
  /** An informer event of a kind (not a resync of a version already judged). */
  event(kind: string, type: 'add' | 'update' | 'delete'): void;
  /** An object converted into a config object (`ok`) or refused by the schema or semantic checks. */
  converted(kind: string, ok: boolean): void;
  /** An event applied to the store (`ok`) or ended in an error (refusal, store failure). */
  handled(kind: string, ok: boolean): void;
  /** A list or watch of a kind failed and will be tried again after a back-off. */
  retry(kind: string): void;
}

export interface KubeConfigSourceOptions {
  readonly client: KubeClient;
  readonly store: MemoryConfigStore;
  /** Kinds to watch (default: all config kinds). */
  readonly kinds?: ReadonlyArray<KindDefinition>;
  /** Watch only these namespaces (default: all). Cluster-scoped kinds are watched cluster-wide. */
  readonly namespaces?: ReadonlyArray<string>;
  /** Called for every refused object (once per resourceVersion). */
  readonly onReject?: (rejection: ConfigRejection) => void;
  /** Called for every accepted object version the validation warns about (`issues` are the warnings). */
  readonly onWarn?: (warning: ConfigRejection) => void;
  /** Watch failures (they are retried) and internal errors; the source keeps running. */
  readonly onError?: (error: Error, kind: string) => void;
  readonly counters?: KubeConfigSourceCounters;
  /** Informer tuning (watchdog, backoff, page size), mainly for tests. */
  readonly informer?: Pick<InformerOptions<KubeObject>, 'watchdogMs' | 'backoff' | 'pageSize' | 'watchTimeoutSeconds'>;
}

interface Watched {
  readonly def: KindDefinition;
  readonly namespace?: string;
  readonly informer: Informer<KubeObject>;
}

export class KubeConfigSource {
  private readonly watched: Watched[] = [];
  /** resourceVersion last judged per kind + key, so a resync or relist does not judge it again. */
  private readonly judged = new Map<string, string>();
  private synced = false;
  private running = false;
  private syncing: Promise<void> | undefined;

  constructor(private readonly opts: KubeConfigSourceOptions) {
    const kinds = opts.kinds ?? CONFIG_KINDS;
    const namespaces = opts.namespaces?.length ? [...new Set(opts.namespaces)] : [undefined];
    for (const def of kinds) {
      for (const namespace of def.namespaced ? namespaces : [undefined]) {
        const informer = new Informer<KubeObject>(opts.client, {
          ...opts.informer,
          resource: { group: def.group, version: def.version, plural: def.plural, namespaced: def.namespaced, kind: def.kind },
          namespace,
          transform: dropManagedFields,
          name: `${def.kind}${namespace ? ` in ${namespace}` : ''}`,
          onError: (err, phase) => {
            if (phase !== 'handler') opts.counters?.retry(def.kind);
            this.reportError(new Error(`${def.kind}${namespace ? ` (namespace ${namespace})` : ''}: ${phase}: ${err.message}`), def.kind);
          },
        });
        informer.onEvent((event) => this.handle(def, event));
        this.watched.push({ def, namespace, informer });
      }
    }
  }

  /** Starts every informer; resolves once all have synced and the store is marked synced. */
  start(opts: { readonly signal?: AbortSignal; readonly timeoutMs?: number } = {}): Promise<void> {
    if (!this.running) {
      this.running = true;
      for (const w of this.watched) w.informer.start();
      this.syncing = Promise.all(this.watched.map((w) => w.informer.waitForSync())).then(() => {
        this.synced = true;
        this.opts.store.markSynced();
      });
      // A stop before the sync rejects the waiters; the source itself has nothing more to do.
      this.syncing.catch(() => undefined);
    }
    return this.waitForSync(opts);
  }

  /** Resolves once every informer synced; rejects on timeout, abort, or a stop before that. */
  async waitForSync(opts: { readonly signal?: AbortSignal; readonly timeoutMs?: number } = {}): Promise<void> {
    if (this.synced) return;
    if (!this.syncing) throw new Error('kube config source: not started');
    const waits: Promise<unknown>[] = [this.syncing];
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    if (opts.timeoutMs !== undefined) {
      waits.push(
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error(`kube config source: not synced after ${opts.timeoutMs} ms (waiting for ${this.unsynced().join(', ')})`)), opts.timeoutMs);
        }),
      );
    }
    if (opts.signal) {
      const signal = opts.signal;
      waits.push(
        new Promise((_, reject) => {
          onAbort = () => reject(new Error('kube config source: waiting for sync was aborted'));
          if (signal.aborted) onAbort();
          else signal.addEventListener('abort', onAbort, { once: true });
        }),
      );
    }
    try {
      await Promise.race(waits);
    } finally {
      clearTimeout(timer);
      if (onAbort) opts.signal?.removeEventListener('abort', onAbort);
    }
  }

  hasSynced(): boolean {
    return this.synced;
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.watched.map((w) => w.informer.stop()));
  }

  /** Informer counters per kind (summed over namespaces), for metrics. */
  stats(): ReadonlyMap<string, InformerStats> {
    const out = new Map<string, InformerStats>();
    for (const w of this.watched) {
      const s = w.informer.stats();
      const prev = out.get(w.def.kind);
      out.set(w.def.kind, prev ? sumStats(prev, s) : s);
    }
    return out;
  }

  private unsynced(): string[] {
    return this.watched.filter((w) => !w.informer.hasSynced()).map((w) => `${w.def.kind}${w.namespace ? ` in ${w.namespace}` : ''}`);
  }

  private handle(def: KindDefinition, event: InformerEvent<KubeObject>): void {
    const obj = event.object;
    const id = `${def.kind}\u0000${objectKey(obj)}`;
    const namespace = obj.metadata?.namespace ?? '';
    const name = obj.metadata?.name ?? '';
    const counters = this.opts.counters;
    if (event.type === 'delete') {
      counters?.event(def.kind, 'delete');
      this.judged.delete(id);
      try {
        if (this.opts.store.originOf(def.kind, namespace, name) === KUBE_ORIGIN) this.opts.store.delete(def.kind, namespace, name);
        counters?.handled(def.kind, true);
      } catch (err) {
        counters?.handled(def.kind, false);
        this.reportError(err instanceof Error ? err : new Error(String(err)), def.kind);
      }
      return;
    }
    const rv = obj.metadata?.resourceVersion ?? '';
    if (rv !== '' && this.judged.get(id) === rv) return; // resync of a version already judged
    counters?.event(def.kind, event.type);
    this.judged.set(id, rv);
    const parsed = parseConfigObject(obj, KUBE_ORIGIN, namespace);
    counters?.converted(def.kind, !('issues' in parsed));
    if ('issues' in parsed) {
      counters?.handled(def.kind, false);
      const keeps = this.opts.store.originOf(def.kind, namespace, name) === KUBE_ORIGIN;
      this.reject(
        keeps ? { ...parsed, issues: [...parsed.issues, { path: '', message: 'the last valid version stays in effect' }] } : parsed,
      );
      return;
    }
    if (parsed.warnings) {
      try {
        this.opts.onWarn?.({ origin: KUBE_ORIGIN, kind: def.kind, name, namespace, issues: parsed.warnings });
      } catch (err) {
        this.reportError(err instanceof Error ? err : new Error(String(err)), def.kind);
      }
    }
    const created = obj.metadata?.creationTimestamp;
    const object: ConfigObject = {
      ...parsed,
      meta: {
        ...parsed.meta,
        resourceVersion: rv || parsed.meta.resourceVersion,
        creationTimestamp: created === undefined ? undefined : typeof created === 'string' ? created : created.toISOString(),
      },
    };
    try {
      const result = this.opts.store.upsert(object, KUBE_ORIGIN);
      counters?.handled(def.kind, result.rejections.length === 0);
      for (const r of result.rejections) this.reject(r);
    } catch (err) {
      // A store event handler failed; the object is stored, the error is someone else's.
      counters?.handled(def.kind, false);
      this.reportError(err instanceof Error ? err : new Error(String(err)), def.kind);
    }
  }

  private reject(rejection: ConfigRejection): void {
    try {
      this.opts.onReject?.(rejection);
    } catch (err) {
      this.reportError(err instanceof Error ? err : new Error(String(err)), rejection.kind ?? '');
    }
  }

  private reportError(error: Error, kind: string): void {
    if (this.opts.onError) {
      try {
        this.opts.onError(error, kind);
      } catch {
        // nothing more to do
      }
    } else getLogger('source').warn({ kind, err: error.message }, `kube config source: ${error.message}`);
  }
}

function sumStats(a: InformerStats, b: InformerStats): InformerStats {
  const out: Record<string, number> = {};
  for (const k of Object.keys(a) as Array<keyof InformerStats>) out[k] = a[k] + b[k];
  return out as unknown as InformerStats;
}
