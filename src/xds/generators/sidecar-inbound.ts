/**
 * The sidecar's inbound capture listener (15006) with its security policy (docs/adr/0080, 0081,
 * 0082): per inbound port, the mutual TLS PeerAuthentication asks for, and the authorization
 * filters of the AuthorizationPolicies that select the workload.
 *
 * - STRICT: one chain for the port, TLS with the workload certificate; the peer must present a
 *   certificate of the mesh's roots and trust domains. A plaintext client fails the handshake.
 * - PERMISSIVE: mesh mutual TLS for clients that offer the mesh ALPN marker, plaintext (and the
 *   application's own TLS) for everyone else on the same port.
 * - DISABLE: plaintext only.
 * Ports the workload does not declare pass through to the application under the workload-level mode
 * (the default filter chain and its companions), with the same network authorization filters.
 */
import { Listener } from '../../gen/envoy/config/listener/v3/listener.js';
import type { HttpFilter } from '../../gen/envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.js';
import type { MeshSettings } from '../../model/mesh-settings.js';
import { mtlsModeForPort, type MtlsMode, type WorkloadAuthz, type WorkloadMtls } from '../../model/policy/index.js';
import { isHttpProtocol, type Protocol } from '../../model/service.js';
import { buildListener, hcmFilter, originalDstListenerFilter, tcpProxyFilter, tlsInspectorListenerFilter, type FilterChainShape, type HcmOptions } from '../envoy/listeners.js';
import { INBOUND_CAPTURE_PORT, INBOUND_PASSTHROUGH_CLUSTER, VIRTUAL_INBOUND_LISTENER, inboundClusterName } from '../envoy/names.js';
import type { Shape } from '../envoy/pack.js';
import { httpAuthzFilters, networkAuthzFilters, type FilterShape } from '../envoy/security/authz.js';
import { jwtAuthnFilter } from '../envoy/security/jwt.js';
import { MESH_ALPN, acceptedTrustDomains, meshServerTls } from '../envoy/security/tls.js';
import type { WorkloadJwt } from './request-authn.js';
import type { WorkloadExtAuthz } from './ext-authz.js';

/** A port of the proxy's own workload, from the endpoints that carry the proxy's IP. */
export interface InboundPort {
  readonly port: number;
  readonly protocol: Protocol;
}

export interface InboundInput {
  readonly ports: ReadonlyArray<InboundPort>;
  readonly mtls: WorkloadMtls;
  readonly authz: WorkloadAuthz;
  /** JWT providers (RequestAuthentication): the jwt_authn filter goes first on HTTP chains (docs/adr/0100). */
  readonly jwt: WorkloadJwt;
  /** CUSTOM providers resolved for this proxy (docs/adr/0101). */
  readonly extAuthz: WorkloadExtAuthz;
  readonly mesh: MeshSettings;
  readonly hcm: Omit<HcmOptions, 'statPrefix' | 'routeConfig' | 'leadingFilters'>;
}

/** Server ALPN of inbound mesh TLS: what the application protocols may negotiate. */
const SERVER_ALPN = ['h2', 'http/1.1'];

/**
 * The chains of one destination (a port, or every undeclared port when `port` is undefined) under
 * `mode`, all running `filters`. The first chain of PERMISSIVE takes mesh TLS (TLS offering the mesh
 * ALPN marker); the others take everything else as it comes.
 */
function chainsFor(name: string, port: number | undefined, mode: MtlsMode, filters: ReadonlyArray<FilterShape>, tls: () => FilterChainShape['transportSocket']): FilterChainShape[] {
  const dest = port !== undefined ? { destinationPort: port } : {};
  switch (mode) {
    case 'STRICT':
      return [{ name: `${name}-mtls`, filterChainMatch: dest, filters: [...filters], transportSocket: tls() }];
    case 'DISABLE':
      return [{ name, filterChainMatch: dest, filters: [...filters] }];
    case 'PERMISSIVE':
      return [
        { name: `${name}-mtls`, filterChainMatch: { ...dest, transportProtocol: 'tls', applicationProtocols: [MESH_ALPN] }, filters: [...filters], transportSocket: tls() },
        // the application's own TLS (no mesh marker) goes through as it is
        { name: `${name}-tls`, filterChainMatch: { ...dest, transportProtocol: 'tls' }, filters: [...filters] },
        { name: `${name}-plaintext`, filterChainMatch: dest, filters: [...filters] },
      ];
  }
}

export function buildInboundListener(input: InboundInput): Listener {
  const { mesh, mtls, authz } = input;
  const rbacCtx = { protocol: 'tcp' as const, proxyless: false, trustDomain: mesh.trustDomain, trustDomainAliases: mesh.trustDomainAliases ?? [] };
  const tls = (): FilterChainShape['transportSocket'] => meshServerTls('sds', acceptedTrustDomains(mesh), SERVER_ALPN);
  const chains: FilterChainShape[] = [];
  for (const p of input.ports) {
    const cluster = inboundClusterName(p.port);
    let filters: FilterShape[];
    if (isHttpProtocol(p.protocol)) {
      const jwt = jwtAuthnFilter(input.jwt.providers);
      const leading = [...(jwt ? [jwt] : []), ...httpAuthzFilters({ policies: authz.policies, extAuthz: input.extAuthz.targets, ctx: { ...rbacCtx, protocol: 'http' }, statPrefix: cluster })] as ReadonlyArray<Shape<HttpFilter>>;
      filters = [
        hcmFilter({
          ...input.hcm,
          statPrefix: cluster,
          leadingFilters: leading,
          routeConfig: {
            name: cluster,
            virtualHosts: [{ name: `inbound|http|${p.port}`, domains: ['*'], routes: [{ name: 'default', match: { prefix: '/' }, route: { cluster, timeout: { seconds: 0, nanos: 0 } } }] }],
          },
        }),
      ];
    } else {
      filters = [...networkAuthzFilters({ policies: authz.policies, extAuthz: input.extAuthz.targets, ctx: rbacCtx, statPrefix: cluster }), tcpProxyFilter(cluster, cluster)];
    }
    chains.push(...chainsFor(cluster, p.port, mtlsModeForPort(mtls, p.port), filters, tls));
  }
  // undeclared ports: pass through under the workload-level mode
  const passthrough = [...networkAuthzFilters({ policies: authz.policies, extAuthz: input.extAuthz.targets, ctx: rbacCtx, statPrefix: INBOUND_PASSTHROUGH_CLUSTER }), tcpProxyFilter(INBOUND_PASSTHROUGH_CLUSTER, INBOUND_PASSTHROUGH_CLUSTER)];
  const catchAll = chainsFor('virtualInbound-catchall', undefined, mtls.mode, passthrough, tls);
  const defaultChain = catchAll.pop()!;
  chains.push(...catchAll);
  const inspectTls = chains.some((c) => c.filterChainMatch?.transportProtocol !== undefined);
  return buildListener({
    name: VIRTUAL_INBOUND_LISTENER,
    address: '0.0.0.0',
    port: INBOUND_CAPTURE_PORT,
    direction: 'inbound',
    listenerFilters: [originalDstListenerFilter(), ...(inspectTls ? [tlsInspectorListenerFilter()] : [])],
    filterChains: chains,
    defaultFilterChain: { ...defaultChain, name: 'virtualInbound-catchall', filterChainMatch: undefined },
  });
}
