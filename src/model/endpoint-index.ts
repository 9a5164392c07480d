import { recordEndpointDep, type EndpointSource } from './derived.js';
import type { Endpoint } from './service.js';

export interface HostEndpoints {
  /** Bumped whenever this host's endpoints change; part of EDS cache keys. */
  readonly version: number;
  readonly endpoints: ReadonlyArray<Endpoint>;
}

const NO_HOSTS: ReadonlySet<string> = new Set();
const EMPTY: HostEndpoints = Object.freeze({ version: 0, endpoints: Object.freeze([]) as ReadonlyArray<Endpoint> });

/** How far back an index remembers which hosts changed (older derived values are rebuilt). */
const HISTORY = 16;

/**
 * Immutable endpoints by hostname. Each update returns a new index sharing unchanged entries, so a
 * push in flight keeps the view it started with while endpoint-only changes skip the snapshot rebuild.
 * An index remembers which hosts changed in its last HISTORY updates, so that values derived from an
 * older index can be kept when the hosts they read did not change (`changedSince`); reads are
 * recorded as dependencies of the derived value being computed (model/derived.ts).
 */
export class EndpointIndex implements EndpointSource {
  /** The index this one was made from and the hosts that changed; cut after HISTORY steps. */
  private parent: { readonly index: EndpointIndex; readonly changed: ReadonlyArray<string> } | undefined;
  /** changedSince's answers, by older index. */
  private readonly since = new WeakMap<EndpointSource, ReadonlySet<string>>();

  private constructor(
    private readonly hosts: ReadonlyMap<string, HostEndpoints>,
    private readonly nextVersion: number,
  ) {}

  static empty(): EndpointIndex {
    return new EndpointIndex(new Map(), 1);
  }

  get(hostname: string): HostEndpoints {
    recordEndpointDep(this, hostname);
    return this.hosts.get(hostname) ?? EMPTY;
  }

  changedSince(older: EndpointSource): ReadonlySet<string> | undefined {
    if (older === this) return NO_HOSTS;
    // asked once per kept item of a list being rebuilt: the answer is made once per older index
    const known = this.since.get(older);
    if (known) return known;
    const out = new Set<string>();
    for (let p = this.parent; p; p = p.index.parent) {
      for (const h of p.changed) out.add(h);
      if (p.index === older) {
        this.since.set(older, out);
        return out;
      }
    }
    return undefined;
  }

  /** Grows with every change to any host's endpoints. */
  get version(): number {
    return this.nextVersion - 1;
  }

  get size(): number {
    return this.hosts.size;
  }

  hostnames(): IterableIterator<string> {
    return this.hosts.keys();
  }

  /** Replaces the endpoints of the given hosts; returns the hosts that really changed. */
  update(changes: ReadonlyMap<string, ReadonlyArray<Endpoint>>): { index: EndpointIndex; changed: string[] } {
    const changed: string[] = [];
    let version = this.nextVersion;
    const next = new Map(this.hosts);
    for (const [host, endpoints] of changes) {
      const prev = this.hosts.get(host);
      if (prev && sameEndpoints(prev.endpoints, endpoints)) continue;
      if (!prev && endpoints.length === 0) continue;
      if (endpoints.length === 0) next.delete(host);
      else next.set(host, Object.freeze({ version: version++, endpoints }));
      changed.push(host);
    }
    if (changed.length === 0) return { index: this, changed };
    const index = new EndpointIndex(next, version);
    index.parent = { index: this, changed };
    // forget the oldest step, so that at most HISTORY older indexes stay reachable
    let cur: EndpointIndex | undefined = index;
    for (let i = 0; i < HISTORY && cur; i++) cur = cur.parent?.index;
    if (cur) cur.parent = undefined;
    return { index, changed };
  }

  /** Sum of endpoints, for metrics. */
  count(): number {
    let n = 0;
    for (const h of this.hosts.values()) n += h.endpoints.length;
    return n;
  }
}

function sameEndpoints(a: ReadonlyArray<Endpoint>, b: ReadonlyArray<Endpoint>): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const x = a[i];
    const y = b[i];
    if (x === y) continue;
    if (
      x.address !== y.address ||
      x.port !== y.port ||
      x.servicePortName !== y.servicePortName ||
      x.healthy !== y.healthy ||
      x.weight !== y.weight ||
      x.tlsMode !== y.tlsMode ||
      x.network !== y.network ||
      x.serviceAccount !== y.serviceAccount ||
      x.locality.region !== y.locality.region ||
      x.locality.zone !== y.locality.zone ||
      x.locality.subzone !== y.locality.subzone ||
      JSON.stringify(x.labels) !== JSON.stringify(y.labels)
    ) {
      return false;
    }
  }
  return true;
}
