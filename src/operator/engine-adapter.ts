/**
 * The controller's InstallEngine (engine-seam.ts) over the apply engine meshctl install uses
 * (src/install/apply/engine.ts): one apply loop for both. The operator applies with the field
 * manager `mesh-operator`, checks readiness once without waiting (readiness timeout 0: a component
 * not ready yet is `Reconciling` and the controller requeues) and prunes what the spec no longer
 * renders. Apply failures, which the engine reports per component, become an error here so that
 * the controller retries with backoff.
 */
import { setMaxListeners } from 'node:events';
import type { KubeClient } from '../kube/client.js';
import { reconcileInstallation, uninstallInstallation, type ComponentResult } from '../install/apply/engine.js';
import type { ComponentManifest } from '../install/render/types.js';
import type { EngineReconcileResult, InstallEngine, InstallationRef } from './engine-seam.js';
import { OPERATOR_FIELD_MANAGER } from './names.js';

/** `Deployment ns/name` → `Deployment`. */
const kindOf = (display: string): string => display.split(' ', 1)[0];

export class InstallFailedError extends Error {
  constructor(readonly errors: readonly string[]) {
    super(errors.join('; '));
    this.name = 'InstallFailedError';
  }
}

function health(c: ComponentResult) {
  const objects = c.created.length + c.updated.length + c.unchanged.length;
  return c.status === 'Healthy' ? { ready: true, objects } : { ready: false, objects, message: c.notReady.join('; ') || c.errors.join('; ') || c.status };
}

/**
 * Runs one engine call on its own signal that follows `parent`: the engine runs many requests at
 * once on it, more than Node's default of 10 abort listeners before it warns. The link to the
 * long-lived parent is removed afterwards.
 */
async function withCallSignal<T>(parent: AbortSignal | undefined, fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const controller = new AbortController();
  setMaxListeners(200, controller.signal);
  const onAbort = (): void => controller.abort(parent?.reason);
  if (parent?.aborted) onAbort();
  else parent?.addEventListener('abort', onAbort, { once: true });
  try {
    return await fn(controller.signal);
  } finally {
    parent?.removeEventListener('abort', onAbort);
  }
}

export function createEngineAdapter(client: KubeClient, opts: { readonly fieldManager?: string } = {}): InstallEngine {
  const fieldManager = opts.fieldManager ?? OPERATOR_FIELD_MANAGER;
  return {
    async reconcile(manifests: readonly ComponentManifest[], ref: InstallationRef): Promise<EngineReconcileResult> {
      const result = await withCallSignal(ref.signal, (signal) =>
        reconcileInstallation(client, manifests, { owner: ref.owner, revision: ref.revision, readinessTimeoutMs: 0, fieldManager, signal }),
      );
      const errors = result.components.flatMap((c) => c.errors.map((e) => `${c.component}: ${e}`));
      if (errors.length > 0) throw new InstallFailedError(errors);
      const components: EngineReconcileResult['components'] = {};
      for (const c of result.components) components[c.component] = health(c);
      return {
        components,
        changes: {
          created: result.components.flatMap((c) => c.created.map(kindOf)),
          updated: result.components.flatMap((c) => c.updated.map(kindOf)),
          pruned: result.components.flatMap((c) => c.pruned.map(kindOf)),
        },
        owned: result.components.reduce((n, c) => n + c.created.length + c.updated.length + c.unchanged.length, 0),
      };
    },
    async uninstall(ref: InstallationRef) {
      const result = await withCallSignal(ref.signal, (signal) => uninstallInstallation(client, { owner: ref.owner, revision: ref.revision, signal }));
      if (result.errors.length > 0) throw new InstallFailedError(result.errors);
      return { deleted: result.deleted.map(kindOf) };
    },
  };
}
