/**
 * A small controller: informer events become keys in a work queue; N workers call
 * `reconcile(key)`. A key is never reconciled by two workers at once; a failed reconcile is
 * logged and retried with per-key exponential backoff (optionally at most `maxRetries` times);
 * a success clears the key's backoff. Reconcile is level-based: it reads the current state
 * (e.g. from the informer cache) instead of the event that queued the key.
 */
import { objectKey, type InformerEvent, type KubeObject, type ObjectCache } from './types.js';
import { WorkQueue, type WorkQueueOptions } from './workqueue.js';
import { getLogger } from '../log/logger.js';

export interface ControllerOptions {
  readonly name: string;
  readonly reconcile: (key: string, signal: AbortSignal) => Promise<void>;
  /** Parallel workers (default 1). */
  readonly workers?: number;
  /** Give up on a key after this many failed retries (default: never). */
  readonly maxRetries?: number;
  readonly queue?: WorkQueueOptions;
  /** A reconcile failed; `willRetry` is false when the key was dropped. Default: a warning on stderr. */
  readonly onError?: (error: Error, key: string, info: { readonly retries: number; readonly willRetry: boolean }) => void;
}

export interface ControllerStats {
  readonly reconciles: number;
  readonly failures: number;
  readonly dropped: number;
  readonly depth: number;
}

export class Controller {
  readonly queue: WorkQueue<string>;
  private readonly abort = new AbortController();
  private readonly unsubscribers: Array<() => void> = [];
  private workers: Promise<void>[] = [];
  private reconciles = 0;
  private failures = 0;
  private dropped = 0;

  constructor(private readonly opts: ControllerOptions) {
    this.queue = new WorkQueue<string>(opts.queue);
  }

  /**
   * Queues keys for the events of a cache: by default the object's own key; `keysOf` maps an
   * event to other keys (e.g. the owner of a changed object), or to none.
   */
  watch<T extends KubeObject>(cache: ObjectCache<T>, keysOf?: (event: InformerEvent<T>) => string | ReadonlyArray<string> | undefined): this {
    const off = cache.onEvent((event) => {
      const keys = keysOf ? keysOf(event) : objectKey(event.object);
      if (keys === undefined) return;
      for (const key of typeof keys === 'string' ? [keys] : keys) this.queue.add(key);
    });
    this.unsubscribers.push(off);
    return this;
  }

  enqueue(key: string): void {
    this.queue.add(key);
  }

  /** Starts the workers. */
  start(): void {
    if (this.workers.length > 0) return;
    const n = Math.max(1, this.opts.workers ?? 1);
    for (let i = 0; i < n; i++) this.workers.push(this.work());
  }

  /**
   * Stops taking events. With `drain`, queued keys are still reconciled; without it, running
   * reconciles see their signal aborted. Resolves when every worker has returned.
   */
  async stop(opts: { readonly drain?: boolean } = {}): Promise<void> {
    for (const off of this.unsubscribers.splice(0)) off();
    if (!opts.drain) this.abort.abort();
    await this.queue.shutdown({ drain: opts.drain });
    await Promise.all(this.workers);
  }

  stats(): ControllerStats {
    return { reconciles: this.reconciles, failures: this.failures, dropped: this.dropped, depth: this.queue.length };
  }

  private async work(): Promise<void> {
    for (;;) {
      const key = await this.queue.get();
      if (key === undefined) return;
      try {
        this.reconciles++;
        await this.opts.reconcile(key, this.abort.signal);
        this.queue.forget(key);
      } catch (err) {
        this.failures++;
        const retries = this.queue.numRequeues(key);
        const willRetry = !this.queue.shuttingDown && (this.opts.maxRetries === undefined || retries < this.opts.maxRetries);
        if (willRetry) this.queue.addRateLimited(key);
        else {
          this.queue.forget(key);
          this.dropped++;
        }
        this.report(err, key, retries, willRetry);
      } finally {
        this.queue.done(key);
      }
    }
  }

  private report(err: unknown, key: string, retries: number, willRetry: boolean): void {
    const error = err instanceof Error ? err : new Error(String(err));
    if (this.opts.onError) {
      try {
        this.opts.onError(error, key, { retries, willRetry });
      } catch {
        // a failing hook must not stop the worker
      }
      return;
    }
    getLogger('kube').warn(
      { controller: this.opts.name, key, retries, willRetry, err: error.message },
      `controller ${this.opts.name}: reconcile ${key} failed (${willRetry ? `retry ${retries + 1}` : 'dropped'}): ${error.message}`,
    );
  }
}
