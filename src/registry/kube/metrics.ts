/**
 * The metrics the Cluster registry reports, as a small interface so the registry does not depend on
 * prom-client; `clusterRegistryMetrics` binds it to the daemon's metrics (src/metrics/metrics.ts).
 * disc_services and disc_endpoint_not_ready are not here: the model sets them from the aggregate view,
 * which includes this registry's services and its not-ready (unhealthy) endpoints.
 */
import type { Metrics } from '../../metrics/metrics.js';

export type ClusterResourceType = 'Services' | 'EndpointSlices' | 'Endpoints' | 'Pods' | 'Nodes' | 'Namespaces' | 'WorkloadEntries';
export type ClusterEventType = 'add' | 'update' | 'delete';

export interface ClusterRegistryMetrics {
  /** disc_cluster_reg_events{type,event}: one per informer or WorkloadEntry event handled. */
  registryEvent(type: ClusterResourceType, event: ClusterEventType): void;
  /** disc_cluster_endpoints_pending_pod: backend addresses held back until their pod is in the cache. */
  pendingPodEndpoints(count: number): void;
  /** endpoint_no_pod: backend addresses without a pod reference, now. */
  endpointsWithoutPod(count: number): void;
  /** disc_cluster_endpoints_with_no_pods: backend addresses without a pod reference, each counted when it appears. */
  endpointsWithNoPodsAdded(count: number): void;
  /** disc_no_ip: pods (not finished) that have no IP address. */
  podsWithoutIp(count: number): void;
}

/** Reports nothing; the default when no metrics are given. */
export const NO_CLUSTER_METRICS: ClusterRegistryMetrics = Object.freeze({
  registryEvent: () => undefined,
  pendingPodEndpoints: () => undefined,
  endpointsWithoutPod: () => undefined,
  endpointsWithNoPodsAdded: () => undefined,
  podsWithoutIp: () => undefined,
});

export function clusterRegistryMetrics(m: Metrics): ClusterRegistryMetrics {
  return {
    registryEvent: (type, event) => m.clusterRegistryEvents.inc({ type, event }),
    pendingPodEndpoints: (count) => m.clusterEndpointsPendingPod.set(count),
    endpointsWithoutPod: (count) => m.endpointNoPod.set(count),
    endpointsWithNoPodsAdded: (count) => {
      if (count > 0) m.clusterEndpointsWithNoPods.inc(count);
    },
    podsWithoutIp: (count) => m.noIp.set(count),
  };
}
