/**
 * The typed seam between the Kubernetes watch machinery (src/kube/informer.ts) and its users
 * (the Cluster registry, the CRD config source, the operator). Users read a synced, in-memory
 * view of one resource type and react to changes; they never talk to the API server for reads.
 */

/** The parts of a Kubernetes object every informer user relies on. */
export interface KubeObjectMeta {
  readonly name?: string;
  readonly namespace?: string;
  readonly uid?: string;
  readonly resourceVersion?: string;
  readonly generation?: number;
  readonly labels?: Readonly<Record<string, string>>;
  readonly annotations?: Readonly<Record<string, string>>;
  readonly creationTimestamp?: Date | string;
  readonly deletionTimestamp?: Date | string;
  readonly ownerReferences?: ReadonlyArray<{ readonly apiVersion: string; readonly kind: string; readonly name: string; readonly uid: string; readonly controller?: boolean }>;
  readonly finalizers?: ReadonlyArray<string>;
}

export interface KubeObject {
  readonly apiVersion?: string;
  readonly kind?: string;
  readonly metadata?: KubeObjectMeta;
}

/** `namespace/name`, or `name` for cluster-scoped objects: the key of the informer cache and work queues. */
export function objectKey(obj: KubeObject): string {
  const ns = obj.metadata?.namespace;
  const name = obj.metadata?.name ?? '';
  return ns ? `${ns}/${name}` : name;
}

export function splitKey(key: string): { readonly namespace: string; readonly name: string } {
  const slash = key.indexOf('/');
  return slash < 0 ? { namespace: '', name: key } : { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}

/**
 * A change seen by an informer. `resync` marks an update re-delivered by the periodic resync
 * (`--resync`) with the object unchanged; level-based handlers treat it like any update.
 */
export type InformerEvent<T extends KubeObject> =
  | { readonly type: 'add'; readonly object: T }
  | { readonly type: 'update'; readonly object: T; readonly previous: T; readonly resync?: boolean }
  | { readonly type: 'delete'; readonly object: T };

/** Read side of an informer: a cache of one resource type kept current by list + watch. */
export interface ObjectCache<T extends KubeObject> {
  /** All cached objects (of one namespace when given), ordered by key. */
  list(namespace?: string): ReadonlyArray<T>;
  get(namespace: string, name: string): T | undefined;
  /** Handlers run after the cache holds the change. On subscribe nothing is replayed: call `list()`. */
  onEvent(handler: (event: InformerEvent<T>) => void): () => void;
  /** True once the first list has been loaded into the cache (it stays true across relists). */
  hasSynced(): boolean;
}
