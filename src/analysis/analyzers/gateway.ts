/**
 * Gateway analyzer: a Gateway whose selector matches no workload is served by no gateway proxy
 * (MESH0104). Needs the workloads of the mesh; silent when they are not known.
 */
import type { Gateway } from '../../config/spec-types.js';
import { labelsMatch } from '../../model/service.js';
import { MESSAGES, finding } from '../messages.js';
import type { AnalysisInput, Analyzer, Finding } from '../types.js';

export const gatewaySelectorAnalyzer: Analyzer = {
  name: 'gateway.selector',
  description: 'Checks that the selector of each Gateway matches at least one workload.',
  codes: [MESSAGES.GatewaySelectorMatchesNothing.code],
  analyze(input: AnalysisInput): Finding[] {
    const workloads = input.workloads;
    if (!workloads) return [];
    const out: Finding[] = [];
    for (const gw of input.configs.list<Gateway>('Gateway')) {
      const selector = gw.spec.selector;
      if (!selector || Object.keys(selector).length === 0) continue;
      const scoped = input.scopeGatewayToNamespace === true;
      const hit = workloads.some((w) => (!scoped || w.namespace === gw.meta.namespace) && labelsMatch(selector, w.labels));
      if (!hit) {
        const text = Object.entries(selector)
          .map(([k, v]) => `${k}=${v}`)
          .join(',');
        const where = scoped ? ` in namespace ${gw.meta.namespace}` : '';
        out.push(finding(MESSAGES.GatewaySelectorMatchesNothing, gw, `selector ${text} matches no workload${where}`, 'spec.selector'));
      }
    }
    return out;
  },
};
