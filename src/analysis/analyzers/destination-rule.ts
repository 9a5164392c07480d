/**
 * DestinationRule analyzer: several rules of one namespace without a workload selector that apply
 * to the same host conflict; the model uses the oldest one only (MESH0105). Every rule of the
 * group gets the finding, naming the one that takes effect.
 */
import type { ConfigObject } from '../../config/types.js';
import type { DestinationRule } from '../../config/spec-types.js';
import { resolveHost } from '../../model/host.js';
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
