/**
 * EnvoyFilter analyzer: patches that insert relative to another filter need a priority to be
 * applied in a known order (MESH0136); REPLACE applies to filters only, and ADD or REMOVE on route
 * configurations and routes have no effect (MESH0137).
 */
import { join } from '../../config/validation/common.js';
import type { EnvoyFilter } from '../../gen/config/schemas.js';
import { MESSAGES, finding } from '../messages.js';
import type { AnalysisInput, Analyzer, Finding } from '../types.js';

const RELATIVE = new Set(['INSERT_BEFORE', 'INSERT_AFTER', 'REPLACE']);
const REPLACEABLE = new Set(['HTTP_FILTER', 'NETWORK_FILTER']);
const ROUTE_LEVEL = new Set(['ROUTE_CONFIGURATION', 'HTTP_ROUTE']);

export const envoyFilterAnalyzer: Analyzer = {
  name: 'envoyfilter.operations',
  description: 'Checks that EnvoyFilter patch operations fit what they apply to, and relative ones have a priority.',
  codes: [MESSAGES.EnvoyFilterUsesRelativeOperation.code, MESSAGES.EnvoyFilterOperationNotApplicable.code],
  analyze(input: AnalysisInput): Finding[] {
    const out: Finding[] = [];
    for (const ef of input.configs.list<EnvoyFilter>('EnvoyFilter')) {
      ef.spec.configPatches.forEach((cp, i) => {
        const op = cp.patch?.operation;
        const applyTo = cp.applyTo ?? 'INVALID';
        const path = join('spec.configPatches', i, 'patch', 'operation');
        if (!op) return;
        if (RELATIVE.has(op) && !ef.spec.priority) {
          out.push(finding(MESSAGES.EnvoyFilterUsesRelativeOperation, ef, `${op} is relative to another filter: set spec.priority so the order in which EnvoyFilters apply is defined`, path));
        }
        if (op === 'REPLACE' && !REPLACEABLE.has(applyTo)) {
          out.push(finding(MESSAGES.EnvoyFilterOperationNotApplicable, ef, `REPLACE applies to HTTP_FILTER and NETWORK_FILTER only, not ${applyTo}`, path));
        }
        if ((op === 'ADD' || op === 'REMOVE') && ROUTE_LEVEL.has(applyTo)) {
          out.push(finding(MESSAGES.EnvoyFilterOperationNotApplicable, ef, `${op} has no effect with applyTo ${applyTo}`, path));
        }
      });
    }
    return out;
  },
};
