/**
 * The control plane's version as `meshctl version` reports it: the meshd Deployments (label
 * `app=meshd`, and `mesh.io/rev=<revision>` with `-r`) in the mesh namespace, each with its
 * revision and the version of its image (the tag after the last `:`). Read from the cluster of
 * the global flags; the client module loads only when this runs.
 */
import { REVISION_LABEL } from '../../install/labels.js';
import type { KubeObject } from '../../kube/types.js';
import type { GlobalOptions } from './global-flags.js';
import { kubeClientFor } from './kube.js';

export interface ControlPlaneVersion {
  /** `<namespace>/<deployment>` */
  readonly deployment: string;
  readonly revision: string;
  readonly version: string;
  readonly readyReplicas: number;
}

interface Deployment extends KubeObject {
  readonly spec?: { readonly template?: { readonly spec?: { readonly containers?: ReadonlyArray<{ readonly name: string; readonly image?: string }> } } };
  readonly status?: { readonly readyReplicas?: number };
}

/** The version part of an image reference: the tag, or the digest, or `unknown`. */
export function imageVersion(image: string | undefined): string {
  if (!image) return 'unknown';
  const at = image.indexOf('@');
  if (at >= 0) return image.slice(at + 1);
  const slash = image.lastIndexOf('/');
  const colon = image.lastIndexOf(':');
  return colon > slash ? image.slice(colon + 1) : 'latest';
}

export async function controlPlaneVersions(
  globals: Pick<GlobalOptions, 'context' | 'clusterconfig' | 'meshNamespace' | 'vklog' | 'diagnostics'>,
  revision: string,
  env: Readonly<Record<string, string | undefined>>,
): Promise<ControlPlaneVersion[]> {
  const client = await kubeClientFor(globals, env);
  try {
    const labelSelector = revision ? `app=meshd,${REVISION_LABEL}=${revision}` : 'app=meshd';
    const list = await client.list<Deployment>('apps/v1', 'Deployment', { namespace: globals.meshNamespace, labelSelector });
    return list.items
      .map((d) => {
        const containers = d.spec?.template?.spec?.containers ?? [];
        const main = containers.find((c) => c.name === 'discovery') ?? containers[0];
        return {
          deployment: `${d.metadata?.namespace ?? ''}/${d.metadata?.name ?? ''}`,
          revision: d.metadata?.labels?.[REVISION_LABEL] ?? 'default',
          version: imageVersion(main?.image),
          readyReplicas: d.status?.readyReplicas ?? 0,
        };
      })
      .sort((a, b) => a.deployment.localeCompare(b.deployment));
  } finally {
    client.transport.close();
  }
}
