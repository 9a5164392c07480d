/**
 * The apply engine: ONE loop that brings the cluster to a rendered installation (docs/adr/0016).
 * Its caller is the installation reconciler (src/controllers/installation/installation.ts), which
 * `meshctl install`/`upgrade` and the operator controller share (docs/adr/0031).
 *
 *   applyManifests(client, manifests, opts)        → per-component result
 *   uninstallInstallation(client, opts)            → what was removed and what was kept
 *   verifyInstallation(client, manifests)          → readiness of every object
 *
 * Reconcile, component by component in the render's dependency order (Base, Meshd,
 * IngressGateways, EgressGateways):
 *  1. CRDs of the component first, by server-side apply; then wait until they are Established
 *     (bounded by the readiness timeout, at least 10 s) so that later objects of their kinds apply;
 *  2. the other objects in render order (namespaces, accounts, RBAC, config maps, services,
 *     Deployments, webhooks), each by server-side apply with the field manager (default `meshctl`,
 *     the operator passes `mesh-operator`) and `force`: the installation owns what it renders, so a
 *     field another manager took (say a hand edit of a Deployment's image) is taken back rather than
 *     failing with a conflict. Each object is read first: absent → `created`; present and the
 *     resourceVersion unchanged by the apply → `unchanged` (a no-op apply writes nothing); a
 *     moved resourceVersion with the same content apart from status → `unchanged` too (a
 *     controller wrote the status meanwhile); otherwise `updated`. With dryRun the API server runs
 *     the apply with dryRun=All and the comparison is on content;
 *  3. wait until the component's objects are ready (readiness.ts) for at most
 *     `readinessTimeoutMs`; still not ready → status `Error` with each object named, or with a
 *     timeout of 0 (the operator: check once, requeue later) → `Reconciling`.
 * A component whose apply fails stops the loop: later components are not applied (they depend on
 * earlier ones) and nothing is pruned.
 *
 * Gateways are not renamed per revision, so two installations may render the same gateway. Before a
 * gateway component is applied, each of its objects (Namespaces aside) that already carries another
 * installation's labels fails the component, naming the object and its installation, and nothing of
 * that component is written: one installation never silently takes over another's gateway.
 *
 * Then prune: objects carrying this owner's and revision's labels that the render no longer holds
 * are deleted (a disabled component, a removed gateway, an object dropped by an overlay). Never
 * pruned: unlabelled objects (they are never listed), objects of another owner or revision (the
 * selector names both), CRDs (removed only by `uninstall --purge`), Namespaces (they may hold
 * objects that are not ours), and Base objects while another installation shares their namespace.
 */
import type { KubeClient, ObjectRef } from '../../kube/client.js';
import { KubeApiError, isAbortError } from '../../kube/errors.js';
import { OWNING_RESOURCE_LABEL, OWNING_RESOURCE_NAMESPACE_LABEL, REVISION_LABEL, COMPONENT_LABEL } from '../labels.js';
import type { ComponentManifest, ComponentName, K8sObject, Owner } from '../render/types.js';
import { deepEqual } from '../tree.js';
import {
  ANY_INSTALLATION_SELECTOR,
  CRD_KIND,
  OWNED_KINDS,
  componentOf,
  deletionOrder,
  displayName,
  identity,
  installationSelector,
  kindsOf,
  refOf,
  revisionLabelOf,
} from './objects.js';
import { describeInstallation, installationKey, installationOf, listLabelled, sharingChecker, type LiveObject } from './ownership.js';
import { checkObject, waitForReady } from './readiness.js';

export type { ComponentManifest, ComponentName, Owner };

export const DEFAULT_FIELD_MANAGER = 'meshctl';
/** Least time given to CRDs to get established, even with a readiness timeout of 0. */
const CRD_ESTABLISH_MIN_MS = 10_000;

export type ComponentStatus = 'Healthy' | 'Error' | 'Reconciling';
export type ObjectAction = 'created' | 'updated' | 'unchanged' | 'pruned' | 'deleted' | 'kept' | 'failed';

/** What the engine reports while it works; a CLI renders it (progress.ts), the operator may log it. */
export type ProgressEvent =
  | { readonly type: 'component-start'; readonly component: ComponentName; readonly total: number; readonly operation: 'apply' | 'delete' }
  | { readonly type: 'object'; readonly component: ComponentName | undefined; readonly object: string; readonly action: ObjectAction; readonly message?: string }
  | { readonly type: 'waiting'; readonly component: ComponentName; readonly notReady: readonly string[] }
  | { readonly type: 'component-done'; readonly component: ComponentName; readonly status: ComponentStatus; readonly errors: readonly string[]; readonly notReady: readonly string[] };

export interface ReconcileOptions {
  /** Owner named by the objects' ownership labels: `installed-state[-R]` for meshctl, the MeshOperator resource for the operator. */
  readonly owner: Owner;
  /** Control-plane revision ('' or 'default' for the default one); selects what may be pruned. */
  readonly revision: string;
  /** Run every write with dryRun=All: the API server checks, nothing changes. */
  readonly dryRun?: boolean;
  /** Per component; 0 checks once without waiting (status Reconciling when not ready). */
  readonly readinessTimeoutMs: number;
  /** Delete owned objects the render no longer holds (default true). */
  readonly prune?: boolean;
  /** Server-side apply field manager (default `meshctl`). */
  readonly fieldManager?: string;
  readonly progress?: (event: ProgressEvent) => void;
  readonly signal?: AbortSignal;
}

/** One component's outcome; object lists hold display names (`Deployment ns/name`). */
export interface ComponentResult {
  readonly component: ComponentName;
  status: ComponentStatus;
  readonly created: string[];
  readonly updated: string[];
  readonly unchanged: string[];
  readonly pruned: string[];
  /** `<object>: <reason>` for each failed apply or delete. */
  readonly errors: string[];
  /** `<object>: <reason>` for each object not ready when the wait ended. */
  readonly notReady: string[];
}

export interface ReconcileCounts {
  readonly created: number;
  readonly updated: number;
  readonly unchanged: number;
  readonly pruned: number;
  readonly errors: number;
  readonly notReady: number;
}

export interface KeptObject {
  readonly object: string;
  readonly reason: string;
}

export interface ReconcileResult {
  readonly components: ComponentResult[];
  readonly counts: ReconcileCounts;
  /** Owned objects left in place although the render lacks them (shared with another installation). */
  readonly kept: KeptObject[];
  /** Every component Healthy. */
  readonly ok: boolean;
  readonly dryRun: boolean;
}

/** The kind of an object's display name (`Deployment ns/name` → `Deployment`). */
export function kindOf(displayName: string): string {
  const space = displayName.indexOf(' ');
  return space < 0 ? displayName : displayName.slice(0, space);
}

/** `Reason: message` of an API error, the message of anything else. */
export function describeError(err: unknown): string {
  if (err instanceof KubeApiError) return `${err.reason}: ${err.apiMessage}`;
  return err instanceof Error ? err.message : String(err);
}

function emptyResult(component: ComponentName): ComponentResult {
  return { component, status: 'Healthy', created: [], updated: [], unchanged: [], pruned: [], errors: [], notReady: [] };
}

function countsOf(components: readonly ComponentResult[]): ReconcileCounts {
  const sum = (f: (c: ComponentResult) => number) => components.reduce((n, c) => n + f(c), 0);
  return {
    created: sum((c) => c.created.length),
    updated: sum((c) => c.updated.length),
    unchanged: sum((c) => c.unchanged.length),
    pruned: sum((c) => c.pruned.length),
    errors: sum((c) => c.errors.length),
    notReady: sum((c) => c.notReady.length),
  };
}

/**
 * The object without what changes on every write or belongs to controllers: resourceVersion,
 * generation, managedFields and status. Two reads of an object that our apply left alone compare
 * equal even when a controller wrote its status in between.
 */
function comparable(o: unknown): unknown {
  if (typeof o !== 'object' || o === null) return o;
  const { metadata, status: _s, ...rest } = o as { metadata?: Record<string, unknown>; status?: unknown };
  if (!metadata) return rest;
  const { managedFields: _m, resourceVersion: _r, generation: _g, ...meta } = metadata;
  return { ...rest, metadata: meta };
}

function crdServes(crd: K8sObject): string[] {
  const spec = (crd.spec ?? {}) as { group?: string; names?: { kind?: string } };
  return spec.group && spec.names?.kind ? [`${spec.group}/${spec.names.kind}`] : [];
}

function groupKindOf(o: K8sObject): string {
  const slash = o.apiVersion.indexOf('/');
  return `${slash < 0 ? '' : o.apiVersion.slice(0, slash)}/${o.kind}`;
}

/** Components whose objects keep their names across revisions (gateways). */
const GUARDED_COMPONENTS: ReadonlySet<ComponentName> = new Set<ComponentName>(['IngressGateways', 'EgressGateways']);

class Applier {
  /** Dry run: namespaces and custom kinds that this run would create, so that their objects cannot be checked by the server. */
  private readonly newNamespaces = new Set<string>();
  private readonly newKinds = new Set<string>();

  constructor(
    private readonly client: KubeClient,
    private readonly fieldManager: string,
    private readonly dryRun: boolean,
    private readonly signal: AbortSignal | undefined,
  ) {}

  /**
   * Objects of `objects` that exist and belong to another installation than the one that rendered
   * them, one message each (see the module comment).
   */
  async foreignOwners(objects: readonly K8sObject[]): Promise<string[]> {
    const found = await Promise.all(
      objects
        .filter((o) => o.kind !== 'Namespace')
        .map(async (o) => {
          const live = await this.client.find<LiveObject>(refOf(o), this.signal);
          const theirs = live ? installationOf(live) : undefined;
          const ours = installationOf(o);
          const sameNamespace = live?.metadata.labels?.[OWNING_RESOURCE_NAMESPACE_LABEL] === o.metadata.labels?.[OWNING_RESOURCE_NAMESPACE_LABEL];
          if (!theirs || (theirs === ours && sameNamespace)) return undefined;
          const where = live?.metadata.labels?.[OWNING_RESOURCE_NAMESPACE_LABEL];
          return (
            `${displayName(o)} belongs to installation ${where ? `${where}/` : ''}${describeInstallation(theirs)}; ` +
            'give this gateway another name or namespace, or disable it in this installation'
          );
        }),
    );
    return found.filter((m): m is string => m !== undefined);
  }

  async apply(o: K8sObject): Promise<'created' | 'updated' | 'unchanged'> {
    if (this.dryRun && ((o.metadata.namespace && this.newNamespaces.has(o.metadata.namespace)) || this.newKinds.has(groupKindOf(o)))) return 'created';
    const ref = refOf(o);
    const before = await this.client.find<LiveObject>(ref, this.signal);
    const after = await this.client.applyObject<LiveObject>(o as LiveObject, { fieldManager: this.fieldManager, force: true, dryRun: this.dryRun, signal: this.signal });
    if (!before) {
      if (this.dryRun && o.kind === 'Namespace') this.newNamespaces.add(o.metadata.name);
      if (this.dryRun && o.kind === CRD_KIND) crdServes(o).forEach((k) => this.newKinds.add(k));
      return 'created';
    }
    // A no-op apply writes nothing, so the resourceVersion stays; when it moved, a controller may
    // have written (status) between our read and our apply: then the content decides.
    if (!this.dryRun && before.metadata.resourceVersion === after.metadata?.resourceVersion) return 'unchanged';
    return deepEqual(comparable(before), comparable(after)) ? 'unchanged' : 'updated';
  }
}

/** Brings the cluster to `manifests` (see the module comment). Throws only when aborted. */
export async function applyManifests(client: KubeClient, manifests: readonly ComponentManifest[], opts: ReconcileOptions): Promise<ReconcileResult> {
  const dryRun = opts.dryRun ?? false;
  const emit = opts.progress ?? (() => undefined);
  const applier = new Applier(client, opts.fieldManager ?? DEFAULT_FIELD_MANAGER, dryRun, opts.signal);
  const results: ComponentResult[] = [];
  const kept: KeptObject[] = [];
  let failed: ComponentName | undefined;

  for (const m of manifests) {
    const r = emptyResult(m.component);
    results.push(r);
    if (failed) {
      r.status = 'Error';
      r.errors.push(`not applied: component ${failed} failed`);
      emit({ type: 'component-done', component: r.component, status: r.status, errors: r.errors, notReady: r.notReady });
      continue;
    }
    emit({ type: 'component-start', component: m.component, total: m.objects.length, operation: 'apply' });
    const crds = m.objects.filter((o) => o.kind === CRD_KIND);
    const rest = m.objects.filter((o) => o.kind !== CRD_KIND);
    const applyAll = async (objects: readonly K8sObject[]): Promise<boolean> => {
      for (const o of objects) {
        opts.signal?.throwIfAborted();
        const name = displayName(o);
        try {
          const action = await applier.apply(o);
          r[action].push(name);
          emit({ type: 'object', component: m.component, object: name, action });
        } catch (err) {
          if (isAbortError(err)) throw err;
          const message = `${name}: ${describeError(err)}`;
          r.errors.push(message);
          emit({ type: 'object', component: m.component, object: name, action: 'failed', message });
          return false;
        }
      }
      return true;
    };
    let ok = await applyAll(crds);
    if (ok && crds.length > 0 && !dryRun) {
      const notReady = await waitForReady(client, crds.map(refOf), {
        timeoutMs: Math.max(opts.readinessTimeoutMs, CRD_ESTABLISH_MIN_MS),
        signal: opts.signal,
        onWaiting: (lines) => emit({ type: 'waiting', component: m.component, notReady: lines }),
      });
      if (notReady.length > 0) {
        r.errors.push(...notReady.map((l) => `${l} (CRDs must be established before the rest is applied)`));
        ok = false;
      }
      for (const crd of crds) {
        const spec = (crd.spec ?? {}) as { group?: string; versions?: Array<{ name?: string }> };
        for (const v of spec.versions ?? []) if (spec.group && v.name) client.discovery.invalidate(`${spec.group}/${v.name}`);
      }
    }
    if (ok && GUARDED_COMPONENTS.has(m.component)) {
      const foreign = await applier.foreignOwners(rest);
      if (foreign.length > 0) {
        r.errors.push(...foreign);
        for (const message of foreign) emit({ type: 'object', component: m.component, object: message.slice(0, message.indexOf(' belongs to')), action: 'failed', message });
        ok = false;
      }
    }
    if (ok) ok = await applyAll(rest);
    if (!ok) {
      r.status = 'Error';
      failed = m.component;
    } else if (!dryRun) {
      const notReady = await waitForReady(client, m.objects.map(refOf), {
        timeoutMs: opts.readinessTimeoutMs,
        signal: opts.signal,
        onWaiting: (lines) => emit({ type: 'waiting', component: m.component, notReady: lines }),
      });
      r.notReady.push(...notReady);
      if (notReady.length > 0) r.status = opts.readinessTimeoutMs > 0 ? 'Error' : 'Reconciling';
    }
    emit({ type: 'component-done', component: r.component, status: r.status, errors: r.errors, notReady: r.notReady });
  }

  if ((opts.prune ?? true) && !failed) {
    await prune(client, manifests, opts, results, kept, emit);
  }
  const ok = results.every((c) => c.status === 'Healthy');
  return { components: results, counts: countsOf(results), kept, ok, dryRun };
}

async function prune(
  client: KubeClient,
  manifests: readonly ComponentManifest[],
  opts: ReconcileOptions,
  results: ComponentResult[],
  kept: KeptObject[],
  emit: (e: ProgressEvent) => void,
): Promise<void> {
  const all = manifests.flatMap((m) => m.objects);
  const wanted = new Set(all.map(identity));
  const owned = await listLabelled(client, kindsOf(all), installationSelector(opts.owner, opts.revision), opts.signal);
  const stale = owned.filter((o) => !wanted.has(identity(o)) && o.kind !== CRD_KIND && o.kind !== 'Namespace' && !o.metadata.deletionTimestamp);
  if (stale.length === 0) return;
  const others = sharingChecker(client, new Set([installationKey(opts.owner.name, opts.revision)]), opts.signal);
  for (const o of deletionOrder(stale)) {
    opts.signal?.throwIfAborted();
    const component = componentOf(o);
    const name = displayName(o);
    if (component === 'Base') {
      const sharing = await others(o.metadata.labels?.[OWNING_RESOURCE_NAMESPACE_LABEL] ?? opts.owner.namespace);
      if (sharing.length > 0) {
        const reason = `shared with ${sharing.map(describeInstallation).join(', ')}`;
        kept.push({ object: name, reason });
        emit({ type: 'object', component, object: name, action: 'kept', message: reason });
        continue;
      }
    }
    let r = results.find((c) => c.component === component);
    if (!r && component) {
      r = emptyResult(component);
      results.push(r);
    }
    try {
      if (!opts.dryRun) await client.delete(refOf(o), { propagationPolicy: 'Background', signal: opts.signal });
      r?.pruned.push(name);
      emit({ type: 'object', component, object: name, action: 'pruned' });
    } catch (err) {
      if (isAbortError(err)) throw err;
      const message = `${name}: cannot prune: ${describeError(err)}`;
      if (r) {
        r.errors.push(message);
        r.status = 'Error';
      }
      emit({ type: 'object', component, object: name, action: 'failed', message });
    }
  }
}

export interface UninstallOptions {
  /** Revision to remove ('' or 'default': the default revision). Ignored with `purge`. */
  readonly revision?: string;
  /** Only the objects of this owner (meshctl: `installed-state[-R]` in the control-plane namespace). */
  readonly owner?: Owner;
  /** Without `owner`: only installations whose owner lives in this namespace (any owner). */
  readonly namespace?: string;
  /** Remove every labelled object of every owner and revision, CRDs included. */
  readonly purge?: boolean;
  /** Only report what would be removed. */
  readonly dryRun?: boolean;
  readonly progress?: (event: ProgressEvent) => void;
  readonly signal?: AbortSignal;
}

export interface UninstallResult {
  /** Removed (or, with dryRun, to be removed), in deletion order. */
  readonly deleted: string[];
  readonly kept: KeptObject[];
  readonly errors: string[];
  readonly dryRun: boolean;
}

const NAMESPACE_KEPT = 'namespaces are not deleted: they may hold objects that are not the mesh\'s (delete it yourself when it is empty)';
const CRD_KEPT = 'CRDs are removed only with --purge';

/**
 * Removes an installation by its labels: with `purge` everything any installation labelled
 * (CRDs too); otherwise the objects of `owner` (when given) and `revision`, or of `revision` and
 * any owner living in `namespace`. Base objects stay
 * while another installation shares their namespace; once the last installation of a namespace
 * goes, the Base objects of that namespace go too, whichever installation labelled them last.
 * Namespaces are never deleted, CRDs only with `purge`. Unlabelled objects are never seen.
 */
export async function uninstallInstallation(client: KubeClient, opts: UninstallOptions): Promise<UninstallResult> {
  const emit = opts.progress ?? (() => undefined);
  const kinds = kindsOf([]);
  const selector = opts.purge
    ? ANY_INSTALLATION_SELECTOR
    : opts.owner
      ? installationSelector(opts.owner, opts.revision)
      : [OWNING_RESOURCE_LABEL, `${REVISION_LABEL}=${revisionLabelOf(opts.revision)}`, ...(opts.namespace ? [`${OWNING_RESOURCE_NAMESPACE_LABEL}=${opts.namespace}`] : [])].join(',');
  const matched = (await listLabelled(client, kinds, selector, opts.signal)).filter((o) => !o.metadata.deletionTimestamp);
  const kept: KeptObject[] = [];
  const chosen = new Map<string, LiveObject>();

  const removing = new Set<string>();
  if (opts.owner) removing.add(installationKey(opts.owner.name, opts.revision));
  for (const o of matched) {
    const key = installationOf(o);
    if (key) removing.add(key);
  }
  const others = sharingChecker(client, removing, opts.signal);
  const lastIn = new Set<string>();

  for (const o of matched) {
    const name = displayName(o);
    if (o.kind === 'Namespace') {
      kept.push({ object: name, reason: NAMESPACE_KEPT });
      continue;
    }
    if (!opts.purge && o.kind === CRD_KIND) {
      kept.push({ object: name, reason: CRD_KEPT });
      continue;
    }
    if (!opts.purge && componentOf(o) === 'Base') {
      const ns = o.metadata.labels?.[OWNING_RESOURCE_NAMESPACE_LABEL] ?? '';
      const sharing = await others(ns);
      if (sharing.length > 0) {
        kept.push({ object: name, reason: `shared with ${sharing.map(describeInstallation).join(', ')}` });
        continue;
      }
      lastIn.add(ns);
    }
    chosen.set(identity(o), o);
  }
  if (!opts.purge) {
    // The namespaces this uninstall empties: their Base objects go, whoever labelled them last.
    const namespaces = new Set<string>(lastIn);
    const own = opts.owner?.namespace ?? opts.namespace;
    if (own && (await others(own)).length === 0) namespaces.add(own);
    for (const ns of namespaces) {
      const base = await listLabelled(client, OWNED_KINDS, `${OWNING_RESOURCE_NAMESPACE_LABEL}=${ns},${COMPONENT_LABEL}=Base`, opts.signal);
      for (const o of base) {
        if (o.kind === 'Namespace' || o.kind === CRD_KIND || o.metadata.deletionTimestamp || chosen.has(identity(o))) continue;
        chosen.set(identity(o), o);
      }
    }
  }

  const deleted: string[] = [];
  const errors: string[] = [];
  const ordered = deletionOrder([...chosen.values()]);
  let current: ComponentName | undefined;
  let componentErrors: string[] = [];
  const finish = () => {
    if (current) emit({ type: 'component-done', component: current, status: componentErrors.length > 0 ? 'Error' : 'Healthy', errors: componentErrors, notReady: [] });
  };
  for (const o of ordered) {
    opts.signal?.throwIfAborted();
    const component = componentOf(o);
    if (component && component !== current) {
      finish();
      current = component;
      componentErrors = [];
      emit({ type: 'component-start', component, total: ordered.filter((x) => componentOf(x) === component).length, operation: 'delete' });
    }
    const name = displayName(o);
    try {
      if (!opts.dryRun) await client.delete(refOf(o) as ObjectRef, { propagationPolicy: 'Background', signal: opts.signal });
      deleted.push(name);
      emit({ type: 'object', component, object: name, action: 'deleted' });
    } catch (err) {
      if (isAbortError(err)) throw err;
      const message = `${name}: cannot delete: ${describeError(err)}`;
      errors.push(message);
      componentErrors.push(message);
      emit({ type: 'object', component, object: name, action: 'failed', message });
    }
  }
  finish();
  return { deleted, kept, errors, dryRun: opts.dryRun ?? false };
}

export interface VerifyOptions {
  readonly signal?: AbortSignal;
}

export interface VerifiedObject {
  readonly ref: ObjectRef;
  /** Display name (`Deployment ns/name`). */
  readonly name: string;
  readonly component: ComponentName;
  readonly ready: boolean;
  /** Why it is not ready; empty when ready. */
  readonly reason: string;
}

export interface VerifyResult {
  readonly ok: boolean;
  readonly objects: VerifiedObject[];
}

/** Checks once that every object of `manifests` exists and is ready (readiness.ts). */
export async function verifyInstallation(client: KubeClient, manifests: readonly ComponentManifest[], opts: VerifyOptions = {}): Promise<VerifyResult> {
  const objects = await Promise.all(
    manifests.flatMap((m) =>
      m.objects.map(async (o): Promise<VerifiedObject> => {
        const ref = refOf(o);
        const r = await checkObject(client, ref, opts.signal);
        return { ref, name: displayName(o), component: m.component, ready: r.ready, reason: r.reason };
      }),
    ),
  );
  return { ok: objects.every((o) => o.ready), objects };
}
