/**
 * Generators for gateways (router proxies): one bound listener per server port of the Gateways that
 * select the proxy, route tables built from the VirtualServices bound to those Gateways, and the
 * outbound clusters of every visible service.
 */
import { Cluster } from '../../gen/envoy/config/cluster/v3/cluster.js';
import { Listener } from '../../gen/envoy/config/listener/v3/listener.js';
import { RouteConfiguration } from '../../gen/envoy/config/route/v3/route.js';
import { VirtualHost_TlsRequirementType, type VirtualHost } from '../../gen/envoy/config/route/v3/route_components.js';
import { DownstreamTlsContext } from '../../gen/envoy/extensions/transport_sockets/tls/v3/tls.js';
import { ApiVersion } from '../../gen/envoy/config/core/v3/config_source.js';
import type { ConfigObject } from '../../config/types.js';
import type { Gateway, GatewayServer } from '../../config/spec-types.js';
import { hostMatches } from '../../model/host.js';
import type { MeshSettings } from '../../model/mesh-settings.js';
import type { Proxy } from '../../model/proxy.js';
import type { PushContext } from '../../model/push-context.js';
import { objectId } from '../../util/identity.js';
import type { EncodedResource } from '../cache.js';
import { buildBlackholeCluster } from '../envoy/clusters.js';
import { jwtAuthnFilter } from '../envoy/security/jwt.js';
import { workloadJwt } from './request-authn.js';
import { buildListener, hcmFilter, tcpProxyFilter, tlsInspectorListenerFilter, type FilterChainShape } from '../envoy/listeners.js';
import { BLACKHOLE_CLUSTER, Filters } from '../envoy/names.js';
import { encode, msg, pack, type Shape } from '../envoy/pack.js';
import { acceptedTrustDomains, meshServerTls } from '../envoy/security/tls.js';
import { buildHttpRoutes, destinationCluster, type RouteContext } from '../envoy/routes.js';
import { TypeUrl } from '../types.js';
import { generateEndpoints, visibleOutboundClusters } from './common.js';
import type { GenerateInput, GeneratorSet } from './types.js';

interface BoundServer {
  readonly gateway: ConfigObject<Gateway>;
  readonly server: GatewayServer;
  readonly index: number;
}

const isHttpServer = (s: GatewayServer): boolean => ['HTTP', 'HTTP2', 'GRPC', 'HTTPS'].includes((s.port?.protocol ?? '').toUpperCase());
const terminatesTls = (s: GatewayServer): boolean => s.tls?.mode === 'SIMPLE' || s.tls?.mode === 'MUTUAL' || s.tls?.mode === 'MESH_MUTUAL' || s.tls?.mode === 'OPTIONAL_MUTUAL';
const passesTls = (s: GatewayServer): boolean => s.tls?.mode === 'PASSTHROUGH' || s.tls?.mode === 'AUTO_PASSTHROUGH';

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

/** The CA file that verifies clients: the server's own, or the first of its tlsCertificates. */
function caFileOf(tls: NonNullable<GatewayServer['tls']>): string | undefined {
  return tls.caCertificates || (tls.tlsCertificates ?? []).find((c) => c.caCertificates)?.caCertificates || undefined;
}

function downstreamTls(s: GatewayServer, mesh: MeshSettings): ReturnType<typeof pack> {
  const tls = s.tls!;
  // the gateway's own mesh identity, from its agent's SDS like a sidecar's (docs/adr/0081)
  if (tls.mode === 'MESH_MUTUAL') return meshServerTls('sds', acceptedTrustDomains(mesh), ['h2', 'http/1.1']).typedConfig;
  const sds = { ads: {}, resourceApiVersion: ApiVersion.V3 };
  return pack('envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext', DownstreamTlsContext, {
    requireClientCertificate: tls.mode === 'MUTUAL' ? true : undefined,
    commonTlsContext: {
      alpnProtocols: ['h2', 'http/1.1'],
      tlsCertificates: [
        ...(tls.serverCertificate && tls.privateKey ? [{ certificateChain: { filename: tls.serverCertificate }, privateKey: { filename: tls.privateKey } }] : []),
        ...(tls.tlsCertificates ?? []).map((c) => ({ certificateChain: { filename: c.serverCertificate ?? '' }, privateKey: { filename: c.privateKey ?? '' } })),
      ],
      tlsCertificateSdsSecretConfigs: tls.credentialName ? [{ name: tls.credentialName, sdsConfig: sds }] : [],
      validationContext: caFileOf(tls) ? { trustedCa: { filename: caFileOf(tls) } } : undefined,
    },
  });
}

function listeners({ proxy, push, cache, settings }: GenerateInput): EncodedResource[] {
  const out: EncodedResource[] = [];
  // RequestAuthentications that select the gateway: jwt_authn first on its HTTP chains (docs/adr/0100)
  const jwt = workloadJwt(proxy, push, settings);
  const jwtFilter = jwtAuthnFilter(jwt.providers);
  const leadingFilters = jwtFilter ? [jwtFilter] : [];
  for (const [port, servers] of [...serversByPort(proxy, push)].sort(([a], [b]) => a - b)) {
    const name = `0.0.0.0_${port}`;
    const key = `gl|${name}|${servers.map((s) => objectId(s.gateway)).join(',')}|p${push.version}|${jwt.key}`;
    out.push(
      cache.getOrBuild('lds', key, () => {
        const chains: FilterChainShape[] = [];
        const seenSni = new Set<string>();
        let plainHttp = false;
        let needsInspector = false;
        for (const b of servers) {
          const sni = serverHostPatterns(b.server).map((h) => h.host).filter((h) => h !== '*' && !seenSni.has(h));
          if (isHttpServer(b.server) && !terminatesTls(b.server)) {
            if (plainHttp) continue; // all plain HTTP servers on a port share one chain and route table
            plainHttp = true;
            chains.push({ filters: [hcmFilter({ statPrefix: `outbound_0.0.0.0_${port}`, rds: gatewayRouteName(b), proxyless: false, leadingFilters })] });
          } else if (terminatesTls(b.server)) {
            needsInspector = true;
            sni.forEach((h) => seenSni.add(h));
            chains.push({
              filterChainMatch: sni.length > 0 ? { serverNames: sni } : undefined,
              transportSocket: { name: Filters.tls, typedConfig: downstreamTls(b.server, push.mesh) },
              filters: [
                isHttpServer(b.server)
                  ? hcmFilter({ statPrefix: `outbound_0.0.0.0_${port}`, rds: gatewayRouteName(b), proxyless: false, leadingFilters })
                  : tcpProxyFilter(name, tcpDestination(b, port, proxy, push)),
              ],
            });
          } else {
            // TLS passthrough or plain TCP: route by SNI/port through tls or tcp routes
            if (passesTls(b.server)) needsInspector = true;
            sni.forEach((h) => seenSni.add(h));
            chains.push({
              filterChainMatch: passesTls(b.server) && sni.length > 0 ? { serverNames: sni } : undefined,
              filters: [tcpProxyFilter(name, tcpDestination(b, port, proxy, push))],
            });
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

function tcpDestination(b: BoundServer, port: number, proxy: Proxy, push: PushContext): string {
  for (const vs of push.virtualServices(proxy.namespace, gatewayKey(b))) {
    const routes = passesTls(b.server) ? (vs.spec.tls ?? []) : (vs.spec.tcp ?? []);
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

function clusters({ proxy, push, endpoints, cache }: GenerateInput): EncodedResource[] {
  const out = [...visibleOutboundClusters(proxy, push, endpoints, cache, false)];
  out.push(cache.getOrBuild('cds', `cf|${BLACKHOLE_CLUSTER}|m${objectId(push.mesh)}`, () => ({ name: BLACKHOLE_CLUSTER, typeUrl: TypeUrl.Cluster, bytes: encode(Cluster, buildBlackholeCluster(push.mesh)) })));
  return out;
}

export const gatewayGenerators: GeneratorSet = {
  [TypeUrl.Cluster]: clusters,
  [TypeUrl.Listener]: listeners,
  [TypeUrl.Route]: routes,
  [TypeUrl.Endpoint]: ({ proxy, push, endpoints, cache, names }) =>
    generateEndpoints(proxy, push, endpoints, cache, names, true, () => visibleOutboundClusters(proxy, push, endpoints, cache, false).map((c) => c.name)),
};
