/**
 * The MeshOperator controller: keeps the installation that each MeshOperator resource of the
 * watched namespaces describes in place, with the installation reconciler meshctl install uses
 * (./installation.ts). It follows the reconcile contract (src/controllers/runtime/), keyed by
 * `namespace/name`, and runs as the operator's leader duty `mesh-operator` (`run(signal)`): one
 * list/watch Informer of MeshOperators per watched namespace and one of owned Deployments
 * (selected by the ownership label) feed the queue while it leads.
 *
 * One reconcile of a resource (level-based: it reads the cached resource, not the event):
 *   1. deleted (deletionTimestamp) and carrying the finalizer `install.mesh.io/finalizer`:
 *      uninstall the installation, then drop the finalizer (cr_deletion_total);
 *   2. otherwise add the finalizer if missing;
 *   3. layer the spec like meshctl (src/install/resolve.ts `layerSpec`: profile ⊕ spec); a bad spec
 *      gives phase Error naming the field (cr_validation_error_total; an unreadable profile:
 *      cr_merge_failure_total) and a TerminalError: not retried until the spec changes;
 *   4. render (render_manifest_total per component; failures counted as manifest_patch_error_total
 *      for overlays, else manifest_render_error_total; terminal too);
 *   5. reconcile the installation (field manager `mesh-operator`, owner = the resource's
 *      name/namespace, readiness checked once), which prunes what the spec no longer renders
 *      (resource_*_total); a failed apply is phase Error and an ordinary error: retried with backoff;
 *   6. write the status: Healthy when every component is ready; else Reconciling and `again`
 *      after `requeueDelayMs`.
 * A change of an owned Deployment queues its owner, so readiness is noticed at once.
 *
 * Resources of another control-plane revision than the operator's (`--revision`) are left to
 * that revision's operator; meshctl's install records (`installed-state[-R]`) and resources
 * annotated `install.mesh.io/ignore-reconcile: "true"` are left alone.
 */
import type { Logger } from 'pino';
import { INSTALL_API_VERSION, INSTALL_GROUP, INSTALL_VERSION, MESH_OPERATOR_KIND, type MeshOperatorSpec } from '../../install/api.js';
import { kindOf } from '../../install/apply/engine.js';
import { MESH_OPERATOR_PLURAL } from '../../install/apply/operator-crd.js';
import { ProfileError, InstallError } from '../../install/errors.js';
import { DEFAULT_REVISION_LABEL_VALUE, OWNING_RESOURCE_LABEL, OWNING_RESOURCE_NAMESPACE_LABEL } from '../../install/labels.js';
import { OPERATOR_FIELD_MANAGER, OPERATOR_FINALIZER, ignored, normalRevision, requestedRevision, type MeshOperatorLike } from '../../install/operator-names.js';
import { COMPONENT_NAMES, type ComponentName, type K8sObject } from '../../install/render/index.js';
import { layerSpec, specOverlayIssues } from '../../install/resolve.js';
import { manifestSource, readCrds, type ManifestSource } from '../../install/sources.js';
import { isMap } from '../../install/tree.js';
import type { KubeClient } from '../../kube/client.js';
import { isNotFound } from '../../kube/errors.js';
import { Informer, dropManagedFields } from '../../kube/informer.js';
import { splitKey, type InformerEvent, type KubeObject } from '../../kube/types.js';
import { getLogger } from '../../log/logger.js';
import { again, Controller, fromCache, rfc3339, TerminalError, type Duty, type Outcome, type SyncErrorCounter } from '../runtime/index.js';
import { planInstallation, reconcileInstallation, uninstall, type Installation, type InstallationResult } from './installation.js';
import type { OperatorMetrics } from './metrics.js';
import { buildStatus, type ComponentStatus, type OperatorStatus, type Phase, type StatusInput } from './status.js';

/** A MeshOperator resource with the status this controller writes. */
export interface MeshOperatorResource extends MeshOperatorLike {
  readonly status?: Partial<OperatorStatus>;
}

export const MESH_OPERATOR_CONTROLLER = 'mesh-operator';

interface DeploymentLike extends KubeObject {
  readonly status?: unknown;
}

/** What the controller needs from the manifests directory; read once and kept. */
export interface SpecSources {
  readonly source: ManifestSource;
  readonly crds: readonly K8sObject[];
}

/** Reads the manifests directory (`--manifests`, else the built-in one) for the controller. */
export async function loadSpecSources(manifests?: string): Promise<SpecSources> {
  const source = await manifestSource(manifests);
  return { source, crds: await readCrds(source) };
}

export interface MeshOperatorControllerOptions {
  readonly client: KubeClient;
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
  readonly log?: Logger;
  /** Retry delays of failed reconciles (default 100 ms doubling to 2 min). */
  readonly retryBaseDelayMs?: number;
  readonly syncErrors?: SyncErrorCounter;
}

interface RenderCacheEntry {
  readonly uid: string;
  readonly generation: number;
  readonly installation: Installation;
}

const MESH_OPERATOR_RESOURCE = { group: INSTALL_GROUP, version: INSTALL_VERSION, plural: MESH_OPERATOR_PLURAL, namespaced: true, kind: MESH_OPERATOR_KIND };

function genOf(o: KubeObject): number {
  return o.metadata?.generation ?? 0;
}

function overlayFailure(err: unknown): boolean {
  return err instanceof Error && /\.k8s\.overlays/.test(err.message);
}

function issuesMessage(err: InstallError): string {
  return err.issues.length > 0 ? err.issues.map((i) => `${i.path}: ${i.message}`).join('; ') : err.message;
}

/** The informers of one leadership term. */
interface Watches {
  readonly resources: ReadonlyMap<string, Informer<MeshOperatorResource>>;
  readonly deployments: Informer<DeploymentLike>;
}

export class MeshOperatorController implements Duty {
  readonly name = MESH_OPERATOR_CONTROLLER;
  private readonly renderCache = new Map<string, RenderCacheEntry>();
  private readonly owned = new Map<string, number>();
  /** Generations whose spec failed to resolve or render, by key: not checked (nor counted) again. */
  private readonly failed = new Map<string, string>();
  private readonly log: Logger;
  private readonly revision: string;
  private watches: Watches | undefined;
  private controller: Controller<string> | undefined;
  /** Reconciles that reached the installation reconciler, by key (for tests and /debug). */
  readonly applied = new Map<string, number>();

  constructor(private readonly opts: MeshOperatorControllerOptions) {
    this.log = opts.log ?? getLogger('default');
    this.revision = normalRevision(opts.revision);
  }

  /** The leader duty: watches and reconciles until `signal` aborts. */
  async run(signal: AbortSignal): Promise<void> {
    const { opts } = this;
    const resources = new Map<string, Informer<MeshOperatorResource>>();
    for (const ns of opts.watchedNamespaces) {
      resources.set(
        ns,
        new Informer<MeshOperatorResource>(opts.client, {
          resource: MESH_OPERATOR_RESOURCE,
          namespace: ns,
          transform: dropManagedFields,
          resyncMs: opts.resyncMs ?? 300_000,
          name: `meshoperators in ${ns}`,
          onError: (err, phase) => this.log.warn({ namespace: ns, phase, err: err.message }, `MeshOperator informer (${ns}) ${phase} failed; retrying`),
        }),
      );
    }
    const deployments = new Informer<DeploymentLike>(opts.client, {
      resource: { group: 'apps', version: 'v1', plural: 'deployments', namespaced: true, kind: 'Deployment' },
      labelSelector: `${OWNING_RESOURCE_LABEL},${OWNING_RESOURCE_NAMESPACE_LABEL} in (${opts.watchedNamespaces.join(',')})`,
      transform: dropManagedFields,
      name: 'owned deployments',
      onError: (err, phase) => this.log.warn({ phase, err: err.message }, `Deployment informer ${phase} failed; retrying`),
    });
    const watches: Watches = { resources, deployments };
    const controller = new Controller<string>({
      name: MESH_OPERATOR_CONTROLLER,
      reconciler: { reconcile: (key, ctx) => this.reconcile(watches, key, ctx.signal) },
      sources: [...[...resources.values()].map((i) => fromCache(i, (e) => this.resourceKey(e))), fromCache(deployments, (e) => this.ownerKey(watches, e.object))],
      workers: opts.workers ?? 2,
      retry: { baseDelayMs: opts.retryBaseDelayMs ?? 100, maxDelayMs: 120_000 },
      syncErrors: opts.syncErrors,
      log: this.log,
    });
    // A new term judges every resource afresh.
    this.failed.clear();
    this.renderCache.clear();
    this.watches = watches;
    this.controller = controller;
    const all = [...resources.values(), deployments];
    for (const i of all) i.start();
    try {
      await Promise.all(all.map((i) => i.waitForSync({ signal })));
      if (signal.aborted) return;
      this.log.info({ watchedNamespaces: opts.watchedNamespaces.join(','), revision: this.revision || DEFAULT_REVISION_LABEL_VALUE }, 'controller started');
      await controller.run(signal);
    } catch (err) {
      if (!signal.aborted) throw err;
    } finally {
      await controller.stop();
      await Promise.all(all.map((i) => i.stop()));
      if (this.watches === watches) this.watches = undefined;
      if (this.controller === controller) this.controller = undefined;
    }
  }

  /** True while it runs with synced caches. */
  hasSynced(): boolean {
    const w = this.watches;
    return w !== undefined && [...w.resources.values(), w.deployments].every((i) => i.hasSynced());
  }

  get running(): boolean {
    return this.controller !== undefined;
  }

  stats() {
    return this.controller?.stats();
  }

  // ---- event mapping ---------------------------------------------------------------------

  /** A resource's own events: spec, deletion or finalizer changes (not our status writes). */
  private resourceKey(e: InformerEvent<MeshOperatorResource>): string | undefined {
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
  private ownerKey(w: Watches, o: KubeObject): string | undefined {
    const labels = o.metadata?.labels ?? {};
    const ns = labels[OWNING_RESOURCE_NAMESPACE_LABEL];
    const name = labels[OWNING_RESOURCE_LABEL];
    if (!ns || !name || !w.resources.get(ns)?.get(ns, name)) return undefined;
    return `${ns}/${name}`;
  }

  // ---- reconcile -------------------------------------------------------------------------

  private async reconcile(w: Watches, key: string, signal: AbortSignal): Promise<Outcome | void> {
    const { namespace, name } = splitKey(key);
    const cr = w.resources.get(namespace)?.get(namespace, name);
    if (!cr) {
      this.forget(key);
      return;
    }
    if (ignored(cr) && !cr.metadata?.deletionTimestamp) return;
    if (requestedRevision(cr) !== this.revision && !cr.metadata?.deletionTimestamp) return;
    const owner = { name, namespace };
    const finalizers = cr.metadata?.finalizers ?? [];
    if (cr.metadata?.deletionTimestamp) {
      if (!finalizers.includes(OPERATOR_FINALIZER)) return;
      const revision = cr.status?.revision !== undefined ? normalRevision(cr.status.revision) : requestedRevision(cr);
      if (revision !== this.revision) return;
      const result = await uninstall(this.opts.client, { owner, revision, signal });
      if (result.errors.length > 0) throw new Error(`uninstalling ${key}: ${result.errors.join('; ')}`);
      for (const object of result.deleted) this.opts.metrics.resourceDeletion.inc({ kind: kindOf(object) });
      try {
        await this.setFinalizers(cr, finalizers.filter((f) => f !== OPERATOR_FINALIZER));
      } catch (err) {
        if (!isNotFound(err)) throw err; // someone else removed the finalizer: the resource is gone
      }
      this.opts.metrics.crDeletion.inc();
      this.forget(key);
      this.log.info({ key, deleted: result.deleted.length }, 'uninstalled');
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
      if (this.failed.get(key) === id) return; // reported already; waits for a new generation
      try {
        cached = await this.prepare(current, owner);
      } catch (err) {
        if (err instanceof TerminalError) this.failed.set(key, id);
        throw err;
      }
      this.failed.delete(key);
      this.renderCache.set(key, cached);
    }
    const installation = cached.installation;
    const revision = installation.revision;
    const base = { generation, revision: revision || DEFAULT_REVISION_LABEL_VALUE, profile: installation.spec.profile };

    if (current.status?.observedGeneration !== generation) {
      await this.writeStatus(current, {
        ...base,
        phase: 'Reconciling',
        components: this.componentStatus(installation, undefined),
        reconciled: { ok: false, reason: 'Reconciling', message: `applying generation ${generation}` },
        ready: { ok: 'unknown', reason: 'Reconciling', message: 'not checked yet' },
      });
    }

    this.applied.set(key, (this.applied.get(key) ?? 0) + 1);
    const result = await reconcileInstallation(this.opts.client, installation, { fieldManager: OPERATOR_FIELD_MANAGER, readinessTimeoutMs: 0, signal });
    const errors = result.components.flatMap((c) => c.errors.map((e) => `${c.component}: ${e}`));
    if (errors.length > 0) {
      const message = errors.join('; ');
      await this.writeStatus(current, {
        ...base,
        phase: 'Error',
        message,
        components: this.componentStatus(installation, undefined, message),
        reconciled: { ok: false, reason: 'ApplyFailed', message },
        ready: { ok: 'unknown', reason: 'ApplyFailed', message: 'not checked: the apply failed' },
      }).catch(() => undefined);
      throw new Error(message);
    }
    this.countChanges(result);
    this.owned.set(key, result.counts.created + result.counts.updated + result.counts.unchanged);
    this.opts.metrics.ownedResource.set([...this.owned.values()].reduce((a, b) => a + b, 0));

    const previousRevision = current.status?.revision;
    if (previousRevision !== undefined && normalRevision(previousRevision) !== revision) {
      // The spec moved to another revision: the old revision's objects are no longer rendered.
      const { deleted } = await uninstall(this.opts.client, { owner, revision: normalRevision(previousRevision), signal });
      for (const object of deleted) this.opts.metrics.resourcePrune.inc({ kind: kindOf(object) });
    }

    const notReady = result.components.filter((c) => c.status !== 'Healthy');
    const phase: Phase = notReady.length === 0 ? 'Healthy' : 'Reconciling';
    const waiting = notReady.map((c) => `${c.component}: ${c.notReady.join('; ') || 'not ready'}`).join('; ');
    await this.writeStatus(current, {
      ...base,
      phase,
      message: phase === 'Healthy' ? undefined : `waiting for ${waiting}`,
      components: this.componentStatus(installation, result),
      reconciled: { ok: true, reason: 'Applied', message: `generation ${generation} applied` },
      ready: phase === 'Healthy' ? { ok: true, reason: 'ComponentsReady', message: 'every component is ready' } : { ok: false, reason: 'ComponentsNotReady', message: waiting },
    });
    if (phase !== 'Healthy') return again(this.opts.requeueDelayMs ?? 5000);
  }

  /** Layers and renders; on a spec problem writes phase Error and throws a TerminalError. */
  private async prepare(cr: MeshOperatorResource, owner: { name: string; namespace: string }): Promise<RenderCacheEntry> {
    const generation = genOf(cr);
    const fail = async (reason: string, message: string): Promise<never> => {
      const revision = requestedRevision(cr);
      await this.writeStatus(cr, {
        phase: 'Error',
        message,
        generation,
        revision: cr.status?.revision ?? (revision || DEFAULT_REVISION_LABEL_VALUE),
        reconciled: { ok: false, reason, message },
        ready: { ok: 'unknown', reason, message: 'not checked: the spec is not valid' },
      });
      throw new TerminalError(`invalid MeshOperator (${reason}): ${message}`);
    };
    let spec: MeshOperatorSpec;
    try {
      const own = specOverlayIssues(cr.spec);
      if (own.length > 0) throw new InstallError('invalid MeshOperator', own);
      spec = (await layerSpec({ source: this.opts.sources.source, overlays: isMap(cr.spec) ? [cr.spec] : [], origin: 'spec', defaultTag: this.opts.defaultTag })).spec;
    } catch (err) {
      if (!(err instanceof InstallError)) throw err;
      if (err instanceof ProfileError) {
        this.opts.metrics.crMergeFailure.inc();
        return fail('MergeFailed', issuesMessage(err));
      }
      this.opts.metrics.crValidationError.inc();
      return fail('ValidationFailed', issuesMessage(err));
    }
    let installation: Installation;
    try {
      installation = planInstallation(spec, owner, this.opts.sources.crds);
    } catch (err) {
      if (overlayFailure(err)) this.opts.metrics.manifestPatchError.inc();
      else this.opts.metrics.manifestRenderError.inc();
      return fail('RenderFailed', err instanceof Error ? err.message : String(err));
    }
    for (const m of installation.manifests) this.opts.metrics.renderManifest.inc({ component: m.component });
    return { uid: cr.metadata?.uid ?? '', generation, installation };
  }

  private componentStatus(installation: Installation, result: InstallationResult | undefined, error?: string): Partial<Record<ComponentName, ComponentStatus>> {
    const out: Partial<Record<ComponentName, ComponentStatus>> = {};
    for (const name of COMPONENT_NAMES) {
      const m = installation.manifests.find((x) => x.component === name);
      if (!m) continue;
      const c = result?.components.find((x) => x.component === name);
      const objects = c ? c.created.length + c.updated.length + c.unchanged.length : m.objects.length;
      if (error) out[name] = { status: 'Error', error, objects: m.objects.length };
      else if (!c) out[name] = { status: 'Reconciling', objects };
      else if (c.status === 'Healthy') out[name] = { status: 'Healthy', objects };
      else out[name] = { status: 'Reconciling', error: c.notReady.join('; ') || c.status, objects };
    }
    return out;
  }

  private countChanges(r: InstallationResult): void {
    for (const c of r.components) {
      for (const o of c.created) this.opts.metrics.resourceCreation.inc({ kind: kindOf(o) });
      for (const o of c.updated) this.opts.metrics.resourceUpdate.inc({ kind: kindOf(o) });
      for (const o of c.pruned) this.opts.metrics.resourcePrune.inc({ kind: kindOf(o) });
    }
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
    const previous = cr.status;
    const status = buildStatus(input, previous);
    if (JSON.stringify(status) === JSON.stringify(previous)) return;
    const before = previous?.phase;
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
      this.log.info({ key: `${cr.metadata?.namespace}/${cr.metadata?.name}`, phase: status.phase, message: status.message }, 'phase');
      await this.recordEvent(cr, status.phase === 'Error' ? 'Warning' : 'Normal', status.phase, status.message ?? `phase ${status.phase}`);
    }
  }

  /** A core/v1 Event on the resource; best effort. */
  private async recordEvent(cr: MeshOperatorResource, type: 'Normal' | 'Warning', reason: string, message: string): Promise<void> {
    const ns = cr.metadata?.namespace ?? '';
    const now = rfc3339(new Date());
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
      .catch((err: unknown) => this.log.warn({ err: err instanceof Error ? err.message : String(err) }, 'cannot record event'));
  }
}
