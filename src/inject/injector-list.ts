/**
 * What `meshctl x injector list` shows, as data: the namespaces the injectors select (labelled
 * `mesh-injection=enabled` or `mesh.io/rev=<revision or tag>`) and those holding injected pods, each
 * with the revision that injects it, the webhook configuration that serves it, and its pods: how
 * many, how many injected, and by which revision (from each pod's status annotation).
 */
import type { KubeClient } from '../kube/client.js';
import type { KubeObject } from '../kube/types.js';
import { DEFAULT_REVISION_LABEL_VALUE, INJECTION_NAMESPACE_LABEL, REVISION_LABEL } from '../install/labels.js';
import { installedInjectors, listTags } from '../install/tags.js';
import { ANNOTATIONS } from './names.js';

export interface InjectorNamespace {
  readonly namespace: string;
  /** The label that selects it (`mesh-injection=enabled`, `mesh.io/rev=canary`), or empty. */
  readonly label: string;
  /** The revision that injects new pods here (empty when none does). */
  readonly revision: string;
  /** The tag the namespace names, when its `mesh.io/rev` is a tag. */
  readonly tag?: string;
  /** The mutating webhook configuration serving it; empty when that revision is not installed. */
  readonly webhook: string;
  readonly pods: number;
  readonly injectedPods: number;
  /** Injected pods by the revision that injected them. */
  readonly injectedBy: Readonly<Record<string, number>>;
}

function revisionOfStatus(raw: string | undefined): string {
  if (raw === undefined) return '';
  try {
    const s = JSON.parse(raw) as { revision?: unknown };
    return typeof s.revision === 'string' && s.revision !== '' ? s.revision : DEFAULT_REVISION_LABEL_VALUE;
  } catch {
    return 'unknown';
  }
}

export async function listInjectorNamespaces(client: KubeClient): Promise<InjectorNamespace[]> {
  const [installed, tags, namespaces, pods] = await Promise.all([
    installedInjectors(client),
    listTags(client),
    client.list<KubeObject>('v1', 'Namespace'),
    client.list<KubeObject>('v1', 'Pod'),
  ]);
  const tagged = new Map(tags.map((t) => [t.tag, t]));
  const podsOf = new Map<string, { pods: number; injected: number; by: Record<string, number> }>();
  for (const p of pods.items) {
    const ns = p.metadata?.namespace ?? '';
    const e = podsOf.get(ns) ?? { pods: 0, injected: 0, by: {} };
    e.pods++;
    const status = p.metadata?.annotations?.[ANNOTATIONS.status];
    if (status !== undefined) {
      e.injected++;
      const rev = revisionOfStatus(status);
      e.by[rev] = (e.by[rev] ?? 0) + 1;
    }
    podsOf.set(ns, e);
  }
  const out: InjectorNamespace[] = [];
  for (const ns of namespaces.items) {
    const name = ns.metadata?.name ?? '';
    const labels = ns.metadata?.labels ?? {};
    const counts = podsOf.get(name) ?? { pods: 0, injected: 0, by: {} };
    let label = '';
    let revision = '';
    let tag: string | undefined;
    let webhook = '';
    if (labels[INJECTION_NAMESPACE_LABEL] === 'enabled') {
      label = `${INJECTION_NAMESPACE_LABEL}=enabled`;
      revision = DEFAULT_REVISION_LABEL_VALUE;
      webhook = installed.get(revision)?.metadata?.name ?? '';
    } else if (labels[INJECTION_NAMESPACE_LABEL] === undefined && labels[REVISION_LABEL] !== undefined) {
      const value = labels[REVISION_LABEL];
      label = `${REVISION_LABEL}=${value}`;
      const t = tagged.get(value);
      if (t) {
        tag = value;
        revision = t.revision;
        webhook = t.webhook;
      } else {
        revision = value;
        webhook = installed.get(value)?.metadata?.name ?? '';
      }
    }
    if (label === '' && counts.injected === 0) continue;
    out.push({ namespace: name, label, revision, ...(tag ? { tag } : {}), webhook, pods: counts.pods, injectedPods: counts.injected, injectedBy: counts.by });
  }
  return out.sort((a, b) => a.namespace.localeCompare(b.namespace));
}
