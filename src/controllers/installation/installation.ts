/**
 * The installation reconciler, the one that `meshctl install`/`upgrade` call once (waiting for
 * readiness) and the operator controller calls from its queue (checking readiness once and asking
 * to be queued again): render → apply with ownership and pruning → readiness (docs/adr/0031).
 *
 *   const installation = planInstallation(spec, owner, crds);    // render: pure, may throw
 *   const result = await reconcileInstallation(client, installation, {
 *     fieldManager: 'meshctl', readinessTimeoutMs: 300_000, progress });
 *
 * Both callers read the same `InstallationResult` (the apply engine's result, per component:
 * created/updated/unchanged/pruned objects, errors, objects not ready; counts; kept objects); the
 * CLI formats it, the operator turns it into status, metrics and its reconcile outcome.
 * `uninstall` removes an installation by its ownership labels.
 */
import { setMaxListeners } from 'node:events';
import type { MeshOperatorSpec } from '../../install/api.js';
import { applyManifests, uninstallInstallation, type ProgressEvent, type ReconcileResult, type UninstallOptions, type UninstallResult } from '../../install/apply/engine.js';
import { revisionOf } from '../../install/apply/state.js';
import { renderManifests, type ComponentManifest, type K8sObject, type Owner } from '../../install/render/index.js';
import type { KubeClient } from '../../kube/client.js';

/** A spec rendered for one owner: what is to be in the cluster. */
export interface Installation {
  readonly spec: MeshOperatorSpec;
  /** Named by the objects' ownership labels: `installed-state[-R]` for meshctl, the MeshOperator resource for the operator. */
  readonly owner: Owner;
  /** Control-plane revision ('' for the default one); with the owner it selects what may be pruned. */
  readonly revision: string;
  readonly manifests: readonly ComponentManifest[];
}

/** Renders `spec` for `owner` (throws on a render failure, e.g. a bad overlay). */
export function planInstallation(spec: MeshOperatorSpec, owner: Owner, crds: readonly K8sObject[]): Installation {
  return { spec, owner, revision: revisionOf(spec), manifests: renderManifests(spec, { owner, crds }) };
}

export interface InstallationOptions {
  /** Server-side apply field manager: `meshctl` or `mesh-operator`. */
  readonly fieldManager: string;
  /** Per component; 0 checks once without waiting (components not ready are `Reconciling`). */
  readonly readinessTimeoutMs: number;
  /** Every write with dryRun=All: the API server checks, nothing changes. */
  readonly dryRun?: boolean;
  /** Delete owned objects the render no longer holds (default true). */
  readonly prune?: boolean;
  readonly progress?: (event: ProgressEvent) => void;
  readonly signal?: AbortSignal;
}

export type InstallationResult = ReconcileResult;

/**
 * Brings the cluster to `installation`: components in dependency order, CRDs first, server-side
 * apply with `force`, then the wait for readiness, then pruning (src/install/apply/engine.ts).
 * Throws only when aborted; every other problem is in the result.
 */
export function reconcileInstallation(client: KubeClient, installation: Installation, opts: InstallationOptions): Promise<InstallationResult> {
  return withCallSignal(opts.signal, (signal) =>
    applyManifests(client, installation.manifests, {
      owner: installation.owner,
      revision: installation.revision,
      fieldManager: opts.fieldManager,
      readinessTimeoutMs: opts.readinessTimeoutMs,
      dryRun: opts.dryRun,
      prune: opts.prune,
      progress: opts.progress,
      signal,
    }),
  );
}

/** Removes an installation by its ownership labels (see `uninstallInstallation`). */
export function uninstall(client: KubeClient, opts: UninstallOptions): Promise<UninstallResult> {
  return withCallSignal(opts.signal, (signal) => uninstallInstallation(client, { ...opts, signal }));
}

/**
 * Runs one engine call on its own signal that follows `parent`: the engine runs many requests at
 * once on it, more than Node's default of 10 abort listeners before it warns. The link to a
 * long-lived parent (a controller's) is removed afterwards.
 */
async function withCallSignal<T>(parent: AbortSignal | undefined, fn: (signal: AbortSignal | undefined) => Promise<T>): Promise<T> {
  if (!parent) return fn(undefined);
  const controller = new AbortController();
  setMaxListeners(200, controller.signal);
  const onAbort = (): void => controller.abort(parent.reason);
  if (parent.aborted) onAbort();
  else parent.addEventListener('abort', onAbort, { once: true });
  try {
    return await fn(controller.signal);
  } finally {
    parent.removeEventListener('abort', onAbort);
  }
}
