/**
 * A level-based work queue of keys (e.g. `namespace/name`), the one every controller runs on
 * (./controller.ts):
 * - a key added while it waits is stored once (dedup);
 * - a key added while a worker processes it is not handed to a second worker; it is queued
 *   again when the worker calls `done`, so the latest state is processed once more;
 * - `addRateLimited` re-adds a key after its retry delay (./retry.ts: per-key exponential and an
 *   overall token bucket), `forget` clears its failure count;
 * - `whenIdle()` resolves once nothing is queued or being processed (delayed keys aside);
 * - `shutdown()` stops taking keys and hands out no more; `shutdown({drain: true})` lets the
 *   workers finish every key already queued and resolves once all of them are done.
 */
import { BackoffRetryLimiter, type RetryLimiter, type RetryOptions } from './retry.js';

export interface WorkQueueOptions extends RetryOptions {
  /** Replaces the default retry limiter built from the RetryOptions. */
  readonly retryLimiter?: RetryLimiter<unknown>;
}

export interface WorkQueueStats {
  readonly depth: number;
  readonly processing: number;
  readonly adds: number;
  readonly retries: number;
}

export class WorkQueue<K = string> {
  private readonly queue: K[] = [];
  /** Keys waiting to be processed (in `queue`, or re-added during processing). */
  private readonly dirty = new Set<K>();
  private readonly processing = new Set<K>();
  private readonly limiter: RetryLimiter<K>;
  private readonly delayed = new Map<K, NodeJS.Timeout>();
  private readonly waiters: Array<(key: K | undefined) => void> = [];
  private readonly idleWaiters: Array<() => void> = [];
  private readonly settledWaiters: Array<() => void> = [];
  private closing = false;
  private draining = false;
  private adds = 0;
  private retries = 0;

  constructor(opts: WorkQueueOptions = {}) {
    this.limiter = (opts.retryLimiter as RetryLimiter<K> | undefined) ?? new BackoffRetryLimiter<K>(opts);
  }

  /** Keys waiting (not counting keys being processed or delayed). */
  get length(): number {
    return this.queue.length;
  }

  get shuttingDown(): boolean {
    return this.closing;
  }

  stats(): WorkQueueStats {
    return { depth: this.queue.length, processing: this.processing.size, adds: this.adds, retries: this.retries };
  }

  add(key: K): void {
    if (this.closing) return;
    this.adds++;
    if (this.dirty.has(key)) return;
    this.dirty.add(key);
    if (this.processing.has(key)) return; // queued again by done()
    this.push(key);
  }

  /** Adds the key after `ms` (a later add of the same key with a shorter delay wins). */
  addAfter(key: K, ms: number): void {
    if (this.closing) return;
    if (ms <= 0) {
      this.add(key);
      return;
    }
    const existing = this.delayed.get(key);
    if (existing) clearTimeout(existing);
    const timer = setTimeout(() => {
      this.delayed.delete(key);
      this.add(key);
    }, ms);
    this.delayed.set(key, timer);
  }

  /** Re-adds the key after its retry delay, and counts one more failure of it. Returns the delay. */
  addRateLimited(key: K): number {
    this.retries++;
    const delay = this.limiter.when(key);
    this.addAfter(key, delay);
    return delay;
  }

  /** Failures of the key since the last `forget`. */
  numRequeues(key: K): number {
    return this.limiter.failures(key);
  }

  /** Clears the key's failure count (call after it was processed successfully). */
  forget(key: K): void {
    this.limiter.forget(key);
  }

  /** Resolves once no key is queued or being processed (keys waiting for a delayed add aside). */
  whenIdle(): Promise<void> {
    if (this.isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.settledWaiters.push(resolve));
  }

  private isIdle(): boolean {
    return this.queue.length === 0 && this.processing.size === 0;
  }

  /**
   * The next key to process; the caller must call `done(key)` afterwards. Resolves with
   * undefined once the queue shuts down.
   */
  get(): Promise<K | undefined> {
    const key = this.take();
    if (key !== undefined || this.closing) {
      if (key === undefined) this.checkIdle();
      return Promise.resolve(key);
    }
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Marks the key processed; a key re-added meanwhile goes back into the queue. */
  done(key: K): void {
    this.processing.delete(key);
    if (this.dirty.has(key) && (!this.closing || this.draining)) this.push(key);
    this.checkIdle();
  }

  /**
   * Stops the queue: adds are ignored and delayed adds dropped. Without `drain`, `get` resolves
   * undefined at once and the promise resolves when no key is being processed. With `drain`,
   * workers still get the keys already queued; `get` resolves undefined once none is left, and
   * the promise resolves when the last of them is done.
   */
  shutdown(opts: { readonly drain?: boolean } = {}): Promise<void> {
    this.closing = true;
    this.draining = opts.drain === true;
    for (const t of this.delayed.values()) clearTimeout(t);
    this.delayed.clear();
    if (!this.draining) {
      this.queue.length = 0;
      this.dirty.clear();
    }
    for (const wake of this.settledWaiters.splice(0)) wake();
    const idle = new Promise<void>((resolve) => this.idleWaiters.push(resolve));
    this.checkIdle();
    return idle;
  }

  private checkIdle(): void {
    if (this.isIdle()) for (const wake of this.settledWaiters.splice(0)) wake();
    if (!this.closing || this.queue.length > 0) return;
    // Nothing left to hand out: wake the idle workers so they exit.
    for (const wake of this.waiters.splice(0)) wake(undefined);
    if (this.processing.size === 0) for (const wake of this.idleWaiters.splice(0)) wake();
  }

  private push(key: K): void {
    const waiter = this.waiters.shift();
    if (waiter) {
      this.dirty.delete(key);
      this.processing.add(key);
      waiter(key);
    } else {
      this.queue.push(key);
    }
  }

  private take(): K | undefined {
    if (this.closing && !this.draining) return undefined;
    const key = this.queue.shift();
    if (key === undefined) return undefined;
    this.dirty.delete(key);
    this.processing.add(key);
    return key;
  }
}
