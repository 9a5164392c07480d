/**
 * In-memory config store with replace-by-origin semantics.
 *
 * A source (a file, or the Kubernetes watch) hands over all objects it holds with
 * `applySource(origin, objects)`; the store works out what was added, changed and removed and
 * emits events only for real changes (spec, labels or annotations differ). A changed object
 * gets generation + 1 and a new resourceVersion.
 *
 * One kind/namespace/name belongs to one origin: the first that declared it, for as long as it
 * keeps declaring it. Another origin declaring it too gets a rejection; its copy is remembered
 * and takes over (the earliest-registered waiting origin first) when the holder drops the object.
 *
 * Events are delivered synchronously, after the whole batch is applied: first one by one to the
 * `onEvent` handlers, then all of them at once to the `onChange` handlers.
 */
import { createHash } from 'node:crypto';
import { configKey, type ConfigEvent, type ConfigObject, type ConfigRejection, type ConfigStore } from './types.js';

export interface MemoryConfigStoreOptions {
  /** Clock for creationTimestamp. */
  readonly now?: () => Date;
}

export interface ApplyResult {
  readonly added: number;
  readonly updated: number;
  readonly deleted: number;
  /** Objects refused because another origin already defines them. */
  readonly rejections: ConfigRejection[];
}

interface Entry {
  readonly object: ConfigObject;
  readonly origin: string;
  readonly hash: string;
}

interface Source {
  /** Registration order: on a conflict the earliest source wins. */
  readonly seq: number;
  /** Everything the source declares, by object id, including objects another origin owns. */
  objects: Map<string, ConfigObject>;
}

type Handler = (event: ConfigEvent) => void;
type ChangeHandler = (events: ReadonlyArray<ConfigEvent>) => void;

function objectId(kind: string, namespace: string, name: string): string {
  return `${kind}\u0000${namespace}\u0000${name}`;
}

function idOf(o: ConfigObject): string {
  return objectId(o.meta.gvk.kind, o.meta.namespace, o.meta.name);
}

/** JSON with object keys sorted, so equal values give equal text. */
export function stableStringify(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableStringify).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const keys = Object.keys(value).sort();
    const record = value as Record<string, unknown>;
    return `{${keys
      .filter((k) => record[k] !== undefined)
      .map((k) => `${JSON.stringify(k)}:${stableStringify(record[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** Hash of what counts as a change: spec, labels and annotations. */
const hashes = new WeakMap<ConfigObject, string>();

/** Hash of what an object says (spec, labels, annotations); objects are immutable, so once per object. */
export function contentHash(o: ConfigObject): string {
  let hash = hashes.get(o);
  if (hash === undefined) {
    hash = createHash('sha256')
      .update(stableStringify({ spec: o.spec, labels: o.meta.labels, annotations: o.meta.annotations }))
      .digest('base64url');
    hashes.set(o, hash);
  }
  return hash;
}

/** Records the content hash of `o` computed elsewhere (by contentHash, in the worker thread of large documents). */
export function seedContentHash(o: ConfigObject, hash: string): void {
  hashes.set(o, hash);
}

export class MemoryConfigStore implements ConfigStore {
  private readonly byKind = new Map<string, Map<string, Entry>>();
  private readonly sortedCache = new Map<string, ReadonlyArray<ConfigObject>>();
  private readonly sources = new Map<string, Source>();
  private readonly handlers = new Set<Handler>();
  private readonly changeHandlers = new Set<ChangeHandler>();
  private readonly now: () => Date;
  private nextSeq = 0;
  private revision = 0;
  private synced = false;

  constructor(options: MemoryConfigStoreOptions = {}) {
    this.now = options.now ?? (() => new Date());
  }

  list<S = unknown>(kind: string): ReadonlyArray<ConfigObject<S>> {
    let sorted = this.sortedCache.get(kind);
    if (!sorted) {
      sorted = Object.freeze(
        [...(this.byKind.get(kind)?.values() ?? [])]
          .map((e) => e.object)
          .sort((a, b) => compare(a.meta.namespace, b.meta.namespace) || compare(a.meta.name, b.meta.name)),
      );
      this.sortedCache.set(kind, sorted);
    }
    return sorted as ReadonlyArray<ConfigObject<S>>;
  }

  get<S = unknown>(kind: string, namespace: string, name: string): ConfigObject<S> | undefined {
    return this.byKind.get(kind)?.get(objectId(kind, namespace, name))?.object as ConfigObject<S> | undefined;
  }

  onEvent(handler: Handler): () => void {
    this.handlers.add(handler);
    return () => {
      this.handlers.delete(handler);
    };
  }

  onChange(handler: ChangeHandler): () => void {
    this.changeHandlers.add(handler);
    return () => {
      this.changeHandlers.delete(handler);
    };
  }

  hasSynced(): boolean {
    return this.synced;
  }

  /** Called by the source once its initial state is in the store. */
  markSynced(): void {
    this.synced = true;
  }

  /** The origin that owns an object, if the object exists. */
  originOf(kind: string, namespace: string, name: string): string | undefined {
    return this.byKind.get(kind)?.get(objectId(kind, namespace, name))?.origin;
  }

  /**
   * Replaces everything `origin` declared with `objects`. `observedAt`: when the source saw the
   * change (ConfigEvent.observedAt); absent: now.
   */
  applySource(origin: string, objects: ReadonlyArray<ConfigObject>, observedAt?: number): ApplyResult {
    const source = this.sourceFor(origin);
    const previous = source.objects;
    source.objects = new Map();
    const batch = new Batch(observedAt);
    for (const o of objects) {
      const id = idOf(o);
      if (source.objects.has(id)) {
        batch.rejections.push(rejection(o, `declared twice by ${origin}: the first one is used`));
        continue;
      }
      source.objects.set(id, o);
      this.claim(origin, id, o, batch, true);
    }
    for (const [id, o] of previous) {
      if (!source.objects.has(id)) this.release(origin, id, o.meta.gvk.kind, batch);
    }
    if (source.objects.size === 0) this.sources.delete(origin);
    return this.finish(batch);
  }

  /** Drops everything `origin` declared. */
  removeSource(origin: string, observedAt?: number): ApplyResult {
    return this.applySource(origin, [], observedAt);
  }

  /**
   * Adds or replaces one object on behalf of `origin` (sources that deliver objects one by one).
   * An object with a non-empty resourceVersion keeps its generation and resourceVersion; otherwise
   * the store assigns them as for `applySource`.
   */
  upsert(object: ConfigObject, origin = 'direct'): ApplyResult {
    const source = this.sourceFor(origin);
    const id = idOf(object);
    source.objects.set(id, object);
    const batch = new Batch();
    this.claim(origin, id, object, batch, object.meta.resourceVersion === '');
    return this.finish(batch);
  }

  /** Removes one object; another origin that declares it too takes over. */
  delete(kind: string, namespace: string, name: string): ApplyResult {
    const id = objectId(kind, namespace, name);
    const entry = this.byKind.get(kind)?.get(id);
    const batch = new Batch();
    if (entry) {
      this.sources.get(entry.origin)?.objects.delete(id);
      this.release(entry.origin, id, kind, batch);
    }
    return this.finish(batch);
  }

  private sourceFor(origin: string): Source {
    let source = this.sources.get(origin);
    if (!source) {
      source = { seq: this.nextSeq++, objects: new Map() };
      this.sources.set(origin, source);
    }
    return source;
  }

  private claim(origin: string, id: string, o: ConfigObject, batch: Batch, manageVersions: boolean): void {
    const kind = o.meta.gvk.kind;
    const entries = this.entriesOf(kind);
    const current = entries.get(id);
    // The current holder keeps the object; the challenger's copy waits in its source's list.
    if (current && current.origin !== origin) {
      batch.rejections.push(rejection(o, `already defined by ${current.object.meta.origin ?? current.origin}: the first one loaded wins`));
      return;
    }
    this.put(entries, id, origin, o, current, batch, manageVersions);
  }

  private release(origin: string, id: string, kind: string, batch: Batch): void {
    const entries = this.entriesOf(kind);
    const current = entries.get(id);
    if (!current || current.origin !== origin) return;
    // The earliest other source that declares the object takes it over.
    let heir: { origin: string; seq: number; object: ConfigObject } | undefined;
    for (const [name, s] of this.sources) {
      const candidate = name !== origin ? s.objects.get(id) : undefined;
      if (candidate && (!heir || s.seq < heir.seq)) heir = { origin: name, seq: s.seq, object: candidate };
    }
    if (heir) {
      this.put(entries, id, heir.origin, heir.object, current, batch, heir.object.meta.resourceVersion === '');
      return;
    }
    entries.delete(id);
    this.sortedCache.delete(kind);
    batch.event({ type: 'delete', kind, object: current.object });
    batch.deleted++;
  }

  private put(
    entries: Map<string, Entry>,
    id: string,
    origin: string,
    o: ConfigObject,
    current: Entry | undefined,
    batch: Batch,
    manageVersions: boolean,
  ): void {
    const kind = o.meta.gvk.kind;
    const hash = contentHash(o);
    if (current && current.hash === hash) {
      // Same content: no event, versions kept. When ownership moves (a file was renamed), the
      // stored object only gets the new origin, for later error messages.
      if (current.origin !== origin) {
        const meta = Object.freeze({ ...current.object.meta, origin: o.meta.origin });
        entries.set(id, { ...current, origin, object: Object.freeze({ ...current.object, meta }) });
        this.sortedCache.delete(kind);
      }
      return;
    }
    const meta = manageVersions
      ? {
          ...o.meta,
          generation: current ? current.object.meta.generation + 1 : o.meta.generation,
          resourceVersion: String(++this.revision),
          creationTimestamp: current?.object.meta.creationTimestamp ?? o.meta.creationTimestamp ?? this.now().toISOString(),
        }
      : o.meta;
    const object: ConfigObject = Object.freeze({ ...o, meta: Object.freeze(meta) });
    entries.set(id, { object, origin, hash });
    this.sortedCache.delete(kind);
    if (current) {
      batch.event({ type: 'update', kind, object, previous: current.object });
      batch.updated++;
    } else {
      batch.event({ type: 'add', kind, object });
      batch.added++;
    }
  }

  private entriesOf(kind: string): Map<string, Entry> {
    let entries = this.byKind.get(kind);
    if (!entries) {
      entries = new Map();
      this.byKind.set(kind, entries);
    }
    return entries;
  }

  private finish(batch: Batch): ApplyResult {
    const errors: unknown[] = [];
    for (const event of batch.events) {
      for (const handler of [...this.handlers]) {
        try {
          handler(event);
        } catch (err) {
          errors.push(err);
        }
      }
    }
    if (batch.events.length > 0) {
      for (const handler of [...this.changeHandlers]) {
        try {
          handler(batch.events);
        } catch (err) {
          errors.push(err);
        }
      }
    }
    if (errors.length === 1) throw errors[0];
    if (errors.length > 1) throw new AggregateError(errors, `${errors.length} config event handlers failed`);
    return { added: batch.added, updated: batch.updated, deleted: batch.deleted, rejections: batch.rejections };
  }
}

class Batch {
  constructor(private readonly observedAt?: number) {}
  readonly events: ConfigEvent[] = [];
  /** Records an event, dated by when its source saw the change (when it said). */
  event(e: ConfigEvent): void {
    this.events.push(this.observedAt === undefined ? e : { ...e, observedAt: this.observedAt });
  }
  readonly rejections: ConfigRejection[] = [];
  added = 0;
  updated = 0;
  deleted = 0;
}

function rejection(o: ConfigObject, message: string): ConfigRejection {
  return {
    origin: o.meta.origin ?? '',
    kind: o.meta.gvk.kind,
    name: o.meta.name,
    namespace: o.meta.namespace,
    issues: [{ path: 'metadata.name', message: `${o.meta.gvk.kind} ${configKey(o.meta)} ${message}` }],
  };
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
