/**
 * Names of the operator controller (CONVENTIONS.md, spec part 2 "operator"): its namespace, the
 * objects `meshctl operator init` creates, the labels that find them again, the finalizer on
 * MeshOperator resources, the leader-election Lease and the field manager of its writes.
 */
import { INSTALL_GROUP } from './api.js';
import { VERSION_ANNOTATION } from './apply/state.js';
import { InstallError } from './errors.js';
import type { KubeObjectMeta } from '../kube/types.js';

export const OPERATOR_NAME = 'mesh-operator';
export const DEFAULT_OPERATOR_NAMESPACE = 'mesh-operator';
export const DEFAULT_WATCHED_NAMESPACES = 'mesh-system';
/** Monitoring port of the controller (CONVENTIONS.md: 15014). */
export const DEFAULT_MONITORING_ADDR = ':15014';
/** Field manager of everything the controller applies or patches. */
export const OPERATOR_FIELD_MANAGER = 'mesh-operator';
/** Field manager of `meshctl tag set`. */
export const MESHCTL_FIELD_MANAGER = 'meshctl';
/** Finalizer on a MeshOperator: the controller uninstalls before the resource goes away. */
export const OPERATOR_FINALIZER = `${INSTALL_GROUP}/finalizer`;
/** Field manager of the controller manifest that `meshctl operator init` applies. */
export const OPERATOR_INIT_FIELD_MANAGER = 'meshctl-operator';
/** Annotation that makes the controller leave a MeshOperator alone (value `true`). */
export const IGNORE_ANNOTATION = `${INSTALL_GROUP}/ignore-reconcile`;
/** Label on every object of the controller manifest; its value is the operator revision (`default` for none). */
export const OPERATOR_MANAGED_LABEL = 'operator.mesh.io/managed';

/** `mesh-operator` or `mesh-operator-<revision>`. */
export function operatorName(revision: string): string {
  return revision ? `${OPERATOR_NAME}-${revision}` : OPERATOR_NAME;
}

/** Lease of leader election: `mesh-operator-lock`, per operator revision `mesh-operator-lock-<revision>`. */
export function leaseName(revision: string): string {
  return revision ? `${OPERATOR_NAME}-lock-${revision}` : `${OPERATOR_NAME}-lock`;
}

/** The empty revision for '' and `default`, else the revision. */
export function normalRevision(revision: string | undefined): string {
  return revision === undefined || revision === 'default' ? '' : revision;
}

/** Comma-separated namespaces, trimmed, each once; an InstallError (a user error) names a bad one. */
export function parseNamespaceList(text: string, flag = '--watchedNamespaces'): string[] {
  const out: string[] = [];
  for (const raw of text.split(',')) {
    const ns = raw.trim();
    if (ns === '') continue;
    if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(ns) || ns.length > 63) {
      throw new InstallError(`${flag}: "${ns}" is not a valid namespace name (lower-case letters, digits and "-", at most 63 characters)`);
    }
    if (!out.includes(ns)) out.push(ns);
  }
  if (out.length === 0) throw new InstallError(`${flag}: at least one namespace is required`);
  return out;
}

/** A MeshOperator resource as read from the cluster (spec and status unchecked). */
export interface MeshOperatorLike {
  readonly apiVersion?: string;
  readonly kind?: string;
  readonly metadata?: KubeObjectMeta;
  readonly spec?: unknown;
}

/** The control-plane revision a resource asks for ('' default), read without validation. */
export function requestedRevision(cr: MeshOperatorLike): string {
  const spec = cr.spec as { revision?: unknown } | undefined;
  return typeof spec?.revision === 'string' ? normalRevision(spec.revision) : '';
}

/**
 * meshctl's record of a CLI install (`installed-state[-R]`, annotated with the meshctl version),
 * or a resource annotated `install.mesh.io/ignore-reconcile: "true"`: not the controller's to reconcile.
 */
export function ignored(cr: MeshOperatorLike): boolean {
  const a = cr.metadata?.annotations ?? {};
  return a[VERSION_ANNOTATION] !== undefined || a[IGNORE_ANNOTATION] === 'true';
}
