/**
 * The MeshOperator controller: keeps the installation that each MeshOperator resource of the
 * watched namespaces describes in place, with the apply engine that meshctl install uses.
 *
 * Machinery (src/kube): one list/watch Informer of MeshOperators per watched namespace and one of
 * owned Deployments (selected by the ownership label), feeding a Controller whose work queue
 * holds `namespace/name` keys once each (level-based: a reconcile reads the cached resource, not
 * the event), retries failures with per-key backoff and never runs one key twice at once.
 *
 * One reconcile of a resource:
 *   1. deleted (deletionTimestamp) and carrying the finalizer `install.mesh.io/finalizer`:
 *      uninstall the installation, then drop the finalizer (cr_deletion_total);
 *   2. otherwise add the finalizer if missing;
 *   3. resolve the spec like meshctl (profile ⊕ spec, zod schema); a bad spec gives phase Error
 *      naming the field (cr_validation_error_total; an unreadable profile: cr_merge_failure_total)
 *      and is not retried until the spec changes;
 *   4. render the manifests (render_manifest_total per component; failures counted as
 *      manifest_patch_error_total for overlays, else manifest_render_error_total);
 *   5. apply them with the engine (field manager `mesh-operator`, owner = the resource's
 *      name/namespace), which prunes objects the spec no longer renders (resource_*_total);
 *   6. write the status: Healthy when every component is ready, else Reconciling and requeue
 *      after `requeueDelayMs`; an apply failure is phase Error and retried with backoff.
 * A change of an owned Deployment requeues its owner, so readiness is noticed at once.
 *
 * Resources of another control-plane revision than the operator's (`--revision`) are left to
 * that revision's operator; meshctl's install records (`installed-state[-R]`) and resources
 * annotated `install.mesh.io/ignore-reconcile: "true"` are left alone.
 */
import { COMPONENT_NAMES, renderManifests, type ComponentManifest, type ComponentName, type Owner } from '../install/render/index.js';
import { INSTALL_API_VERSION, INSTALL_GROUP, INSTALL_VERSION, MESH_OPERATOR_KIND, type MeshOperatorSpec } from '../install/api.js';
import { DEFAULT_REVISION_LABEL_VALUE, OWNING_RESOURCE_LABEL, OWNING_RESOURCE_NAMESPACE_LABEL } from '../install/labels.js';
import type { KubeClient } from '../kube/client.js';
import { Controller } from '../kube/controller.js';
import { isNotFound } from '../kube/errors.js';
import { Informer, dropManagedFields } from '../kube/informer.js';
import { splitKey, type InformerEvent, type KubeObject } from '../kube/types.js';
import { MESH_OPERATOR_PLURAL } from '../install/apply/operator-crd.js';
import { VERSION_ANNOTATION } from '../install/apply/state.js';
import type { EngineReconcileResult, InstallEngine } from './engine-seam.js';
import { silentLog, type OperatorLog } from './log.js';
import type { OperatorMetrics } from './metrics.js';
import { IGNORE_ANNOTATION, OPERATOR_FIELD_MANAGER, OPERATOR_FINALIZER, normalRevision } from './names.js';
import { OperatorSpecError, resolveOperatorSpec, type SpecSources } from './resolve-cr.js';
import { buildStatus, type ComponentStatus, type OperatorStatus, type Phase, type StatusInput } from './status.js';

export interface MeshOperatorResource extends KubeObject {
  readonly spec?: unknown;
  readonly status?: Partial<OperatorStatus>;
}

interface DeploymentLike extends KubeObject {
  readonly status?: unknown;
}

export interface MeshOperatorControllerOptions {
  readonly client: KubeClient;
  readonly engine: InstallEngine;
  readonly metrics: OperatorMetrics;
  readonly sources: SpecSources;
  readonly watchedNamespaces: readonly string[];
  /** Operator revision: only resources of this control-plane revision ('' default). */
  readonly revision?: string;
  /** Image tag when a spec sets none. */
  readonly defaultTag: string;
  /** Requeue delay while components are not ready (default 5 s). */
  readonly requeueDelayMs?: number;
  /** Re-reconcile every resource this often, to repair drift of objects nobody watches (default 5 min; 0: never). */
  readonly resyncMs?: number;
  readonly workers?: number;
  readonly log?: OperatorLog;
  /** Retry delays of failed reconciles (default 100 ms doubling to 2 min). */
  readonly retryBaseDelayMs?: number;
}

interface RenderCacheEntry {
  readonly uid: string;
  readonly generation: number;
  readonly spec: MeshOperatorSpec;
  readonly manifests: readonly ComponentManifest[];
}

const MESH_OPERATOR_RESOURCE = { group: INSTALL_GROUP, version: INSTALL_VERSION, plural: MESH_OPERATOR_PLURAL, namespaced: true, kind: MESH_OPERATOR_KIND };

function genOf(o: KubeObject): number {
  return o.metadata?.generation ?? 0;
}

/** The control-plane revision a resource asks for ('' default), read without validation. */
export function requestedRevision(cr: MeshOperatorResource): string {
  const spec = cr.spec as { revision?: unknown } | undefined;
  return typeof spec?.revision === 'string' ? normalRevision(spec.revision) : '';
}

/**
 * meshctl's record of a CLI install (`installed-state[-R]`, annotated with the meshctl version),
 * or a resource annotated `install.mesh.io/ignore-reconcile: "true"`: not the controller's to reconcile.
 */
export function ignored(cr: MeshOperatorResource): boolean {
  const a = cr.metadata?.annotations ?? {};
  return a[VERSION_ANNOTATION] !== undefined || a[IGNORE_ANNOTATION] === 'true';
}

function overlayFailure(err: unknown): boolean {
  return err instanceof Error && /\.k8s\.overlays/.test(err.message);
}

export class MeshOperatorController {
  private readonly informers = new Map<string, Informer<MeshOperatorResource>>();
  private readonly deployments: Informer<DeploymentLike>;
  private readonly controller: Controller;
  private readonly renderCache = new Map<string, RenderCacheEntry>();
  private readonly owned = new Map<string, number>();
  /** Generations whose spec failed to resolve or render, by key: not checked (nor counted) again. */
  private readonly failed = new Map<string, string>();
  private readonly log: OperatorLog;
  private readonly revision: string;
  private started = false;
  /** Reconciles that reached the engine, by key (for tests and /debug). */
  readonly applied = new Map<string, number>();

  constructor(private readonly opts: MeshOperatorControllerOptions) {
    this.log = opts.log ?? silentLog;
    this.revision = normalRevision(opts.revision);
    for (const ns of opts.watchedNamespaces) {
      this.informers.set(
        ns,
        new Informer<MeshOperatorResource>(opts.client, {
          resource: MESH_OPERATOR_RESOURCE,
          namespace: ns,
          transform: dropManagedFields,
          resyncMs: opts.resyncMs ?? 300_000,
          name: `meshoperators in ${ns}`,
          onError: (err, phase) => this.log.warn(`MeshOperator informer (${ns}) ${phase} failed; retrying`, { error: err.message }),
        }),
      );
    }
    this.deployments = new Informer<DeploymentLike>(opts.client, {
      resource: { group: 'apps', version: 'v1', plural: 'deployments', namespaced: true, kind: 'Deployment' },
      labelSelector: `${OWNING_RESOURCE_LABEL},${OWNING_RESOURCE_NAMESPACE_LABEL} in (${opts.watchedNamespaces.join(',')})`,
      transform: dropManagedFields,
      name: 'owned deployments',
      onError: (err, phase) => this.log.warn(`Deployment informer ${phase} failed; retrying`, { error: err.message }),
    });
    this.controller = new Controller({
      name: 'mesh-operator',
      reconcile: (key, signal) => this.reconcile(key, signal),
      workers: opts.workers ?? 2,
      queue: { baseDelayMs: opts.retryBaseDelayMs ?? 100, maxDelayMs: 120_000 },
      onError: (err, key, info) => this.log.warn('reconcile failed', { key, retry: info.willRetry ? info.retries + 1 : 'dropped', error: err.message }),
    });
    for (const informer of this.informers.values()) this.controller.watch(informer, (e) => this.crKeys(e));
    this.controller.watch(this.deployments, (e) => this.ownerKey(e.object));
  }

  /** Starts the informers, waits until they have listed once, then starts the workers. */
  async start(opts: { readonly signal?: AbortSignal; readonly syncTimeoutMs?: number } = {}): Promise<void> {
    if (this.started) return;
    this.started = true;
    const all = [...this.informers.values(), this.deployments];
    for (const i of all) i.start();
    await Promise.all(all.map((i) => i.waitForSync({ signal: opts.signal, timeoutMs: opts.syncTimeoutMs })));
    this.controller.start();
    this.log.info('controller started', { watchedNamespaces: this.opts.watchedNamespaces.join(','), revision: this.revision || DEFAULT_REVISION_LABEL_VALUE });
  }

  /** Stops watching and working; running reconciles see their signal aborted. */
  async stop(): Promise<void> {
    await this.controller.stop();
    await Promise.all([...this.informers.values(), this.deployments].map((i) => i.stop()));
    this.started = false;
  }

  hasSynced(): boolean {
    return [...this.informers.values(), this.deployments].every((i) => i.hasSynced());
  }

  stats() {
    return this.controller.stats();
  }

  /** Queues a resource for reconciliation. */
  enqueue(namespace: string, name: string): void {
    this.controller.enqueue(`${namespace}/${name}`);
  }

  // ---- event mapping ---------------------------------------------------------------------

  /** A resource's own events: spec, deletion or finalizer changes (not our status writes). */
  private crKeys(e: InformerEvent<MeshOperatorResource>): string | undefined {
    const key = `${e.object.metadata?.namespace ?? ''}/${e.object.metadata?.name ?? ''}`;
    if (e.type !== 'update' || e.resync) return key;
    const a = e.previous.metadata;
    const b = e.object.metadata;
    const same =
      genOf(e.previous) === genOf(e.object) &&
      String(a?.deletionTimestamp ?? '') === String(b?.deletionTimestamp ?? '') &&
      JSON.stringify(a?.finalizers ?? []) === JSON.stringify(b?.finalizers ?? []);
    return same ? undefined : key;
  }

  /** An owned Deployment changed: its owner, if we watch it. */
  private ownerKey(o: KubeObject): string | undefined {
    const labels = o.metadata?.labels ?? {};
    const ns = labels[OWNING_RESOURCE_NAMESPACE_LABEL];
    const name = labels[OWNING_RESOURCE_LABEL];
    if (!ns || !name || !this.informers.get(ns)?.get(ns, name)) return undefined;
    return `${ns}/${name}`;
  }

  // ---- reconcile -------------------------------------------------------------------------

  private async reconcile(key: string, signal: AbortSignal): Promise<void> {
    const { namespace, name } = splitKey(key);
    const cr = this.informers.get(namespace)?.get(namespace, name);
    if (!cr) {
      this.forget(key);
      return;
    }
    if (ignored(cr) && !cr.metadata?.deletionTimestamp) return;
    if (requestedRevision(cr) !== this.revision && !cr.metadata?.deletionTimestamp) return;
    const owner: Owner = { name, namespace };
    const finalizers = cr.metadata?.finalizers ?? [];
    if (cr.metadata?.deletionTimestamp) {
      if (!finalizers.includes(OPERATOR_FINALIZER)) return;
      const revision = cr.status?.revision !== undefined ? normalRevision(cr.status.revision) : requestedRevision(cr);
      if (revision !== this.revision) return;
      const { deleted } = await this.opts.engine.uninstall({ owner, revision, signal });
      for (const kind of deleted) this.opts.metrics.resourceDeletion.inc({ kind });
      await this.setFinalizers(cr, finalizers.filter((f) => f !== OPERATOR_FINALIZER));
      this.opts.metrics.crDeletion.inc();
      this.forget(key);
      this.log.info('uninstalled', { key, deleted: deleted.length });
      return;
    }
    let current = cr;
    if (!finalizers.includes(OPERATOR_FINALIZER)) current = await this.setFinalizers(cr, [...finalizers, OPERATOR_FINALIZER]);

    const generation = genOf(current);
    let cached = this.renderCache.get(key);
    if (cached && (cached.generation !== generation || cached.uid !== (current.metadata?.uid ?? ''))) {
      this.renderCache.delete(key);
      this.opts.metrics.cacheFlush.inc();
      cached = undefined;
    }
    if (!cached) {
      const id = `${current.metadata?.uid ?? ''}/${generation}`;
      if (this.failed.get(key) === id) return;
      const prepared = await this.prepare(current, owner);
      if (!prepared) {
        this.failed.set(key, id);
        return;
      }
      this.failed.delete(key);
      cached = prepared;
      this.renderCache.set(key, cached);
    }
    const revision = normalRevision(cached.spec.revision);
    const revisionLabel = revision || DEFAULT_REVISION_LABEL_VALUE;
    const base = { generation, revision: revisionLabel, profile: cached.spec.profile };

    if (current.status?.observedGeneration !== generation) {
      await this.writeStatus(current, {
        ...base,
        phase: 'Reconciling',
        components: this.componentStatus(cached.manifests, undefined),
        reconciled: { ok: false, reason: 'Reconciling', message: `applying generation ${generation}` },
        ready: { ok: 'unknown', reason: 'Reconciling', message: 'not checked yet' },
      });
    }

    let result: EngineReconcileResult;
    try {
      this.applied.set(key, (this.applied.get(key) ?? 0) + 1);
      result = await this.opts.engine.reconcile(cached.manifests, { owner, revision, signal });
    } catch (err) {
      if (signal.aborted) throw err;
      const message = err instanceof Error ? err.message : String(err);
      await this.writeStatus(current, {
        ...base,
        phase: 'Error',
        message,
        components: this.componentStatus(cached.manifests, undefined, message),
        reconciled: { ok: false, reason: 'ApplyFailed', message },
        ready: { ok: 'unknown', reason: 'ApplyFailed', message: 'not checked: the apply failed' },
      }).catch(() => undefined);
      throw err;
    }
    this.countChanges(result);
    this.owned.set(key, result.owned);
    this.opts.metrics.ownedResource.set([...this.owned.values()].reduce((a, b) => a + b, 0));

    const previousRevision = current.status?.revision;
    if (previousRevision !== undefined && normalRevision(previousRevision) !== revision) {
      // The spec moved to another revision: the old revision's objects are no longer rendered.
      const { deleted } = await this.opts.engine.uninstall({ owner, revision: normalRevision(previousRevision), signal });
      for (const kind of deleted) this.opts.metrics.resourcePrune.inc({ kind });
    }

    const notReady = Object.entries(result.components).filter(([, c]) => c && !c.ready);
    const phase: Phase = notReady.length === 0 ? 'Healthy' : 'Reconciling';
    const waiting = notReady.map(([c, h]) => `${c}: ${h?.message ?? 'not ready'}`).join('; ');
    await this.writeStatus(current, {
      ...base,
      phase,
      message: phase === 'Healthy' ? undefined : `waiting for ${waiting}`,
      components: this.componentStatus(cached.manifests, result),
      reconciled: { ok: true, reason: 'Applied', message: `generation ${generation} applied` },
      ready: phase === 'Healthy' ? { ok: true, reason: 'ComponentsReady', message: 'every component is ready' } : { ok: false, reason: 'ComponentsNotReady', message: waiting },
    });
    if (phase !== 'Healthy') this.controller.queue.addAfter(key, this.opts.requeueDelayMs ?? 5000);
  }

  /** Resolves and renders; on a spec problem writes phase Error and returns undefined (no retry). */
  private async prepare(cr: MeshOperatorResource, owner: Owner): Promise<RenderCacheEntry | undefined> {
    const generation = genOf(cr);
    const fail = async (reason: string, message: string): Promise<undefined> => {
      this.log.warn('invalid MeshOperator', { key: `${owner.namespace}/${owner.name}`, reason, message });
      const revision = requestedRevision(cr);
      await this.writeStatus(cr, {
        phase: 'Error',
        message,
        generation,
        revision: cr.status?.revision ?? (revision || DEFAULT_REVISION_LABEL_VALUE),
        reconciled: { ok: false, reason, message },
        ready: { ok: 'unknown', reason, message: 'not checked: the spec is not valid' },
      });
      return undefined;
    };
    let spec: MeshOperatorSpec;
    try {
      spec = await resolveOperatorSpec(cr.spec, this.opts.sources, { defaultTag: this.opts.defaultTag });
    } catch (err) {
      if (!(err instanceof OperatorSpecError)) throw err;
      if (err.failure === 'merge') {
        this.opts.metrics.crMergeFailure.inc();
        return fail('MergeFailed', err.message);
      }
      this.opts.metrics.crValidationError.inc();
      return fail('ValidationFailed', err.message);
    }
    let manifests: ComponentManifest[];
    try {
      manifests = renderManifests(spec, { owner, crds: this.opts.sources.crds });
    } catch (err) {
      if (overlayFailure(err)) this.opts.metrics.manifestPatchError.inc();
      else this.opts.metrics.manifestRenderError.inc();
      return fail('RenderFailed', err instanceof Error ? err.message : String(err));
    }
    for (const m of manifests) this.opts.metrics.renderManifest.inc({ component: m.component });
    return { uid: cr.metadata?.uid ?? '', generation, spec, manifests };
  }

  private componentStatus(manifests: readonly ComponentManifest[], result: EngineReconcileResult | undefined, error?: string): Partial<Record<ComponentName, ComponentStatus>> {
    const out: Partial<Record<ComponentName, ComponentStatus>> = {};
    for (const name of COMPONENT_NAMES) {
      const m = manifests.find((x) => x.component === name);
      if (!m) continue;
      const h = result?.components[name];
      if (error) out[name] = { status: 'Error', error, objects: m.objects.length };
      else if (!h) out[name] = { status: 'Reconciling', objects: m.objects.length };
      else out[name] = h.ready ? { status: 'Healthy', objects: h.objects } : { status: 'Reconciling', error: h.message ?? 'not ready', objects: h.objects };
    }
    return out;
  }

  private countChanges(r: EngineReconcileResult): void {
    for (const kind of r.changes.created) this.opts.metrics.resourceCreation.inc({ kind });
    for (const kind of r.changes.updated) this.opts.metrics.resourceUpdate.inc({ kind });
    for (const kind of r.changes.pruned) this.opts.metrics.resourcePrune.inc({ kind });
  }

  private forget(key: string): void {
    this.failed.delete(key);
    if (this.renderCache.delete(key)) this.opts.metrics.cacheFlush.inc();
    if (this.owned.delete(key)) this.opts.metrics.ownedResource.set([...this.owned.values()].reduce((a, b) => a + b, 0));
  }

  /** Replaces the finalizer list, conditional on the resource version (a race is a retry). */
  private async setFinalizers(cr: MeshOperatorResource, finalizers: readonly string[]): Promise<MeshOperatorResource> {
    const ref = { apiVersion: INSTALL_API_VERSION, kind: MESH_OPERATOR_KIND, namespace: cr.metadata?.namespace, name: cr.metadata?.name ?? '' };
    try {
      return await this.opts.client.mergePatch<MeshOperatorResource>(
        ref,
        { metadata: { finalizers: finalizers.length > 0 ? finalizers : null, resourceVersion: cr.metadata?.resourceVersion } },
        { fieldManager: OPERATOR_FIELD_MANAGER },
      );
    } catch (err) {
      if (isNotFound(err)) this.opts.metrics.getCrError.inc();
      throw err;
    }
  }

  private async writeStatus(cr: MeshOperatorResource, input: StatusInput): Promise<void> {
    const status = buildStatus(input, cr.status);
    if (JSON.stringify(status) === JSON.stringify(cr.status)) return;
    const before = cr.status?.phase;
    try {
      await this.opts.client.applyStatus(
        { apiVersion: INSTALL_API_VERSION, kind: MESH_OPERATOR_KIND, metadata: { name: cr.metadata?.name, namespace: cr.metadata?.namespace }, status } as KubeObject,
        { fieldManager: OPERATOR_FIELD_MANAGER, force: true },
      );
    } catch (err) {
      if (isNotFound(err)) {
        this.opts.metrics.getCrError.inc();
        return; // deleted meanwhile
      }
      throw err;
    }
    if (before !== status.phase) {
      this.log.info('phase', { key: `${cr.metadata?.namespace}/${cr.metadata?.name}`, phase: status.phase, message: status.message });
      await this.recordEvent(cr, status.phase === 'Error' ? 'Warning' : 'Normal', status.phase, status.message ?? `phase ${status.phase}`);
    }
  }

  /** A core/v1 Event on the resource; best effort. */
  private async recordEvent(cr: MeshOperatorResource, type: 'Normal' | 'Warning', reason: string, message: string): Promise<void> {
    const ns = cr.metadata?.namespace ?? '';
    const now = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
    await this.opts.client
      .request({
        method: 'POST',
        path: `/api/v1/namespaces/${encodeURIComponent(ns)}/events`,
        body: {
          apiVersion: 'v1',
          kind: 'Event',
          metadata: { generateName: `${cr.metadata?.name ?? 'meshoperator'}.`, namespace: ns },
          involvedObject: { apiVersion: INSTALL_API_VERSION, kind: MESH_OPERATOR_KIND, name: cr.metadata?.name, namespace: ns, uid: cr.metadata?.uid },
          reason,
          message: message.slice(0, 1024),
          type,
          source: { component: 'mesh-operator' },
          firstTimestamp: now,
          lastTimestamp: now,
          count: 1,
        },
      })
      .catch((err: unknown) => this.log.warn('cannot record event', { error: err instanceof Error ? err.message : String(err) }));
  }
}
