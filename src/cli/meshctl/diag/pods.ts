/**
 * Finding the pod a diagnosis command names (`[<type>/]<name>[.<namespace>]`): a pod by name, or the
 * first running pod of a Deployment or Service (by its selector). Errors name what was not found.
 */
import type { KubeClient } from '../../../kube/client.js';
import type { KubeObject } from '../../../kube/types.js';
import { CliError } from '../../runner.js';
import type { PodRef } from './flags.js';

export interface Pod extends KubeObject {
  readonly spec?: {
    readonly containers?: ReadonlyArray<{ readonly name: string; readonly image?: string; readonly ports?: ReadonlyArray<{ readonly containerPort: number; readonly name?: string }> }>;
    readonly serviceAccountName?: string;
    readonly nodeName?: string;
  };
  readonly status?: { readonly phase?: string; readonly podIP?: string; readonly containerStatuses?: ReadonlyArray<{ readonly name: string; readonly ready?: boolean }> };
}

interface Selecting extends KubeObject {
  readonly spec?: { readonly selector?: Readonly<Record<string, string>> & { readonly matchLabels?: Readonly<Record<string, string>> } };
}

export const selectorText = (labels: Readonly<Record<string, string>>): string =>
  Object.entries(labels)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');

/** The pod `ref` names; a CliError when there is none. */
export async function resolvePod(client: KubeClient, ref: PodRef): Promise<Pod> {
  if (ref.type === 'pod') {
    const pod = await client.find<Pod>({ apiVersion: 'v1', kind: 'Pod', namespace: ref.namespace, name: ref.name });
    if (!pod) throw new CliError(`pod ${ref.namespace}/${ref.name} not found`);
    return pod;
  }
  const kind = ref.type === 'deployment' ? { apiVersion: 'apps/v1', kind: 'Deployment' } : { apiVersion: 'v1', kind: 'Service' };
  const owner = await client.find<Selecting>({ ...kind, namespace: ref.namespace, name: ref.name });
  if (!owner) throw new CliError(`${ref.type} ${ref.namespace}/${ref.name} not found`);
  const selector = ref.type === 'deployment' ? owner.spec?.selector?.matchLabels : (owner.spec?.selector as Record<string, string> | undefined);
  if (!selector || Object.keys(selector).length === 0) throw new CliError(`${ref.type} ${ref.namespace}/${ref.name} selects no pods`);
  const pods = await client.list<Pod>('v1', 'Pod', { namespace: ref.namespace, labelSelector: selectorText(selector) });
  const pod = pods.items.find((p) => p.status?.phase === 'Running') ?? pods.items[0];
  if (!pod) throw new CliError(`${ref.type} ${ref.namespace}/${ref.name} has no pods`);
  return pod;
}
