/** Resource naming, written once: cluster names encode direction, port, subset and host. */

export function outboundClusterName(port: number, subset: string, host: string): string {
  return `outbound|${port}|${subset}|${host}`;
}

export function inboundClusterName(port: number): string {
  return `inbound|${port}||`;
}

export interface ParsedClusterName {
  readonly direction: 'outbound' | 'inbound';
  readonly port: number;
  readonly subset: string;
  readonly host: string;
}

export function parseClusterName(name: string): ParsedClusterName | undefined {
  const parts = name.split('|');
  if (parts.length !== 4) return undefined;
  const [direction, port, subset, host] = parts;
  if (direction !== 'outbound' && direction !== 'inbound') return undefined;
  const p = Number(port);
  if (!Number.isInteger(p)) return undefined;
  return { direction, port: p, subset, host };
}

export const BLACKHOLE_CLUSTER = 'BlackHoleCluster';
export const PASSTHROUGH_CLUSTER = 'PassthroughCluster';
export const INBOUND_PASSTHROUGH_CLUSTER = 'InboundPassthroughClusterIpv4';

export const VIRTUAL_OUTBOUND_LISTENER = 'virtualOutbound';
export const VIRTUAL_INBOUND_LISTENER = 'virtualInbound';
export const OUTBOUND_CAPTURE_PORT = 15001;
export const INBOUND_CAPTURE_PORT = 15006;

/** Filter and extension names. */
export const Filters = {
  httpConnectionManager: 'envoy.filters.network.http_connection_manager',
  tcpProxy: 'envoy.filters.network.tcp_proxy',
  router: 'envoy.filters.http.router',
  fault: 'envoy.filters.http.fault',
  cors: 'envoy.filters.http.cors',
  originalDst: 'envoy.filters.listener.original_dst',
  tlsInspector: 'envoy.filters.listener.tls_inspector',
  tls: 'envoy.transport_sockets.tls',
  rawBuffer: 'envoy.transport_sockets.raw_buffer',
  httpProtocolOptions: 'envoy.extensions.upstreams.http.v3.HttpProtocolOptions',
} as const;
