/**
 * Analyzers of the policies that select workloads: AuthorizationPolicy (selector matching nothing,
 * MESH0121; source namespaces that do not exist, MESH0101; rules of only negative conditions in an
 * ALLOW policy, MESH0141), Telemetry (no provider to send to, MESH0138; several without selector in
 * a namespace, MESH0139; selector matching nothing, MESH0121) and, for every selecting kind,
 * selectors that pick gateway-api gateway pods (MESH0140).
 */
import type { ConfigObject } from '../../config/types.js';
import { join } from '../../config/validation/common.js';
import type { AuthorizationPolicy, Source, Telemetry } from '../../gen/config/schemas.js';
import { labelsMatch } from '../../model/service.js';
import { MESSAGES, finding } from '../messages.js';
import type { AnalysisInput, Analyzer, Finding } from '../types.js';
import { hasLabels, selectable, selectorText, selectsSomething } from './util.js';

const POSITIVE_SOURCE: ReadonlyArray<keyof Source> = ['principals', 'requestPrincipals', 'namespaces', 'ipBlocks', 'remoteIpBlocks', 'serviceAccounts', 'trustDomains'];

export const authorizationPolicyAnalyzer: Analyzer = {
  name: 'authorizationpolicy',
  description: 'Checks that AuthorizationPolicies select workloads, name existing namespaces, and do not allow by negative conditions alone.',
  codes: [MESSAGES.NoMatchingWorkloadsFound.code, MESSAGES.ReferencedResourceNotFound.code, MESSAGES.IneffectivePolicy.code],
  analyze(input: AnalysisInput): Finding[] {
    const out: Finding[] = [];
    const namespaces = input.kube && input.kube.namespaces.length > 0 ? new Set(input.kube.namespaces.map((n) => n.name)) : undefined;
    for (const ap of input.configs.list<AuthorizationPolicy>('AuthorizationPolicy')) {
      const labels = ap.spec.selector?.matchLabels;
      if (input.workloads && hasLabels(labels) && !selectsSomething(input, ap.meta.namespace, labels)) {
        out.push(finding(MESSAGES.NoMatchingWorkloadsFound, ap, `selector ${selectorText(labels)} matches no workload${ap.meta.namespace === input.mesh.rootNamespace ? '' : ` in namespace ${ap.meta.namespace}`}`, 'spec.selector.matchLabels'));
      }
      const allow = (ap.spec.action ?? 'ALLOW') === 'ALLOW';
      (ap.spec.rules ?? []).forEach((rule, i) => {
        (rule.from ?? []).forEach((f, j) => {
          const source = f.source;
          if (!source) return;
          const path = join('spec.rules', i, 'from', j, 'source');
          if (namespaces) {
            for (const key of ['namespaces', 'notNamespaces'] as const) {
              (source[key] ?? []).forEach((ns, k) => {
                if (!ns.includes('*') && !namespaces.has(ns)) out.push(finding(MESSAGES.ReferencedResourceNotFound, ap, `namespace ${ns} does not exist`, join(path, key, k)));
              });
            }
          }
          const negatives = Object.entries(source).filter(([k, v]) => k.startsWith('not') && Array.isArray(v) && v.length > 0).map(([k]) => k);
          const positives = POSITIVE_SOURCE.filter((k) => ((source[k] as unknown[] | undefined)?.length ?? 0) > 0);
          if (allow && negatives.length > 0 && positives.length === 0) {
            out.push(
              finding(
                MESSAGES.IneffectivePolicy,
                ap,
                `an ALLOW rule with only ${negatives.join(', ')} allows every other source, unauthenticated ones included: add a positive condition or use a DENY policy`,
                path,
              ),
            );
          }
        });
      });
    }
    return out;
  },
};

type TelemetryKey = 'tracing' | 'metrics' | 'accessLogging';

export const telemetryAnalyzer: Analyzer = {
  name: 'telemetry',
  description: 'Checks that Telemetries have a provider to send to, select workloads, and that a namespace has one Telemetry without selector at most.',
  codes: [MESSAGES.InvalidTelemetryProvider.code, MESSAGES.MultipleTelemetriesWithoutWorkloadSelectors.code, MESSAGES.NoMatchingWorkloadsFound.code],
  analyze(input: AnalysisInput): Finding[] {
    const out: Finding[] = [];
    const byNamespace = new Map<string, Array<ConfigObject<Telemetry>>>();
    for (const t of input.configs.list<Telemetry>('Telemetry')) {
      for (const key of ['tracing', 'metrics', 'accessLogging'] as TelemetryKey[]) {
        (t.spec[key] ?? []).forEach((entry, i) => {
          if ((entry.providers?.length ?? 0) > 0 || (input.mesh.defaultProviders?.[key].length ?? 0) > 0) return;
          out.push(finding(MESSAGES.InvalidTelemetryProvider, t, `${key} names no provider and the mesh config has no default ${key} provider: this entry has no effect`, join('spec', key, i, 'providers')));
        });
      }
      const labels = t.spec.selector?.matchLabels;
      if (input.workloads && hasLabels(labels) && !selectsSomething(input, t.meta.namespace, labels)) {
        out.push(finding(MESSAGES.NoMatchingWorkloadsFound, t, `selector ${selectorText(labels)} matches no workload${t.meta.namespace === input.mesh.rootNamespace ? '' : ` in namespace ${t.meta.namespace}`}`, 'spec.selector.matchLabels'));
      }
      if (!hasLabels(labels) && !t.spec.targetRef && (t.spec.targetRefs?.length ?? 0) === 0) {
        byNamespace.set(t.meta.namespace, [...(byNamespace.get(t.meta.namespace) ?? []), t]);
      }
    }
    for (const [ns, list] of byNamespace) {
      if (list.length < 2) continue;
      const names = list.map((t) => t.meta.name).join(', ');
      for (const t of list) out.push(finding(MESSAGES.MultipleTelemetriesWithoutWorkloadSelectors, t, `Telemetries ${names} of namespace ${ns} have no selector; only one may`));
    }
    return out;
  },
};

const GATEWAY_NAME_LABEL = 'gateway.networking.k8s.io/gateway-name';
const SELECTING_KINDS = ['AuthorizationPolicy', 'RequestAuthentication', 'Telemetry', 'PeerAuthentication'] as const;

export const ineffectiveSelectorAnalyzer: Analyzer = {
  name: 'selector.gatewayapi',
  description: 'Checks that policies reach gateway-api gateways by targetRefs, as selectors do not apply to them.',
  codes: [MESSAGES.IneffectiveSelector.code],
  analyze(input: AnalysisInput): Finding[] {
    if (!input.workloads) return [];
    const out: Finding[] = [];
    for (const kind of SELECTING_KINDS) {
      for (const o of input.configs.list<{ selector?: { matchLabels?: Record<string, string> } }>(kind)) {
        const labels = o.spec.selector?.matchLabels;
        if (!hasLabels(labels)) continue;
        const gateways = selectable(input, o.meta.namespace).filter((w) => w.labels[GATEWAY_NAME_LABEL] !== undefined && labelsMatch(labels, w.labels));
        if (gateways.length === 0) continue;
        const names = [...new Set(gateways.map((w) => w.labels[GATEWAY_NAME_LABEL]))].join(', ');
        out.push(finding(MESSAGES.IneffectiveSelector, o as ConfigObject, `selector ${selectorText(labels)} picks the pods of gateway-api Gateway ${names}, which a selector does not reach: use targetRefs`, 'spec.selector.matchLabels'));
      }
    }
    return out;
  },
};
