/**
 * Event sources: what queues keys for a controller (./controller.ts). A source is subscribed when
 * the controller starts and unsubscribed when it stops, so a controller that runs only while its
 * daemon leads hears nothing while it does not.
 *
 *   fromCache(cache, map?)   an ObjectCache's events mapped to keys (default: the object's own
 *                            `namespace/name`); objects already cached are queued on subscribe,
 *                            so a controller started after its cache synced still sees them all;
 *   every(ms, keys)          periodic resync: every key `keys()` returns, each interval;
 *   fromEvents(subscribe)    any other callback API (a config store, a conversion result);
 *   new Trigger()            explicit enqueue by the component that owns the controller.
 */
import { objectKey, type InformerEvent, type KubeObject, type ObjectCache } from '../../kube/types.js';

/** Receives keys from a source; `afterMs` delays the key. */
export type KeySink<K> = (key: K, afterMs?: number) => void;

export interface EventSource<K> {
  /** Starts delivering keys to `sink`; returns the function that stops it. */
  subscribe(sink: KeySink<K>): () => void;
}

/** Keys of an event: one, several, or none (`undefined`). */
export type KeysOf<K> = K | ReadonlyArray<K> | undefined;

function each<K>(keys: KeysOf<K>, f: (k: K) => void): void {
  if (keys === undefined) return;
  if (Array.isArray(keys)) for (const k of keys as ReadonlyArray<K>) f(k);
  else f(keys as K);
}

/**
 * The events of an informer cache as keys. `map` chooses the keys of an event (e.g. the owner of
 * a changed object, or none for events that do not matter); by default the object's own key.
 */
export function fromCache<T extends KubeObject, K = string>(cache: ObjectCache<T>, map?: (event: InformerEvent<T>) => KeysOf<K>): EventSource<K> {
  const keysOf = map ?? ((e: InformerEvent<T>) => objectKey(e.object) as unknown as K);
  return {
    subscribe(sink) {
      const off = cache.onEvent((e) => each(keysOf(e), (k) => sink(k)));
      for (const object of cache.list()) each(keysOf({ type: 'add', object }), (k) => sink(k));
      return off;
    },
  };
}

/** Every key of `keys()`, every `intervalMs` (the first time one interval after subscribing). */
export function every<K>(intervalMs: number, keys: () => Iterable<K>): EventSource<K> {
  if (!(intervalMs > 0)) throw new Error(`every: interval ${intervalMs} ms must be positive`);
  return {
    subscribe(sink) {
      const timer = setInterval(() => {
        for (const k of keys()) sink(k);
      }, intervalMs);
      timer.unref();
      return () => clearInterval(timer);
    },
  };
}

/** Keys from a callback API: `subscribe(emit)` registers `emit` and returns its own unsubscribe. */
export function fromEvents<K>(subscribe: (emit: (keys: KeysOf<K>) => void) => () => void): EventSource<K> {
  return { subscribe: (sink) => subscribe((keys) => each(keys, (k) => sink(k))) };
}

/**
 * Explicit enqueue: the component that owns a controller queues keys through its trigger (say
 * when a proxy connects). While no controller is subscribed (not started, or not leading) keys
 * are dropped; a controller lists its whole state when it starts.
 */
export class Trigger<K = string> implements EventSource<K> {
  private readonly sinks = new Set<KeySink<K>>();

  subscribe(sink: KeySink<K>): () => void {
    this.sinks.add(sink);
    return () => this.sinks.delete(sink);
  }

  enqueue(key: K, afterMs?: number): void {
    for (const sink of this.sinks) sink(key, afterMs);
  }

  /** True while a controller listens. */
  get attached(): boolean {
    return this.sinks.size > 0;
  }
}
