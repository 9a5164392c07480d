import { createHash } from 'node:crypto';
import { listPatch, type ListPatch } from '../model/derived.js';
import type { Proxy } from '../model/proxy.js';
import type { EncodedResource } from './cache.js';
import type { GrpcFrame } from './wire.js';
import { nextRank } from './limiter.js';
import type { ListenerConflicts } from './generators/sidecar.js';

/** What one connection watches of one type, and where its ACKs stand. */
export interface WatchState {
  readonly typeUrl: string;
  /** Requested names; undefined = wildcard. Replaced on change, never mutated (generators memoize by identity). */
  names: ReadonlySet<string> | undefined;
  /**
   * State of the world: the encoded resource_names of the request that set `names`, shared between
   * connections asking for the same names (request-intake.ts), so that a repeat (every ACK) is
   * recognised by this buffer's identity instead of a decode. Undefined when unknown.
   */
  namesBytes?: Buffer;
  /**
   * Delta: `names` is the connection's own set, edited in place as the client subscribes and
   * unsubscribes (work proportional to the change); generators see this copy of it, made again on
   * the first push after a change, so their memos keyed by a set's identity stay right.
   */
  namesView?: ReadonlySet<string>;
  /** Delta: the bytes of the names in `names` (bounded per watch, MAX_DELTA_NAME_BYTES). */
  namesByteCount?: number;
  /** Delta only: names the client said it had when it connected. */
  initialVersions?: Map<string, string>;
  nonceSent: string;
  versionSent: string;
  /**
   * The snapshot (PushContext.version) the client holds, or will once it ACKs, for this type: that of
   * the last response, moved on by pushes that had nothing new for it. '' before the first response.
   */
  snapshotSent: string;
  nonceAcked: string;
  versionAcked: string;
  /** Delta: name → version of what the client holds. */
  sent: Map<string, string>;
  /**
   * State of the world: the resources last sent, as the generator returned them. Generators share
   * these arrays and their elements across proxies, so holding the reference costs a proxy nothing.
   */
  sentList: ReadonlyArray<EncodedResource>;
  /**
   * State of the world, EDS and RDS: the next response must carry every resource, not only the
   * changed ones (the client NACKed the last response, so what it holds is not `sentList`).
   */
  resendAll: boolean;
  lastSentAt: number;
  lastAckAt: number;
  /** Last NACK's message, cleared by the next ACK. */
  lastError?: string;
  /** A response is on the wire without an ACK/NACK yet (flow control). */
  awaitingAck: boolean;
}

export function newWatch(typeUrl: string, names: ReadonlySet<string> | undefined): WatchState {
  return { typeUrl, names, nonceSent: '', versionSent: '', snapshotSent: '', nonceAcked: '', versionAcked: '', sent: new Map(), sentList: [], resendAll: false, lastSentAt: 0, lastAckAt: 0, awaitingAck: false };
}

/** The names generators see for a watch: the requested set, or for delta a copy made after each change. */
export function generatorNames(conn: { readonly delta: boolean }, watch: WatchState): ReadonlySet<string> | undefined {
  if (!conn.delta || watch.names === undefined) return watch.names;
  return (watch.namesView ??= new Set(watch.names));
}

/** Writes frames to the client; resolves when the transport took them (respecting back-pressure). */
export interface ResponseWriter {
  /** Frames are written as they are, not copied per connection (frame-writer.ts). */
  readonly direct: boolean;
  /** The HTTP/2 session (connection) of the stream, when known (write-guard.ts maxWritesPerSession). */
  readonly session?: object;
  /** `progress` is called each time the transport took part of the frame, with the bytes it took. */
  write(frame: GrpcFrame, progress?: (bytes: number) => void): Promise<void>;
  /** Ends the stream with a gRPC status, after the frames already written. */
  close(code: number, message: string): void;
  /** Ends the stream at once, dropping frames the client has not taken (a client that takes nothing). */
  abort(): void;
}

let counter = 0;

/** Lists up to this long are compared resource by resource (Connection.changed). */
const SHORT_LIST = 16;

const listVersions = new WeakMap<ReadonlyArray<EncodedResource>, string>();

/**
 * One version for a whole resource list, computed once per list: lists are shared by the proxies of
 * a scope, so comparing what a proxy holds with a new list costs one string comparison.
 */
export function listVersion(list: ReadonlyArray<EncodedResource>): string {
  let v = listVersions.get(list);
  if (v === undefined) {
    v = patchedVersion(list) ?? wholeVersion(list);
    listVersions.set(list, v);
  }
  return v;
}

function wholeVersion(list: ReadonlyArray<EncodedResource>): string {
  const h = createHash('sha1');
  for (const r of list) h.update(r.name).update('\0').update(r.version).update('\n');
  return h.digest('base64url');
}

/**
 * The version of a list patched from one whose version is known (an endpoint change replaces the
 * load assignments of one host in a scope's list of thousands): that version and the replaced
 * resources, hashed; the same version when none of them differs by name or version. Lists of the
 * same content reached along different patches get different versions, which costs a response that
 * was not needed, never one that was.
 */
function patchedVersion(list: ReadonlyArray<EncodedResource>): string | undefined {
  const patch = listPatch(list);
  const baseVersion = patch && listVersions.get(patch.base);
  if (!patch || baseVersion === undefined) return undefined;
  const replaced = replacedPositions(patch, list);
  if (replaced.length === 0) return baseVersion;
  const h = createHash('sha1').update(baseVersion).update('\n');
  for (const at of replaced) h.update(String(at)).update('\0').update(list[at].name).update('\0').update(list[at].version).update('\n');
  return h.digest('base64url');
}

/** The positions of a patched list whose resource differs from its base's by name or version. */
function replacedPositions(patch: ListPatch<EncodedResource>, list: ReadonlyArray<EncodedResource>): number[] {
  return patch.positions.filter((at) => list[at].name !== patch.base[at].name || list[at].version !== patch.base[at].version);
}

const diffs = new WeakMap<ReadonlyArray<EncodedResource>, { next: ReadonlyArray<EncodedResource>; changed: ReadonlyArray<EncodedResource> }>();

/**
 * The resources of `next` that a client holding `prev` does not have at the same version. Every
 * proxy of a scope moves from the same list to the same next one, so the result is memoized per
 * pair and shared: they then also share one response frame.
 */
export function changedResources(prev: ReadonlyArray<EncodedResource>, next: ReadonlyArray<EncodedResource>): ReadonlyArray<EncodedResource> {
  const hit = diffs.get(prev);
  if (hit && hit.next === next) return hit.changed;
  const patch = listPatch(next);
  let changed: ReadonlyArray<EncodedResource>;
  if (patch?.base === prev) {
    // made from `prev` by replacing some resources: those are all that can differ
    changed = replacedPositions(patch, next).map((at) => next[at]);
  } else {
    const held = new Map<string, string>();
    for (const r of prev) held.set(r.name, r.version);
    changed = next.filter((r) => held.get(r.name) !== r.version);
  }
  diffs.set(prev, { next, changed });
  return changed;
}

/** One ADS stream from one proxy. */
export class Connection {
  readonly id: string;
  readonly connectedAt = Date.now();
  /**
   * Place in line of this connection's initial configuration (limiter.ts nextRank): the responses of
   * a type it has not ACKed yet go before those of connections opened later (docs/adr/0200).
   */
  readonly rank = nextRank();
  readonly watches = new Map<string, WatchState>();
  /** Start time of the change the most recent push carried, until all its responses are ACKed. */
  pendingConvergence?: { start: number; types: Set<string> };
  /** The `err` label of this proxy's NACK gauge series, by short type (removed when it leaves). */
  readonly rejects = new Map<string, string>();
  /** This proxy's share of the disc_conflict_* gauges, from its last LDS generation. */
  listenerConflicts?: ListenerConflicts;
  private ackWaiters: Array<() => void> = [];
  closed = false;

  constructor(
    readonly proxy: Proxy,
    readonly peer: string,
    readonly delta: boolean,
    readonly writer: ResponseWriter,
    /** The authenticated identity of the stream (a SPIFFE id), when its port authenticates. */
    readonly identity?: string,
  ) {
    this.id = `${proxy.id}-${++counter}`;
  }

  /** Resolves on the next ACK or NACK (for flow control), or after `timeoutMs`: true if one came. */
  waitForAck(timeoutMs: number): Promise<boolean> {
    return new Promise((resolve) => {
      const t = setTimeout(() => {
        this.ackWaiters = this.ackWaiters.filter((w) => w !== done);
        resolve(false);
      }, timeoutMs);
      const done = (): void => {
        clearTimeout(t);
        resolve(true);
      };
      this.ackWaiters.push(done);
    });
  }

  notifyAck(): void {
    const w = this.ackWaiters;
    this.ackWaiters = [];
    for (const f of w) f();
  }

  /** True when the resources differ from what was last sent for this (state of the world) watch. */
  static changed(watch: WatchState, resources: ReadonlyArray<EncodedResource>): boolean {
    if (watch.nonceSent === '') return true;
    const prev = watch.sentList;
    if (prev === resources) return false;
    if (prev.length !== resources.length) return true;
    // a short list (a proxyless client's few names) is compared resource by resource: no hash of
    // a list that only this client may hold; long ones (a scope's, shared) by their list versions
    if (resources.length <= SHORT_LIST) {
      for (let i = 0; i < resources.length; i++) {
        const a = prev[i];
        const b = resources[i];
        if (a !== b && (a.name !== b.name || a.version !== b.version)) return true;
      }
      return false;
    }
    return listVersion(prev) !== listVersion(resources);
  }

  /** How many resources of the watch the client holds. */
  static heldCount(watch: WatchState): number {
    return watch.sent.size > 0 ? watch.sent.size : watch.sentList.length;
  }
}
