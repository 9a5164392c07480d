/**
 * What the cluster holds of installations: the objects carrying the ownership labels (listed per
 * kind across all namespaces with a label selector, so unlabelled objects are never seen), and
 * which installations share a control-plane namespace.
 *
 * An installation is an owner (the MeshOperator `installed-state[-R]` of meshctl, or the operator's
 * MeshOperator resource) and a revision. Installations in one namespace share the Base component's
 * objects (namespace, service accounts, reader role, validation webhook): the last one applied
 * carries the labels. So a Base object is removed only when no other installation remains in its
 * owner namespace; `installationsIn` finds them from the non-Base objects (whose names carry the
 * revision) and from the MeshOperator objects of the namespace.
 */
import type { KubeClient } from '../../kube/client.js';
import { isNotFound } from '../../kube/errors.js';
import { INSTALL_API_VERSION, MESH_OPERATOR_KIND } from '../api.js';
import { COMPONENT_LABEL, OWNING_RESOURCE_LABEL, OWNING_RESOURCE_NAMESPACE_LABEL, REVISION_LABEL } from '../labels.js';
import type { K8sObject } from '../render/types.js';
import { revisionLabelOf, type KindRef } from './objects.js';

/** An object read from the cluster, with apiVersion and kind always set. */
export type LiveObject = K8sObject & { metadata: K8sObject['metadata'] & { resourceVersion?: string; deletionTimestamp?: string } };

/** Objects of `kinds` matching `selector`, in all namespaces. Kinds the server does not serve are skipped. */
export async function listLabelled(client: KubeClient, kinds: readonly KindRef[], selector: string, signal?: AbortSignal): Promise<LiveObject[]> {
  const lists = await Promise.all(
    kinds.map(async (k) => {
      try {
        const list = await client.list<LiveObject>(k.apiVersion, k.kind, { labelSelector: selector, signal });
        // List items come without apiVersion and kind.
        return list.items.map((o) => ({ ...o, apiVersion: k.apiVersion, kind: k.kind }));
      } catch (err) {
        if (isNotFound(err)) return [];
        throw err;
      }
    }),
  );
  return lists.flat();
}

/** `owner|revision`: the key of an installation within its owner namespace. */
export function installationKey(owner: string, revision: string | undefined): string {
  return `${owner}|${revisionLabelOf(revision)}`;
}

/** `installed-state-canary (revision canary)`: an installation key for people. */
export function describeInstallation(key: string): string {
  const bar = key.lastIndexOf('|');
  return bar < 0 ? key : `${key.slice(0, bar)} (revision ${key.slice(bar + 1)})`;
}

/** Key of the installation that labelled `o` (undefined when unlabelled). */
export function installationOf(o: K8sObject): string | undefined {
  const owner = o.metadata.labels?.[OWNING_RESOURCE_LABEL];
  return owner ? installationKey(owner, o.metadata.labels?.[REVISION_LABEL]) : undefined;
}

const PROBE_KINDS: readonly KindRef[] = [
  { apiVersion: 'apps/v1', kind: 'Deployment' },
  { apiVersion: 'v1', kind: 'ConfigMap' },
  { apiVersion: 'v1', kind: 'Service' },
];

/** The installations whose owner lives in `namespace`: keys `owner|revision`. */
export async function installationsIn(client: KubeClient, namespace: string, signal?: AbortSignal): Promise<Set<string>> {
  const out = new Set<string>();
  const selector = `${OWNING_RESOURCE_NAMESPACE_LABEL}=${namespace},${COMPONENT_LABEL}!=Base`;
  for (const o of await listLabelled(client, PROBE_KINDS, selector, signal)) {
    if (o.metadata.deletionTimestamp) continue;
    const key = installationOf(o);
    if (key) out.add(key);
  }
  try {
    const list = await client.list<{ metadata?: { name?: string; deletionTimestamp?: string }; spec?: { revision?: string } }>(INSTALL_API_VERSION, MESH_OPERATOR_KIND, { namespace, signal });
    for (const o of list.items) if (o.metadata?.name && !o.metadata.deletionTimestamp) out.add(installationKey(o.metadata.name, o.spec?.revision));
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
  return out;
}

/**
 * Memoized "does another installation than `self` live in this namespace?" for one operation.
 * `self` may name several installations (all being removed).
 */
export function sharingChecker(client: KubeClient, self: ReadonlySet<string>, signal?: AbortSignal): (namespace: string) => Promise<string[]> {
  const cache = new Map<string, Promise<string[]>>();
  return (namespace) => {
    let hit = cache.get(namespace);
    if (!hit) {
      hit = installationsIn(client, namespace, signal).then((all) => [...all].filter((k) => !self.has(k)).sort());
      cache.set(namespace, hit);
    }
    return hit;
  };
}
