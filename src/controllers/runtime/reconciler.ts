/**
 * The reconcile contract every controller of the project follows (docs/adr/0029).
 *
 * A reconciler brings ONE key (e.g. `namespace/name`) to its desired state, reading the current
 * state itself (a cache, the API server), never the event that queued the key. It ends in one of
 * three ways:
 *
 *   - returns nothing, or `done()`: the key is in its desired state; its failure count is reset;
 *   - returns `again(ms)`: look at this key again after `ms` (e.g. a component still starting);
 *     not a failure: the failure count is reset and nothing is counted;
 *   - throws: an ordinary error is logged, counted and retried with rate-limited backoff (per key
 *     exponential, plus a token bucket over all keys of the controller); a `TerminalError` is
 *     logged and counted and NOT retried: the key waits until something queues it again (an edit
 *     of the object, a resync). Use it for input no retry can fix (an invalid spec, a kubeconfig
 *     that cannot be parsed).
 *
 * The runner (./controller.ts) guarantees that one key is never reconciled by two workers at once
 * and that a key queued while it is being reconciled is reconciled once more afterwards.
 */

/** What a reconcile asks of the queue when it did not fail. */
export type Outcome = { readonly kind: 'done' } | { readonly kind: 'again'; readonly afterMs: number };

const DONE: Outcome = Object.freeze({ kind: 'done' });

/** The key is reconciled. */
export function done(): Outcome {
  return DONE;
}

/** Reconcile the key again after `afterMs` milliseconds (at least 1). */
export function again(afterMs: number): Outcome {
  if (!Number.isFinite(afterMs) || afterMs < 0) throw new Error(`again: ${afterMs} is not a delay in milliseconds`);
  return { kind: 'again', afterMs: Math.max(1, Math.round(afterMs)) };
}

export interface ReconcileContext {
  /** Aborts when the controller stops (or its leader term ends); pass it to requests. */
  readonly signal: AbortSignal;
  /** Failed attempts of this key since its last success (0 on a first try). */
  readonly retries: number;
}

export interface Reconciler<K = string> {
  reconcile(key: K, ctx: ReconcileContext): Promise<Outcome | void> | Outcome | void;
}

/** A reconcile function, for reconcilers without state of their own. */
export type ReconcileFn<K = string> = Reconciler<K>['reconcile'];

/**
 * A failure that retrying cannot fix: logged and counted, the key is not retried until it is
 * queued again. `cause` keeps the underlying error.
 */
export class TerminalError extends Error {
  constructor(message: string, options?: { readonly cause?: unknown }) {
    super(message, options);
    this.name = 'TerminalError';
  }
}

export function isTerminal(err: unknown): err is TerminalError {
  return err instanceof TerminalError;
}
