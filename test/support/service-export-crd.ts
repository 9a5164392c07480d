/**
 * A minimal CustomResourceDefinition for multi-cluster ServiceExports
 * (multicluster.x-k8s.io/v1alpha1, namespaced, any content), so tests of the MCS auto-export can
 * run on the local control plane without installing an MCS implementation.
 */
import type { KubeClient } from '../../src/kube/client.js';
import type { KubeObject } from '../../src/kube/types.js';

interface Crd extends KubeObject {
  readonly status?: { readonly conditions?: ReadonlyArray<{ readonly type: string; readonly status: string }> };
}

export const SERVICE_EXPORT_CRD: Crd & Record<string, unknown> = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'serviceexports.multicluster.x-k8s.io' },
  spec: {
    group: 'multicluster.x-k8s.io',
    scope: 'Namespaced',
    names: { plural: 'serviceexports', singular: 'serviceexport', kind: 'ServiceExport', listKind: 'ServiceExportList' },
    versions: [
      {
        name: 'v1alpha1',
        served: true,
        storage: true,
        subresources: { status: {} },
        schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
      },
    ],
  },
};

/** Applies the CRD (server-side apply) and waits until it is Established and served. */
export async function applyServiceExportCrd(client: KubeClient, timeoutMs = 60_000): Promise<void> {
  await client.applyObject(SERVICE_EXPORT_CRD, { fieldManager: 'mesh-tests', force: true });
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const crd = await client.get<Crd>({ apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', name: 'serviceexports.multicluster.x-k8s.io' });
    const established = crd.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True');
    const served = established && (await client.resource('multicluster.x-k8s.io/v1alpha1', 'ServiceExport').then(() => true, () => false));
    if (served) return;
    if (Date.now() > deadline) throw new Error('the ServiceExport CRD was not established in time');
    await new Promise((r) => setTimeout(r, 200));
  }
}
