/**
 * Config distribution tracking (DISC_ENABLE_CONFIG_DISTRIBUTION_TRACKING): which connected proxies
 * hold which generation of each config object.
 *
 * How it works, without the xDS server knowing about config objects:
 * - The tracker counts config store events; each object remembers the event count (`revision`)
 *   at which its current generation appeared.
 * - Each snapshot the model builds is recorded as `version → revision` (`followModel` does that
 *   on every push; old versions are forgotten after DISC_DISTRIBUTION_HISTORY_RETENTION, the
 *   newest is always kept).
 * - The xDS server reports, per proxy and type, the snapshot version the proxy acknowledged
 *   (`DistributionReporter.onAck`). A proxy holds an object's current generation once every type
 *   it acknowledged carries a snapshot built at or after the revision the generation appeared.
 *
 * Start the tracker (`start`) before the model subscribes to the store, or keep a debounce > 0 as
 * the daemon does: a snapshot built synchronously inside a store event, before the tracker saw that
 * event, would be recorded as older than it is (proxies would look behind until the next push).
 *
 * Wiring for the xDS server (done by its owner): call `onAck(proxyId, typeUrl, version)` when a
 * proxy ACKs a response built from the snapshot `version` (PushContext.version), and also when a
 * push of `version` had nothing new for that proxy and type (it then holds `version`'s config);
 * call `onDisconnect(proxyId)` when its stream ends. Both are cheap and synchronous.
 */
import type { ConfigEvent, ConfigObject, ConfigStore } from '../../config/types.js';
import { CONFIG_KINDS } from '../../config/kinds.js';
import { objectRef } from '../../analysis/types.js';
import type { DistributionState } from './conditions.js';

/** What the xDS server calls. */
export interface DistributionReporter {
  /** `proxyId` acknowledged (or needed nothing new of) `typeUrl` at snapshot `configVersion`. */
  onAck(proxyId: string, typeUrl: string, configVersion: string): void;
  onDisconnect(proxyId: string): void;
}

/** One daemon's view, as published for the leader: its proxies and, per object, [generation, proxies up to date]. */
export interface DistributionReport {
  readonly identity: string;
  /** When the report was made (ISO 8601). */
  readonly time: string;
  readonly proxies: number;
  readonly configs: Readonly<Record<string, readonly [generation: number, upToDate: number]>>;
}

/** Mesh-wide distribution as the status controller reads it. */
export interface DistributionView {
  readonly proxies: number;
  /** Proxies holding `generation` (or newer) of the object `ref` (`Kind/namespace/name`). */
  upToDate(ref: string, generation: number): number;
}

export interface DistributionSource {
  view(): DistributionView;
}

/** The model as the tracker needs it (MeshModel fits). */
export interface SnapshotSource {
  onPush(listener: () => void): () => void;
  current(): { readonly push: { readonly version: string } };
}

export interface DistributionTrackerOptions {
  readonly store: ConfigStore;
  /** This daemon's identity (pod name), written into reports. */
  readonly identity: string;
  /** DISC_DISTRIBUTION_HISTORY_RETENTION in ms. */
  readonly retentionMs: number;
  /** Objects to track (default all); the daemon tracks only objects with a status subresource. */
  readonly include?: (o: ConfigObject) => boolean;
  readonly now?: () => number;
}

interface Appeared {
  readonly generation: number;
  readonly revision: number;
}

export class DistributionTracker implements DistributionReporter, DistributionSource {
  private revision = 0;
  private readonly appeared = new Map<string, Appeared>();
  private readonly versions = new Map<string, { readonly revision: number; readonly at: number }>();
  private latestVersion: string | undefined;
  /** Per proxy: type URL → revision of the snapshot it acknowledged. */
  private readonly proxies = new Map<string, Map<string, number>>();
  private changes = 0;
  private off: (() => void) | undefined;
  private readonly now: () => number;

  constructor(private readonly opts: DistributionTrackerOptions) {
    this.now = opts.now ?? Date.now;
  }

  /** Reads the store's current objects and follows its events. */
  start(): void {
    if (this.off) return;
    for (const def of CONFIG_KINDS) for (const o of this.opts.store.list(def.kind)) this.track(o);
    this.off = this.opts.store.onEvent((e) => this.onConfigEvent(e));
  }

  stop(): void {
    this.off?.();
    this.off = undefined;
  }

  /** Records every snapshot the model builds (and the current one now). Returns an unsubscribe function. */
  followModel(model: SnapshotSource): () => void {
    this.recordSnapshot(model.current().push.version);
    return model.onPush(() => this.recordSnapshot(model.current().push.version));
  }

  /** The snapshot `version` was built from the store as it is now. */
  recordSnapshot(version: string): void {
    const now = this.now();
    if (!this.versions.has(version)) this.versions.set(version, { revision: this.revision, at: now });
    this.latestVersion = version;
    for (const [v, rec] of this.versions) {
      if (v !== this.latestVersion && now - rec.at > this.opts.retentionMs) this.versions.delete(v);
    }
  }

  onAck(proxyId: string, typeUrl: string, configVersion: string): void {
    const rec = this.versions.get(configVersion);
    if (!rec) return; // unknown or older than the retention: what the proxy holds is not known
    let types = this.proxies.get(proxyId);
    if (!types) {
      types = new Map();
      this.proxies.set(proxyId, types);
    }
    const prev = types.get(typeUrl);
    if (prev === undefined || rec.revision > prev) {
      types.set(typeUrl, rec.revision);
      this.changes++;
    }
  }

  onDisconnect(proxyId: string): void {
    if (this.proxies.delete(proxyId)) this.changes++;
  }

  /** Grows with every change that can alter a report (for "publish only when changed"). */
  changeCount(): number {
    return this.changes;
  }

  /** Proxies known to this daemon (those that acknowledged at least once). */
  proxyCount(): number {
    return this.proxies.size;
  }

  /** This daemon's report. */
  report(identity = this.opts.identity): DistributionReport {
    const counter = this.counter();
    const configs: Record<string, readonly [number, number]> = {};
    for (const [ref, a] of this.appeared) configs[ref] = [a.generation, counter(a.revision)];
    return { identity, time: new Date(this.now()).toISOString(), proxies: this.proxies.size, configs };
  }

  /** This daemon's proxies only. */
  view(): DistributionView {
    const counter = this.counter();
    const proxies = this.proxies.size;
    return {
      proxies,
      upToDate: (ref, generation) => {
        const a = this.appeared.get(ref);
        return a && a.generation >= generation ? counter(a.revision) : 0;
      },
    };
  }

  /** Counts proxies whose every acknowledged type is at or after a revision. */
  private counter(): (revision: number) => number {
    const effective: number[] = [];
    for (const types of this.proxies.values()) {
      let min = Infinity;
      for (const r of types.values()) min = Math.min(min, r);
      effective.push(min);
    }
    effective.sort((a, b) => a - b);
    return (revision) => effective.length - lowerBound(effective, revision);
  }

  private onConfigEvent(e: ConfigEvent): void {
    this.revision++;
    const ref = objectRef(e.kind, e.object.meta.namespace, e.object.meta.name);
    if (e.type === 'delete') {
      if (this.appeared.delete(ref)) this.changes++;
      return;
    }
    this.track(e.object);
  }

  private track(o: ConfigObject): void {
    if (this.opts.include && !this.opts.include(o)) return;
    const ref = objectRef(o.meta.gvk.kind, o.meta.namespace, o.meta.name);
    const prev = this.appeared.get(ref);
    // Label or annotation edits keep the generation: what proxies hold of it is unchanged.
    if (prev && prev.generation === o.meta.generation) return;
    this.appeared.set(ref, { generation: o.meta.generation, revision: this.revision });
    this.changes++;
  }
}

/** First index whose value is >= x in an ascending array. */
function lowerBound(sorted: ReadonlyArray<number>, x: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid] < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * The mesh-wide view: this daemon's tracker plus the reports of the other daemons. A report counts
 * a proxy as up to date when it holds the generation the leader sees or a newer one.
 */
export function combineViews(local: DistributionView, others: ReadonlyArray<DistributionReport>): DistributionView {
  const proxies = local.proxies + others.reduce((n, r) => n + r.proxies, 0);
  return {
    proxies,
    upToDate(ref, generation) {
      let n = local.upToDate(ref, generation);
      for (const r of others) {
        const c = r.configs[ref];
        if (c && c[0] >= generation) n += c[1];
      }
      return n;
    },
  };
}

export function distributionOf(view: DistributionView, ref: string, generation: number): DistributionState {
  return { upToDate: view.upToDate(ref, generation), proxies: view.proxies };
}
