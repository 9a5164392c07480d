/**
 * Admission control of the certificate service (docs/adr/0067): at most `maxActive` requests are
 * being read and signed at once; the others wait in arrival order, holding only their CSR, and a
 * waiter whose caller gives up (cancelled, deadline passed) leaves the line. The line is bounded by
 * count and by the CSR bytes it holds; a request beyond either bound is refused at once
 * (RESOURCE_EXHAUSTED, "retry later") instead of growing memory or latency without bound.
 */

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
}

export interface AdmissionStats {
  readonly active: number;
  readonly queued: number;
  readonly queuedBytes: number;
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

  constructor(private readonly o: AdmissionOptions) {
    if (!(o.maxActive >= 1)) throw new Error(`admission: maxActive ${o.maxActive} must be at least 1`);
  }

  stats(): AdmissionStats {
    return { active: this.active, queued: this.waiting, queuedBytes: this.queuedBytes };
  }

  /**
   * Waits for a place; resolves with the function that gives it back (call it exactly once).
   * Rejects with `AdmissionRefused` when the line is full, or when `signal` aborts while waiting.
   */
  async enter(bytes: number, signal?: AbortSignal): Promise<() => void> {
    if (this.active < this.o.maxActive && this.waiting === 0) {
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
