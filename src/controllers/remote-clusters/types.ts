/**
 * The seam between the remote-cluster controller (./controller.ts) and whoever builds a cluster's
 * watches and registry (src/bootstrap/cluster.ts `remoteClusterFactory`): a remote cluster is a
 * registry plus a lifecycle, built from a cluster ID and kubeconfig text.
 */
import type { ServiceRegistry } from '../../model/registry.js';
import type { ExportedServices } from '../../registry/aggregate.js';

export interface RemoteCluster {
  readonly clusterId: string;
  /** API server URL, for logs. */
  readonly server: string;
  /** The cluster's Kubernetes registry (services and endpoints carry `clusterId`). */
  readonly registry: ServiceRegistry;
  /** The cluster's ServiceExports, when MCS service discovery is on. */
  readonly exported?: ExportedServices;
  /** Starts the watches; resolves once they synced and the registry holds the cluster's services. Rejects when stopped first. */
  start(): Promise<void>;
  /** Stops the watches and closes the client. */
  stop(): Promise<void>;
}

/**
 * Builds (does not start) a remote cluster. Throws when the kubeconfig is unusable; the message is
 * the reason. `source` names the kubeconfig in messages (`secret mesh-system/x key c2`).
 */
export type RemoteClusterFactory = (clusterId: string, kubeconfig: string, source: string) => Promise<RemoteCluster>;
