/**
 * The runner of the reconcile contract (./reconciler.ts): event sources (./sources.ts) queue
 * keys in the work queue (./workqueue.ts); `workers` loops hand each key to the reconciler and
 * act on its outcome:
 *
 *   done        the key's failure count is reset;
 *   again(ms)   the failure count is reset and the key is queued again after `ms`;
 *   throws      counted in `controller_sync_errors_total{controller=<name>}` and logged; an
 *               ordinary error re-queues the key after its retry delay (./retry.ts), a
 *               TerminalError does not (the key waits for its next event).
 *
 * A key is never reconciled by two workers at once. A Controller is a `Duty` (./leadership.ts):
 * `run(signal)` runs it until the signal aborts, so the same controller runs on every replica
 * (`start`/`stop`) or only on the leader (`leadership.add(controller)`). Each start begins with a
 * fresh queue; sources queue everything they know when they are subscribed.
 */
import type { Logger } from 'pino';
import { getLogger } from '../../log/logger.js';
import { isTerminal, type Outcome, type Reconciler, type ReconcileFn } from './reconciler.js';
import type { RetryOptions } from './retry.js';
import type { EventSource } from './sources.js';
import { WorkQueue } from './workqueue.js';

/** `controller_sync_errors_total` (src/metrics/metrics.ts) fits. */
export interface SyncErrorCounter {
  inc(labels: { readonly controller: string }): void;
}

export interface ControllerOptions<K> {
  /** Names the controller in logs, stats and the `controller` label of its error count. */
  readonly name: string;
  readonly reconciler: Reconciler<K> | ReconcileFn<K>;
  readonly sources?: ReadonlyArray<EventSource<K>>;
  /** Parallel workers (default 1); one key still runs on one worker at a time. */
  readonly workers?: number;
  /** Retry delays of failed keys: per-key exponential, and an overall token bucket. */
  readonly retry?: RetryOptions;
  readonly syncErrors?: SyncErrorCounter;
  /** Default: the `default` scope's logger. */
  readonly log?: Logger;
  /** How a key reads in logs (default `String(key)`). */
  readonly describeKey?: (key: K) => string;
}

export interface ControllerStats {
  /** Reconciles started. */
  readonly reconciles: number;
  /** Reconciles that threw an ordinary error (each retried). */
  readonly failures: number;
  /** Reconciles that threw a TerminalError (not retried). */
  readonly terminal: number;
  /** `again` outcomes. */
  readonly requeues: number;
  /** Keys waiting now. */
  readonly depth: number;
}

export interface Duty {
  readonly name: string;
  /** Runs until `signal` aborts; resolves once everything it started has stopped. */
  run(signal: AbortSignal): Promise<void>;
}

export class Controller<K = string> implements Duty {
  readonly name: string;
  private readonly reconcileKey: ReconcileFn<K>;
  private readonly sources: EventSource<K>[];
  private readonly log: Logger;
  private queue: WorkQueue<K> | undefined;
  private abort: AbortController | undefined;
  private unsubscribers: Array<() => void> = [];
  private workers: Array<Promise<void>> = [];
  private readonly counts = { reconciles: 0, failures: 0, terminal: 0, requeues: 0 };

  constructor(private readonly opts: ControllerOptions<K>) {
    this.name = opts.name;
    const r = opts.reconciler;
    this.reconcileKey = typeof r === 'function' ? r : r.reconcile.bind(r);
    this.sources = [...(opts.sources ?? [])];
    this.log = opts.log ?? getLogger('default');
  }

  /** Adds a source; it is subscribed at the next start (at once when running). */
  watch(source: EventSource<K>): this {
    this.sources.push(source);
    if (this.queue) this.subscribe(source, this.queue);
    return this;
  }

  get running(): boolean {
    return this.queue !== undefined;
  }

  /** Queues a key (ignored while stopped). */
  enqueue(key: K, afterMs = 0): void {
    this.queue?.addAfter(key, afterMs);
  }

  /** Subscribes the sources and starts the workers. */
  start(): void {
    if (this.queue) return;
    const queue = new WorkQueue<K>(this.opts.retry);
    this.queue = queue;
    this.abort = new AbortController();
    for (const source of this.sources) this.subscribe(source, queue);
    const n = Math.max(1, this.opts.workers ?? 1);
    for (let i = 0; i < n; i++) this.workers.push(this.work(queue, this.abort.signal));
  }

  /**
   * Stops: sources are unsubscribed; without `drain` running reconciles see their signal abort and
   * queued keys are dropped, with `drain` queued keys are still reconciled. Resolves when every
   * worker has returned.
   */
  async stop(opts: { readonly drain?: boolean } = {}): Promise<void> {
    const queue = this.queue;
    if (!queue) return;
    for (const off of this.unsubscribers.splice(0)) off();
    if (!opts.drain) this.abort?.abort();
    await queue.shutdown({ drain: opts.drain });
    await Promise.all(this.workers.splice(0));
    this.queue = undefined;
    this.abort = undefined;
  }

  /** The duty form: runs until `signal` aborts, then stops. */
  async run(signal: AbortSignal): Promise<void> {
    if (signal.aborted) return;
    this.start();
    await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
    await this.stop();
  }

  /** Resolves once no key is queued or being reconciled (keys waiting for a retry or `again` aside). */
  whenIdle(): Promise<void> {
    return this.queue?.whenIdle() ?? Promise.resolve();
  }

  stats(): ControllerStats {
    return { ...this.counts, depth: this.queue?.length ?? 0 };
  }

  private subscribe(source: EventSource<K>, queue: WorkQueue<K>): void {
    this.unsubscribers.push(source.subscribe((key, afterMs) => queue.addAfter(key, afterMs ?? 0)));
  }

  private async work(queue: WorkQueue<K>, signal: AbortSignal): Promise<void> {
    for (;;) {
      const key = await queue.get();
      if (key === undefined) return;
      try {
        this.counts.reconciles++;
        const outcome = (await this.reconcileKey(key, { signal, retries: queue.numRequeues(key) })) as Outcome | undefined;
        queue.forget(key);
        if (outcome?.kind === 'again') {
          this.counts.requeues++;
          queue.addAfter(key, outcome.afterMs);
        }
      } catch (err) {
        if (!signal.aborted) this.failed(queue, key, err);
      } finally {
        queue.done(key);
      }
    }
  }

  private failed(queue: WorkQueue<K>, key: K, err: unknown): void {
    const text = this.opts.describeKey ? this.opts.describeKey(key) : String(key);
    const message = err instanceof Error ? err.message : String(err);
    try {
      this.opts.syncErrors?.inc({ controller: this.name });
    } catch {
      // a failing metric must not stop the worker
    }
    if (isTerminal(err)) {
      this.counts.terminal++;
      queue.forget(key);
      this.log.error({ controller: this.name, key: text, err: message }, `${this.name}: ${text}: ${message} (not retried until it changes)`);
      return;
    }
    this.counts.failures++;
    const retries = queue.numRequeues(key);
    const delay = queue.addRateLimited(key);
    this.log.warn({ controller: this.name, key: text, err: message, retry: retries + 1, delayMs: Math.round(delay) }, `${this.name}: ${text}: ${message} (retry ${retries + 1} in ${Math.round(delay)} ms)`);
  }
}
