/**
 * VirtualService analyzers:
 * - references: every Gateway (a mesh Gateway, or a gateway-api Gateway by its own name) and
 *   delegate a VirtualService names exists (MESH0101); a Gateway the mesh derived from a gateway-api
 *   Gateway is not named directly (MESH0130);
 * - destinations: every route, mirror and mirrors destination names a host visible to the
 *   VirtualService's namespace (exportTo honoured, MESH0102) and, when it names a subset, a
 *   DestinationRule applicable to that host defines it (MESH0103); a gateway route to a service
 *   with several ports names the port (MESH0124);
 * - routes: no route follows one that matches every request, or repeats its matches (MESH0127,
 *   MESH0128); routes on JWT claims have a RequestAuthentication for the gateway (MESH0129);
 * - hosts: each host is among the hosts of the Gateways it binds to (MESH0125), and no two
 *   VirtualServices bound to the mesh gateway define the same host for the same namespaces
 *   (MESH0126).
 */
import type { ConfigObject } from '../../config/types.js';
import { DERIVED_SUFFIX } from '../../config/gateway-api/convert.js';
import { join } from '../../config/validation/common.js';
import type { RequestAuthentication } from '../../gen/config/schemas.js';
import type { Gateway, HTTPMatchRequest, VirtualService } from '../../config/spec-types.js';
import { hostMatches, resolveHost } from '../../model/host.js';
import { labelsMatch } from '../../model/service.js';
import { MESSAGES, finding } from '../messages.js';
import type { AnalysisContext, AnalysisInput, Analyzer, Finding } from '../types.js';

interface DestinationRef {
  readonly host: string;
  readonly subset?: string;
  readonly port?: { readonly number?: number };
}

/** `name` or `namespace/name` of a gateway reference, resolved against the VirtualService's namespace. */
function gatewayRef(ref: string, namespace: string): { namespace: string; name: string } {
  const slash = ref.indexOf('/');
  return slash < 0 ? { namespace, name: ref } : { namespace: ref.slice(0, slash), name: ref.slice(slash + 1) };
}

/** The gateway names a VirtualService binds to (its own and those of its matches); `mesh` when none. */
function boundGateways(spec: VirtualService): string[] {
  return spec.gateways && spec.gateways.length > 0 ? [...spec.gateways] : ['mesh'];
}

export const virtualServiceGatewaysAnalyzer: Analyzer = {
  name: 'virtualservice.gateways',
  description: 'Checks that the Gateways and delegate VirtualServices a VirtualService names exist, and that derived Gateways are not named directly.',
  codes: [MESSAGES.ReferencedResourceNotFound.code, MESSAGES.ReferencedInternalGateway.code],
  analyze(input: AnalysisInput): Finding[] {
    const out: Finding[] = [];
    const gatewayApi = new Set((input.kube?.gateways ?? []).map((g) => `${g.namespace}/${g.name}`));
    for (const vs of input.configs.list<VirtualService>('VirtualService')) {
      const ns = vs.meta.namespace;
      const checkGateway = (ref: string, path: string): void => {
        if (ref === 'mesh') return;
        const g = gatewayRef(ref, ns);
        const gw = input.configs.get('Gateway', g.namespace, g.name);
        if (gw && g.name.endsWith(DERIVED_SUFFIX)) {
          out.push(finding(MESSAGES.ReferencedInternalGateway, vs, `Gateway ${g.namespace}/${g.name} is derived from a gateway-api Gateway: name that Gateway instead`, path));
        } else if (!gw && !gatewayApi.has(`${g.namespace}/${g.name}`)) {
          out.push(finding(MESSAGES.ReferencedResourceNotFound, vs, `Gateway ${g.namespace}/${g.name} does not exist`, path));
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
function destinations(vs: ConfigObject<VirtualService>): Array<{ readonly dest: DestinationRef; readonly path: string; readonly mirror: boolean }> {
  const out: Array<{ dest: DestinationRef; path: string; mirror: boolean }> = [];
  const spec = vs.spec;
  (spec.http ?? []).forEach((r, i) => {
    const path = join('spec.http', i);
    (r.route ?? []).forEach((d, j) => {
      if (d.destination) out.push({ dest: d.destination, path: join(path, 'route', j, 'destination'), mirror: false });
    });
    if (r.mirror) out.push({ dest: r.mirror, path: join(path, 'mirror'), mirror: true });
    (r.mirrors ?? []).forEach((m, j) => {
      if (m.destination) out.push({ dest: m.destination, path: join(path, 'mirrors', j, 'destination'), mirror: true });
    });
  });
  for (const key of ['tcp', 'tls'] as const) {
    (spec[key] ?? []).forEach((r, i) => {
      (r.route ?? []).forEach((d, j) => {
        if (d.destination) out.push({ dest: d.destination, path: join(`spec.${key}`, i, 'route', j, 'destination'), mirror: false });
      });
    });
  }
  return out;
}

export const virtualServiceDestinationsAnalyzer: Analyzer = {
  name: 'virtualservice.destinations',
  description: 'Checks that route destinations name hosts visible to the VirtualService, subsets a DestinationRule defines, and the port when a gateway routes to a service of several ports.',
  codes: [MESSAGES.UnknownDestinationHost.code, MESSAGES.UnknownDestinationSubset.code, MESSAGES.VirtualServiceDestinationPortSelectorRequired.code],
  analyze(input: AnalysisInput, ctx: AnalysisContext): Finding[] {
    const out: Finding[] = [];
    const domain = input.mesh.domain;
    for (const vs of input.configs.list<VirtualService>('VirtualService')) {
      const ns = vs.meta.namespace;
      const onGateway = boundGateways(vs.spec).some((g) => g !== 'mesh');
      for (const { dest, path, mirror } of destinations(vs)) {
        const host = resolveHost(dest.host, ns, domain);
        if (!ctx.hostKnown(host, ns)) {
          const hidden = ctx.hostKnown(host);
          out.push(
            finding(
              MESSAGES.UnknownDestinationHost,
              vs,
              hidden ? `host ${host} is not exported to namespace ${ns} (exportTo)` : `host ${host} is not defined by any service or ServiceEntry`,
              join(path, 'host'),
            ),
          );
        }
        if (onGateway && !mirror && dest.port?.number === undefined) {
          const ports = new Set(ctx.servicesOf(host).flatMap((s) => s.ports.map((p) => p.port)));
          if (ports.size > 1) {
            out.push(
              finding(
                MESSAGES.VirtualServiceDestinationPortSelectorRequired,
                vs,
                `host ${host} has several ports (${[...ports].sort((a, b) => a - b).join(', ')}): a gateway route must name one in destination.port`,
                join(path, 'port'),
              ),
            );
          }
        }
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

/** A match that every request passes: no condition, or only `uri: {prefix: /}`. */
function matchesEverything(m: HTTPMatchRequest): boolean {
  const entries = Object.entries(m).filter(([k, v]) => v !== undefined && k !== 'name');
  if (entries.length === 0) return true;
  return entries.length === 1 && entries[0][0] === 'uri' && m.uri?.prefix === '/';
}

/** The conditions of a match (its name aside) as comparable text. */
function matchKey(m: HTTPMatchRequest): string {
  const { name: _name, ...rest } = m;
  return stableText(rest);
}

function stableText(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(stableText).join(',')}]`;
  if (typeof v === 'object' && v !== null) {
    return `{${Object.keys(v)
      .sort()
      .filter((k) => (v as Record<string, unknown>)[k] !== undefined)
      .map((k) => `${k}:${stableText((v as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v);
}

const CLAIM_HEADER = '@request.auth.claims';

export const virtualServiceRoutesAnalyzer: Analyzer = {
  name: 'virtualservice.routes',
  description: 'Checks that every HTTP route can match, that no match repeats an earlier one, and that JWT-claim routes have a RequestAuthentication.',
  codes: [MESSAGES.VirtualServiceUnreachableRule.code, MESSAGES.VirtualServiceIneffectiveMatch.code, MESSAGES.JwtClaimBasedRoutingWithoutRequestAuthN.code],
  analyze(input: AnalysisInput): Finding[] {
    const out: Finding[] = [];
    for (const vs of input.configs.list<VirtualService>('VirtualService')) {
      const routes = vs.spec.http ?? [];
      const seen = new Map<string, number>();
      let catchAll: number | undefined;
      routes.forEach((r, i) => {
        const path = join('spec.http', i);
        const matches = r.match ?? [];
        if (catchAll !== undefined) {
          out.push(finding(MESSAGES.VirtualServiceUnreachableRule, vs, `route ${r.name ? `"${r.name}" ` : ''}is never used: route ${catchAll} before it matches every request`, path));
          return;
        }
        const repeats = matches.map((m) => seen.get(matchKey(m)));
        if (matches.length > 0 && repeats.every((x) => x !== undefined)) {
          out.push(finding(MESSAGES.VirtualServiceUnreachableRule, vs, `route ${r.name ? `"${r.name}" ` : ''}is never used: its matches repeat those of route ${repeats[0]}`, join(path, 'match')));
        } else {
          repeats.forEach((x, j) => {
            if (x !== undefined) out.push(finding(MESSAGES.VirtualServiceIneffectiveMatch, vs, `match ${j} repeats a match of route ${x}: it never takes effect`, join(path, 'match', j)));
          });
        }
        matches.forEach((m) => {
          if (!seen.has(matchKey(m))) seen.set(matchKey(m), i);
        });
        if (matches.length === 0 || matches.some(matchesEverything)) catchAll = i;
      });
      out.push(...claimRoutes(input, vs));
    }
    return out;
  },
};

/** Routes matching JWT claims on a gateway need a RequestAuthentication for the gateway workloads. */
function claimRoutes(input: AnalysisInput, vs: ConfigObject<VirtualService>): Finding[] {
  const out: Finding[] = [];
  const gateways = boundGateways(vs.spec).filter((g) => g !== 'mesh');
  if (gateways.length === 0) return out;
  const authns = input.configs.list<RequestAuthentication>('RequestAuthentication');
  (vs.spec.http ?? []).forEach((r, i) => {
    (r.match ?? []).forEach((m, j) => {
      const claim = Object.keys(m.headers ?? {}).find((h) => h.startsWith(CLAIM_HEADER));
      if (!claim) return;
      for (const ref of gateways) {
        const g = gatewayRef(ref, vs.meta.namespace);
        const gw = input.configs.get<Gateway>('Gateway', g.namespace, g.name);
        if (!gw) continue;
        const selector = gw.spec.selector ?? {};
        const pods = input.workloads?.filter((w) => labelsMatch(selector, w.labels));
        const namespaces = pods && pods.length > 0 ? [...new Set(pods.map((p) => p.namespace))] : [gw.meta.namespace];
        const covered = authns.some((ra) => {
          const labels = ra.spec.selector?.matchLabels;
          const hasSelector = labels !== undefined && Object.keys(labels).length > 0;
          if (ra.meta.namespace === input.mesh.rootNamespace && !hasSelector) return true;
          if (!namespaces.includes(ra.meta.namespace)) return false;
          if (!hasSelector) return true;
          return pods ? pods.some((p) => p.namespace === ra.meta.namespace && labelsMatch(labels, p.labels)) : labelsMatch(labels, selector);
        });
        if (!covered) {
          out.push(
            finding(
              MESSAGES.JwtClaimBasedRoutingWithoutRequestAuthN,
              vs,
              `the route matches JWT claim header ${claim}, but no RequestAuthentication applies to the workloads of Gateway ${g.namespace}/${g.name}: tokens are not validated and the match never succeeds`,
              join('spec.http', i, 'match', j, 'headers', claim),
            ),
          );
        }
      }
    });
  });
  return out;
}

/** Namespaces `exportTo` makes an object of `owner` visible to; `*` for all. */
function exportedTo(exportTo: ReadonlyArray<string>, owner: string): Set<string> | '*' {
  if (exportTo.includes('*')) return '*';
  return new Set(exportTo.filter((e) => e !== '~').map((e) => (e === '.' ? owner : e)));
}

function overlap(a: Set<string> | '*', b: Set<string> | '*'): boolean {
  if (a === '*') return b === '*' || b.size > 0;
  if (b === '*') return a.size > 0;
  return [...a].some((x) => b.has(x));
}

export const virtualServiceHostsAnalyzer: Analyzer = {
  name: 'virtualservice.hosts',
  description: 'Checks that VirtualService hosts are served by the Gateways they bind to, and that mesh-gateway VirtualServices do not define one host twice.',
  codes: [MESSAGES.VirtualServiceHostNotFoundInGateway.code, MESSAGES.ConflictingMeshGatewayVirtualServiceHosts.code],
  analyze(input: AnalysisInput): Finding[] {
    const out: Finding[] = [];
    const domain = input.mesh.domain;
    const meshHosts = new Map<string, Array<{ vs: ConfigObject<VirtualService>; index: number }>>();
    for (const vs of input.configs.list<VirtualService>('VirtualService')) {
      const ns = vs.meta.namespace;
      const hosts = vs.spec.hosts ?? [];
      for (const ref of boundGateways(vs.spec)) {
        if (ref === 'mesh') {
          hosts.forEach((h, i) => {
            const host = resolveHost(h, ns, domain);
            meshHosts.set(host, [...(meshHosts.get(host) ?? []), { vs, index: i }]);
          });
          continue;
        }
        const g = gatewayRef(ref, ns);
        const gw = input.configs.get<Gateway>('Gateway', g.namespace, g.name);
        if (!gw) continue;
        const served = gw.spec.servers.flatMap((s) =>
          s.hosts.flatMap((entry) => {
            const slash = entry.indexOf('/');
            if (slash < 0) return [entry];
            const hns = entry.slice(0, slash);
            return hns === '*' || hns === ns || (hns === '.' && gw.meta.namespace === ns) ? [entry.slice(slash + 1)] : [];
          }),
        );
        hosts.forEach((h, i) => {
          if (served.some((s) => hostMatches(s, h) || hostMatches(h, s))) return;
          out.push(finding(MESSAGES.VirtualServiceHostNotFoundInGateway, vs, `host ${h} is not among the hosts Gateway ${g.namespace}/${g.name} serves to namespace ${ns}`, join('spec.hosts', i)));
        });
      }
    }
    for (const [host, uses] of meshHosts) {
      if (uses.length < 2) continue;
      for (const u of uses) {
        const mine = exportedTo(u.vs.spec.exportTo ?? input.mesh.defaultVirtualServiceExportTo, u.vs.meta.namespace);
        const others = uses.filter(
          (o) => o.vs !== u.vs && overlap(mine, exportedTo(o.vs.spec.exportTo ?? input.mesh.defaultVirtualServiceExportTo, o.vs.meta.namespace)),
        );
        if (others.length === 0) continue;
        const names = others.map((o) => `${o.vs.meta.namespace}/${o.vs.meta.name}`).join(', ');
        out.push(finding(MESSAGES.ConflictingMeshGatewayVirtualServiceHosts, u.vs, `host ${host} is also defined for the mesh gateway by VirtualService ${names}: merge them into one`, join('spec.hosts', u.index)));
      }
    }
    return out;
  },
};
