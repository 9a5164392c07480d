/**
 * DestinationRule analyzer: several rules of one namespace without a workload selector that apply
 * to the same host conflict; the model uses the oldest one only (MESH0105). Every rule of the
 * group gets the finding, naming the one that takes effect.
 */
import type { ConfigObject } from '../../config/types.js';
import { join } from '../../config/validation/common.js';
import type { ClientTLSSettings } from '../../gen/config/schemas.js';
import type { DestinationRule } from '../../config/spec-types.js';
import { resolveHost } from '../../model/host.js';
import { labelsMatch } from '../../model/service.js';
import { MESSAGES, finding } from '../messages.js';
import type { AnalysisInput, Analyzer, Finding } from '../types.js';

const byAge = (a: ConfigObject, b: ConfigObject): number =>
  (a.meta.creationTimestamp ?? '').localeCompare(b.meta.creationTimestamp ?? '') || a.meta.name.localeCompare(b.meta.name);

export const conflictingDestinationRulesAnalyzer: Analyzer = {
  name: 'destinationrule.conflicts',
  description: 'Checks that at most one DestinationRule per namespace (without workload selector) applies to a host.',
  codes: [MESSAGES.ConflictingDestinationRules.code],
  analyze(input: AnalysisInput): Finding[] {
    const groups = new Map<string, Array<ConfigObject<DestinationRule>>>();
    for (const dr of input.configs.list<DestinationRule>('DestinationRule')) {
      if (dr.spec.workloadSelector?.matchLabels && Object.keys(dr.spec.workloadSelector.matchLabels).length > 0) continue;
      const host = resolveHost(dr.spec.host, dr.meta.namespace, input.mesh.domain);
      const key = `${dr.meta.namespace}\u0000${host}`;
      const list = groups.get(key);
      if (list) list.push(dr);
      else groups.set(key, [dr]);
    }
    const out: Finding[] = [];
    for (const list of groups.values()) {
      if (list.length < 2) continue;
      const sorted = [...list].sort(byAge);
      const winner = sorted[0];
      const host = resolveHost(winner.spec.host, winner.meta.namespace, input.mesh.domain);
      const names = sorted.map((d) => d.meta.name).join(', ');
      for (const dr of sorted) {
        out.push(
          finding(
            MESSAGES.ConflictingDestinationRules,
            dr,
            `DestinationRules ${names} of namespace ${dr.meta.namespace} all apply to host ${host}; only ${winner.meta.name} (the oldest) takes effect`,
            'spec.host',
          ),
        );
      }
    }
    return out;
  },
};

/** Every TLS setting of a DestinationRule with its path: rule level, port level, subsets. */
function tlsSettings(dr: ConfigObject<DestinationRule>): Array<{ readonly tls: ClientTLSSettings; readonly path: string }> {
  const out: Array<{ tls: ClientTLSSettings; path: string }> = [];
  const policy = (tp: DestinationRule['trafficPolicy'], base: string): void => {
    if (!tp) return;
    if (tp.tls) out.push({ tls: tp.tls, path: join(base, 'tls') });
    (tp.portLevelSettings ?? []).forEach((pl, i) => {
      if (pl.tls) out.push({ tls: pl.tls, path: join(base, 'portLevelSettings', i, 'tls') });
    });
  };
  policy(dr.spec.trafficPolicy, 'spec.trafficPolicy');
  (dr.spec.subsets ?? []).forEach((s, i) => policy(s.trafficPolicy, join('spec.subsets', i, 'trafficPolicy')));
  return out;
}

export const destinationRuleTlsAnalyzer: Analyzer = {
  name: 'destinationrule.tls',
  description: 'Checks that DestinationRules originating TLS verify the server certificate with CA certificates.',
  codes: [MESSAGES.NoServerCertificateVerification.code],
  analyze(input: AnalysisInput): Finding[] {
    const out: Finding[] = [];
    for (const dr of input.configs.list<DestinationRule>('DestinationRule')) {
      for (const { tls, path } of tlsSettings(dr)) {
        if (tls.mode !== 'SIMPLE' && tls.mode !== 'MUTUAL') continue;
        if (tls.caCertificates || tls.credentialName || tls.insecureSkipVerify === true) continue;
        const host = resolveHost(dr.spec.host, dr.meta.namespace, input.mesh.domain);
        out.push(finding(MESSAGES.NoServerCertificateVerification, dr, `${tls.mode} TLS to ${host} has no caCertificates (nor credentialName): the server certificate is not verified`, join(path, 'caCertificates')));
      }
    }
    return out;
  },
};

export const destinationRuleSubsetsAnalyzer: Analyzer = {
  name: 'destinationrule.subsets',
  description: 'Checks that the subsets of a DestinationRule for a Kubernetes Service select some of its pods.',
  codes: [MESSAGES.NoMatchingWorkloadsFound.code],
  analyze(input: AnalysisInput): Finding[] {
    const kube = input.kube;
    if (!kube || !input.workloads) return [];
    const out: Finding[] = [];
    for (const dr of input.configs.list<DestinationRule>('DestinationRule')) {
      const host = resolveHost(dr.spec.host, dr.meta.namespace, input.mesh.domain);
      const m = /^([^.]+)\.([^.]+)\.svc\./.exec(host);
      if (!m) continue;
      const svc = kube.services.find((s) => s.name === m[1] && s.namespace === m[2]);
      if (!svc?.selector || Object.keys(svc.selector).length === 0) continue;
      const pods = input.workloads.filter((w) => w.namespace === svc.namespace && labelsMatch(svc.selector, w.labels));
      // A Service without pods says nothing about its subsets.
      if (pods.length === 0) continue;
      (dr.spec.subsets ?? []).forEach((s, i) => {
        if (!s.labels || Object.keys(s.labels).length === 0) return;
        if (pods.some((p) => labelsMatch(s.labels, p.labels))) return;
        const text = Object.entries(s.labels)
          .map(([k, v]) => `${k}=${v}`)
          .join(',');
        out.push(finding(MESSAGES.NoMatchingWorkloadsFound, dr, `subset ${s.name} (${text}) selects no pod of Service ${svc.namespace}/${svc.name}`, join('spec.subsets', i, 'labels')));
      });
    }
    return out;
  },
};
