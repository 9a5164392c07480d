/** Decodes `Any` resource bytes with the Envoy protos, unwrapping the typed configs tests look into. */
import { Cluster } from '../../src/gen/envoy/config/cluster/v3/cluster.js';
import { ClusterLoadAssignment } from '../../src/gen/envoy/config/endpoint/v3/endpoint.js';
import { Listener } from '../../src/gen/envoy/config/listener/v3/listener.js';
import { RouteConfiguration } from '../../src/gen/envoy/config/route/v3/route.js';
import { HttpConnectionManager } from '../../src/gen/envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.js';
import { TcpProxy } from '../../src/gen/envoy/extensions/filters/network/tcp_proxy/v3/tcp_proxy.js';
import { Any } from '../../src/gen/google/protobuf/any.js';
import { Secret } from '../../src/gen/envoy/extensions/transport_sockets/tls/v3/secret.js';
import { NameTable } from '../../src/gen/mesh/v1/dns/name_table.js';
import { TypeUrl } from '../../src/xds/types.js';

export interface DecodedResources {
  [TypeUrl.Cluster]: Cluster;
  [TypeUrl.Endpoint]: ClusterLoadAssignment;
  [TypeUrl.Listener]: Listener;
  [TypeUrl.Route]: RouteConfiguration;
  [TypeUrl.Secret]: Secret;
  [TypeUrl.NameTable]: NameTable;
}

export function decodeResource(type: string, anyBytes: Uint8Array): unknown {
  const any = Any.decode(anyBytes);
  if (any.typeUrl !== type) throw new Error(`resource type ${any.typeUrl} in a ${type} response`);
  switch (type) {
    case TypeUrl.Cluster:
      return Cluster.decode(any.value);
    case TypeUrl.Endpoint:
      return ClusterLoadAssignment.decode(any.value);
    case TypeUrl.Listener:
      return Listener.decode(any.value);
    case TypeUrl.Route:
      return RouteConfiguration.decode(any.value);
    case TypeUrl.Secret:
      return Secret.decode(any.value);
    case TypeUrl.NameTable:
      return NameTable.decode(any.value);
    default:
      throw new Error(`unknown type ${type}`);
  }
}

export function hcmOf(l: Listener): HttpConnectionManager[] {
  const out: HttpConnectionManager[] = [];
  if (l.apiListener?.apiListener) out.push(HttpConnectionManager.decode(l.apiListener.apiListener.value));
  for (const fc of [...l.filterChains, ...(l.defaultFilterChain ? [l.defaultFilterChain] : [])]) {
    for (const f of fc.filters) {
      if (f.typedConfig?.typeUrl.endsWith('HttpConnectionManager')) out.push(HttpConnectionManager.decode(f.typedConfig.value));
    }
  }
  return out;
}

export function tcpProxiesOf(l: Listener): TcpProxy[] {
  const out: TcpProxy[] = [];
  for (const fc of [...l.filterChains, ...(l.defaultFilterChain ? [l.defaultFilterChain] : [])]) {
    for (const f of fc.filters) if (f.typedConfig?.typeUrl.endsWith('TcpProxy')) out.push(TcpProxy.decode(f.typedConfig.value));
  }
  return out;
}
