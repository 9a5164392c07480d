/**
 * The typed seam between configuration sources (files, the Kubernetes API) and the model.
 * A source produces `ConfigObject`s; the model reads them through a `ConfigStore` snapshot.
 */

/** Group/version/kind of a config kind, e.g. networking.mesh.io / v1 / VirtualService. */
export interface GroupVersionKind {
  readonly group: string;
  readonly version: string;
  readonly kind: string;
}

export interface ConfigMeta {
  readonly gvk: GroupVersionKind;
  readonly name: string;
  /** Empty for cluster-scoped kinds; file configs without a namespace get the daemon's default. */
  readonly namespace: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly annotations: Readonly<Record<string, string>>;
  readonly generation: number;
  readonly resourceVersion: string;
  readonly creationTimestamp?: string;
  /** Where the object came from, for error messages: `file.yaml#2` or `k8s`. */
  readonly origin?: string;
}

/** A field and what is wrong with it. */
export interface FieldIssue {
  readonly path: string;
  readonly message: string;
}

/** A validated config object. `spec` has the kind's parsed spec type. Immutable once stored. */
export interface ConfigObject<S = unknown> {
  readonly meta: ConfigMeta;
  readonly spec: S;
  readonly status?: unknown;
  /** What the validation warned about: the object is used, but probably not as meant. */
  readonly warnings?: ReadonlyArray<FieldIssue>;
}

/** Key of an object inside its kind: `namespace/name`. */
export function configKey(meta: Pick<ConfigMeta, 'namespace' | 'name'>): string {
  return meta.namespace ? `${meta.namespace}/${meta.name}` : meta.name;
}

export function gvkString(gvk: GroupVersionKind): string {
  return `${gvk.group}/${gvk.version}/${gvk.kind}`;
}

export type ConfigEventType = 'add' | 'update' | 'delete';

export interface ConfigEvent {
  readonly type: ConfigEventType;
  readonly kind: string; // the `kind` (VirtualService, ...), unique across the project's kinds
  readonly object: ConfigObject;
  readonly previous?: ConfigObject;
  /**
   * When the source saw the change happen (ms since epoch): a file's watch event, which comes before
   * the file is read and parsed. Absent: when the store applied it. Pushes are debounced from it.
   */
  readonly observedAt?: number;
}

/** The latest `observedAt` of a change's events; undefined when none says. */
export function latestObservedAt(events: ReadonlyArray<ConfigEvent>): number | undefined {
  let at: number | undefined;
  for (const e of events) if (e.observedAt !== undefined && (at === undefined || e.observedAt > at)) at = e.observedAt;
  return at;
}

/** Why a document was refused: where it came from and what is wrong, field by field. */
export interface ConfigRejection {
  readonly origin: string; // file and document index, or k8s key
  readonly kind?: string;
  readonly name?: string;
  readonly namespace?: string;
  readonly issues: ReadonlyArray<FieldIssue>;
  /** Warnings about the same document, besides the errors that refuse it. */
  readonly warnings?: ReadonlyArray<FieldIssue>;
  /**
   * What of the refused object can still be analysed: the object with the fields its schema
   * refuses left out, when its kind, name and required fields are readable. Never stored or served.
   */
  readonly salvaged?: ConfigObject;
}

/** Read side of configuration, used by the model when it builds a snapshot. */
export interface ConfigStore {
  /** All objects of a kind (by kind name, e.g. 'VirtualService'), in a stable order (namespace, name). */
  list<S = unknown>(kind: string): ReadonlyArray<ConfigObject<S>>;
  get<S = unknown>(kind: string, namespace: string, name: string): ConfigObject<S> | undefined;
  /** Register a handler called after each change; returns an unsubscribe function. */
  onEvent(handler: (event: ConfigEvent) => void): () => void;
  /**
   * Register a handler called once per change of the store with all its events, after the
   * per-event handlers (a file's new version is one change, however many objects it touches), so
   * that work per change is done once instead of once per object (docs/adr/0163).
   */
  onChange(handler: (events: ReadonlyArray<ConfigEvent>) => void): () => void;
  /** True once the source has delivered its initial state. */
  hasSynced(): boolean;
}

/** One line about a refused or warned-about document: `origin Kind ns/name: path: message; ...`. */
export function configReportText(r: ConfigRejection): string {
  const object = `${r.kind ? ` ${r.kind}` : ''}${r.name ? ` ${r.namespace ? `${r.namespace}/` : ''}${r.name}` : ''}`;
  return `${r.origin}${object}: ${r.issues.map((i) => (i.path ? `${i.path}: ${i.message}` : i.message)).join('; ')}`;
}
