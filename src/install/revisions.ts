/**
 * The revision-centric view of `meshctl x revision list|describe`: which control-plane revisions
 * are installed, read from the cluster by the revision label `mesh.io/rev` on meshd Deployments,
 * injector webhook configurations and gateway Deployments, with the tags that point at each
 * revision, the MeshOperator (or meshctl) installation that owns it, and what uses it.
 */
import type { KubeClient } from '../kube/client.js';
import type { KubeObject } from '../kube/types.js';
import { INSTALL_API_VERSION, MESH_OPERATOR_KIND } from './api.js';
import {
  COMPONENT_LABEL,
  DEFAULT_REVISION_LABEL_VALUE,
  INJECTION_NAMESPACE_LABEL,
  OWNING_RESOURCE_LABEL,
  OWNING_RESOURCE_NAMESPACE_LABEL,
  REVISION_LABEL,
} from './labels.js';
import { installedInjectors, listTags, TagError, type TagInfo } from './tags.js';
import { normalRevision } from './operator-names.js';

interface Deployment extends KubeObject {
  readonly spec?: { readonly replicas?: number; readonly template?: { readonly spec?: { readonly containers?: ReadonlyArray<{ readonly name?: string; readonly image?: string }> } } };
  readonly status?: { readonly readyReplicas?: number; readonly replicas?: number };
}

interface Pod extends KubeObject {
  readonly spec?: { readonly nodeName?: string };
  readonly status?: { readonly phase?: string; readonly podIP?: string; readonly conditions?: ReadonlyArray<{ readonly type: string; readonly status: string }> };
}

export interface WorkloadInfo {
  readonly namespace: string;
  readonly name: string;
  /** Component label value (Meshd, IngressGateways, EgressGateways). */
  readonly component: string;
  readonly ready: number;
  readonly replicas: number;
  readonly image: string;
}

export interface RevisionInfo {
  /** `default` for the default revision. */
  readonly revision: string;
  readonly tags: readonly string[];
  readonly meshd: readonly WorkloadInfo[];
  readonly gateways: readonly WorkloadInfo[];
  /** The injector webhook configuration, if installed. */
  readonly webhook?: string;
  /** `namespace/name` of the owning MeshOperator, or of meshctl's `installed-state[-R]`. */
  readonly owners: readonly string[];
  /** Control-plane version: the image tag of meshd. */
  readonly version?: string;
}

export interface PodInfo {
  readonly namespace: string;
  readonly name: string;
  readonly phase: string;
  readonly ready: boolean;
}

export interface RevisionDescription extends RevisionInfo {
  /** Spec of the owning MeshOperator resources (customizations), by `namespace/name`. */
  readonly customizations: Readonly<Record<string, unknown>>;
  /** Namespaces whose pods this revision injects (by revision label, tag, or `mesh-injection=enabled` for the default revision). */
  readonly namespaces: readonly string[];
  readonly controlPlanePods: readonly PodInfo[];
  readonly gatewayPods: readonly PodInfo[];
  /** With verbose: the pods of the injected namespaces. */
  readonly workloadPods?: readonly PodInfo[];
}

const labelsOf = (o: KubeObject): Readonly<Record<string, string>> => o.metadata?.labels ?? {};
const revOf = (o: KubeObject): string => labelsOf(o)[REVISION_LABEL] || DEFAULT_REVISION_LABEL_VALUE;

function workload(d: Deployment): WorkloadInfo {
  const image = d.spec?.template?.spec?.containers?.[0]?.image ?? '';
  return {
    namespace: d.metadata?.namespace ?? '',
    name: d.metadata?.name ?? '',
    component: labelsOf(d)[COMPONENT_LABEL] ?? '',
    ready: d.status?.readyReplicas ?? 0,
    replicas: d.spec?.replicas ?? d.status?.replicas ?? 0,
    image,
  };
}

function tagOfImage(image: string): string | undefined {
  const at = image.lastIndexOf(':');
  return at > image.lastIndexOf('/') && at >= 0 ? image.slice(at + 1) : undefined;
}

function ownerOf(o: KubeObject): string | undefined {
  const l = labelsOf(o);
  const name = l[OWNING_RESOURCE_LABEL];
  return name ? `${l[OWNING_RESOURCE_NAMESPACE_LABEL] ?? ''}/${name}` : undefined;
}

interface Builder {
  tags: string[];
  meshd: WorkloadInfo[];
  gateways: WorkloadInfo[];
  webhook?: string;
  owners: Set<string>;
}

/** Installed revisions, sorted (`default` first). */
export async function listRevisions(client: KubeClient): Promise<RevisionInfo[]> {
  const [meshd, gateways, injectors, tags] = await Promise.all([
    client.list<Deployment>('apps/v1', 'Deployment', { labelSelector: `app=meshd,${REVISION_LABEL}` }),
    client.list<Deployment>('apps/v1', 'Deployment', { labelSelector: `${COMPONENT_LABEL} in (IngressGateways,EgressGateways)` }),
    installedInjectors(client),
    listTags(client),
  ]);
  const byRev = new Map<string, Builder>();
  const get = (rev: string): Builder => {
    let b = byRev.get(rev);
    if (!b) byRev.set(rev, (b = { tags: [], meshd: [], gateways: [], owners: new Set() }));
    return b;
  };
  for (const d of meshd.items) {
    const b = get(revOf(d));
    b.meshd.push(workload(d));
    const owner = ownerOf(d);
    if (owner) b.owners.add(owner);
  }
  for (const d of gateways.items) {
    const b = get(revOf(d));
    b.gateways.push(workload(d));
    const owner = ownerOf(d);
    if (owner) b.owners.add(owner);
  }
  for (const [rev, w] of injectors) {
    const b = get(rev);
    b.webhook = w.metadata?.name;
    const owner = ownerOf(w);
    if (owner) b.owners.add(owner);
  }
  for (const t of tags) byRev.get(t.revision)?.tags.push(t.tag);
  const order = (a: string, b: string): number => (a === DEFAULT_REVISION_LABEL_VALUE ? -1 : b === DEFAULT_REVISION_LABEL_VALUE ? 1 : a < b ? -1 : a > b ? 1 : 0);
  return [...byRev.keys()].sort(order).map((revision) => {
    const b = byRev.get(revision) as Builder;
    const version = b.meshd.map((m) => tagOfImage(m.image)).find((t) => t !== undefined);
    return { revision, tags: b.tags.sort(), meshd: b.meshd, gateways: b.gateways, webhook: b.webhook, owners: [...b.owners].sort(), ...(version ? { version } : {}) };
  });
}

function podInfo(p: Pod): PodInfo {
  return {
    namespace: p.metadata?.namespace ?? '',
    name: p.metadata?.name ?? '',
    phase: p.status?.phase ?? 'Unknown',
    ready: p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false,
  };
}

/** One revision in detail. Throws TagError (a user error) when it is not installed. */
export async function describeRevision(client: KubeClient, revision: string, opts: { readonly verbose?: boolean } = {}): Promise<RevisionDescription> {
  const rev = normalRevision(revision) || DEFAULT_REVISION_LABEL_VALUE;
  const all = await listRevisions(client);
  const info = all.find((r) => r.revision === rev);
  if (!info) {
    throw new TagError(`revision "${rev}" is not installed (installed revisions: ${all.map((r) => r.revision).join(', ') || 'none'})`);
  }
  const customizations: Record<string, unknown> = {};
  for (const owner of info.owners) {
    const [namespace, name] = owner.split('/');
    const cr = await client.find<KubeObject & { spec?: unknown }>({ apiVersion: INSTALL_API_VERSION, kind: MESH_OPERATOR_KIND, namespace, name }).catch(() => undefined);
    if (cr) customizations[owner] = cr.spec ?? {};
  }
  const selectors = [`${REVISION_LABEL} in (${[rev, ...info.tags].join(',')})`];
  if (rev === DEFAULT_REVISION_LABEL_VALUE) selectors.push(`${INJECTION_NAMESPACE_LABEL}=enabled`);
  const nsLists = await Promise.all(selectors.map((labelSelector) => client.list('v1', 'Namespace', { labelSelector })));
  const namespaces = [...new Set(nsLists.flatMap((l) => l.items.map((n) => n.metadata?.name ?? '')))].sort();
  const podsOf = async (ns: string, labelSelector?: string): Promise<PodInfo[]> => (await client.list<Pod>('v1', 'Pod', { namespace: ns, labelSelector })).items.map(podInfo);
  const controlPlanePods = (await Promise.all([...new Set(info.meshd.map((m) => m.namespace))].map((ns) => podsOf(ns, `app=meshd,${REVISION_LABEL}=${rev}`)))).flat();
  const gatewayPods: PodInfo[] = [];
  for (const g of info.gateways) {
    const d = await client.find<Deployment & { spec?: { selector?: { matchLabels?: Record<string, string> } } }>({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: g.namespace, name: g.name });
    const sel = d?.spec?.selector?.matchLabels;
    if (sel) gatewayPods.push(...(await podsOf(g.namespace, Object.entries(sel).map(([k, v]) => `${k}=${v}`).join(','))));
  }
  const out: RevisionDescription = { ...info, customizations, namespaces, controlPlanePods, gatewayPods };
  if (opts.verbose) return { ...out, workloadPods: (await Promise.all(namespaces.map((ns) => podsOf(ns)))).flat() };
  return out;
}

export type { TagInfo };
