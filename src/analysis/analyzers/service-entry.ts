/** ServiceEntry analyzer: a ServiceEntry without ports gives proxies nothing to route to (MESH0106). */
import type { ServiceEntry } from '../../config/spec-types.js';
import { MESSAGES, finding } from '../messages.js';
import type { AnalysisInput, Analyzer, Finding } from '../types.js';

export const serviceEntryPortsAnalyzer: Analyzer = {
  name: 'serviceentry.ports',
  description: 'Checks that every ServiceEntry declares at least one port.',
  codes: [MESSAGES.ServiceEntryWithoutPorts.code],
  analyze(input: AnalysisInput): Finding[] {
    const out: Finding[] = [];
    for (const se of input.configs.list<ServiceEntry>('ServiceEntry')) {
      if ((se.spec.ports ?? []).length > 0) continue;
      out.push(
        finding(MESSAGES.ServiceEntryWithoutPorts, se, `ServiceEntry declares no ports: proxies get no listener or cluster for ${se.spec.hosts.join(', ')}`, 'spec.ports'),
      );
    }
    return out;
  },
};
