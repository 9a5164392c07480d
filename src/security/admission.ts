/**
 * Admission control of the certificate service (docs/adr/0067): at most `maxActive` requests are
 * being read and signed at once; the others wait in arrival order, holding only their CSR, and a
 * waiter whose caller gives up (cancelled, deadline passed) leaves the line. The line is bounded by
 * count and by the CSR bytes it holds; a request beyond either bound is refused at once
 * (RESOURCE_EXHAUSTED, "retry later") instead of growing memory or latency without bound.
 *
 * With a `hold` (docs/adr/0140) the gate also steps aside for more urgent work: while the hold says
 * so (an xDS push in flight, the event loop lagging) no new request is admitted; those already
 * admitted finish, new ones wait in the line. A hold lasts at most `maxHoldMs` at a stretch, so a
 * daemon that pushes without pause still issues certificates.
 */

/** When the gate should admit nothing new (the daemon: a push in flight, or event-loop lag). */
export interface AdmissionHold {
  held(): boolean;
  /** Told when `held()` may have turned false; returns the unsubscribe function. */
  onRelease(listener: () => void): () => void;
}

/** Longest stretch a hold keeps new requests waiting (default of `maxHoldMs`). */
export const DEFAULT_MAX_HOLD_MS = 1_000;

export class AdmissionRefused extends Error {
  override readonly name = 'AdmissionRefused';
}

export interface AdmissionOptions {
  /** Requests past the gate at once. */
  readonly maxActive: number;
  /** Requests allowed to wait. */
  readonly maxQueued: number;
  /** CSR bytes the waiting requests may hold together. */
  readonly maxQueuedBytes: number;
  /** Steps aside while this says so; absent: never. */
  readonly hold?: AdmissionHold;
  /** Longest stretch of one hold (default DEFAULT_MAX_HOLD_MS); after it requests are admitted until the hold lifts once. */
  readonly maxHoldMs?: number;
}

export interface AdmissionStats {
  readonly active: number;
  readonly queued: number;
  readonly queuedBytes: number;
  /** Holds that kept at least one request waiting, since start. */
  readonly holds: number;
}

interface Waiter {
  readonly bytes: number;
  readonly admit: () => void;
  gone: boolean;
}

export class Admission {
  private active = 0;
  private waiting = 0;
  private queuedBytes = 0;
  private readonly line: Waiter[] = [];
  private head = 0;
  /** Start of the current hold (performance.now()), while one lasts. */
  private heldSince: number | undefined;
  private holdTimer: NodeJS.Timeout | undefined;
  private holds = 0;
  private readonly unsubscribe: () => void;

  constructor(private readonly o: AdmissionOptions) {
    if (!(o.maxActive >= 1)) throw new Error(`admission: maxActive ${o.maxActive} must be at least 1`);
    this.unsubscribe =
      o.hold?.onRelease(() => {
        if (!o.hold?.held()) this.heldSince = undefined;
        this.next();
      }) ?? (() => undefined);
  }

  stats(): AdmissionStats {
    return { active: this.active, queued: this.waiting, queuedBytes: this.queuedBytes, holds: this.holds };
  }

  /** Stops listening to the hold. */
  close(): void {
    this.unsubscribe();
    if (this.holdTimer) clearTimeout(this.holdTimer);
    this.holdTimer = undefined;
  }

  /** Whether new requests wait now: the hold says so and has not lasted `maxHoldMs` yet. */
  private holding(): boolean {
    if (!this.o.hold?.held()) {
      this.heldSince = undefined;
      return false;
    }
    const now = performance.now();
    if (this.heldSince === undefined) {
      this.heldSince = now;
      this.holds++;
    }
    const left = this.heldSince + (this.o.maxHoldMs ?? DEFAULT_MAX_HOLD_MS) - now;
    if (left <= 0) return false;
    if (!this.holdTimer) {
      // the hold may outlast its bound without telling: look again when the bound is reached
      this.holdTimer = setTimeout(() => {
        this.holdTimer = undefined;
        this.next();
      }, Math.ceil(left));
      this.holdTimer.unref();
    }
    return true;
  }

  /**
   * Waits for a place; resolves with the function that gives it back (call it exactly once).
   * Rejects with `AdmissionRefused` when the line is full, or when `signal` aborts while waiting.
   */
  async enter(bytes: number, signal?: AbortSignal): Promise<() => void> {
    if (this.active < this.o.maxActive && this.waiting === 0 && !this.holding()) {
      this.active++;
      return this.release();
    }
    if (this.waiting >= this.o.maxQueued || this.queuedBytes + bytes > this.o.maxQueuedBytes) {
      throw new AdmissionRefused(`certificate service busy: ${this.waiting} requests waiting; retry later`);
    }
    if (signal?.aborted) throw new AdmissionRefused('the caller went away');
    this.waiting++;
    this.queuedBytes += bytes;
    await new Promise<void>((resolve, reject) => {
      const w: Waiter = { bytes, admit: resolve, gone: false };
      this.line.push(w);
      signal?.addEventListener(
        'abort',
        () => {
          if (w.gone) return;
          w.gone = true;
          this.waiting--;
          this.queuedBytes -= w.bytes;
          reject(new AdmissionRefused('the caller went away'));
        },
        { once: true },
      );
    });
    return this.release();
  }

  private release(): () => void {
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.active--;
      this.next();
    };
  }

  private next(): void {
    if (this.head < this.line.length && this.holding()) return;
    while (this.active < this.o.maxActive && this.head < this.line.length) {
      const w = this.line[this.head++];
      if (w.gone) continue;
      w.gone = true;
      this.waiting--;
      this.queuedBytes -= w.bytes;
      this.active++;
      w.admit();
    }
    // Compact the line now and then instead of shifting on every admission.
    if (this.head === this.line.length) {
      this.line.length = 0;
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > this.line.length) {
      this.line.splice(0, this.head);
      this.head = 0;
    }
  }
}
