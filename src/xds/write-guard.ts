/**
 * What the transport lets clients hold while it writes to them (docs/adr/0055).
 *
 * A write is *admitted* against two budgets, and waits, in rank order (arrival order by default), while it would pass either:
 *
 * - bytes being written (`maxLiveBytes`), counted per frame, not per write: the same shared frame
 *   written to 2,000 streams costs its length once (it is one buffer), while a frame built for one
 *   stream (delta, or a copy made by grpc-js's fallback path) costs its own. This bounds memory.
 * - bytes handed to streams and not taken yet (`maxUnsentBytes`), counted per write: a shared frame
 *   written to 100 streams counts 100 times, and a write's bytes leave as its client takes them
 *   (docs/adr/0200). This bounds how many streams are written at once. Without it a connect storm
 *   hands every stream its whole response at once, HTTP/2 interleaves them all, every client
 *   completes at the very end, each one's chunks wait so long behind the others' that it looks
 *   stalled, and all the clients' follow-up requests arrive together.
 *
 * A write whose client takes none of its bytes for `stallMs` is *stalled*: its bytes leave the budget
 * (other clients' writes are not held back by it) and are counted as stalled instead. A client that
 * takes nothing for `abandonMs`, whose write is older than `sendTimeoutMs` (DISC_XDS_SEND_TIMEOUT,
 * when set), or whose stalled bytes would pass `maxStalledBytes` (the clients stalled longest first)
 * is *abandoned*: `onAbandon` closes its stream, which fails its write and releases its bytes.
 *
 * The guard only counts and decides; slots are released by the caller (a write never holds a push
 * or answer slot), and the stream is closed by the owner.
 */

export interface WriteGuardOptions {
  /** Bytes of frames being written (not stalled), counted once per frame, before new writes wait. */
  readonly maxLiveBytes: number;
  /**
   * Bytes handed to streams and not yet taken by their clients (not stalled), counted per write,
   * before new writes wait. Optional: without it, only `maxLiveBytes` holds writes back.
   */
  readonly maxUnsentBytes?: number;
  /**
   * Writes being written (not stalled) at once on one connection (HTTP/2 session), whose streams
   * share one socket: past it a stream's write waits, and writes on other connections go first.
   * Optional: no limit without it, or for writes that name no session.
   */
  readonly maxWritesPerSession?: number;
  /**
   * Writes of fewer bytes neither wait for nor count in their session's share (maxWritesPerSession):
   * a small push leaves in one chunk, so it cannot hold the socket from the others.
   */
  readonly sessionWriteMinBytes?: number;
  /** A write of which the client took nothing for this long is stalled (its bytes leave the budget). */
  readonly stallMs: number;
  /** A client that took nothing for this long loses its stream. */
  readonly abandonMs: number;
  /** Bytes held by stalled writes (once per frame); past it the longest-stalled clients lose their streams. */
  readonly maxStalledBytes: number;
  /** A write not done after this long loses its stream (DISC_XDS_SEND_TIMEOUT; 0: no limit). */
  readonly sendTimeoutMs: number;
}

export type AbandonReason = 'send-timeout' | 'stalled' | 'stalled-bytes';

/** A write in progress, as its transport reports on it. */
export interface PendingWrite {
  /** The client took `bytes` more of the frame (a chunk left for the network); 0 when not known. */
  progress(bytes?: number): void;
  /** The write is over (taken, or failed); its bytes are released. Idempotent. */
  end(): void;
}

interface FrameRefs {
  readonly bytes: number;
  live: number;
  stalled: number;
}

interface WriteRecord<C> {
  readonly conn: C;
  readonly key: object;
  readonly session: object | undefined;
  /** Bytes of this write its client has not taken yet. */
  unsent: number;
  readonly startedAt: number;
  progressAt: number;
  stalled: boolean;
  abandoned: boolean;
}

export interface WriteGuardStats {
  readonly liveBytes: number;
  /** Bytes of writes in progress (not stalled) that their clients have not taken yet, per write. */
  readonly unsentBytes: number;
  readonly stalledBytes: number;
  readonly pending: number;
  readonly stalled: number;
  readonly waiting: number;
}

import { insertByRank, nextRank } from './limiter.js';

export class WriteGuard<C> {
  private readonly frames = new Map<object, FrameRefs>();
  private readonly pending = new Set<WriteRecord<C>>();
  private readonly waiting: Array<{ key: object; bytes: number; rank: number; session: object | undefined; go: () => void }> = [];
  /** Writes being written (not stalled) per session (maxWritesPerSession). */
  private readonly sessions = new Map<object, number>();
  private liveBytes = 0;
  private unsentBytes = 0;
  private stalledBytes = 0;
  private sweepTimer: NodeJS.Timeout | undefined;
  private readonly sweepMs: number;

  constructor(
    private readonly opts: WriteGuardOptions,
    private readonly onAbandon: (conn: C, reason: AbandonReason, idleMs: number) => void,
    private readonly now: () => number = Date.now,
  ) {
    const bounds = [opts.stallMs, opts.abandonMs, ...(opts.sendTimeoutMs > 0 ? [opts.sendTimeoutMs] : [])];
    this.sweepMs = Math.max(10, Math.min(250, Math.min(...bounds) / 2));
  }

  stats(): WriteGuardStats {
    let stalled = 0;
    for (const r of this.pending) if (r.stalled) stalled++;
    return { liveBytes: this.liveBytes, unsentBytes: this.unsentBytes, stalledBytes: this.stalledBytes, pending: this.pending.size, stalled, waiting: this.waiting.length };
  }

  /**
   * Admits a write of `bytes` identified by `key` (the shared frame, or a token of its own for a
   * copy) for `conn`; waits while a budget is full, before waiting writes of a larger `rank`
   * (arrival order by default), or while `connection` (the HTTP/2 session of the stream) has its
   * share of writes. A frame already being written costs no more memory, so without
   * `maxUnsentBytes` it passes at once.
   */
  async admit(conn: C, key: object, bytes: number, rank = nextRank(), connection?: object): Promise<PendingWrite> {
    // a small write is not held to its session's share (sessionWriteMinBytes)
    const session = bytes >= (this.opts.sessionWriteMinBytes ?? 0) ? connection : undefined;
    if (!this.sessionFull(session) && this.fits(key, bytes, this.waiting.length === 0 || rank < this.waiting[0].rank)) this.reserve(key, bytes, session);
    else {
      await new Promise<void>((go) => {
        insertByRank(this.waiting, { key, bytes, rank, session, go });
        this.wake(); // writes ahead of it may wait for their sessions only
      }); // wake() reserves
    }
    return this.track(conn, key, bytes, session);
  }

  private sessionFull(session: object | undefined): boolean {
    const max = this.opts.maxWritesPerSession;
    return max !== undefined && session !== undefined && (this.sessions.get(session) ?? 0) >= max;
  }

  private countSession(session: object | undefined, by: 1 | -1): void {
    if (session === undefined || this.opts.maxWritesPerSession === undefined) return;
    const n = (this.sessions.get(session) ?? 0) + by;
    if (n > 0) this.sessions.set(session, n);
    else this.sessions.delete(session);
  }

  /** Stops the sweeps (the owner closes every stream anyway). */
  close(): void {
    clearInterval(this.sweepTimer);
    this.sweepTimer = undefined;
  }

  /**
   * Whether a write of `bytes` of frame `key` may start now. `first`: no write waits before it in line (a
   * frame already being written passes waiting writes when only memory is budgeted: it adds none).
   * A budget never holds back the only write (a frame larger than the budget still goes, alone).
   */
  private fits(key: object, bytes: number, first: boolean): boolean {
    const max = this.opts.maxUnsentBytes;
    if (max !== undefined) {
      if (!first) return false;
      if (this.unsentBytes > 0 && this.unsentBytes + bytes > max) return false;
    }
    if (this.frames.has(key)) return true;
    return first && !(this.liveBytes > 0 && this.liveBytes + bytes > this.opts.maxLiveBytes);
  }

  /** Counts one more live write of the frame `key` (on `session`), and its bytes as not taken yet. */
  private reserve(key: object, bytes: number, session: object | undefined): void {
    this.countSession(session, 1);
    let refs = this.frames.get(key);
    if (!refs) {
      refs = { bytes, live: 0, stalled: 0 };
      this.frames.set(key, refs);
    }
    this.addLive(refs);
    this.unsentBytes += bytes;
  }

  private track(conn: C, key: object, bytes: number, session: object | undefined): PendingWrite {
    const at = this.now();
    const record: WriteRecord<C> = { conn, key, session, unsent: bytes, startedAt: at, progressAt: at, stalled: false, abandoned: false };
    this.pending.add(record);
    this.sweepTimer ??= setInterval(() => this.sweep(), this.sweepMs).unref();
    let ended = false;
    return {
      progress: (bytes = 0) => {
        if (ended) return;
        record.progressAt = this.now();
        const taken = Math.min(Math.max(0, bytes), record.unsent);
        record.unsent -= taken;
        if (record.stalled) {
          // the client reads again: its bytes count as being written again
          record.stalled = false;
          const r = this.frames.get(record.key)!;
          this.removeStalled(r);
          this.addLive(r);
          this.unsentBytes += record.unsent;
          this.countSession(record.session, 1);
        } else if (taken > 0) {
          this.unsentBytes -= taken;
          this.wake();
        }
      },
      end: () => {
        if (ended) return;
        ended = true;
        this.pending.delete(record);
        const r = this.frames.get(record.key)!;
        if (record.stalled) this.removeStalled(r);
        else {
          this.removeLive(r);
          this.unsentBytes -= record.unsent;
          this.countSession(record.session, -1);
        }
        record.unsent = 0;
        if (r.live === 0 && r.stalled === 0) this.frames.delete(record.key);
        if (this.pending.size === 0) {
          clearInterval(this.sweepTimer);
          this.sweepTimer = undefined;
        }
        this.wake();
      },
    };
  }

  private addLive(r: FrameRefs): void {
    if (r.live === 0) {
      this.liveBytes += r.bytes;
      if (r.stalled > 0) this.stalledBytes -= r.bytes;
    }
    r.live++;
  }

  private removeLive(r: FrameRefs): void {
    r.live--;
    if (r.live === 0) {
      this.liveBytes -= r.bytes;
      if (r.stalled > 0) this.stalledBytes += r.bytes;
    }
  }

  private removeStalled(r: FrameRefs): void {
    r.stalled--;
    if (r.stalled === 0 && r.live === 0) this.stalledBytes -= r.bytes;
  }

  private addStalled(r: FrameRefs): void {
    if (r.stalled === 0 && r.live === 0) this.stalledBytes += r.bytes;
    r.stalled++;
  }

  /** Marks writes stalled, abandons clients past their bounds, lets waiting writes go. */
  private sweep(): void {
    const now = this.now();
    const stalledRecords: WriteRecord<C>[] = [];
    // frames' stalled clients already abandoned (their streams are closing, their bytes about to go)
    const dropped = new Map<FrameRefs, number>();
    for (const rec of this.pending) {
      const idle = now - rec.progressAt;
      if (!rec.stalled && idle >= this.opts.stallMs) {
        rec.stalled = true;
        const r = this.frames.get(rec.key)!;
        // order matters: counted as stalled first, so the frame never looks unreferenced
        this.addStalled(r);
        this.removeLive(r);
        // a client that takes nothing does not hold other clients' writes back
        this.unsentBytes -= rec.unsent;
        this.countSession(rec.session, -1);
      }
      if (rec.abandoned) {
        if (rec.stalled) dropped.set(this.frames.get(rec.key)!, (dropped.get(this.frames.get(rec.key)!) ?? 0) + 1);
        continue;
      }
      if (this.opts.sendTimeoutMs > 0 && now - rec.startedAt >= this.opts.sendTimeoutMs) this.abandon(rec, 'send-timeout', idle);
      else if (idle >= this.opts.abandonMs) this.abandon(rec, 'stalled', idle);
      else if (rec.stalled) stalledRecords.push(rec);
    }
    let over = this.stalledBytes - this.opts.maxStalledBytes;
    for (const [r, n] of dropped) if (r.live === 0 && r.stalled === n) over -= r.bytes;
    if (over > 0) {
      // the longest-stalled first, until what they hold alone fits; a frame's bytes are freed
      // once every client stalled on it is gone
      stalledRecords.sort((a, b) => a.progressAt - b.progressAt);
      for (const rec of stalledRecords) {
        if (over <= 0) break;
        const r = this.frames.get(rec.key)!;
        const n = (dropped.get(r) ?? 0) + 1;
        dropped.set(r, n);
        if (r.live === 0 && r.stalled === n) over -= r.bytes;
        this.abandon(rec, 'stalled-bytes', now - rec.progressAt);
      }
    }
    this.wake();
  }

  private abandon(rec: WriteRecord<C>, reason: AbandonReason, idleMs: number): void {
    rec.abandoned = true;
    this.onAbandon(rec.conn, reason, idleMs);
  }

  /** Lets waiting writes go in rank order; one whose session has its share is passed over, not waited for. */
  private wake(): void {
    for (let i = 0; i < this.waiting.length; ) {
      const next = this.waiting[i];
      if (this.sessionFull(next.session)) {
        i++;
        continue;
      }
      if (!this.fits(next.key, next.bytes, true)) return;
      this.waiting.splice(i, 1);
      // counted in now, so the next waiter sees these bytes taken (and its session this write)
      this.reserve(next.key, next.bytes, next.session);
      next.go();
    }
  }
}
