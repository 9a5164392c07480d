/**
 * VirtualService analyzers: every gateway and delegate a VirtualService names exists
 * (MESH0101); every route, mirror and mirrors destination names a known host (MESH0102) and, when
 * it names a subset, a DestinationRule applicable to that host defines the subset (MESH0103).
 */
import type { ConfigObject } from '../../config/types.js';
import { join } from '../../config/validation/common.js';
import type { VirtualService } from '../../config/spec-types.js';
import { resolveHost } from '../../model/host.js';
import { MESSAGES, finding } from '../messages.js';
import type { AnalysisContext, AnalysisInput, Analyzer, Finding } from '../types.js';

interface DestinationRef {
  readonly host: string;
  readonly subset?: string;
}

export const virtualServiceGatewaysAnalyzer: Analyzer = {
  name: 'virtualservice.gateways',
  description: 'Checks that the Gateways and delegate VirtualServices a VirtualService names exist.',
  codes: [MESSAGES.ReferencedResourceNotFound.code],
  analyze(input: AnalysisInput): Finding[] {
    const out: Finding[] = [];
    for (const vs of input.configs.list<VirtualService>('VirtualService')) {
      const ns = vs.meta.namespace;
      const checkGateway = (ref: string, path: string): void => {
        if (ref === 'mesh') return;
        const [gns, gname] = ref.includes('/') ? ref.split('/', 2) : [ns, ref];
        if (!input.configs.get('Gateway', gns, gname)) {
          out.push(finding(MESSAGES.ReferencedResourceNotFound, vs, `Gateway ${gns}/${gname} does not exist`, path));
        }
      };
      const spec = vs.spec;
      (spec.gateways ?? []).forEach((g, i) => checkGateway(g, join('spec.gateways', i)));
      (spec.http ?? []).forEach((r, i) => {
        const path = join('spec.http', i);
        (r.match ?? []).forEach((m, j) => (m.gateways ?? []).forEach((g, k) => checkGateway(g, join(path, 'match', j, 'gateways', k))));
        if (r.delegate) {
          const dns = r.delegate.namespace || ns;
          if (!input.configs.get('VirtualService', dns, r.delegate.name)) {
            out.push(finding(MESSAGES.ReferencedResourceNotFound, vs, `delegate VirtualService ${dns}/${r.delegate.name} does not exist`, join(path, 'delegate')));
          }
        }
      });
      for (const key of ['tcp', 'tls'] as const) {
        (spec[key] ?? []).forEach((r, i) => {
          (r.match ?? []).forEach((m, j) => (m.gateways ?? []).forEach((g, k) => checkGateway(g, join(`spec.${key}`, i, 'match', j, 'gateways', k))));
        });
      }
    }
    return out;
  },
};

/** Every destination of a VirtualService with the path of its `destination` field. */
function destinations(vs: ConfigObject<VirtualService>): Array<{ readonly dest: DestinationRef; readonly path: string }> {
  const out: Array<{ dest: DestinationRef; path: string }> = [];
  const spec = vs.spec;
  (spec.http ?? []).forEach((r, i) => {
    const path = join('spec.http', i);
    (r.route ?? []).forEach((d, j) => {
      if (d.destination) out.push({ dest: d.destination, path: join(path, 'route', j, 'destination') });
    });
    if (r.mirror) out.push({ dest: r.mirror, path: join(path, 'mirror') });
    (r.mirrors ?? []).forEach((m, j) => {
      if (m.destination) out.push({ dest: m.destination, path: join(path, 'mirrors', j, 'destination') });
    });
  });
  for (const key of ['tcp', 'tls'] as const) {
    (spec[key] ?? []).forEach((r, i) => {
      (r.route ?? []).forEach((d, j) => {
        if (d.destination) out.push({ dest: d.destination, path: join(`spec.${key}`, i, 'route', j, 'destination') });
      });
    });
  }
  return out;
}

export const virtualServiceDestinationsAnalyzer: Analyzer = {
  name: 'virtualservice.destinations',
  description: 'Checks that route destinations name known hosts, and subsets that a DestinationRule defines.',
  codes: [MESSAGES.UnknownDestinationHost.code, MESSAGES.UnknownDestinationSubset.code],
  analyze(input: AnalysisInput, ctx: AnalysisContext): Finding[] {
    const out: Finding[] = [];
    const domain = input.mesh.domain;
    for (const vs of input.configs.list<VirtualService>('VirtualService')) {
      const ns = vs.meta.namespace;
      for (const { dest, path } of destinations(vs)) {
        const host = resolveHost(dest.host, ns, domain);
        const known = ctx.hostKnown(host);
        if (!known) out.push(finding(MESSAGES.UnknownDestinationHost, vs, `host ${host} is not defined by any service or ServiceEntry`, join(path, 'host')));
        if (!dest.subset) continue;
        const rule = ctx.destinationRule(ns, host);
        if (!rule) {
          out.push(finding(MESSAGES.UnknownDestinationSubset, vs, `subset "${dest.subset}" of host ${host}: no DestinationRule applies to this host`, join(path, 'subset')));
        } else if (!rule.subsets.includes(dest.subset)) {
          const list = rule.subsets.length > 0 ? rule.subsets.join(', ') : 'none';
          out.push(
            finding(
              MESSAGES.UnknownDestinationSubset,
              vs,
              `subset "${dest.subset}" of host ${host} is not defined by DestinationRule ${rule.namespace}/${rule.name} (its subsets: ${list})`,
              join(path, 'subset'),
            ),
          );
        }
      }
    }
    return out;
  },
};
