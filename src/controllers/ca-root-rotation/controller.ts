/**
 * Self-signed root rotation as a controller on the reconcile contract (docs/adr/0066): one key,
 * `root`, reconciled by `RootRotator.check` (src/ca/rotation.ts: adopt what another replica stored,
 * rotate inside the grace period, prune expired roots; its writes to the store are conflict-safe).
 *
 * The key is first queued after CA_SELF_SIGNED_ROOT_CERT_CHECK_INTERVAL, or a random part of it
 * with CA_ENABLE_JITTER_FOR_ROOT_CERT_ROTATOR (replicas started together do not race every time),
 * and every interval after a check; a failed check (the API server unreachable) is retried with the
 * runtime's backoff, counted in controller_sync_errors_total{controller="ca-root-rotation"}.
 * Zero or negative interval: no controller at all. It runs on every replica: each must adopt the
 * root another one rotated, and of two replicas rotating at once the store keeps one.
 */
import type { Logger } from 'pino';
import type { RootRotator } from '../../ca/rotation.js';
import { again, Controller, type EventSource, type Outcome, type SyncErrorCounter } from '../runtime/index.js';

export const CA_ROOT_ROTATION_CONTROLLER = 'ca-root-rotation';
export const ROOT_KEY = 'root';

export interface RootRotationControllerOptions {
  readonly rotator: Pick<RootRotator, 'check'>;
  /** CA_SELF_SIGNED_ROOT_CERT_CHECK_INTERVAL, > 0. */
  readonly checkIntervalMs: number;
  /** CA_ENABLE_JITTER_FOR_ROOT_CERT_ROTATOR. */
  readonly jitter: boolean;
  readonly log?: Logger;
  readonly syncErrors?: SyncErrorCounter;
  readonly random?: () => number;
}

/** The delay of the first check: the interval, or a random part of it with jitter. */
export function firstCheckDelayMs(intervalMs: number, jitter: boolean, random: () => number = Math.random): number {
  return jitter ? Math.floor(random() * intervalMs) : intervalMs;
}

/** The rotation controller; `start()`/`stop()` with the daemon. Throws when the interval is not positive. */
export function rootRotationController(o: RootRotationControllerOptions): Controller<string> {
  if (!(o.checkIntervalMs > 0)) throw new Error(`${CA_ROOT_ROTATION_CONTROLLER}: check interval ${o.checkIntervalMs} ms must be positive`);
  const first: EventSource<string> = {
    subscribe(sink) {
      sink(ROOT_KEY, firstCheckDelayMs(o.checkIntervalMs, o.jitter, o.random));
      return () => undefined;
    },
  };
  return new Controller<string>({
    name: CA_ROOT_ROTATION_CONTROLLER,
    reconciler: {
      async reconcile(): Promise<Outcome> {
        await o.rotator.check();
        return again(o.checkIntervalMs);
      },
    },
    sources: [first],
    // a failed check is retried from 1 s doubling to the check interval
    retry: { baseDelayMs: Math.min(1000, o.checkIntervalMs), maxDelayMs: o.checkIntervalMs },
    syncErrors: o.syncErrors,
    log: o.log,
  });
}
