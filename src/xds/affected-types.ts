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
  // automatic mutual TLS of proxyless clients' clusters (docs/adr/0103) and of Envoy's endpoints
  // (their tlsMode metadata, docs/adr/0151) follows the destination's mode
  PeerAuthentication: [TypeUrl.Listener, TypeUrl.Cluster, TypeUrl.Endpoint],
  AuthorizationPolicy: [TypeUrl.Listener],
  // credentials (docs/adr/0105, 0152): the SDS resource, the gateway chain and the cluster that name it
  Secret: [TypeUrl.Cluster, TypeUrl.Listener, TypeUrl.Secret],
  // request authentication (docs/adr/0100): the jwt_authn filter of inbound listeners
  RequestAuthentication: [TypeUrl.Listener],
};

/** Reasons other than config kinds whose pushes reach some types only: a fetched key set changes jwt_authn filters. */
const TYPES_BY_REASON: Readonly<Record<string, ReadonlyArray<XdsTypeUrl>>> = {
  jwks: [TypeUrl.Listener],
  // a credential Secret changed (docs/adr/0105, 0152): its SDS resource, the chain and the cluster that name it
  secret: [TypeUrl.Cluster, TypeUrl.Listener, TypeUrl.Secret],
};

/**
 * The types a push has to regenerate: only EDS for an endpoint push (EDS and CDS for proxyless gRPC
 * clients, whose clusters' automatic mutual TLS depends on the endpoints' policies: docs/adr/0103);
 * for a push caused only by config kinds listed above, their types; otherwise every type.
 */
export function affectedTypes(req: PushRequest, proxyType?: ProxyType): ReadonlySet<XdsTypeUrl> {
  if (!req.full) return proxyType === 'grpc' ? GRPC_ENDPOINT_TYPES : ENDPOINT_TYPES;
  // asked for every connection a push visits: once per request (requests are never changed)
  let known = fullAffected.get(req);
  if (!known) {
    known = computeAffected(req);
    fullAffected.set(req, known);
  }
  return known;
}

const fullAffected = new WeakMap<PushRequest, ReadonlySet<XdsTypeUrl>>();

function computeAffected(req: PushRequest): ReadonlySet<XdsTypeUrl> {
  const reasons = [...req.reasons.keys()];
  const out = new Set<XdsTypeUrl>();
  for (const r of reasons) for (const t of TYPES_BY_REASON[r] ?? []) out.add(t);
  if (reasons.every((r) => r in TYPES_BY_REASON)) return out;
  const onlyConfig = req.configKinds.size > 0 && reasons.every((r) => r === 'config' || r in TYPES_BY_REASON);
  if (!onlyConfig) return ALL_TYPES;
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
