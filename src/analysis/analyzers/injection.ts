/**
 * Injection analyzer, over the Kubernetes objects: namespaces not labelled for injection
 * (MESH0116), pods of injected namespaces that run without the proxy (MESH0117), namespaces with
 * both injection labels (MESH0118), and pods whose proxy image is not the one the injector of their
 * revision injects (MESH0119; the `mesh-sidecar-injector[-<revision>]` ConfigMap's `values`).
 */
import { MESSAGES } from '../messages.js';
import type { AnalysisInput, Analyzer, Finding } from '../types.js';
import type { KubeConfigMap, KubePod, ObjectMeta } from '../world.js';
import { findingAbout } from './util.js';

export const INJECTION_LABEL = 'mesh-injection';
export const REVISION_LABEL = 'mesh.io/rev';
export const POD_INJECT_LABEL = 'sidecar.mesh.io/inject';
export const PROXY_CONTAINER = 'mesh-proxy';
const SYSTEM_NAMESPACES = new Set(['kube-system', 'kube-public', 'kube-node-lease', 'local-path-storage']);

function injected(ns: ObjectMeta | undefined): boolean {
  if (!ns) return false;
  const label = ns.labels[INJECTION_LABEL];
  return label === 'enabled' || (label === undefined && ns.labels[REVISION_LABEL] !== undefined);
}

/** The proxy image the injector of `revision` injects, from its ConfigMap's `values`. */
function injectorImage(configMaps: ReadonlyArray<KubeConfigMap>, meshNamespace: string, revision: string | undefined): string | undefined {
  const name = revision && revision !== 'default' ? `mesh-sidecar-injector-${revision}` : 'mesh-sidecar-injector';
  const cm = configMaps.find((c) => c.namespace === meshNamespace && c.name === name);
  if (!cm?.data.values) return undefined;
  try {
    const values = JSON.parse(cm.data.values) as { global?: { proxyImage?: unknown; hub?: unknown; tag?: unknown } };
    const g = values.global ?? {};
    if (typeof g.proxyImage === 'string' && g.proxyImage !== '') return g.proxyImage;
    if (typeof g.hub === 'string' && typeof g.tag === 'string') return `${g.hub}/proxy:${g.tag}`;
  } catch {
    return undefined;
  }
  return undefined;
}

export const injectionAnalyzer: Analyzer = {
  name: 'injection',
  description: 'Checks that namespaces are labelled for proxy injection, pods of injected namespaces run the proxy, and its image is current.',
  codes: [MESSAGES.NamespaceNotInjected.code, MESSAGES.PodMissingProxy.code, MESSAGES.NamespaceMultipleInjectionLabels.code, MESSAGES.ProxyImageMismatch.code],
  analyze(input: AnalysisInput): Finding[] {
    const kube = input.kube;
    if (!kube) return [];
    const out: Finding[] = [];
    const root = input.mesh.rootNamespace;
    const byName = new Map(kube.namespaces.map((n) => [n.name, n]));
    for (const ns of kube.namespaces) {
      if (SYSTEM_NAMESPACES.has(ns.name) || ns.name === root) continue;
      const label = ns.labels[INJECTION_LABEL];
      const rev = ns.labels[REVISION_LABEL];
      if (label !== undefined && rev !== undefined) {
        out.push(findingAbout(MESSAGES.NamespaceMultipleInjectionLabels, 'Namespace', '', ns.name, `namespace has both ${INJECTION_LABEL}=${label} and ${REVISION_LABEL}=${rev}; ${INJECTION_LABEL} wins: remove one`, 'metadata.labels'));
      } else if (label === undefined && rev === undefined) {
        out.push(findingAbout(MESSAGES.NamespaceNotInjected, 'Namespace', '', ns.name, `namespace is not enabled for proxy injection: label it ${INJECTION_LABEL}=enabled (or ${INJECTION_LABEL}=disabled to say so)`, 'metadata.labels'));
      }
    }
    for (const pod of kube.pods) {
      const proxy = pod.containers.find((c) => c.name === PROXY_CONTAINER);
      if (!proxy) {
        if (injected(byName.get(pod.namespace)) && !optedOut(pod)) {
          out.push(findingAbout(MESSAGES.PodMissingProxy, 'Pod', pod.namespace, pod.name, `pod runs without the ${PROXY_CONTAINER} container although namespace ${pod.namespace} is injected: restart it`, 'spec.containers'));
        }
        continue;
      }
      const revision = pod.labels[REVISION_LABEL] ?? byName.get(pod.namespace)?.labels[REVISION_LABEL];
      const want = injectorImage(kube.configMaps, root, revision);
      if (want && proxy.image !== want) {
        out.push(findingAbout(MESSAGES.ProxyImageMismatch, 'Pod', pod.namespace, pod.name, `proxy image ${proxy.image} is not the injected image ${want}: restart the pod to update its proxy`, 'spec.containers'));
      }
    }
    return out;
  },
};

function optedOut(pod: KubePod): boolean {
  return pod.labels[POD_INJECT_LABEL] === 'false' || pod.annotations[POD_INJECT_LABEL] === 'false';
}
