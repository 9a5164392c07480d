/** xDS type URLs and the ADS push order, written down once. */
export const TypeUrl = {
  Cluster: 'type.googleapis.com/envoy.config.cluster.v3.Cluster',
  Endpoint: 'type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment',
  Listener: 'type.googleapis.com/envoy.config.listener.v3.Listener',
  Route: 'type.googleapis.com/envoy.config.route.v3.RouteConfiguration',
  /** Gateway credentials served on the ADS stream (docs/adr/0105). */
  Secret: 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret',
  /**
   * The name table an agent that captures DNS answers from (proto/mesh/v1/dns/name_table.proto,
   * docs/adr/0187): one resource with the empty name, for proxies with DNS_CAPTURE=true only.
   */
  NameTable: 'type.googleapis.com/mesh.v1.dns.NameTable',
} as const;

export type XdsTypeUrl = (typeof TypeUrl)[keyof typeof TypeUrl];

/** Short names used by metrics and logs. */
export const shortType: Record<XdsTypeUrl, 'cds' | 'eds' | 'lds' | 'rds' | 'sds' | 'nds'> = {
  [TypeUrl.Cluster]: 'cds',
  [TypeUrl.Endpoint]: 'eds',
  [TypeUrl.Listener]: 'lds',
  [TypeUrl.Route]: 'rds',
  [TypeUrl.Secret]: 'sds',
  [TypeUrl.NameTable]: 'nds',
};

/** Order in which a full push sends types over ADS so that references resolve on arrival. */
export const PUSH_ORDER: ReadonlyArray<XdsTypeUrl> = [TypeUrl.Cluster, TypeUrl.Endpoint, TypeUrl.Listener, TypeUrl.Route, TypeUrl.Secret, TypeUrl.NameTable];

export function isKnownType(url: string): url is XdsTypeUrl {
  return url in shortType;
}

/** Types whose subscription is wildcard by default for Envoy (names are discovered, not requested). */
export const WILDCARD_TYPES: ReadonlySet<string> = new Set([TypeUrl.Cluster, TypeUrl.Listener, TypeUrl.NameTable]);

/**
 * Types whose state-of-the-world responses may carry only some of the subscribed resources: a client
 * keeps the ones a response leaves out (xDS protocol: only Listener and Cluster responses list the
 * complete state). Responses of these types carry only what changed for the client.
 */
export const PARTIAL_STATE_TYPES: ReadonlySet<string> = new Set([TypeUrl.Endpoint, TypeUrl.Route, TypeUrl.Secret]);
