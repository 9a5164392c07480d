/**
 * What a proxy holds, written as Envoy's admin `/config_dump` writes it: one entry per kind in
 * `configs` (`ClustersConfigDump`, `ListenersConfigDump`, `RoutesConfigDump`,
 * `EndpointsConfigDump`, and a `BootstrapConfigDump` with the node), each resource as proto JSON
 * with `@type`, and every `Any` inside expanded the same way when its type is one the generators
 * emit (filters, transport sockets, protocol options). Built from the generators' encoded
 * resources, so `meshctl proxy-config` and `proxy-status <pod>` read the daemon's view and a
 * proxy's own dump with one reader (src/cli/meshctl/proxy/config-dump.ts).
 */
import { Cluster } from '../../gen/envoy/config/cluster/v3/cluster.js';
import { ClusterLoadAssignment } from '../../gen/envoy/config/endpoint/v3/endpoint.js';
import { Listener } from '../../gen/envoy/config/listener/v3/listener.js';
import { RouteConfiguration } from '../../gen/envoy/config/route/v3/route.js';
import { Cors, CorsPolicy } from '../../gen/envoy/extensions/filters/http/cors/v3/cors.js';
import { HTTPFault } from '../../gen/envoy/extensions/filters/http/fault/v3/fault.js';
import { RBAC as HttpRbac } from '../../gen/envoy/extensions/filters/http/rbac/v3/rbac.js';
import { Router } from '../../gen/envoy/extensions/filters/http/router/v3/router.js';
import { HttpInspector } from '../../gen/envoy/extensions/filters/listener/http_inspector/v3/http_inspector.js';
import { OriginalDst } from '../../gen/envoy/extensions/filters/listener/original_dst/v3/original_dst.js';
import { TlsInspector } from '../../gen/envoy/extensions/filters/listener/tls_inspector/v3/tls_inspector.js';
import { HttpConnectionManager } from '../../gen/envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.js';
import { RBAC as NetworkRbac } from '../../gen/envoy/extensions/filters/network/rbac/v3/rbac.js';
import { TcpProxy } from '../../gen/envoy/extensions/filters/network/tcp_proxy/v3/tcp_proxy.js';
import { RawBuffer } from '../../gen/envoy/extensions/transport_sockets/raw_buffer/v3/raw_buffer.js';
import { DownstreamTlsContext, UpstreamTlsContext } from '../../gen/envoy/extensions/transport_sockets/tls/v3/tls.js';
import { HttpProtocolOptions } from '../../gen/envoy/extensions/upstreams/http/v3/http_protocol_options.js';
import { Any } from '../../gen/google/protobuf/any.js';
import { Secret } from '../../gen/envoy/extensions/transport_sockets/tls/v3/secret.js';
import { NameTable } from '../../gen/mesh/v1/dns/name_table.js';
import type { EncodedResource } from '../cache.js';
import { JsonArray, lazyMap } from '../../util/json-stream.js';
import { TypeUrl, type XdsTypeUrl } from '../types.js';

interface JsonCodec {
  decode(bytes: Uint8Array): unknown;
  toJSON(message: never): unknown;
}

const PREFIX = 'type.googleapis.com/';

/** The message types the dump expands, by type URL. */
const CODECS: Readonly<Record<string, JsonCodec>> = {
  [TypeUrl.Cluster]: Cluster,
  [TypeUrl.Endpoint]: ClusterLoadAssignment,
  [TypeUrl.Listener]: Listener,
  [TypeUrl.Route]: RouteConfiguration,
  [TypeUrl.NameTable]: NameTable,
  [`${PREFIX}envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager`]: HttpConnectionManager,
  [`${PREFIX}envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy`]: TcpProxy,
  [`${PREFIX}envoy.extensions.filters.http.router.v3.Router`]: Router,
  [`${PREFIX}envoy.extensions.filters.http.fault.v3.HTTPFault`]: HTTPFault,
  [`${PREFIX}envoy.extensions.filters.http.cors.v3.Cors`]: Cors,
  [`${PREFIX}envoy.extensions.filters.http.rbac.v3.RBAC`]: HttpRbac,
  [`${PREFIX}envoy.extensions.filters.network.rbac.v3.RBAC`]: NetworkRbac,
  [`${PREFIX}envoy.extensions.filters.http.cors.v3.CorsPolicy`]: CorsPolicy,
  [`${PREFIX}envoy.extensions.filters.listener.original_dst.v3.OriginalDst`]: OriginalDst,
  [`${PREFIX}envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector`]: TlsInspector,
  [`${PREFIX}envoy.extensions.filters.listener.http_inspector.v3.HttpInspector`]: HttpInspector,
  [`${PREFIX}envoy.extensions.transport_sockets.raw_buffer.v3.RawBuffer`]: RawBuffer,
  [`${PREFIX}envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext`]: DownstreamTlsContext,
  [`${PREFIX}envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext`]: UpstreamTlsContext,
  [`${PREFIX}envoy.extensions.upstreams.http.v3.HttpProtocolOptions`]: HttpProtocolOptions,
};

export const DUMP_TYPES = {
  bootstrap: `${PREFIX}envoy.admin.v3.BootstrapConfigDump`,
  clusters: `${PREFIX}envoy.admin.v3.ClustersConfigDump`,
  endpoints: `${PREFIX}envoy.admin.v3.EndpointsConfigDump`,
  listeners: `${PREFIX}envoy.admin.v3.ListenersConfigDump`,
  routes: `${PREFIX}envoy.admin.v3.RoutesConfigDump`,
  secrets: `${PREFIX}envoy.admin.v3.SecretsConfigDump`,
} as const;

function isAnyJson(v: unknown): v is { typeUrl: string; value?: string } {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const keys = Object.keys(v);
  return typeof (v as { typeUrl?: unknown }).typeUrl === 'string' && keys.every((k) => k === 'typeUrl' || k === 'value');
}

/** Replaces `{typeUrl, value}` objects (ts-proto's JSON of Any) with the decoded message and its `@type`. */
function expand(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(expand);
  if (typeof value !== 'object' || value === null) return value;
  if (isAnyJson(value)) {
    const codec = CODECS[value.typeUrl];
    if (!codec) return { '@type': value.typeUrl, value: value.value ?? '' };
    return { '@type': value.typeUrl, ...(expand(codec.toJSON(codec.decode(Buffer.from(value.value ?? '', 'base64')) as never)) as object) };
  }
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, expand(v)]));
}

/** What a dump shows instead of private key material (as Envoy's admin dump does). */
export const REDACTED = '[redacted]';

/**
 * A Secret as proto JSON with its private key (and any other key material: the key's password, an
 * OCSP staple is public and kept) replaced by `[redacted]`; certificates stay readable.
 */
function redactedSecret(bytes: Uint8Array): Record<string, unknown> {
  const s = Secret.decode(bytes);
  const json = Secret.toJSON(s) as Record<string, unknown>;
  const tls = json.tlsCertificate as Record<string, unknown> | undefined;
  if (tls) {
    if (tls.privateKey !== undefined) tls.privateKey = { inlineString: REDACTED };
    if (tls.password !== undefined) tls.password = { inlineString: REDACTED };
  }
  const gen = json.genericSecret as Record<string, unknown> | undefined;
  if (gen?.secret !== undefined) gen.secret = { inlineString: REDACTED };
  return { '@type': TypeUrl.Secret, ...json };
}

/** One encoded `Any` as proto JSON with `@type`, nested `Any`s expanded; private keys redacted. */
export function anyToJson(encodedAny: Uint8Array): Record<string, unknown> {
  const any = Any.decode(encodedAny);
  if (any.typeUrl === TypeUrl.Secret) return redactedSecret(any.value);
  return expand({ typeUrl: any.typeUrl, value: Buffer.from(any.value).toString('base64') }) as Record<string, unknown>;
}

export interface DumpInput {
  /** The node as the proxy announced it. */
  readonly node: { readonly id: string; readonly metadata: Readonly<Record<string, unknown>> };
  /** Per type, the resources and the version they were (or would be) sent at. */
  readonly resources: ReadonlyMap<XdsTypeUrl, { readonly version: string; readonly list: ReadonlyArray<EncodedResource> }>;
}

/**
 * An Envoy-shaped config dump of `input` (see the module comment). Its lists are `JsonArray`s
 * decoded resource by resource as they are rendered (src/util/json-stream.ts): a dump of tens of MB
 * is written over turns of the event loop; `JSON.stringify` renders it whole.
 */
export function envoyConfigDump(input: DumpInput): { configs: JsonArray } {
  const of = (t: XdsTypeUrl) => input.resources.get(t) ?? { version: '', list: [] };
  const clusters = of(TypeUrl.Cluster);
  const listeners = of(TypeUrl.Listener);
  const routes = of(TypeUrl.Route);
  const endpoints = of(TypeUrl.Endpoint);
  const secrets = of(TypeUrl.Secret);
  const list = <T>(items: ReadonlyArray<EncodedResource>, fn: (r: EncodedResource) => T): JsonArray => new JsonArray(lazyMap(items, fn));
  return {
    configs: new JsonArray([
      { '@type': DUMP_TYPES.bootstrap, bootstrap: { node: { id: input.node.id, metadata: input.node.metadata } } },
      { '@type': DUMP_TYPES.clusters, dynamic_active_clusters: list(clusters.list, (r) => ({ version_info: clusters.version, cluster: anyToJson(r.any) })) },
      { '@type': DUMP_TYPES.listeners, dynamic_listeners: list(listeners.list, (r) => ({ name: r.name, active_state: { version_info: listeners.version, listener: anyToJson(r.any) } })) },
      { '@type': DUMP_TYPES.routes, dynamic_route_configs: list(routes.list, (r) => ({ version_info: routes.version, route_config: anyToJson(r.any) })) },
      { '@type': DUMP_TYPES.endpoints, dynamic_endpoint_configs: list(endpoints.list, (r) => ({ version_info: endpoints.version, endpoint_config: anyToJson(r.any) })) },
      { '@type': DUMP_TYPES.secrets, dynamic_active_secrets: list(secrets.list, (r) => ({ name: r.name, version_info: secrets.version, secret: anyToJson(r.any) })) },
    ]),
  };
}
