/**
 * The order of rendered objects: by kind (what must exist first comes first), then namespace, then
 * name. Kinds not in the list follow, by name.
 */
import type { K8sObject } from './types.js';

export const KIND_ORDER: readonly string[] = [
  'CustomResourceDefinition',
  'Namespace',
  'ServiceAccount',
  'ClusterRole',
  'ClusterRoleBinding',
  'Role',
  'RoleBinding',
  'ConfigMap',
  'Secret',
  'Service',
  'Deployment',
  'HorizontalPodAutoscaler',
  'PodDisruptionBudget',
  'MutatingWebhookConfiguration',
  'ValidatingWebhookConfiguration',
];

function kindRank(kind: string): number {
  const i = KIND_ORDER.indexOf(kind);
  return i < 0 ? KIND_ORDER.length : i;
}

function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

export function compareObjects(a: K8sObject, b: K8sObject): number {
  return (
    kindRank(a.kind) - kindRank(b.kind) ||
    compareText(a.kind, b.kind) ||
    compareText(a.metadata.namespace ?? '', b.metadata.namespace ?? '') ||
    compareText(a.metadata.name, b.metadata.name)
  );
}

/** A sorted copy. */
export function sortObjects(objects: readonly K8sObject[]): K8sObject[] {
  return [...objects].sort(compareObjects);
}
