/**
 * Server listeners for proxyless gRPC servers (`xds.NewGRPCServer`; docs/adr/0103). A server
 * listening on `IP:port` asks for the Listener `grpc/server?xds.resource.listening_address=IP:port`
 * (the template its bootstrap names) and gets one with that address and one filter chain:
 *
 * - STRICT: TLS with the workload certificate from the bootstrap's certificate provider instance,
 *   client certificates required and verified against the mesh roots (gRPC cannot match SANs on
 *   servers; authorization matches the peer's identity instead);
 * - PERMISSIVE and DISABLE: plaintext. gRPC servers cannot tell TLS from plaintext on one port
 *   (no listener filters, `transport_protocol` matches only `raw_buffer`: gRFC A36), so PERMISSIVE
 *   takes what every mesh client can speak; proxyless clients' automatic mutual TLS sends mTLS only
 *   toward STRICT ports (envoy/clusters.ts).
 *
 * The chain's HTTP filters are the authorization filters (gRPC evaluates ALLOW and DENY, ignores
 * LOG and shadow rules) and the router; its inline route answers every path with a non-forwarding
 * action, as gRPC servers require.
 */
import type { Listener } from '../../gen/envoy/config/listener/v3/listener.js';
import type { HttpFilter } from '../../gen/envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.js';
import { HttpConnectionManager } from '../../gen/envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.js';
import { Router } from '../../gen/envoy/extensions/filters/http/router/v3/router.js';
import type { MeshSettings } from '../../model/mesh-settings.js';
import type { MtlsMode, WorkloadAuthz } from '../../model/policy/index.js';
import { buildListener, httpConnectionManager, type FilterChainShape } from '../envoy/listeners.js';
import { Filters } from '../envoy/names.js';
import { pack, type Shape } from '../envoy/pack.js';
import { httpAuthzFilters } from '../envoy/security/authz.js';
import { meshServerTls } from '../envoy/security/tls.js';

/** What gRPC substitutes `%s` with is the listening `IP:port` (`[::]:port` for IPv6). */
export const GRPC_SERVER_LISTENER_PREFIX = 'grpc/server?xds.resource.listening_address=';
/** The template a proxyless server's bootstrap declares (`server_listener_resource_name_template`). */
export const GRPC_SERVER_LISTENER_TEMPLATE = `${GRPC_SERVER_LISTENER_PREFIX}%s`;

export interface ListeningAddress {
  readonly address: string;
  readonly port: number;
}

/** The listening address a server listener name carries, or undefined for any other name. */
export function parseServerListenerName(name: string): ListeningAddress | undefined {
  if (!name.startsWith(GRPC_SERVER_LISTENER_PREFIX)) return undefined;
  const hostPort = name.slice(GRPC_SERVER_LISTENER_PREFIX.length);
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([0-9.]+)):(\d{1,5})$/.exec(hostPort);
  if (!m) return undefined;
  const port = Number(m[3]);
  if (port < 1 || port > 65535) return undefined;
  return { address: m[1] ?? m[2], port };
}

export interface GrpcServerListenerInput {
  readonly name: string;
  readonly listening: ListeningAddress;
  /** The PeerAuthentication mode of the listening port. */
  readonly mode: MtlsMode;
  readonly authz: WorkloadAuthz;
  readonly mesh: Pick<MeshSettings, 'trustDomain' | 'trustDomainAliases'>;
}

export function buildGrpcServerListener(input: GrpcServerListenerInput): Listener {
  const { listening, mesh } = input;
  const statPrefix = `inbound|grpc|${listening.port}`;
  const authz = httpAuthzFilters({
    policies: input.authz.policies,
    ctx: { protocol: 'http', proxyless: true, trustDomain: mesh.trustDomain, trustDomainAliases: mesh.trustDomainAliases ?? [] },
    statPrefix,
  }) as ReadonlyArray<Shape<HttpFilter>>;
  const router: Shape<HttpFilter> = { name: Filters.router, typedConfig: pack('envoy.extensions.filters.http.router.v3.Router', Router, {}) };
  const hcm = {
    ...httpConnectionManager({
      statPrefix,
      proxyless: true,
      routeConfig: {
        name: statPrefix,
        virtualHosts: [{ name: statPrefix, domains: ['*'], routes: [{ name: 'default', match: { prefix: '/' }, nonForwardingAction: {} }] }],
      },
    }),
    // gRPC servers refuse client-only filters (fault): authorization and the router only
    httpFilters: [...authz, router],
  };
  const chain: FilterChainShape = {
    name: input.mode === 'STRICT' ? `${statPrefix}-mtls` : `${statPrefix}-plaintext`,
    filters: [{ name: Filters.httpConnectionManager, typedConfig: pack('envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager', HttpConnectionManager, hcm) }],
    ...(input.mode === 'STRICT' ? { transportSocket: meshServerTls('provider', undefined, []) } : {}),
  };
  return buildListener({ name: input.name, address: listening.address, port: listening.port, direction: 'inbound', filterChains: [chain] });
}
