/**
 * How long a failed key waits before its retry: the larger of
 *   - a per-key exponential delay, base · 2^failures, capped (a key that keeps failing backs off
 *     without slowing the others), and
 *   - the wait for a token of a bucket shared by every key of the controller (when many keys fail
 *     at once, say while the API server is down, their retries are spread at `qps` instead of all
 *     hitting the recovering server together).
 * `forget(key)` resets a key's count after a success.
 */
import { exponentialDelay } from '../../kube/backoff.js';
import { TokenBucket } from '../../kube/rate-limiter.js';

export interface RetryOptions {
  /** First retry delay of a key (default 5 ms). */
  readonly baseDelayMs?: number;
  /** Longest delay of a key (default 1000 s). */
  readonly maxDelayMs?: number;
  /** Retries per second over all keys (default 10; <= 0 or Infinity: no overall limit). */
  readonly qps?: number;
  /** Retries allowed at once before `qps` applies (default 100). */
  readonly burst?: number;
}

export interface RetryLimiter<K> {
  /** Counts one more failure of `key` and returns the delay before its retry. */
  when(key: K): number;
  /** Failures of `key` since it was last forgotten. */
  failures(key: K): number;
  /** Clears the failures of `key`. */
  forget(key: K): void;
}

export class BackoffRetryLimiter<K> implements RetryLimiter<K> {
  private readonly counts = new Map<K, number>();
  private readonly bucket: TokenBucket;
  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;

  constructor(opts: RetryOptions = {}, now?: () => number) {
    this.baseDelayMs = opts.baseDelayMs ?? 5;
    this.maxDelayMs = opts.maxDelayMs ?? 1_000_000;
    if (!(this.baseDelayMs > 0) || !(this.maxDelayMs >= this.baseDelayMs)) throw new Error(`retry: base delay ${this.baseDelayMs} ms and max delay ${this.maxDelayMs} ms must be positive, base <= max`);
    this.bucket = new TokenBucket(opts.qps ?? 10, opts.burst ?? 100, now);
  }

  when(key: K): number {
    const n = this.counts.get(key) ?? 0;
    this.counts.set(key, n + 1);
    return Math.max(exponentialDelay(n, this.baseDelayMs, this.maxDelayMs), this.bucket.reserve());
  }

  failures(key: K): number {
    return this.counts.get(key) ?? 0;
  }

  forget(key: K): void {
    this.counts.delete(key);
  }
}
