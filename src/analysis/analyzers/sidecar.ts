/**
 * Sidecar analyzer: a Sidecar's workload selector matches some workload (MESH0121); no workload is
 * selected by two Sidecars (MESH0122); a namespace has at most one Sidecar without a selector
 * (MESH0123).
 */
import type { ConfigObject } from '../../config/types.js';
import type { Sidecar } from '../../config/spec-types.js';
import { labelsMatch } from '../../model/service.js';
import { MESSAGES, finding } from '../messages.js';
import type { AnalysisInput, Analyzer, Finding } from '../types.js';
import { hasLabels, selectable, selectorText } from './util.js';

export const sidecarSelectorsAnalyzer: Analyzer = {
  name: 'sidecar.selectors',
  description: 'Checks that Sidecar selectors match workloads, no workload has two Sidecars, and a namespace has one Sidecar without selector at most.',
  codes: [MESSAGES.NoMatchingWorkloadsFound.code, MESSAGES.ConflictingSidecarWorkloadSelectors.code, MESSAGES.MultipleSidecarsWithoutWorkloadSelectors.code],
  analyze(input: AnalysisInput): Finding[] {
    const out: Finding[] = [];
    const byNamespace = new Map<string, Array<ConfigObject<Sidecar>>>();
    for (const sc of input.configs.list<Sidecar>('Sidecar')) {
      const list = byNamespace.get(sc.meta.namespace) ?? [];
      list.push(sc);
      byNamespace.set(sc.meta.namespace, list);
    }
    for (const [ns, list] of byNamespace) {
      const unselected = list.filter((s) => !hasLabels(s.spec.workloadSelector?.labels));
      if (unselected.length > 1) {
        const names = unselected.map((s) => s.meta.name).join(', ');
        for (const s of unselected) out.push(finding(MESSAGES.MultipleSidecarsWithoutWorkloadSelectors, s, `Sidecars ${names} of namespace ${ns} have no workload selector; only one may`));
      }
      if (!input.workloads) continue;
      const selected = new Map<string, string[]>();
      for (const s of list) {
        const labels = s.spec.workloadSelector?.labels;
        if (!hasLabels(labels)) continue;
        const picked = selectable(input, ns).filter((w) => w.namespace === ns && labelsMatch(labels, w.labels));
        if (picked.length === 0) {
          out.push(finding(MESSAGES.NoMatchingWorkloadsFound, s, `workload selector ${selectorText(labels)} matches no workload in namespace ${ns}`, 'spec.workloadSelector.labels'));
        }
        for (const w of picked) {
          const key = w.name ?? selectorText(w.labels);
          selected.set(key, [...(selected.get(key) ?? []), s.meta.name]);
        }
      }
      const reported = new Set<string>();
      for (const [workload, names] of selected) {
        if (names.length < 2) continue;
        for (const name of names) {
          if (reported.has(`${name}|${names.join()}`)) continue;
          reported.add(`${name}|${names.join()}`);
          const s = list.find((x) => x.meta.name === name);
          if (s) out.push(finding(MESSAGES.ConflictingSidecarWorkloadSelectors, s, `workload ${workload} is selected by Sidecars ${names.join(', ')}; only one may select it`, 'spec.workloadSelector.labels'));
        }
      }
    }
    return out;
  },
};
