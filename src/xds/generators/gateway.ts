/**
 * Generators for gateways (router proxies): one bound listener per server port of the Gateways that
 * select the proxy, route tables built from the VirtualServices bound to those Gateways, and the
 * outbound clusters of every visible service.
 */
import { Cluster } from '../../gen/envoy/config/cluster/v3/cluster.js';
import { Listener } from '../../gen/envoy/config/listener/v3/listener.js';
import type { HttpFilter } from '../../gen/envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.js';
import { RouteConfiguration } from '../../gen/envoy/config/route/v3/route.js';
import { VirtualHost_TlsRequirementType, type VirtualHost } from '../../gen/envoy/config/route/v3/route_components.js';
import type { ConfigObject } from '../../config/types.js';
import type { Gateway, GatewayServer } from '../../config/spec-types.js';
import { hostMatches } from '../../model/host.js';
import type { Proxy } from '../../model/proxy.js';
import type { PushContext } from '../../model/push-context.js';
import { objectId } from '../../util/identity.js';
import type { EncodedResource, ResourceCache } from '../cache.js';
import { buildBlackholeCluster, meshSni } from '../envoy/clusters.js';
import { Any } from '../../gen/google/protobuf/any.js';
import { jwtAuthnFilter } from '../envoy/security/jwt.js';
import { httpAuthzFilters, networkAuthzFilters, type FilterShape } from '../envoy/security/authz.js';
import { NO_AUTHZ } from '../../model/policy/index.js';
import { workloadJwt } from './request-authn.js';
import { workloadExtAuthz } from './ext-authz.js';
import { buildListener, hcmFilter, tcpProxyFilter, tlsInspectorListenerFilter, type FilterChainShape } from '../envoy/listeners.js';
import { BLACKHOLE_CLUSTER, Filters } from '../envoy/names.js';
import { encode, msg, type Shape } from '../envoy/pack.js';
import { gatewayServerTls, serverCredentials, verifiesClients } from '../envoy/security/gateway-tls.js';
import { buildHttpRoutes, destinationCluster, type RouteContext } from '../envoy/routes.js';
import { TypeUrl } from '../types.js';
import { generateEndpoints, visibleOutboundClusters } from './common.js';
import { caCredential, secrets } from './secrets.js';
import { nameTable } from './name-table.js';
import type { GenerateInput, GeneratorSet } from './types.js';
import { hcmObservability } from './observability.js';

interface BoundServer {
  readonly gateway: ConfigObject<Gateway>;
  readonly server: GatewayServer;
  readonly index: number;
}

const protocolOf = (s: GatewayServer): string => (s.port?.protocol ?? '').toUpperCase();
/** The server's TLS mode; HTTPS and TLS servers that write none pass TLS through (the public API's default). */
function tlsMode(s: GatewayServer): string | undefined {
  const p = protocolOf(s);
  return s.tls?.mode ?? (p === 'HTTPS' || p === 'TLS' ? 'PASSTHROUGH' : undefined);
}
const terminatesTls = (s: GatewayServer): boolean => ['SIMPLE', 'MUTUAL', 'MESH_MUTUAL', 'OPTIONAL_MUTUAL'].includes(tlsMode(s) ?? '');
const passesTls = (s: GatewayServer): boolean => tlsMode(s) === 'PASSTHROUGH' || tlsMode(s) === 'AUTO_PASSTHROUGH';
/** Servers whose connections reach an HTTP connection manager (plain HTTP, or HTTPS terminated here). */
const isHttpServer = (s: GatewayServer): boolean => ['HTTP', 'HTTP2', 'GRPC', 'HTTPS'].includes(protocolOf(s)) && !passesTls(s);

/** Route table name of a server: plain HTTP servers share `http.<port>`, TLS ones get their own. */
export function gatewayRouteName(b: BoundServer): string {
  const port = b.server.port?.number ?? 0;
  if (!terminatesTls(b.server)) return `http.${port}`;
  return `https.${port}.${b.server.name ?? b.index}.${b.gateway.meta.name}.${b.gateway.meta.namespace}`;
}

function serversByPort(proxy: Proxy, push: PushContext): Map<number, BoundServer[]> {
  const byPort = new Map<number, BoundServer[]>();
  for (const gw of push.gatewaysFor(proxy)) {
    (gw.spec.servers ?? []).forEach((server, index) => {
      const port = server.port?.number;
      if (!port) return;
      const list = byPort.get(port) ?? [];
      list.push({ gateway: gw, server, index });
      byPort.set(port, list);
    });
  }
  return byPort;
}

/** `ns/host` server hosts → plain host patterns (namespace scoping is applied to VirtualServices). */
function serverHostPatterns(s: GatewayServer): Array<{ ns: string; host: string }> {
  return (s.hosts ?? []).map((h) => {
    const i = h.indexOf('/');
    return i >= 0 ? { ns: h.slice(0, i), host: h.slice(i + 1) } : { ns: '*', host: h };
  });
}

/**
 * The security filters of a gateway's chains (docs/adr/0100, 0101, 0150): on HTTP chains jwt_authn
 * (RequestAuthentications that select the gateway), then the CUSTOM ext_authz and the RBAC HTTP
 * filters of its AuthorizationPolicies; on every other chain the network authorization filters,
 * before the filters that pick the destination.
 */
function gatewaySecurity(proxy: Proxy, push: PushContext, settings: GenerateInput['settings']): {
  key: string;
  http: (statPrefix: string) => ReadonlyArray<FilterShape>;
  tcp: (statPrefix: string) => FilterShape[];
} {
  const jwt = workloadJwt(proxy, push, settings);
  const jwtFilter = jwtAuthnFilter(jwt.providers);
  const authz = settings.authz ? push.policies.authzFor(proxy) : NO_AUTHZ;
  const extAuthz = workloadExtAuthz(proxy, push, settings, authz);
  const ctx = { protocol: 'tcp' as const, proxyless: false, trustDomain: push.mesh.trustDomain, trustDomainAliases: push.mesh.trustDomainAliases ?? [] };
  return {
    key: `${jwt.key}|${authz.key}|${extAuthz.key}`,
    http: (statPrefix) => [...(jwtFilter ? [jwtFilter] : []), ...httpAuthzFilters({ policies: authz.policies, extAuthz: extAuthz.targets, ctx: { ...ctx, protocol: 'http' }, statPrefix })],
    tcp: (statPrefix) => networkAuthzFilters({ policies: authz.policies, extAuthz: extAuthz.targets, ctx, statPrefix }),
  };
}

function listeners({ proxy, push, cache, settings }: GenerateInput): EncodedResource[] {
  const out: EncodedResource[] = [];
  const security = gatewaySecurity(proxy, push, settings);
  const observability = hcmObservability(proxy, push.mesh, settings);
  for (const [port, all] of [...serversByPort(proxy, push)].sort(([a], [b]) => a - b)) {
    const name = `0.0.0.0_${port}`;
    // a server whose credential is missing has no chain (Envoy would hold the whole listener waiting
    // for a secret that does not come); a port left with none has no listener. The Secret source logs
    // what went missing.
    const servers = all.filter((b) => !terminatesTls(b.server) || credentialsAvailable(b.server, proxy, push));
    if (servers.length === 0) continue;
    // credentials are Secrets of the proxy's namespace: the namespace is part of what the listener reads
    // the policies are part of what the listener reads: a policy edit changes the key (and the bytes)
    const key = `gl|${name}|${proxy.namespace}|${servers.map((s) => `${objectId(s.gateway)}#${s.index}`).join(',')}|p${push.version}|${security.key}|${observability.key}|m${objectId(push.mesh)}`;
    out.push(
      cache.getOrBuild('lds', key, () => {
        const statPrefix = `outbound_0.0.0.0_${port}`;
        const leadingFilters = security.http(statPrefix) as ReadonlyArray<Shape<HttpFilter>>;
        const tcpAuthz = security.tcp(statPrefix);
        const chains: FilterChainShape[] = [];
        const seenSni = new Set<string>();
        let plainHttp = false;
        let needsInspector = false;
        for (const b of servers) {
          const sni = serverHostPatterns(b.server).map((h) => h.host).filter((h) => h !== '*' && !seenSni.has(h));
          if (isHttpServer(b.server) && !terminatesTls(b.server)) {
            if (plainHttp) continue; // all plain HTTP servers on a port share one chain and route table
            plainHttp = true;
            chains.push({ filters: [hcmFilter({ statPrefix, rds: gatewayRouteName(b), proxyless: false, leadingFilters, observability: observability.value })] });
          } else if (terminatesTls(b.server)) {
            needsInspector = true;
            sni.forEach((h) => seenSni.add(h));
            chains.push({
              filterChainMatch: sni.length > 0 ? { serverNames: sni } : undefined,
              transportSocket: { name: Filters.tls, typedConfig: gatewayServerTls(b.server.tls!, push.mesh, isHttpServer(b.server) ? ['h2', 'http/1.1'] : []) },
              filters: [
                ...(isHttpServer(b.server)
                  ? [hcmFilter({ statPrefix, rds: gatewayRouteName(b), proxyless: false, leadingFilters, observability: observability.value })]
                  : [...tcpAuthz, tcpProxyFilter(name, tcpDestination(b, port, proxy, push))]),
              ],
            });
          } else if (tlsMode(b.server) === 'AUTO_PASSTHROUGH') {
            // the client's SNI names the cluster (`outbound_.<port>_.<subset>_.<host>`, the SNI-DNAT
            // clusters below): sni_cluster sets it, tcp_proxy's own cluster is never used
            needsInspector = true;
            sni.forEach((h) => seenSni.add(h));
            chains.push({
              filterChainMatch: sni.length > 0 ? { serverNames: sni } : undefined,
              filters: [...tcpAuthz, sniClusterFilter(), tcpProxyFilter(name, BLACKHOLE_CLUSTER)],
            });
          } else if (tlsMode(b.server) === 'PASSTHROUGH') {
            // one chain per TLS route: its SNI hosts (within the server's hosts) to its destination
            needsInspector = true;
            for (const r of passthroughRoutes(b, port, proxy, push)) {
              const names = r.sniHosts.filter((h) => !seenSni.has(h));
              if (names.length === 0) continue;
              names.forEach((h) => seenSni.add(h));
              chains.push({ filterChainMatch: { serverNames: names }, filters: [...tcpAuthz, tcpProxyFilter(name, r.cluster)] });
            }
          } else {
            // plain TCP: the server's first TCP route
            chains.push({ filters: [...tcpAuthz, tcpProxyFilter(name, tcpDestination(b, port, proxy, push))] });
          }
        }
        // Envoy rejects two chains with the same match: keep the first of each.
        const unique: FilterChainShape[] = [];
        const seen = new Set<string>();
        for (const c of chains) {
          const k = JSON.stringify(c.filterChainMatch ?? {});
          if (seen.has(k)) continue;
          seen.add(k);
          unique.push(c);
        }
        const listener = buildListener({
          name,
          address: '0.0.0.0',
          port,
          direction: 'outbound',
          filterChains: unique,
          listenerFilters: needsInspector ? [tlsInspectorListenerFilter()] : [],
        });
        return { name, typeUrl: TypeUrl.Listener, bytes: encode(Listener, listener) };
      }),
    );
  }
  return out;
}

function gatewayKey(b: BoundServer): string {
  return `${b.gateway.meta.namespace}/${b.gateway.meta.name}`;
}

/** Whether every credential a terminating server names is there (or still loading) in the proxy's namespace. */
function credentialsAvailable(server: GatewayServer, proxy: Proxy, push: PushContext): boolean {
  const tls = server.tls;
  if (!tls || tls.mode === 'MESH_MUTUAL') return true;
  const names = serverCredentials(tls);
  if (names.length === 0) return true;
  for (const n of names) {
    const slash = n.indexOf('/');
    // a Secret of another namespace is never served to this gateway (docs/adr/0105)
    if (slash >= 0 && n.slice(0, slash) !== proxy.namespace) return false;
    const name = slash >= 0 ? n.slice(slash + 1) : n;
    const c = push.credential(proxy.namespace, name);
    if (c.state === 'missing' || (c.state === 'present' && !c.credential.certificateChain)) return false;
  }
  if (verifiesClients(tls)) {
    const first = names[0].slice(names[0].indexOf('/') + 1);
    const pending = push.credential(proxy.namespace, first).state === 'pending' || push.credential(proxy.namespace, `${first}-cacert`).state === 'pending';
    if (!pending && !caCredential(push, proxy.namespace, first)) return false;
  }
  return true;
}

const SNI_CLUSTER_TYPE = 'type.googleapis.com/envoy.extensions.filters.network.sni_cluster.v3.SniCluster';

/** The sni_cluster network filter (its config is an empty message). */
function sniClusterFilter(): { name: string; typedConfig: { typeUrl: string; value: Buffer } } {
  return { name: 'envoy.filters.network.sni_cluster', typedConfig: { typeUrl: SNI_CLUSTER_TYPE, value: Buffer.alloc(0) } };
}

/** The TLS routes of a PASSTHROUGH server: SNI hosts (within the server's hosts) and their destination cluster. */
function passthroughRoutes(b: BoundServer, port: number, proxy: Proxy, push: PushContext): Array<{ sniHosts: string[]; cluster: string }> {
  const patterns = serverHostPatterns(b.server);
  const out: Array<{ sniHosts: string[]; cluster: string }> = [];
  for (const vs of push.virtualServices(proxy.namespace, gatewayKey(b))) {
    if (!patterns.some((p) => p.ns === '*' || p.ns === vs.namespace || (p.ns === '.' && vs.namespace === b.gateway.meta.namespace))) continue;
    for (const r of vs.spec.tls ?? []) {
      const ctx: RouteContext = { push, proxy, namespace: vs.namespace, listenerPort: port, proxyless: false, defaultTimeoutMs: 0, gateway: gatewayKey(b) };
      const cluster = destinationCluster(r.route?.[0]?.destination, ctx);
      if (!cluster) continue;
      const sniHosts = [...new Set((r.match ?? []).flatMap((m) => m.sniHosts ?? []))].filter((h) => patterns.some((p) => hostMatches(p.host, h)));
      if (sniHosts.length > 0) out.push({ sniHosts, cluster });
    }
  }
  return out;
}

function tcpDestination(b: BoundServer, port: number, proxy: Proxy, push: PushContext): string {
  for (const vs of push.virtualServices(proxy.namespace, gatewayKey(b))) {
    const routes = vs.spec.tcp ?? [];
    for (const r of routes) {
      const d = r.route?.[0]?.destination;
      const ctx: RouteContext = { push, proxy, namespace: vs.namespace, listenerPort: port, proxyless: false, defaultTimeoutMs: 0, gateway: gatewayKey(b) };
      const cluster = destinationCluster(d, ctx);
      if (cluster) return cluster;
    }
  }
  return BLACKHOLE_CLUSTER;
}

function routes({ proxy, push, cache, names, settings }: GenerateInput): EncodedResource[] {
  const byName = new Map<string, BoundServer[]>();
  for (const servers of serversByPort(proxy, push).values()) {
    for (const b of servers) {
      if (!isHttpServer(b.server)) continue;
      const n = gatewayRouteName(b);
      byName.set(n, [...(byName.get(n) ?? []), b]);
    }
  }
  const out: EncodedResource[] = [];
  for (const name of names ?? byName.keys()) {
    const servers = byName.get(name) ?? [];
    const key = `gr|${name}|${servers.map((s) => objectId(s.gateway)).join(',')}|p${push.version}`;
    out.push(
      cache.getOrBuild('rds', key, () => {
        const vhosts = new Map<string, Shape<VirtualHost> & { routes: unknown[] }>();
        for (const b of servers) {
          const port = b.server.port?.number ?? 0;
          const patterns = serverHostPatterns(b.server);
          for (const vs of push.virtualServices(proxy.namespace, gatewayKey(b))) {
            const ctx: RouteContext = {
              push,
              proxy,
              namespace: vs.namespace,
              listenerPort: port,
              proxyless: false,
              defaultTimeoutMs: settings.defaultRequestTimeoutMs,
              gateway: gatewayKey(b),
            };
            for (const host of vs.hosts) {
              const allowed = patterns.some((p) => (p.ns === '*' || p.ns === vs.namespace || (p.ns === '.' && vs.namespace === b.gateway.meta.namespace)) && (hostMatches(p.host, host) || hostMatches(host, p.host)));
              if (!allowed) continue;
              const existing = vhosts.get(host);
              const built = buildHttpRoutes(`${vs.namespace}.${vs.source.meta.name}`, vs.http, ctx);
              if (existing) {
                existing.routes.push(...built);
                continue;
              }
              vhosts.set(host, {
                name: `${host}:${port}`,
                domains: host === '*' ? ['*'] : [host, `${host}:*`],
                routes: built,
                requireTls: b.server.tls?.httpsRedirect ? VirtualHost_TlsRequirementType.ALL : undefined,
              });
            }
          }
        }
        const rc = msg(RouteConfiguration, { name, virtualHosts: [...vhosts.values()] as Shape<VirtualHost>[], validateClusters: false });
        return { name, typeUrl: TypeUrl.Route, bytes: encode(RouteConfiguration, rc) };
      }),
    );
  }
  return out;
}

/**
 * SNI-DNAT clusters of AUTO_PASSTHROUGH servers: each outbound cluster again under the name a mesh
 * client puts in its SNI (`outbound_.<port>_.<subset>_.<host>`), with the same endpoints and no TLS of
 * its own (the client's mutual TLS passes through to the workload).
 */
function sniDnatClusters(outbound: ReadonlyArray<EncodedResource>, cache: ResourceCache): EncodedResource[] {
  return outbound.map((r) =>
    cache.getOrBuild('cds', `sni-dnat|${r.name}|${r.version}`, () => {
      const c = Cluster.decode(Any.decode(r.any).value);
      const name = meshSni(r.name);
      // an EDS cluster keeps asking for the assignment of the cluster it copies (outbound ones name none)
      const edsClusterConfig = c.edsClusterConfig ? { ...c.edsClusterConfig, serviceName: c.edsClusterConfig.serviceName || r.name } : undefined;
      const dnat = { ...c, name, edsClusterConfig, transportSocket: undefined, transportSocketMatches: [] };
      return { name, typeUrl: TypeUrl.Cluster, bytes: encode(Cluster, Cluster.fromPartial(dnat)) };
    }),
  );
}

function clusters({ proxy, push, endpoints, cache }: GenerateInput): EncodedResource[] {
  const outbound = visibleOutboundClusters(proxy, push, endpoints, cache, false);
  const autoPassthrough = push.gatewaysFor(proxy).some((g) => (g.spec.servers ?? []).some((s) => tlsMode(s) === 'AUTO_PASSTHROUGH'));
  const out = [...outbound, ...(autoPassthrough ? sniDnatClusters(outbound, cache) : [])];
  out.push(cache.getOrBuild('cds', `cf|${BLACKHOLE_CLUSTER}|m${objectId(push.mesh)}`, () => ({ name: BLACKHOLE_CLUSTER, typeUrl: TypeUrl.Cluster, bytes: encode(Cluster, buildBlackholeCluster(push.mesh)) })));
  return out;
}

export const gatewayGenerators: GeneratorSet = {
  [TypeUrl.Cluster]: clusters,
  [TypeUrl.Listener]: listeners,
  [TypeUrl.Route]: routes,
  [TypeUrl.Secret]: secrets,
  [TypeUrl.NameTable]: nameTable,
  [TypeUrl.Endpoint]: ({ proxy, push, endpoints, cache, names, few }) =>
    generateEndpoints(proxy, push, endpoints, cache, names, true, () => visibleOutboundClusters(proxy, push, endpoints, cache, false).map((c) => c.name), few),
};
