/**
 * A resilient list/watch informer: keeps an in-memory cache of one resource type (core, CRD or
 * any group/version/plural) current and tells subscribers about every change.
 *
 * Cycle: list (paged with limit/continue) → replace the cache → watch from the list's
 * resourceVersion with bookmarks → apply each event. Then:
 * - the watch ends cleanly (server timeout) or the watchdog sees no event/bookmark for
 *   `watchdogMs` (a half-open connection): watch again from the last resourceVersion;
 * - 410 Gone (as HTTP status or ERROR event): list again and emit only the differences
 *   between the cache and the new list (deletes first, then adds and updates in key order; an
 *   object deleted and recreated under the same name shows as delete + add); unchanged objects
 *   cause no event;
 * - any other failure (connection refused or reset, API server down, a failed list, an HTTP
 *   error): wait with exponential backoff and jitter (capped at 30 s by default), then watch
 *   again from the last resourceVersion after a connection failure, or list again after an
 *   error answer. The informer never gives up until `stop()`.
 * Optional periodic resync re-delivers every cached object as an `update` with `resync: true`.
 */
import { Backoff, sleep, type BackoffOptions } from './backoff.js';
import type { KubeClient } from './client.js';
import { resourcePath, splitApiVersion } from './discovery.js';
import { KubeApiError, isGone, isStatus, type KubeStatus } from './errors.js';
import { objectKey, type InformerEvent, type KubeObject, type ObjectCache } from './types.js';
import { watchOnce, type RawWatchEvent } from './watch.js';
import { getLogger } from '../log/logger.js';

/** The REST coordinates of a resource: group ('' for core), version, plural. */
export interface ResourceRef {
  readonly group: string;
  readonly version: string;
  readonly plural: string;
  /** Default true. */
  readonly namespaced?: boolean;
  /** For messages and for objects of lists that omit it. */
  readonly kind?: string;
}

export type InformerPhase = 'list' | 'watch' | 'handler';

export interface InformerOptions<T extends KubeObject> {
  readonly resource: ResourceRef;
  /** Only this namespace (default: all namespaces). */
  readonly namespace?: string;
  readonly labelSelector?: string;
  readonly fieldSelector?: string;
  /** Items per list page (default 500). */
  readonly pageSize?: number;
  /** Applied to every object before it is cached (e.g. drop managedFields). Must keep metadata name/namespace/uid. */
  readonly transform?: (obj: T) => T;
  /** Re-deliver every cached object as an update this often (0 or absent: never). */
  readonly resyncMs?: number;
  /** Restart a watch that delivered no event or bookmark for this long (default 150 s; 0 turns it off). */
  readonly watchdogMs?: number;
  /** The server ends each watch after a random time between this and twice this (default 300 s). */
  readonly watchTimeoutSeconds?: number;
  /** Retry delays after failures (default 0.5 s doubling to 30 s, 20 % jitter). */
  readonly backoff?: BackoffOptions;
  /** Failures (they are retried) and handler exceptions. Default: a warning on stderr. */
  readonly onError?: (error: Error, phase: InformerPhase) => void;
  /** For messages (default: the resource plural). */
  readonly name?: string;
}

export interface InformerStats {
  /** Lists that completed (the first one included). */
  readonly lists: number;
  /** Lists after the first one (410 Gone, error answers). */
  readonly relists: number;
  /** Watch requests opened. */
  readonly watches: number;
  /** Restarts after a failure (each waited a backoff delay). */
  readonly restarts: number;
  /** 410 Gone answers seen. */
  readonly gone: number;
  /** Watches the watchdog restarted. */
  readonly watchdogTimeouts: number;
  /** ADDED/MODIFIED/DELETED events received from watches. */
  readonly events: number;
  readonly bookmarks: number;
  readonly errors: number;
}

interface Entry<T> {
  readonly object: T;
  readonly resourceVersion: string;
  readonly uid: string;
}

interface ListPage<T> {
  readonly apiVersion?: string;
  readonly kind?: string;
  readonly metadata?: { readonly resourceVersion?: string; readonly continue?: string };
  readonly items?: T[];
}

type WatchOutcome = 'ended' | 'stalled' | 'stopped';

class GoneError extends KubeApiError {}

const DEFAULT_WATCHDOG_MS = 150_000;
/** A watch that ends sooner than this without any event counts as a failure (no hot loop). */
const SHORT_WATCH_MS = 1000;
/** A watch that ran this long, or delivered an event, resets the backoff. */
const HEALTHY_WATCH_MS = 10_000;

export class Informer<T extends KubeObject> implements ObjectCache<T> {
  private readonly items = new Map<string, Entry<T>>();
  /** Sorted views, rebuilt on the first read after a change. */
  private sorted: T[] | undefined;
  private byNamespace: Map<string, T[]> | undefined;
  private readonly handlers = new Set<(event: InformerEvent<T>) => void>();
  private readonly counters = { lists: 0, relists: 0, watches: 0, restarts: 0, gone: 0, watchdogTimeouts: 0, events: 0, bookmarks: 0, errors: 0 };
  private readonly syncWaiters = new Set<() => void>();
  private readonly backoff: Backoff;
  private readonly name: string;
  private readonly collectionPath: string;
  private lastRV = '';
  private synced = false;
  private stopped = true;
  private loop: Promise<void> | undefined;
  private stopController: AbortController | undefined;
  private resyncTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly client: KubeClient,
    private readonly opts: InformerOptions<T>,
  ) {
    const r = opts.resource;
    if (!r.version || !r.plural) throw new Error('informer: resource needs a version and a plural');
    this.name = opts.name ?? (r.group ? `${r.plural}.${r.group}` : r.plural);
    this.collectionPath = resourcePath({ ...r, namespaced: r.namespaced ?? true }, opts.namespace);
    this.backoff = new Backoff(opts.backoff);
  }

  /** An informer for a kind, resolving its plural and scope through discovery. */
  static async forKind<T extends KubeObject>(
    client: KubeClient,
    apiVersion: string,
    kind: string,
    opts: Omit<InformerOptions<T>, 'resource'> = {},
  ): Promise<Informer<T>> {
    const info = await client.resource(apiVersion, kind);
    return new Informer<T>(client, { ...opts, resource: { group: info.group, version: info.version, plural: info.plural, namespaced: info.namespaced, kind } });
  }

  // ---- ObjectCache -------------------------------------------------------------------------

  list(namespace?: string): ReadonlyArray<T> {
    if (!this.sorted) {
      this.sorted = [...this.items.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, e]) => e.object);
      this.byNamespace = undefined;
    }
    if (namespace === undefined) return this.sorted;
    if (!this.byNamespace) {
      this.byNamespace = new Map();
      for (const o of this.sorted) {
        const ns = o.metadata?.namespace ?? '';
        const list = this.byNamespace.get(ns);
        if (list) list.push(o);
        else this.byNamespace.set(ns, [o]);
      }
    }
    return this.byNamespace.get(namespace) ?? [];
  }

  get(namespace: string, name: string): T | undefined {
    return this.items.get(namespace ? `${namespace}/${name}` : name)?.object;
  }

  onEvent(handler: (event: InformerEvent<T>) => void): () => void {
    this.handlers.add(handler);
    return () => {
      this.handlers.delete(handler);
    };
  }

  hasSynced(): boolean {
    return this.synced;
  }

  // ---- lifecycle ---------------------------------------------------------------------------

  /** Starts listing and watching in the background (no-op when running). */
  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.stopController = new AbortController();
    this.loop = this.run(this.stopController.signal);
    const resync = this.opts.resyncMs ?? 0;
    if (resync > 0) {
      this.resyncTimer = setInterval(() => this.resync(), resync);
      this.resyncTimer.unref();
    }
  }

  /** Stops watching; the cache keeps its content. Resolves once the background loop has ended. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    clearInterval(this.resyncTimer);
    this.stopController?.abort();
    await this.loop;
    for (const wake of this.syncWaiters) wake();
  }

  /**
   * Resolves once the first list is in the cache. Rejects when `timeoutMs` passes, the signal
   * aborts, or the informer is stopped before it synced.
   */
  waitForSync(opts: { readonly signal?: AbortSignal; readonly timeoutMs?: number } = {}): Promise<void> {
    if (this.synced) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const done = (err?: Error): void => {
        clearTimeout(timer);
        this.syncWaiters.delete(wake);
        opts.signal?.removeEventListener('abort', onAbort);
        if (err) reject(err);
        else resolve();
      };
      const wake = (): void => done(this.synced ? undefined : new Error(`informer ${this.name}: stopped before it synced`));
      const onAbort = (): void => done(new Error(`informer ${this.name}: waiting for sync was aborted`));
      if (opts.signal?.aborted) {
        onAbort();
        return;
      }
      this.syncWaiters.add(wake);
      opts.signal?.addEventListener('abort', onAbort, { once: true });
      if (opts.timeoutMs !== undefined) {
        timer = setTimeout(() => done(new Error(`informer ${this.name}: not synced after ${opts.timeoutMs} ms`)), opts.timeoutMs);
      }
    });
  }

  /** Counters for metrics. */
  stats(): InformerStats {
    return { ...this.counters };
  }

  /** The resourceVersion the next watch starts from ('' before the first list). */
  lastSyncResourceVersion(): string {
    return this.lastRV;
  }

  // ---- list/watch loop ---------------------------------------------------------------------

  private async run(stop: AbortSignal): Promise<void> {
    let needList = true;
    while (!stop.aborted) {
      if (needList) {
        try {
          await this.listAndReplace(stop);
          needList = false;
        } catch (err) {
          if (stop.aborted) break;
          await this.fail(err, 'list', stop);
          continue;
        }
      }
      const started = performance.now();
      const eventsBefore = this.counters.events + this.counters.bookmarks;
      try {
        const outcome = await this.watch(stop);
        if (outcome === 'stopped') break;
        const delivered = this.counters.events + this.counters.bookmarks > eventsBefore;
        const ran = performance.now() - started;
        if (delivered || ran >= HEALTHY_WATCH_MS) this.backoff.reset();
        if (outcome === 'ended' && !delivered && ran < SHORT_WATCH_MS) {
          await this.fail(new Error(`watch ended after ${Math.round(ran)} ms without any event`), 'watch', stop);
        }
      } catch (err) {
        if (stop.aborted) break;
        if (this.counters.events + this.counters.bookmarks > eventsBefore) this.backoff.reset();
        if (isGone(err)) {
          // The resourceVersion is too old for the server: only a new list can catch up.
          this.counters.gone++;
          needList = true;
          continue;
        }
        // An error answer (not a connection failure) may mean the watch cannot resume: list again.
        if (err instanceof KubeApiError) needList = true;
        await this.fail(err, 'watch', stop);
      }
    }
  }

  private async fail(err: unknown, phase: InformerPhase, stop: AbortSignal): Promise<void> {
    this.counters.errors++;
    this.counters.restarts++;
    this.report(err, phase);
    await sleep(this.backoff.next(), stop);
  }

  private report(err: unknown, phase: InformerPhase): void {
    const error = err instanceof Error ? err : new Error(String(err));
    if (this.opts.onError) {
      try {
        this.opts.onError(error, phase);
      } catch {
        // a failing error hook must not stop the informer
      }
    } else {
      getLogger('kube').warn({ informer: this.name, phase, err: error.message }, `informer ${this.name}: ${phase}: ${error.message}`);
    }
  }

  private async listAndReplace(stop: AbortSignal): Promise<void> {
    const items: T[] = [];
    let cont: string | undefined;
    let rv = '';
    let paged = true;
    for (;;) {
      let page: ListPage<T>;
      try {
        page = await this.client.request<ListPage<T>>({
          method: 'GET',
          path: this.collectionPath,
          query: {
            labelSelector: this.opts.labelSelector,
            fieldSelector: this.opts.fieldSelector,
            limit: paged ? (this.opts.pageSize ?? 500) : undefined,
            continue: cont,
          },
          signal: stop,
        });
      } catch (err) {
        if (cont !== undefined && isGone(err)) {
          // The continue token expired between pages: read everything in one go instead.
          items.length = 0;
          cont = undefined;
          paged = false;
          continue;
        }
        throw err;
      }
      const fill = this.filler(page);
      for (const item of page.items ?? []) items.push(fill(item));
      rv = page.metadata?.resourceVersion ?? rv;
      cont = page.metadata?.continue || undefined;
      if (!cont) break;
    }
    if (stop.aborted) return;
    if (this.counters.lists > 0) this.counters.relists++;
    this.counters.lists++;
    this.replace(items, rv);
  }

  /** List items may lack apiVersion/kind; they get the list's. */
  private filler(page: ListPage<T>): (item: T) => T {
    const kind = page.kind?.replace(/List$/, '') || this.opts.resource.kind;
    const r = this.opts.resource;
    const apiVersion = page.apiVersion || (r.group ? `${r.group}/${r.version}` : r.version);
    return (item) => (item.kind && item.apiVersion ? item : ({ ...item, apiVersion: item.apiVersion ?? apiVersion, kind: item.kind ?? kind } as T));
  }

  private async watch(stop: AbortSignal): Promise<WatchOutcome> {
    const controller = new AbortController();
    const onStop = (): void => controller.abort();
    stop.addEventListener('abort', onStop, { once: true });
    const watchdogMs = this.opts.watchdogMs ?? DEFAULT_WATCHDOG_MS;
    let stalled = false;
    let watchdog: NodeJS.Timeout | undefined;
    const arm = (): void => {
      if (watchdogMs <= 0) return;
      clearTimeout(watchdog);
      watchdog = setTimeout(() => {
        stalled = true;
        controller.abort();
      }, watchdogMs);
    };
    const minTimeout = this.opts.watchTimeoutSeconds ?? 300;
    this.counters.watches++;
    arm();
    try {
      await watchOnce<T>(
        this.client.transport,
        {
          path: this.collectionPath,
          resourceVersion: this.lastRV,
          labelSelector: this.opts.labelSelector,
          fieldSelector: this.opts.fieldSelector,
          allowWatchBookmarks: true,
          timeoutSeconds: Math.floor(minTimeout * (1 + Math.random())),
          signal: controller.signal,
        },
        (event) => {
          arm();
          this.apply(event);
        },
      );
      return 'ended';
    } catch (err) {
      if (stop.aborted) return 'stopped';
      if (stalled) {
        this.counters.watchdogTimeouts++;
        this.report(new Error(`watch delivered nothing for ${watchdogMs} ms; restarting it`), 'watch');
        return 'stalled';
      }
      throw err;
    } finally {
      clearTimeout(watchdog);
      stop.removeEventListener('abort', onStop);
    }
  }

  /** Applies one watch event to the cache, then tells the handlers. Throws GoneError on 410. */
  private apply(event: RawWatchEvent<T>): void {
    if (event.type === 'ERROR') {
      const status: KubeStatus = isStatus(event.object) ? event.object : { message: JSON.stringify(event.object) };
      const init = { statusCode: status.code ?? 500, reason: status.reason, message: status.message, method: 'WATCH', path: this.collectionPath };
      throw status.code === 410 ? new GoneError(init) : new KubeApiError(init);
    }
    const raw = event.object as T;
    const rv = raw.metadata?.resourceVersion ?? '';
    if (event.type === 'BOOKMARK') {
      this.counters.bookmarks++;
      if (rv) this.lastRV = rv;
      return;
    }
    if (event.type !== 'ADDED' && event.type !== 'MODIFIED' && event.type !== 'DELETED') return;
    this.counters.events++;
    if (rv) this.lastRV = rv;
    const object = this.transformed(raw);
    const key = objectKey(raw);
    const current = this.items.get(key);
    if (event.type === 'DELETED') {
      if (!current) return;
      this.items.delete(key);
      this.sorted = undefined;
      this.emit({ type: 'delete', object });
      return;
    }
    const entry: Entry<T> = { object, resourceVersion: rv, uid: raw.metadata?.uid ?? '' };
    this.items.set(key, entry);
    this.sorted = undefined;
    if (!current) this.emit({ type: 'add', object });
    else if (current.resourceVersion !== rv) this.emit({ type: 'update', object, previous: current.object });
  }

  /** Replaces the cache with a fresh list and emits the differences. */
  private replace(items: ReadonlyArray<T>, rv: string): void {
    const next = new Map<string, Entry<T>>();
    for (const raw of items) {
      next.set(objectKey(raw), { object: this.transformed(raw), resourceVersion: raw.metadata?.resourceVersion ?? '', uid: raw.metadata?.uid ?? '' });
    }
    const events: InformerEvent<T>[] = [];
    for (const key of [...this.items.keys()].sort()) {
      const old = this.items.get(key) as Entry<T>;
      const now = next.get(key);
      if (!now || (now.uid && old.uid && now.uid !== old.uid)) events.push({ type: 'delete', object: old.object });
    }
    const keys = [...next.keys()].sort();
    for (const key of keys) {
      const now = next.get(key) as Entry<T>;
      const old = this.items.get(key);
      if (!old || (now.uid && old.uid && now.uid !== old.uid)) events.push({ type: 'add', object: now.object });
      else if (old.resourceVersion !== now.resourceVersion) events.push({ type: 'update', object: now.object, previous: old.object });
    }
    this.items.clear();
    for (const key of keys) this.items.set(key, next.get(key) as Entry<T>);
    this.sorted = undefined;
    this.lastRV = rv;
    const first = !this.synced;
    this.synced = true;
    for (const e of events) this.emit(e);
    if (first) for (const wake of [...this.syncWaiters]) wake();
  }

  private resync(): void {
    if (!this.synced || this.stopped) return;
    for (const object of this.list()) this.emit({ type: 'update', object, previous: object, resync: true });
  }

  private transformed(raw: T): T {
    if (!this.opts.transform) return raw;
    return this.opts.transform(raw);
  }

  private emit(event: InformerEvent<T>): void {
    for (const handler of [...this.handlers]) {
      try {
        handler(event);
      } catch (err) {
        this.counters.errors++;
        this.report(err, 'handler');
      }
    }
  }
}

/** A ResourceRef from an apiVersion and plural (e.g. `networking.mesh.io/v1`, `virtualservices`). */
export function resourceRef(apiVersion: string, plural: string, opts: { readonly namespaced?: boolean; readonly kind?: string } = {}): ResourceRef {
  const { group, version } = splitApiVersion(apiVersion);
  return { group, version, plural, namespaced: opts.namespaced ?? true, kind: opts.kind };
}

/** A transform that drops metadata.managedFields (large, and no informer user reads it). */
export function dropManagedFields<T extends KubeObject>(obj: T): T {
  const meta = obj.metadata as (KubeObject['metadata'] & { managedFields?: unknown }) | undefined;
  if (!meta || meta.managedFields === undefined) return obj;
  const { managedFields: _drop, ...rest } = meta;
  return { ...obj, metadata: rest };
}
