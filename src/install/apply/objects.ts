/**
 * Naming and identity of the objects the apply engine handles: a reference for the Kubernetes
 * client, a name for people (`Deployment mesh-system/meshd`, `ClusterRole mesh-reader`), a
 * version-independent identity for set comparisons (the render and the cluster may name a kind by
 * different versions), the label selectors of an installation, and the kinds an installation can
 * own (listed when pruning and uninstalling).
 */
import type { ObjectRef } from '../../kube/client.js';
import { splitApiVersion } from '../../kube/discovery.js';
import {
  COMPONENT_LABEL,
  DEFAULT_REVISION_LABEL_VALUE,
  OWNING_RESOURCE_LABEL,
  OWNING_RESOURCE_NAMESPACE_LABEL,
  REVISION_LABEL,
} from '../labels.js';
import { COMPONENT_NAMES, type ComponentName, type Owner } from '../render/types.js';
import { KIND_ORDER } from '../render/order.js';

/** What every object the engine reads or writes has. */
export interface ObjectLike {
  readonly apiVersion?: string;
  readonly kind?: string;
  readonly metadata?: {
    readonly name?: string;
    readonly namespace?: string;
    readonly labels?: Readonly<Record<string, string>>;
    readonly resourceVersion?: string;
  };
}

export const CRD_KIND = 'CustomResourceDefinition';
export const CRD_API_VERSION = 'apiextensions.k8s.io/v1';

export function refOf(o: ObjectLike): ObjectRef {
  return { apiVersion: o.apiVersion ?? '', kind: o.kind ?? '', name: o.metadata?.name ?? '', namespace: o.metadata?.namespace || undefined };
}

function toRef(o: ObjectLike | ObjectRef): ObjectRef {
  return 'name' in o && typeof o.name === 'string' ? o : refOf(o as ObjectLike);
}

/** `Deployment mesh-system/meshd`, or `ClusterRole name` for cluster-scoped objects. */
export function displayName(o: ObjectLike | ObjectRef): string {
  const r = toRef(o);
  return `${r.kind} ${r.namespace ? `${r.namespace}/` : ''}${r.name}`;
}

/** `group/Kind/namespace/name`: the same object whatever version names it. */
export function identity(o: ObjectLike | ObjectRef): string {
  const r = toRef(o);
  return `${splitApiVersion(r.apiVersion).group}/${r.kind}/${r.namespace ?? ''}/${r.name}`;
}

/** The revision label value of a revision: `default` for the empty (or `default`) revision. */
export function revisionLabelOf(revision: string | undefined): string {
  return revision && revision !== DEFAULT_REVISION_LABEL_VALUE ? revision : DEFAULT_REVISION_LABEL_VALUE;
}

/** Selector of the objects of one installation: its owner and revision. */
export function installationSelector(owner: Owner, revision: string | undefined): string {
  return [
    `${OWNING_RESOURCE_LABEL}=${owner.name}`,
    `${OWNING_RESOURCE_NAMESPACE_LABEL}=${owner.namespace}`,
    `${REVISION_LABEL}=${revisionLabelOf(revision)}`,
  ].join(',');
}

/** Selector of every object the installer labelled (any owner, any revision). */
export const ANY_INSTALLATION_SELECTOR = OWNING_RESOURCE_LABEL;

export function componentOf(o: ObjectLike): ComponentName | undefined {
  const c = o.metadata?.labels?.[COMPONENT_LABEL];
  return (COMPONENT_NAMES as readonly string[]).includes(c ?? '') ? (c as ComponentName) : undefined;
}

export interface KindRef {
  readonly apiVersion: string;
  readonly kind: string;
}

/** Every kind that rendering produces (src/install/render/order.ts KIND_ORDER), with its API version. */
export const OWNED_KINDS: readonly KindRef[] = [
  { apiVersion: CRD_API_VERSION, kind: CRD_KIND },
  { apiVersion: 'v1', kind: 'Namespace' },
  { apiVersion: 'v1', kind: 'ServiceAccount' },
  { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole' },
  { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding' },
  { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role' },
  { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding' },
  { apiVersion: 'v1', kind: 'ConfigMap' },
  { apiVersion: 'v1', kind: 'Secret' },
  { apiVersion: 'v1', kind: 'Service' },
  { apiVersion: 'apps/v1', kind: 'Deployment' },
  { apiVersion: 'autoscaling/v2', kind: 'HorizontalPodAutoscaler' },
  { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget' },
  { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'MutatingWebhookConfiguration' },
  { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingWebhookConfiguration' },
];

/** OWNED_KINDS plus any other kind of `objects` (one entry per group and kind). */
export function kindsOf(objects: readonly ObjectLike[]): KindRef[] {
  const out = new Map<string, KindRef>();
  const add = (k: KindRef) => {
    const key = `${splitApiVersion(k.apiVersion).group}/${k.kind}`;
    if (!out.has(key)) out.set(key, k);
  };
  OWNED_KINDS.forEach(add);
  for (const o of objects) if (o.apiVersion && o.kind) add({ apiVersion: o.apiVersion, kind: o.kind });
  return [...out.values()];
}

function kindRank(kind: string): number {
  const i = KIND_ORDER.indexOf(kind);
  return i < 0 ? KIND_ORDER.length : i;
}

/**
 * The order to delete in: the reverse of the install order. Components last-installed first
 * (gateways, meshd, base; unlabelled last), and within a component webhooks before Deployments
 * before RBAC, CRDs at the very end.
 */
export function deletionOrder<T extends ObjectLike>(objects: readonly T[]): T[] {
  const compRank = (o: ObjectLike) => {
    const c = componentOf(o);
    return c ? COMPONENT_NAMES.length - 1 - COMPONENT_NAMES.indexOf(c) : COMPONENT_NAMES.length;
  };
  return [...objects].sort((a, b) => {
    const crdA = a.kind === CRD_KIND ? 1 : 0;
    const crdB = b.kind === CRD_KIND ? 1 : 0;
    return crdA - crdB || compRank(a) - compRank(b) || kindRank(b.kind ?? '') - kindRank(a.kind ?? '') || displayName(a).localeCompare(displayName(b));
  });
}
