/**
 * What the transport lets clients hold while it writes to them (docs/adr/0055).
 *
 * A write is *admitted* against a budget of bytes being written (`maxLiveBytes`). Bytes are counted
 * per frame, not per write: the same shared frame written to 2,000 streams costs its length once,
 * while a frame built for one stream (delta, or a copy made by grpc-js's fallback path) costs its
 * own. A write that would pass the budget waits, in arrival order, until earlier ones are taken.
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
  /** The client took some of the bytes (a chunk of the frame left for the network). */
  progress(): void;
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
  readonly startedAt: number;
  progressAt: number;
  stalled: boolean;
  abandoned: boolean;
}

export interface WriteGuardStats {
  readonly liveBytes: number;
  readonly stalledBytes: number;
  readonly pending: number;
  readonly stalled: number;
  readonly waiting: number;
}

export class WriteGuard<C> {
  private readonly frames = new Map<object, FrameRefs>();
  private readonly pending = new Set<WriteRecord<C>>();
  private readonly waiting: Array<{ key: object; bytes: number; go: () => void }> = [];
  private liveBytes = 0;
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
    return { liveBytes: this.liveBytes, stalledBytes: this.stalledBytes, pending: this.pending.size, stalled, waiting: this.waiting.length };
  }

  /**
   * Admits a write of `bytes` identified by `key` (the shared frame, or a token of its own for a
   * copy) for `conn`; waits while the budget is full. A frame already being written passes at once.
   */
  async admit(conn: C, key: object, bytes: number): Promise<PendingWrite> {
    if (this.frames.has(key) || (this.waiting.length === 0 && !this.over(bytes))) this.reserve(key, bytes);
    else await new Promise<void>((go) => this.waiting.push({ key, bytes, go })); // wake() reserves
    return this.track(conn, key);
  }

  /** Stops the sweeps (the owner closes every stream anyway). */
  close(): void {
    clearInterval(this.sweepTimer);
    this.sweepTimer = undefined;
  }

  private over(bytes: number): boolean {
    return this.liveBytes > 0 && this.liveBytes + bytes > this.opts.maxLiveBytes;
  }

  /** Counts one more live write of the frame `key`. */
  private reserve(key: object, bytes: number): void {
    let refs = this.frames.get(key);
    if (!refs) {
      refs = { bytes, live: 0, stalled: 0 };
      this.frames.set(key, refs);
    }
    this.addLive(refs);
  }

  private track(conn: C, key: object): PendingWrite {
    const at = this.now();
    const record: WriteRecord<C> = { conn, key, startedAt: at, progressAt: at, stalled: false, abandoned: false };
    this.pending.add(record);
    this.sweepTimer ??= setInterval(() => this.sweep(), this.sweepMs).unref();
    let ended = false;
    return {
      progress: () => {
        if (ended) return;
        record.progressAt = this.now();
        if (record.stalled) {
          // the client reads again: its bytes count as being written again
          record.stalled = false;
          const r = this.frames.get(record.key)!;
          this.removeStalled(r);
          this.addLive(r);
        }
      },
      end: () => {
        if (ended) return;
        ended = true;
        this.pending.delete(record);
        const r = this.frames.get(record.key)!;
        if (record.stalled) this.removeStalled(r);
        else this.removeLive(r);
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

  private wake(): void {
    while (this.waiting.length > 0) {
      const next = this.waiting[0];
      if (!this.frames.has(next.key) && this.over(next.bytes)) return;
      this.waiting.shift();
      // counted in now, so the next waiter sees these bytes taken
      this.reserve(next.key, next.bytes);
      next.go();
    }
  }
}
