/**
 * Exponential backoff with jitter, and an abortable sleep: used to restart watches, retry failed
 * work items and retry leader-election calls without hammering a recovering API server.
 */

export interface BackoffOptions {
  /** First delay (default 500 ms). */
  readonly initialMs?: number;
  /** Upper bound of a delay before jitter (default 30 s). */
  readonly maxMs?: number;
  /** Growth per failure (default 2). */
  readonly factor?: number;
  /** Fraction of the delay added at random, 0..1 (default 0.2). */
  readonly jitter?: number;
  readonly random?: () => number;
}

export class Backoff {
  private attempt = 0;
  private readonly initialMs: number;
  private readonly maxMs: number;
  private readonly factor: number;
  private readonly jitter: number;
  private readonly random: () => number;

  constructor(opts: BackoffOptions = {}) {
    this.initialMs = opts.initialMs ?? 500;
    this.maxMs = opts.maxMs ?? 30_000;
    this.factor = opts.factor ?? 2;
    this.jitter = opts.jitter ?? 0.2;
    this.random = opts.random ?? Math.random;
  }

  /** Failures since the last reset. */
  get failures(): number {
    return this.attempt;
  }

  /** The delay before the next try; each call counts one more failure. */
  next(): number {
    const base = Math.min(this.maxMs, this.initialMs * this.factor ** this.attempt);
    this.attempt++;
    return Math.round(base * (1 + this.jitter * this.random()));
  }

  reset(): void {
    this.attempt = 0;
  }
}

/** Delay of the n-th retry (n from 0): min(max, base · 2^n), no jitter. */
export function exponentialDelay(n: number, baseMs: number, maxMs: number): number {
  return Math.min(maxMs, baseMs * 2 ** Math.min(n, 60));
}

/** Resolves after `ms`, or early (without error) when the signal aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(timer);
      resolve();
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
