/** Referential integrity of one proxy's generated config, as Envoy would check it on arrival. */
import type { Cluster } from '../../src/gen/envoy/config/cluster/v3/cluster.js';
import type { ClusterLoadAssignment } from '../../src/gen/envoy/config/endpoint/v3/endpoint.js';
import type { Listener } from '../../src/gen/envoy/config/listener/v3/listener.js';
import type { RouteConfiguration } from '../../src/gen/envoy/config/route/v3/route.js';
import { JwtAuthentication } from '../../src/gen/envoy/extensions/filters/http/jwt_authn/v3/config.js';
import { ExtAuthz } from '../../src/gen/envoy/extensions/filters/http/ext_authz/v3/ext_authz.js';
import { hcmOf, tcpProxiesOf } from '../support/decode.js';

/** Clusters an HTTP filter's typed config names (jwt_authn remote key sets, ext_authz services). */
function filterClusters(any: { typeUrl: string; value: Buffer | Uint8Array } | undefined): string[] {
  if (!any) return [];
  if (any.typeUrl.endsWith('.JwtAuthentication')) {
    return Object.values(JwtAuthentication.decode(any.value).providers)
      .map((p) => p.remoteJwks?.httpUri?.cluster)
      .filter((c): c is string => !!c);
  }
  if (any.typeUrl.endsWith('http.ext_authz.v3.ExtAuthz')) {
    const e = ExtAuthz.decode(any.value);
    return [e.httpService?.serverUri?.cluster, e.grpcService?.envoyGrpc?.clusterName].filter((c): c is string => !!c);
  }
  return [];
}

export function integrityProblems(c: { clusters: Cluster[]; endpoints: ClusterLoadAssignment[]; listeners: Listener[]; routes: RouteConfiguration[] }): string[] {
  const problems: string[] = [];
  const clusterNames = new Set(c.clusters.map((x) => x.name));
  const claNames = new Set(c.endpoints.map((x) => x.clusterName));
  const routeNames = new Set(c.routes.map((x) => x.name));
  if (clusterNames.size !== c.clusters.length) problems.push('duplicate cluster names');
  if (new Set(c.listeners.map((l) => l.name)).size !== c.listeners.length) problems.push('duplicate listener names');
  for (const cl of c.clusters) {
    if (cl.edsClusterConfig && !claNames.has(cl.edsClusterConfig.serviceName || cl.name)) problems.push(`EDS cluster ${cl.name} has no assignment`);
  }
  for (const l of c.listeners) {
    for (const h of hcmOf(l)) {
      if (h.rds && !routeNames.has(h.rds.routeConfigName)) problems.push(`listener ${l.name} uses missing RDS ${h.rds.routeConfigName}`);
      if (h.httpFilters.at(-1)?.name !== 'envoy.filters.http.router') problems.push(`listener ${l.name}: last HTTP filter is not the router`);
      // clusters named inside filters' typed configs: remote key sets, external authorizers
      for (const f of h.httpFilters) {
        for (const name of filterClusters(f.typedConfig)) if (!clusterNames.has(name)) problems.push(`listener ${l.name}: ${f.name} names missing cluster ${name}`);
      }
    }
    for (const t of tcpProxiesOf(l)) {
      for (const name of t.cluster ? [t.cluster] : (t.weightedClusters?.clusters.map((w) => w.name) ?? [])) {
        if (!clusterNames.has(name)) problems.push(`listener ${l.name} tcp_proxy to missing cluster ${name}`);
      }
    }
  }
  for (const rc of c.routes) {
    const domains = new Set<string>();
    for (const vh of rc.virtualHosts) {
      for (const d of vh.domains) {
        if (domains.has(d)) problems.push(`route ${rc.name}: domain ${d} appears twice`);
        domains.add(d);
      }
      for (const r of vh.routes) {
        const targets = r.route ? (r.route.cluster ? [r.route.cluster] : (r.route.weightedClusters?.clusters.map((w) => w.name) ?? [])) : [];
        for (const t of targets) if (!clusterNames.has(t)) problems.push(`route ${rc.name}/${vh.name}/${r.name} → missing cluster ${t}`);
      }
    }
  }
  return problems;
}
