/** Why a push happens and what it covers. Requests merge: the union of their causes. */
export interface PushRequest {
  /** Full pushes regenerate every type; otherwise only EDS for `edsHosts`. */
  readonly full: boolean;
  /** Hostnames whose endpoints changed (EDS-only pushes). */
  readonly edsHosts: ReadonlySet<string>;
  /** Reasons, counted in disc_push_triggers. */
  readonly reasons: ReadonlyMap<string, number>;
  /**
   * When the earliest change behind this push happened (ms since epoch), for convergence time; for a
   * request of one cause, when that change was seen, which the debounce counts from.
   */
  readonly start: number;
  /** Config kinds that changed, for push scoping. */
  readonly configKinds: ReadonlySet<string>;
}

/** A request for one cause; `count` is how many changes it stands for (default 1, counted in disc_push_triggers). */
export function pushRequest(p: { full: boolean; reason: string; edsHosts?: Iterable<string>; kinds?: Iterable<string>; start?: number; count?: number }): PushRequest {
  return {
    full: p.full,
    edsHosts: new Set(p.edsHosts ?? []),
    reasons: new Map([[p.reason, p.count ?? 1]]),
    start: p.start ?? Date.now(),
    configKinds: new Set(p.kinds ?? []),
  };
}

/**
 * `a` and `b` merged into a new request. A debouncer that merges a burst of many requests one by one
 * uses PendingPush instead, whose cost per request is the size of that request, not of the burst.
 */
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

/** Requests merged in place as they come (a debouncer's pending burst); `request()` is their union. */
export class PendingPush {
  private full = false;
  private readonly edsHosts = new Set<string>();
  private readonly reasons = new Map<string, number>();
  private start = Infinity;
  private readonly configKinds = new Set<string>();

  add(req: PushRequest): void {
    this.full ||= req.full;
    for (const h of req.edsHosts) this.edsHosts.add(h);
    for (const [k, v] of req.reasons) this.reasons.set(k, (this.reasons.get(k) ?? 0) + v);
    this.start = Math.min(this.start, req.start);
    for (const k of req.configKinds) this.configKinds.add(k);
  }

  /** The union; the pending burst must not be added to afterwards. */
  request(): PushRequest {
    return { full: this.full, edsHosts: this.edsHosts, reasons: this.reasons, start: this.start, configKinds: this.configKinds };
  }
}
