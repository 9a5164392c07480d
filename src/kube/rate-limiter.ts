/**
 * Token-bucket rate limiter for requests to the API server (`--clusterApiQPS` / `--clusterApiBurst`).
 *
 * The bucket holds up to `burst` tokens and refills at `qps` tokens per second. Every request takes
 * one token; when none is left the request waits for its turn. Waiters are served first come, first
 * served: a take reserves the next token even when that token only exists in the future, so a burst
 * of callers is spread at exactly 1/qps apart. `qps <= 0` or `Infinity` turns limiting off.
 */

export interface RateLimiterStats {
  /** Tokens handed out. */
  readonly taken: number;
  /** Takes that had to wait. */
  readonly throttled: number;
  /** Sum of all waits, in milliseconds. */
  readonly waitedMs: number;
}

export class TokenBucket {
  readonly qps: number;
  readonly burst: number;
  private tokens: number;
  private last: number;
  private taken = 0;
  private throttled = 0;
  private waitedMs = 0;

  constructor(qps: number, burst: number, private readonly now: () => number = () => performance.now()) {
    if (Number.isNaN(qps)) throw new Error('rate limiter: qps must be a number');
    if (Number.isNaN(burst)) throw new Error('rate limiter: burst must be a number');
    this.qps = qps;
    this.burst = Math.max(1, Math.floor(burst));
    this.tokens = this.burst;
    this.last = now();
  }

  get unlimited(): boolean {
    return !(this.qps > 0) || this.qps === Infinity;
  }

  stats(): RateLimiterStats {
    return { taken: this.taken, throttled: this.throttled, waitedMs: this.waitedMs };
  }

  /** Takes a token if one is available now, without waiting. */
  tryTake(): boolean {
    if (this.unlimited) {
      this.taken++;
      return true;
    }
    this.refill();
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    this.taken++;
    return true;
  }

  /**
   * Reserves the next token and returns how long the caller must wait before using it (0 when one
   * is available now). The wait is the caller's to do: a work queue schedules a retry that late.
   */
  reserve(): number {
    this.taken++;
    if (this.unlimited) return 0;
    this.refill();
    this.tokens -= 1;
    if (this.tokens >= 0) return 0;
    this.throttled++;
    const waitMs = (-this.tokens * 1000) / this.qps;
    this.waitedMs += waitMs;
    return waitMs;
  }

  /**
   * Resolves once the caller may send its request (with the milliseconds it waited). An aborted
   * signal rejects the wait and returns the reserved token.
   */
  take(signal?: AbortSignal): Promise<number> {
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    this.taken++;
    if (this.unlimited) return Promise.resolve(0);
    this.refill();
    this.tokens -= 1;
    if (this.tokens >= 0) return Promise.resolve(0);
    const waitMs = (-this.tokens * 1000) / this.qps;
    this.throttled++;
    return new Promise<number>((resolve, reject) => {
      const onAbort = (): void => {
        clearTimeout(timer);
        this.taken--;
        this.tokens = Math.min(this.burst, this.tokens + 1);
        reject(abortReason(signal));
      };
      const timer = setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        this.waitedMs += waitMs;
        resolve(waitMs);
      }, Math.ceil(waitMs));
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  private refill(): void {
    const now = this.now();
    const elapsed = now - this.last;
    this.last = now;
    if (elapsed > 0) this.tokens = Math.min(this.burst, this.tokens + (elapsed * this.qps) / 1000);
  }
}

function abortReason(signal: AbortSignal | undefined): Error {
  const reason: unknown = signal?.reason;
  if (reason instanceof Error) return reason;
  const err = new Error('the operation was aborted');
  err.name = 'AbortError';
  return err;
}
