import { PUSH_ORDER, TypeUrl, type XdsTypeUrl } from './types.js';

/** Why a push happens and what it covers. Requests merge: the union of their causes. */
export interface PushRequest {
  /** Full pushes regenerate every type; otherwise only EDS for `edsHosts`. */
  readonly full: boolean;
  /** Hostnames whose endpoints changed (EDS-only pushes). */
  readonly edsHosts: ReadonlySet<string>;
  /** Reasons, counted in disc_push_triggers. */
  readonly reasons: ReadonlyMap<string, number>;
  /** When the earliest change behind this push happened (ms since epoch), for convergence time. */
  readonly start: number;
  /** Config kinds that changed, for push scoping. */
  readonly configKinds: ReadonlySet<string>;
}

export function pushRequest(p: { full: boolean; reason: string; edsHosts?: Iterable<string>; kinds?: Iterable<string>; start?: number }): PushRequest {
  return {
    full: p.full,
    edsHosts: new Set(p.edsHosts ?? []),
    reasons: new Map([[p.reason, 1]]),
    start: p.start ?? Date.now(),
    configKinds: new Set(p.kinds ?? []),
  };
}

export function mergePushRequests(a: PushRequest | undefined, b: PushRequest): PushRequest {
  if (!a) return b;
  const reasons = new Map(a.reasons);
  for (const [k, v] of b.reasons) reasons.set(k, (reasons.get(k) ?? 0) + v);
  return {
    full: a.full || b.full,
    edsHosts: new Set([...a.edsHosts, ...b.edsHosts]),
    reasons,
    start: Math.min(a.start, b.start),
    configKinds: new Set([...a.configKinds, ...b.configKinds]),
  };
}

/**
 * The xDS types a change of a config kind can alter, for kinds that do not reach every type: routing
 * rules and gateways shape listeners and routes only (clusters and endpoints come from services and
 * destination rules). Kinds not listed may alter any type.
 */
const TYPES_BY_KIND: Readonly<Record<string, ReadonlyArray<XdsTypeUrl>>> = {
  VirtualService: [TypeUrl.Listener, TypeUrl.Route],
  Gateway: [TypeUrl.Listener, TypeUrl.Route],
};

/**
 * The types a push has to regenerate: only EDS for an endpoint push; for a push caused only by
 * config kinds listed above, their types; otherwise every type.
 */
export function affectedTypes(req: PushRequest): ReadonlySet<XdsTypeUrl> {
  if (!req.full) return new Set([TypeUrl.Endpoint]);
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
