/**
 * What the controller asks of the apply engine, in the controller's terms: apply one
 * installation's rendered manifests (pruning what the spec no longer renders) and say how ready
 * each component is; uninstall an installation. src/operator/engine-adapter.ts implements it with
 * the engine meshctl install uses (src/install/apply/engine.ts), so the operator and the CLI share
 * one apply loop.
 */
import type { ComponentManifest, ComponentName, Owner } from '../install/render/types.js';

export interface ComponentHealth {
  readonly ready: boolean;
  /** Why the component is not ready (the objects that are not). */
  readonly message?: string;
  /** Objects the component owns after the apply. */
  readonly objects: number;
}

/** Kinds of the objects a step touched, one entry per object (for the resource metrics). */
export interface ChangeCounts {
  readonly created: readonly string[];
  readonly updated: readonly string[];
  readonly pruned: readonly string[];
}

export interface EngineReconcileResult {
  readonly components: Partial<Record<ComponentName, ComponentHealth>>;
  readonly changes: ChangeCounts;
  /** Objects the installation owns now. */
  readonly owned: number;
}

export interface InstallationRef {
  readonly owner: Owner;
  /** Control-plane revision ('' for the default one). */
  readonly revision: string;
  readonly signal?: AbortSignal;
}

export interface InstallEngine {
  reconcile(manifests: readonly ComponentManifest[], ref: InstallationRef): Promise<EngineReconcileResult>;
  /** Deletes every object of the installation; returns the kinds of the deleted objects. */
  uninstall(ref: InstallationRef): Promise<{ readonly deleted: readonly string[] }>;
}
