/**
 * The CustomResourceDefinition of `install.mesh.io/v1alpha1` MeshOperator. The config-kind CRDs
 * come from `crds/` (generated from the protos) and are rendered by the Base component; this one
 * is not among them, so meshctl applies it itself, before anything else, because it stores what
 * it installed in a MeshOperator object (state.ts) and the operator controller reads its input
 * from MeshOperator objects. The schema is open (`x-kubernetes-preserve-unknown-fields`): the spec
 * is checked by meshctl and the controller (src/install/api.ts), which give field-level errors the
 * API server could not.
 */
import type { KubeClient } from '../../kube/client.js';
import { INSTALL_GROUP, INSTALL_VERSION, MESH_OPERATOR_KIND } from '../api.js';
import { COMPONENT_LABEL, OWNING_RESOURCE_LABEL, OWNING_RESOURCE_NAMESPACE_LABEL, REVISION_LABEL } from '../labels.js';
import type { K8sObject, Owner } from '../render/types.js';
import { CRD_API_VERSION, CRD_KIND, revisionLabelOf } from './objects.js';
import { waitForReady } from './readiness.js';

export const MESH_OPERATOR_PLURAL = 'meshoperators';
export const MESH_OPERATOR_CRD_NAME = `${MESH_OPERATOR_PLURAL}.${INSTALL_GROUP}`;

const openObject = { type: 'object', 'x-kubernetes-preserve-unknown-fields': true };

/** The CRD, labelled like the Base component's CRDs of the installation `owner`/`revision`. */
export function meshOperatorCrd(owner: Owner, revision: string): K8sObject {
  return {
    apiVersion: CRD_API_VERSION,
    kind: CRD_KIND,
    metadata: {
      name: MESH_OPERATOR_CRD_NAME,
      labels: {
        [REVISION_LABEL]: revisionLabelOf(revision),
        [OWNING_RESOURCE_LABEL]: owner.name,
        [OWNING_RESOURCE_NAMESPACE_LABEL]: owner.namespace,
        [COMPONENT_LABEL]: 'Base',
      },
    },
    spec: {
      group: INSTALL_GROUP,
      names: { kind: MESH_OPERATOR_KIND, listKind: `${MESH_OPERATOR_KIND}List`, plural: MESH_OPERATOR_PLURAL, singular: 'meshoperator', shortNames: ['mop'] },
      scope: 'Namespaced',
      versions: [
        {
          name: INSTALL_VERSION,
          served: true,
          storage: true,
          subresources: { status: {} },
          additionalPrinterColumns: [
            { name: 'Revision', type: 'string', jsonPath: '.spec.revision' },
            { name: 'Profile', type: 'string', jsonPath: '.spec.profile' },
            { name: 'Phase', type: 'string', jsonPath: '.status.phase' },
            { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
          ],
          schema: {
            openAPIV3Schema: {
              type: 'object',
              description: 'A mesh installation: the spec is the install API of meshctl (profile, components, values, meshConfig).',
              properties: { spec: openObject, status: openObject },
            },
          },
        },
      ],
    },
  };
}

export interface EnsureCrdOptions {
  readonly fieldManager: string;
  readonly dryRun?: boolean;
  readonly timeoutMs: number;
  readonly signal?: AbortSignal;
}

/**
 * Applies the MeshOperator CRD and waits until it is established and served. Throws the API
 * error when it cannot be applied (e.g. Forbidden), and an Error naming it when it does not get
 * established in time.
 */
export async function ensureMeshOperatorCrd(client: KubeClient, owner: Owner, revision: string, opts: EnsureCrdOptions): Promise<void> {
  const crd = meshOperatorCrd(owner, revision);
  await client.applyObject(crd, { fieldManager: opts.fieldManager, force: true, dryRun: opts.dryRun, signal: opts.signal });
  if (opts.dryRun) return;
  const notReady = await waitForReady(client, [{ apiVersion: CRD_API_VERSION, kind: CRD_KIND, name: MESH_OPERATOR_CRD_NAME }], { timeoutMs: Math.max(opts.timeoutMs, 1000), signal: opts.signal });
  if (notReady.length > 0) throw new Error(`${notReady.join('; ')}`);
  client.discovery.invalidate(`${INSTALL_GROUP}/${INSTALL_VERSION}`);
}
