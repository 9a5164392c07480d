/**
 * Label keys from CONVENTIONS.md that more than one layer reads or writes (the installer puts them on
 * namespaces, the registries read them back): one definition each.
 */

/** Network of a cluster's workloads: on the control-plane namespace, a workload's namespace, or the pod. */
export const LABEL_NETWORK = 'topology.mesh.io/network';
