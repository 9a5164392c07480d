/**
 * The layout of remote-cluster Secrets (docs/adr/0018-remote-clusters.md): Secrets in
 * `--clusterRegistriesNamespace` labelled `mesh.io/multiCluster=true`; every data key is a cluster
 * ID and its value that cluster's kubeconfig.
 */
import { createHash } from 'node:crypto';
import type { V1Secret } from '@kubernetes/client-node';

export const LABEL_MULTI_CLUSTER = 'mesh.io/multiCluster';
export const MULTI_CLUSTER_SELECTOR = `${LABEL_MULTI_CLUSTER}=true`;

/** One cluster named by a Secret. */
export interface ClusterKubeconfig {
  readonly clusterId: string;
  readonly kubeconfig: string;
  /** Digest of the kubeconfig, to tell a changed one. */
  readonly digest: string;
}

/** The clusters of a Secret, in key order (values decoded from base64). */
export function clustersOfSecret(secret: V1Secret): ClusterKubeconfig[] {
  const data = secret.data ?? {};
  return Object.keys(data)
    .sort()
    .map((clusterId) => {
      const kubeconfig = Buffer.from(data[clusterId] ?? '', 'base64').toString('utf8');
      return { clusterId, kubeconfig, digest: createHash('sha256').update(kubeconfig).digest('hex') };
    });
}
