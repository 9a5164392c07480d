import type { ProxyType } from '../model/proxy.js';
import type { PushRequest } from '../model/push-request.js';
import { PUSH_ORDER, TypeUrl, type XdsTypeUrl } from './types.js';

/**
 * The xDS types a change of a config kind can alter, for kinds that do not reach every type: routing
 * rules and gateways shape listeners and routes only (clusters and endpoints come from services and
 * destination rules). Kinds not listed may alter any type.
 */
const TYPES_BY_KIND: Readonly<Record<string, ReadonlyArray<XdsTypeUrl>>> = {
  VirtualService: [TypeUrl.Listener, TypeUrl.Route],
  Gateway: [TypeUrl.Listener, TypeUrl.Route],
  // security policy (docs/adr/0080): inbound TLS and authorization filters live in listeners; the
  // automatic mutual TLS of proxyless clients' clusters follows the destination's mode (docs/adr/0103)
  PeerAuthentication: [TypeUrl.Listener, TypeUrl.Cluster],
  AuthorizationPolicy: [TypeUrl.Listener],
};

/**
 * The types a push has to regenerate: only EDS for an endpoint push (EDS and CDS for proxyless gRPC
 * clients, whose clusters' automatic mutual TLS depends on the endpoints' policies: docs/adr/0103);
 * for a push caused only by config kinds listed above, their types; otherwise every type.
 */
export function affectedTypes(req: PushRequest, proxyType?: ProxyType): ReadonlySet<XdsTypeUrl> {
  if (!req.full) return proxyType === 'grpc' ? GRPC_ENDPOINT_TYPES : ENDPOINT_TYPES;
  const onlyConfig = req.configKinds.size > 0 && [...req.reasons.keys()].every((r) => r === 'config');
  if (!onlyConfig) return ALL_TYPES;
  const out = new Set<XdsTypeUrl>();
  for (const kind of req.configKinds) {
    const types = TYPES_BY_KIND[kind];
    if (!types) return ALL_TYPES;
    for (const t of types) out.add(t);
  }
  return out;
}

const ALL_TYPES: ReadonlySet<XdsTypeUrl> = new Set(PUSH_ORDER);
const ENDPOINT_TYPES: ReadonlySet<XdsTypeUrl> = new Set([TypeUrl.Endpoint]);
const GRPC_ENDPOINT_TYPES: ReadonlySet<XdsTypeUrl> = new Set([TypeUrl.Cluster, TypeUrl.Endpoint]);
