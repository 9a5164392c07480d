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
