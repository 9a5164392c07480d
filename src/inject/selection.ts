/**
 * Whether a pod gets the proxy. The webhook configuration already chose the namespaces (label
 * `mesh-injection=enabled`, or `mesh.io/rev=<revision or tag>`) and the opted-in pods of other
 * namespaces; here the injector decides for the pod itself, in this order:
 *
 *  1. pods of the host network, of the system namespaces, and pods already injected are left alone;
 *  2. the pod's label `sidecar.mesh.io/inject` (else its annotation of that name) decides when set;
 *  3. else a pod matching a `neverInjectSelector` is not injected, one matching an
 *     `alwaysInjectSelector` is;
 *  4. else the policy: `enabled` injects, `disabled` does not.
 */
import type { InjectorConfig, LabelSelector } from './config.js';
import { ANNOTATIONS, IGNORED_NAMESPACES, LABELS, PROXY_CONTAINER } from './names.js';
import { InjectionError } from './errors.js';
import type { Pod } from './pod.js';

/** Why a pod is left alone, as a short code (sidecar_injection_skip_total{reason}). */
export type SkipReason = 'host_network' | 'system_namespace' | 'already_injected' | 'opted_out' | 'never_inject_selector' | 'policy';

export type Decision = { readonly inject: true; readonly why: string } | { readonly inject: false; readonly why: string; readonly reason: SkipReason };

const TRUE = new Set(['true', 'True', 'TRUE', 'yes', 'y', '1', 'enabled']);
const FALSE = new Set(['false', 'False', 'FALSE', 'no', 'n', '0', 'disabled']);

/** A label selector's verdict on `labels` (Kubernetes semantics; an empty selector matches everything). */
export function selectorMatches(selector: LabelSelector, labels: Readonly<Record<string, string>>): boolean {
  for (const [k, v] of Object.entries(selector.matchLabels ?? {})) if (labels[k] !== v) return false;
  for (const r of selector.matchExpressions ?? []) {
    const has = Object.hasOwn(labels, r.key);
    const value = labels[r.key];
    const values = r.values ?? [];
    if (r.operator === 'Exists' && !has) return false;
    if (r.operator === 'DoesNotExist' && has) return false;
    if (r.operator === 'In' && (!has || !values.includes(value as string))) return false;
    if (r.operator === 'NotIn' && has && values.includes(value as string)) return false;
  }
  return true;
}

/** The pod's own choice: true, false, or undefined when it says nothing. */
export function podOptIn(pod: Pod): boolean | undefined {
  const label = pod.metadata?.labels?.[LABELS.inject];
  const annotation = pod.metadata?.annotations?.[ANNOTATIONS.inject];
  const [where, value] = label !== undefined ? [`label ${LABELS.inject}`, label] : [`annotation ${ANNOTATIONS.inject}`, annotation];
  if (value === undefined) return undefined;
  if (TRUE.has(value)) return true;
  if (FALSE.has(value)) return false;
  throw new InjectionError(`metadata.${where.startsWith('label') ? 'labels' : 'annotations'}["${LABELS.inject}"]`, `${JSON.stringify(value)} is neither true nor false`);
}

/**
 * True when the pod already carries the proxy: the status annotation, or a container of that name
 * (except for the gateway template, which completes a `mesh-proxy` container the pod brings).
 */
export function alreadyInjected(pod: Pod): boolean {
  const a = pod.metadata?.annotations ?? {};
  if (a[ANNOTATIONS.status] !== undefined) return true;
  const gateway = (a[ANNOTATIONS.templates] ?? a[ANNOTATIONS.legacyTemplates] ?? '').split(',').some((t) => t.trim() === 'gateway');
  if (gateway) return false;
  const names = [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])].map((c) => c?.name);
  return names.includes(PROXY_CONTAINER);
}

export function injectionDecision(pod: Pod, namespace: string, config: InjectorConfig): Decision {
  if (pod.spec?.hostNetwork) return { inject: false, reason: 'host_network', why: 'the pod uses the host network' };
  if (IGNORED_NAMESPACES.includes(namespace)) return { inject: false, reason: 'system_namespace', why: `namespace ${namespace} is a system namespace` };
  if (alreadyInjected(pod)) return { inject: false, reason: 'already_injected', why: 'the pod is already injected' };
  const own = podOptIn(pod);
  if (own === false) return { inject: false, reason: 'opted_out', why: `the pod opted out (${LABELS.inject}=false)` };
  if (own === true) return { inject: true, why: `the pod opted in (${LABELS.inject}=true)` };
  const labels = pod.metadata?.labels ?? {};
  if (config.neverInjectSelector.some((s) => selectorMatches(s, labels))) return { inject: false, reason: 'never_inject_selector', why: 'the pod matches a neverInjectSelector' };
  if (config.alwaysInjectSelector.some((s) => selectorMatches(s, labels))) return { inject: true, why: 'the pod matches an alwaysInjectSelector' };
  return config.policy === 'enabled' ? { inject: true, why: 'policy enabled' } : { inject: false, reason: 'policy', why: 'policy disabled and the pod did not opt in' };
}
