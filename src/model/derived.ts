/**
 * Values derived from a snapshot, with the inputs each one read (docs/adr/0051).
 *
 * Every lookup of the snapshot that a derived value can depend on (a service by hostname, the
 * VirtualService of a host, the destination rules of a host, the Sidecar scopes, a host's endpoints,
 * …) records a *dependency key* in the innermost computation running. A derived value is stored
 * with the keys it read, its own and those of the values it used. When the next snapshot is built,
 * the model lists the keys its changes touch (a ChangeSet); a value whose keys the change set does
 * not touch is carried over to the new snapshot instead of being computed again. Nothing is
 * declared by hand: what a generator reads is what it depends on.
 *
 * Lists of many elements (a sidecar's clusters, its route configurations, its load assignments)
 * are built element by element (`DerivedMemo.list`): each element keeps its own keys, so a change
 * rebuilds the elements that read it and keeps the others. Building elements can be spread over
 * turns of the event loop: under a deadline (`withDeadline`) a list that runs out of time keeps
 * what it built and throws `NEED_TURN`; calling the same computation again continues where it
 * stopped (docs/adr/0052).
 */
import { nextTurn, turnDeadline } from '../util/cooperative.js';

/** A key naming one input of derived values (see `Dep`). */
export type DepKey = string;

const SERVICE_PREFIX = 'svc:';
const ENDPOINT_PREFIX = 'ep:';

/**
 * Keys of one kind by hostname, made once: the same string object for every lookup of a host, so the
 * sets that collect keys hash it once (a connect storm at 5,000 services records millions of them).
 * Bounded: past the limit the table starts again (only the sharing is lost).
 */
function keysOf(prefix: string): (hostname: string) => DepKey {
  const made = new Map<string, DepKey>();
  return (hostname) => {
    let k = made.get(hostname);
    if (k === undefined) {
      if (made.size >= 100_000) made.clear();
      k = `${prefix}${hostname}`;
      made.set(hostname, k);
    }
    return k;
  };
}

/** Dependency keys, one spelling each. */
export const Dep = {
  /** The services with this hostname (any namespace, any registry). */
  service: keysOf(SERVICE_PREFIX),
  /** The list of all services (any service added, removed or changed). */
  allServices: 'svc:*' as DepKey,
  /** The mesh-bound VirtualServices with this exact host. */
  virtualService: keysOf('vs:'),
  /** Mesh-bound VirtualServices with a wildcard host. */
  wildcardVirtualServices: 'vs:*' as DepKey,
  /** VirtualServices bound to one gateway (`mesh` or `ns/name`). */
  gatewayVirtualServices: (gateway: string): DepKey => `vsgw:${gateway}`,
  /** DestinationRules for this exact host. */
  destinationRule: keysOf('dr:'),
  /** DestinationRules with a wildcard host. */
  wildcardDestinationRules: 'dr:*' as DepKey,
  /** Sidecar resources (proxies' scopes). */
  sidecars: 'sidecar' as DepKey,
  /** Gateway resources. */
  gateways: 'gateway' as DepKey,
  /** The endpoints of one hostname. */
  endpoints: keysOf(ENDPOINT_PREFIX),
  /** Security policies (PeerAuthentication, AuthorizationPolicy, RequestAuthentication), any of them. */
  policies: 'policy' as DepKey,
  /** PeerAuthentications only (a subset of `policies`): what mutual TLS modes depend on (docs/adr/0151). */
  peerAuthn: 'policy:pa' as DepKey,
  /** One Kubernetes Secret named by a `credentialName` (`namespace/name`, docs/adr/0105). */
  credential: (key: string): DepKey => `secret:${key}`,
  /** The public key set fetched from one `jwksUri` (docs/adr/0100). */
  jwks: (uri: string): DepKey => `jwks:${uri}`,
  /** The snapshot's version string itself (values that embed it change with every snapshot). */
  version: 'version' as DepKey,
} as const;

/** What changed between two snapshots: every dependency key it touches, or everything. */
export class ChangeSet {
  static readonly ALL = new ChangeSet(true, new Set());
  static readonly NONE = new ChangeSet(false, new Set());

  private constructor(
    readonly all: boolean,
    readonly keys: ReadonlySet<DepKey>,
  ) {}

  static of(keys: Iterable<DepKey>): ChangeSet {
    const set = new Set(keys);
    return set.size === 0 ? ChangeSet.NONE : new ChangeSet(false, set);
  }

  /** True when a value that read `deps` may differ. */
  touches(deps: Deps): boolean {
    if (this.all) return true;
    if (this.keys.size === 0) return false;
    if (Array.isArray(deps)) {
      for (const d of deps) if (this.keys.has(d)) return true;
      return false;
    }
    const set = deps as ReadonlySet<DepKey>;
    if (set.size < this.keys.size) {
      for (const d of set) if (this.keys.has(d)) return true;
      return false;
    }
    for (const k of this.keys) if (set.has(k)) return true;
    return false;
  }

  union(other: ChangeSet): ChangeSet {
    if (this.all || other.all) return ChangeSet.ALL;
    if (other.keys.size === 0) return this;
    if (this.keys.size === 0) return other;
    return ChangeSet.of([...this.keys, ...other.keys]);
  }
}

/** The keys a value read: a small array, or a set for values that read many. */
export type Deps = ReadonlyArray<DepKey> | ReadonlySet<DepKey>;

const NO_DEPS: ReadonlyArray<DepKey> = Object.freeze([]);

/** Something that knows which hosts' endpoints changed since an older version of itself. */
export interface EndpointSource {
  /** Hosts whose endpoints differ between `older` and this; undefined when that is no longer known. */
  changedSince(older: EndpointSource): ReadonlySet<string> | undefined;
}

// ---------------------------------------------------------------------------------------------
// Recording

/** The dependencies recorded by one running computation. */
class Frame {
  readonly keys = new Set<DepKey>();
  /** The frame read every service: single services need not be listed (a change set holding any has the whole). */
  allServices = false;

  add(key: DepKey): void {
    if (key === Dep.allServices) {
      if (!this.allServices) {
        this.allServices = true;
        for (const k of this.keys) if (k.startsWith(SERVICE_PREFIX)) this.keys.delete(k);
        this.keys.add(key);
      }
      return;
    }
    if (this.allServices && key.startsWith(SERVICE_PREFIX)) return;
    this.keys.add(key);
  }
  /** The endpoint source read, if any (one per computation: generators read one index). */
  endpoints: EndpointSource | undefined;
}

const frames: Frame[] = [];

/** Records that the running computation (if any) read `key`. */
export function recordDep(key: DepKey): void {
  const top = frames[frames.length - 1];
  if (top) top.add(key);
}

/** Records that the running computation read `key` from the endpoint source `source`. */
export function recordEndpointDep(source: EndpointSource, hostname: string): void {
  const top = frames[frames.length - 1];
  if (!top) return;
  top.add(Dep.endpoints(hostname));
  top.endpoints = source;
}

function addDepsToTop(deps: Deps, endpoints: EndpointSource | undefined): void {
  const top = frames[frames.length - 1];
  if (!top) return;
  for (const d of deps) top.add(d);
  if (endpoints) top.endpoints = endpoints;
}

/** Runs `fn` with a recording frame of its own; its dependencies also count for the caller's frame. */
function recorded<T>(fn: () => T): { value: T; deps: Deps; endpoints: EndpointSource | undefined } {
  const frame = new Frame();
  frames.push(frame);
  let value: T;
  try {
    value = fn();
  } finally {
    frames.pop();
  }
  const deps = frozenDeps(frame.keys);
  addDepsToTop(deps, frame.endpoints);
  return { value, deps, endpoints: frame.endpoints };
}

/** Small dependency sets become arrays (cheaper to keep by the hundred thousand). */
function frozenDeps(keys: Set<DepKey>): Deps {
  if (keys.size === 0) return NO_DEPS;
  if (keys.size <= 8) return Object.freeze([...keys]);
  return keys;
}

// ---------------------------------------------------------------------------------------------
// Deadlines

/** Thrown by a list build that ran out of time under `withDeadline`; call the computation again. */
export const NEED_TURN: unique symbol = Symbol('need a turn of the event loop');

let deadline = Number.POSITIVE_INFINITY;

/**
 * Runs `fn` with a deadline (a `performance.now()` value): list builds that pass it keep what they
 * built and throw NEED_TURN. Without a deadline (tests, one-off callers) nothing is ever cut.
 */
export function withDeadline<T>(until: number, fn: () => T): T {
  const outer = deadline;
  deadline = Math.min(outer, until);
  try {
    return fn();
  } finally {
    deadline = outer;
  }
}

/**
 * Runs `fn` (a computation of memoized lists) in the current turn's share of the event loop
 * (src/util/cooperative.ts); a build that runs out of it continues on the next turn, until done.
 * `abandon` is asked after each wait: true stops with undefined.
 */
export async function overTurns<T>(fn: () => T): Promise<T>;
export async function overTurns<T>(fn: () => T, abandon: () => boolean): Promise<T | undefined>;
export async function overTurns<T>(fn: () => T, abandon?: () => boolean): Promise<T | undefined> {
  for (;;) {
    try {
      return withDeadline(turnDeadline(), fn);
    } catch (e) {
      if (e !== NEED_TURN) throw e;
      await nextTurn();
      if (abandon?.()) return undefined;
    }
  }
}

function pastDeadline(): boolean {
  return deadline !== Number.POSITIVE_INFINITY && performance.now() >= deadline;
}

// ---------------------------------------------------------------------------------------------
// The memo

interface Entry {
  readonly value: unknown;
  readonly deps: Deps;
  /** The endpoint source the value read (validated against the caller's current one). */
  readonly endpoints: EndpointSource | undefined;
}

/** One element of a list: the items it was built from and what it read. */
interface ListItem<V> {
  readonly key: string;
  readonly values: ReadonlyArray<V>;
  readonly deps: Deps;
}

interface ListState<V, I = unknown> {
  /** Built items in order (undefined: not built yet); complete when `next === itemKeys.length`. */
  readonly items: Array<ListItem<V> | undefined>;
  readonly itemKeys: ReadonlyArray<string>;
  readonly source: ReadonlyArray<I>;
  /** The inputs the list's structure (which items, in what order) read. */
  readonly structure: Deps;
  /** The endpoint source the build runs against. */
  readonly endpoints: EndpointSource | undefined;
  /** Position of the first item not built yet (partial builds). */
  next: number;
  /** Items of an earlier build, by item key, to keep when their inputs did not change. */
  readonly reuse: ReadonlyMap<string, ListItem<V>> | undefined;
  /** What changed since `reuse` was built. */
  readonly reuseChanges: ChangeSet;
  readonly reuseEndpoints: EndpointSource | undefined;
  /**
   * A patch of a finished list (`patchOf`): the positions of the items to build, in order, the
   * others taken from it as they are; `next` counts positions of this array instead of items.
   */
  readonly todo?: ReadonlyArray<number>;
  readonly patchOf?: FinishedList<V>;
  /** Set once the list is complete. */
  readonly finished?: FinishedList<V>;
}

/** What a complete list keeps so that a later build can patch it in place of walking every item. */
interface FinishedList<V> {
  readonly items: ReadonlyArray<ListItem<V> | undefined>;
  readonly value: ReadonlyArray<V>;
  /** The union of what the structure and the items read (a patch may keep keys no item reads any more). */
  readonly deps: Deps;
  readonly readsEndpoints: boolean;
  /** The positions of the items that read each host's endpoints, by `ep:` key. */
  readonly byHost: ReadonlyMap<DepKey, ReadonlyArray<number>>;
}

interface ListEntry<V> {
  readonly list: true;
  readonly state: ListState<V>;
  readonly value: ReadonlyArray<V> | undefined;
  readonly deps: Deps;
  readonly endpoints: EndpointSource | undefined;
}

function isListEntry(e: Entry | ListEntry<unknown>): e is ListEntry<unknown> {
  return (e as ListEntry<unknown>).list === true;
}

/**
 * The memo of one snapshot: values by key, each with its dependencies, and a view of the previous
 * snapshot's memo with what changed since it.
 */
export class DerivedMemo {
  private readonly entries = new Map<string, Entry | ListEntry<unknown>>();
  /**
   * Lists of an owner object (a name set a client asked for): they live as long as the owner does,
   * so a client that leaves takes its lists with it (issue 15) instead of leaving them in the memo
   * until the next snapshot.
   */
  private readonly owned = new WeakMap<object, Map<string, Entry | ListEntry<unknown>>>();
  /** The latest owned list per reuse key, while its owner lives. */
  private readonly weakReuse = new Map<string, WeakRef<ListEntry<unknown>>>();
  private inherited: { memo: DerivedMemo; changes: ChangeSet } | undefined;
  /** Counters for the debug view and tests. */
  readonly stats = { computed: 0, reused: 0, carried: 0, listItemsBuilt: 0, listItemsKept: 0 };

  /**
   * @param previous the memo of the snapshot before, and what changed since; values of it whose
   *   dependencies the changes do not touch are taken over on first use. Its own link to the
   *   snapshot before it is dropped, so at most two snapshots' memos are alive.
   */
  constructor(previous?: { memo: DerivedMemo; changes: ChangeSet }) {
    if (previous && !previous.changes.all) {
      previous.memo.inherited = undefined;
      this.inherited = previous;
    }
  }

  get size(): number {
    return this.entries.size;
  }

  /**
   * The value under `key`, computed once and kept with what it read. `endpoints`: the caller's
   * current endpoint source, for values that may read endpoints (a value that read an older one is
   * reused only when none of the hosts it read changed since).
   */
  get<T>(key: string, compute: () => T, endpoints?: EndpointSource): T {
    const hit = this.lookup(key, endpoints);
    if (hit && !isListEntry(hit)) {
      addDepsToTop(hit.deps, hit.endpoints);
      this.stats.reused++;
      return hit.value as T;
    }
    const r = recorded(compute);
    this.stats.computed++;
    this.entries.set(key, { value: r.value, deps: r.deps, endpoints: r.endpoints });
    return r.value;
  }

  /** An entry valid for the caller (this snapshot's, or one carried over from the previous). */
  private lookup(key: string, endpoints: EndpointSource | undefined, owner?: object): Entry | ListEntry<unknown> | undefined {
    const table = this.table(owner);
    const own = table.get(key);
    if (own && valid(own, ChangeSet.NONE, endpoints)) return own;
    const inh = this.inherited;
    if (!inh) return undefined;
    const prev = inh.memo.table(owner, false).get(key);
    if (!prev || (isListEntry(prev) && prev.value === undefined) || !valid(prev, inh.changes, endpoints)) return undefined;
    table.set(key, prev);
    this.stats.carried++;
    return prev;
  }

  /**
   * A list made of the elements of `items()`, one item at a time: `element(item)` returns the
   * item's elements (none, one or several). The list's structure (`items`) and each item's elements
   * are kept with what they read; a later snapshot rebuilds only the items whose inputs changed
   * (and calls `items` again only when the structure's inputs changed). An element reads its item
   * without recording it, so `itemKey` must name the item completely (an object item by its
   * identity): an item under a known key is taken to be the same item. `reuseKey` names lists that
   * share items (e.g. one scope's lists for different name sets): an entry missing under `key` starts
   * from the latest list built under the same `reuseKey`.
   *
   * Under a deadline (`withDeadline`) a build that runs out of time keeps its progress and throws
   * NEED_TURN once it has built at least one item; the next call continues.
   */
  list<I, V>(
    key: string,
    opts: { reuseKey?: string; endpoints?: EndpointSource; owner?: object },
    items: () => ReadonlyArray<I>,
    itemKey: (item: I) => string,
    element: (item: I) => ReadonlyArray<V>,
  ): ReadonlyArray<V> {
    const table = this.table(opts.owner);
    const own = table.get(key) as ListEntry<V> | Entry | undefined;
    let state: ListState<V, I>;
    if (own && isListEntry(own) && own.value === undefined && own.state.endpoints === opts.endpoints) {
      state = own.state as ListState<V, I>; // a build in progress: continue it
    } else {
      const hit = this.lookup(key, opts.endpoints, opts.owner) as ListEntry<V> | Entry | undefined;
      if (hit && isListEntry(hit) && hit.value !== undefined) {
        addDepsToTop(hit.deps, hit.endpoints);
        this.stats.reused++;
        return hit.value as ReadonlyArray<V>;
      }
      state = this.startList<I, V>(key, opts, items, itemKey);
    }
    // build (or keep) the remaining items
    const built = state.items;
    const started = state.next;
    const todo = state.todo;
    if (todo) {
      // a patch: only the items whose inputs changed, the others are the finished list's
      for (let t = state.next; t < todo.length; t++) {
        if (t > started && pastDeadline()) {
          state.next = t;
          throw NEED_TURN;
        }
        const i = todo[t];
        const r = recorded(() => element(state.source[i]));
        built[i] = { key: state.itemKeys[i], values: r.value, deps: r.deps };
        this.stats.listItemsBuilt++;
        state.next = t + 1;
      }
    } else {
      for (let i = state.next; i < state.itemKeys.length; i++) {
        const k = state.itemKeys[i];
        const old = state.reuse?.get(k);
        if (old && !state.reuseChanges.touches(old.deps) && endpointsUnchanged(old.deps, state.reuseEndpoints, opts.endpoints)) {
          built[i] = old;
          this.stats.listItemsKept++;
          state.next = i + 1;
          continue;
        }
        if (i > started && pastDeadline()) {
          state.next = i;
          throw NEED_TURN;
        }
        const item = state.source[i];
        const r = recorded(() => element(item));
        built[i] = { key: k, values: r.value, deps: r.deps };
        this.stats.listItemsBuilt++;
        state.next = i + 1;
      }
    }
    const finished = todo && state.patchOf ? patched(state.patchOf, built, todo) : whole(state.structure, built);
    const { value, deps: frozen } = finished;
    const endpoints = finished.readsEndpoints ? opts.endpoints : undefined;
    const done: ListEntry<V> = {
      list: true,
      state: { ...state, reuse: undefined, reuseChanges: ChangeSet.NONE, reuseEndpoints: undefined, todo: undefined, patchOf: undefined, finished },
      value,
      deps: frozen,
      endpoints,
    };
    table.set(key, done as ListEntry<unknown>);
    if (opts.reuseKey) {
      // an owned list is the scope's latest only while its owner lives: a client's list must not
      // outlive the client through the scope (scopes follow the proxies' namespaces)
      if (opts.owner) {
        this.entries.delete(`~reuse|${opts.reuseKey}`);
        this.weakReuse.set(opts.reuseKey, new WeakRef(done as ListEntry<unknown>));
        if (this.weakReuse.size > 4096) for (const [k, r] of this.weakReuse) if (!r.deref()) this.weakReuse.delete(k);
      } else {
        this.entries.set(`~reuse|${opts.reuseKey}`, done as ListEntry<unknown>);
        this.weakReuse.delete(opts.reuseKey);
      }
    }
    addDepsToTop(frozen, endpoints);
    this.stats.computed++;
    return value;
  }

  /**
   * A new build of a list: its items (the previous structure when its inputs did not change), and
   * the list to take unchanged items from — this key's latest (finished or partial), else the latest
   * list of the reuse key, in this snapshot or the previous one.
   */
  private startList<I, V>(key: string, opts: { reuseKey?: string; endpoints?: EndpointSource; owner?: object }, items: () => ReadonlyArray<I>, itemKey: (item: I) => string): ListState<V, I> {
    let base: ListState<V, I> | undefined;
    let baseChanges = ChangeSet.NONE;
    let sameKey = false;
    const candidates: Array<[DerivedMemo, ChangeSet]> = [[this, ChangeSet.NONE]];
    if (this.inherited) candidates.push([this.inherited.memo, this.inherited.changes]);
    for (const [memo, changes] of candidates) {
      const own = memo.table(opts.owner, false).get(key);
      const e = (own && isListEntry(own) ? own : opts.reuseKey ? memo.latest(opts.reuseKey) : undefined) as ListEntry<V> | undefined;
      if (e && isListEntry(e)) {
        base = e.state as ListState<V, I>;
        baseChanges = changes;
        sameKey = e === own;
        break;
      }
    }
    let source: ReadonlyArray<I>;
    let itemKeys: ReadonlyArray<string>;
    let structure: Deps;
    if (base && sameKey && !baseChanges.touches(base.structure) && endpointsUnchanged(base.structure, base.endpoints, opts.endpoints)) {
      // same items as before: only their elements may need building
      ({ source, itemKeys, structure } = base);
      addDepsToTop(structure, undefined);
    } else {
      const r = recorded(items);
      source = r.value;
      structure = r.deps;
      itemKeys = source.map(itemKey);
    }
    const todo = base?.finished && itemKeys === base.itemKeys ? patchPositions(base.finished, base.endpoints, baseChanges, opts.endpoints, itemKeys.length) : undefined;
    let reuse: Map<string, ListItem<V>> | undefined;
    if (base && !todo) {
      reuse = new Map();
      for (const x of base.items) if (x) reuse.set(x.key, x);
    }
    // a patch starts from the finished list's items, those it builds again left out: a list that
    // starts from this one before it is done must not take them as built for its endpoints
    const firstItems = todo ? base!.finished!.items.slice() : new Array<ListItem<V> | undefined>(itemKeys.length);
    if (todo) for (const i of todo) firstItems[i] = undefined;
    const state: ListState<V, I> = {
      items: firstItems,
      itemKeys,
      source,
      structure,
      endpoints: opts.endpoints,
      next: 0,
      reuse,
      reuseChanges: baseChanges,
      reuseEndpoints: base?.endpoints,
      todo,
      patchOf: todo ? base!.finished : undefined,
    };
    if (todo) this.stats.listItemsKept += itemKeys.length - todo.length;
    this.table(opts.owner).set(key, { list: true, state, value: undefined, deps: NO_DEPS, endpoints: undefined } as ListEntry<unknown>);
    return state;
  }

  /** The latest list built under `reuseKey` (owned ones while their owner lives). */
  private latest(reuseKey: string): Entry | ListEntry<unknown> | undefined {
    const strong = this.entries.get(`~reuse|${reuseKey}`);
    if (strong) return strong;
    const ref = this.weakReuse.get(reuseKey);
    const e = ref?.deref();
    if (ref && !e) this.weakReuse.delete(reuseKey);
    return e;
  }

  /** The entries of `owner` (the memo's own without one); `create` false: an empty view when it has none. */
  private table(owner: object | undefined, create = true): Map<string, Entry | ListEntry<unknown>> {
    if (owner === undefined) return this.entries;
    let t = this.owned.get(owner);
    if (!t) {
      if (!create) return NO_ENTRIES;
      t = new Map();
      this.owned.set(owner, t);
    }
    return t;
  }
}

const NO_ENTRIES = new Map<string, Entry | ListEntry<unknown>>();

/** Whether an entry computed under `changes` (and with its endpoint source) still holds. */
function valid(e: Entry | ListEntry<unknown>, changes: ChangeSet, endpoints: EndpointSource | undefined): boolean {
  if (changes.touches(e.deps)) return false;
  return endpointsUnchanged(e.deps, e.endpoints, endpoints);
}

/** True when none of the hosts whose endpoints `deps` read changed between `then` and `now`. */
function endpointsUnchanged(deps: Deps, then: EndpointSource | undefined, now: EndpointSource | undefined): boolean {
  if (!then || !now || then === now) return true;
  const changed = now.changedSince(then);
  if (!changed) {
    for (const d of deps) if (d.startsWith(ENDPOINT_PREFIX)) return false;
    return true;
  }
  if (changed.size === 0) return true;
  for (const h of changed) {
    if (holds(deps, Dep.endpoints(h))) return false;
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// Patches of finished lists

/**
 * The positions of the items of a finished list that an endpoint change reaches, in order, when the
 * list can be patched: nothing the list read changed since it was built but endpoints (a config
 * change that reaches an item walks every item, as before), the endpoint source knows which hosts
 * changed, and they reach at most a quarter of the items (past that, walking every item costs no
 * more). Undefined: walk every item.
 */
function patchPositions(
  base: FinishedList<unknown>,
  then: EndpointSource | undefined,
  changes: ChangeSet,
  now: EndpointSource | undefined,
  count: number,
): ReadonlyArray<number> | undefined {
  // a snapshot's changes that some item read: those items are found by walking them all
  if (changes.touches(base.deps) || !then || !now || then === now) return undefined;
  const hosts = now.changedSince(then);
  if (!hosts) return undefined;
  const at = new Set<number>();
  for (const h of hosts) {
    for (const i of base.byHost.get(Dep.endpoints(h)) ?? []) at.add(i);
    if (at.size * 4 > count) return undefined;
  }
  return [...at].sort((a, b) => a - b);
}

/** A whole list from its items: values in order, the union of what was read, positions by host. */
function whole<V>(structure: Deps, items: ReadonlyArray<ListItem<V> | undefined>): FinishedList<V> {
  const value: V[] = [];
  const union = new Frame();
  const byHost = new Map<DepKey, number[]>();
  for (const d of structure) union.add(d);
  for (let i = 0; i < items.length; i++) {
    const it = items[i];
    if (!it) continue;
    for (const v of it.values) value.push(v);
    for (const d of it.deps) {
      union.add(d);
      if (!d.startsWith(ENDPOINT_PREFIX)) continue;
      const at = byHost.get(d);
      if (at) at.push(i);
      else byHost.set(d, [i]);
    }
  }
  let readsEndpoints = byHost.size > 0;
  if (!readsEndpoints) for (const d of structure) if (d.startsWith(ENDPOINT_PREFIX)) readsEndpoints = true;
  return { items, value, deps: frozenDeps(union.keys), readsEndpoints, byHost };
}

/** Where a patched list differs from the list it was made from (`listPatch`). */
export interface ListPatch<V> {
  readonly base: ReadonlyArray<V>;
  /** Positions (in both lists) whose element is another object than the base's, in order. */
  readonly positions: ReadonlyArray<number>;
}

const patches = new WeakMap<ReadonlyArray<unknown>, ListPatch<unknown>>();

/**
 * How `list` was made from an earlier list of the same length by replacing some elements, when it
 * was (an endpoint change patches the lists that read the host); undefined otherwise. Lets callers
 * derive what they computed over the earlier list (a version, a diff) from the replaced elements.
 */
export function listPatch<V>(list: ReadonlyArray<V>): ListPatch<V> | undefined {
  return patches.get(list) as ListPatch<V> | undefined;
}

/**
 * The finished list `base` with the items at `todo` built again: the same value array when none of
 * their elements changed, else a copy with theirs in place (recorded as a patch when every rebuilt
 * item has as many elements as before, else flattened again). What was read is the base's union and
 * whatever the rebuilt items read beyond it.
 */
function patched<V>(base: FinishedList<V>, items: ReadonlyArray<ListItem<V> | undefined>, todo: ReadonlyArray<number>): FinishedList<V> {
  // what was read
  let extra: DepKey[] | undefined;
  let byHost = base.byHost;
  let copied = false;
  for (const i of todo) {
    for (const d of items[i]!.deps) {
      if (!hasDep(base.deps, d)) (extra ??= []).push(d);
      if (!d.startsWith(ENDPOINT_PREFIX)) continue;
      const at = byHost.get(d);
      if (at?.includes(i)) continue;
      if (!copied) {
        byHost = new Map(byHost);
        copied = true;
      }
      (byHost as Map<DepKey, ReadonlyArray<number>>).set(d, at ? [...at, i] : [i]);
    }
  }
  let deps = base.deps;
  let readsEndpoints = base.readsEndpoints;
  if (extra) {
    const union = new Frame();
    for (const d of base.deps) union.add(d);
    for (const d of extra) {
      union.add(d);
      if (d.startsWith(ENDPOINT_PREFIX)) readsEndpoints = true;
    }
    deps = frozenDeps(union.keys);
  }
  // the values: the base's, with the rebuilt items' elements in their places
  const value = base.value.slice();
  const positions: number[] = [];
  let offset = 0;
  let t = 0;
  for (let i = 0; i < items.length && t < todo.length; i++) {
    const was = base.items[i]?.values ?? [];
    if (i === todo[t]) {
      const now = items[i]!.values;
      if (now.length !== was.length) return { ...whole(NO_DEPS, items), deps, readsEndpoints };
      for (let k = 0; k < now.length; k++) {
        if (now[k] === was[k]) continue;
        value[offset + k] = now[k];
        positions.push(offset + k);
      }
      t++;
    }
    offset += was.length;
  }
  if (positions.length === 0) return { items, value: base.value, deps, readsEndpoints, byHost };
  // one step back at most: a list's patch keeps the list it was made from, not that list's own
  patches.delete(base.value);
  patches.set(value, { base: base.value, positions });
  return { items, value, deps, readsEndpoints, byHost };
}

/** Whether `deps` holds `key` (a single service's key is held by the key of every service). */
function hasDep(deps: Deps, key: DepKey): boolean {
  return holds(deps, key) || (key.startsWith(SERVICE_PREFIX) && holds(deps, Dep.allServices));
}

/** Whether `deps` holds exactly `key` (a frozen set or a short array). */
function holds(deps: Deps, key: DepKey): boolean {
  return Array.isArray(deps) ? deps.includes(key) : (deps as ReadonlySet<DepKey>).has(key);
}
