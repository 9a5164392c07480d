/**
 * Shapes shared by the render functions: a Kubernetes object, the components of an install and
 * what rendering one component gives.
 */

/** A Kubernetes object as rendered or read: the fields every object has, and anything else. */
export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    [field: string]: unknown;
  };
  [field: string]: unknown;
}

/** Components in dependency order; the names are the values of the component label. */
export const COMPONENT_NAMES = ['Base', 'Meshd', 'IngressGateways', 'EgressGateways'] as const;
export type ComponentName = (typeof COMPONENT_NAMES)[number];

export interface ComponentManifest {
  readonly component: ComponentName;
  /** Sorted by kind order, then namespace and name. */
  readonly objects: readonly K8sObject[];
}

/** Who owns the rendered objects (ownership labels): the operator CR, or `installed-state` for meshctl. */
export interface Owner {
  readonly name: string;
  readonly namespace: string;
}
