/**
 * Gives back the memory start-up used and no longer needs (docs/adr/0194; the agent too, ADR 0214).
 * Loading and wiring the daemon allocates fast, so V8 grows the young generation to its maximum
 * (16 MiB semi-spaces on Node 24) and keeps the pages of that and of the collected start-up garbage
 * in its page pool. An
 * idle daemon allocates too little to run another collection, and the memory reducer goes by the
 * allocation rate measured at the last collection (start-up's), so the pages stay: about 14 MB of
 * RSS. One memory-reducing full collection once the daemon is ready returns them; under load V8
 * grows the young generation again as before, so a connect storm costs what it did.
 *
 * The collection is V8's "last resort" one (the collector the embedder calls on low memory), reached
 * through the `gc` function of `--expose-gc`: taken from the command line's global when it was
 * given, else by turning the flag on for one new context and off again.
 */
import v8 from 'node:v8';
import vm from 'node:vm';
import type { Logger } from 'pino';

/** From ready to the collection: what start-up left running settles first. */
export const STARTUP_SETTLE_MS = 2000;

type GcFunction = (options: { type: 'major'; execution: 'sync'; flavor: 'last-resort' }) => void;

function gcFunction(): GcFunction | undefined {
  const global = (globalThis as { gc?: unknown }).gc;
  if (typeof global === 'function') return global as GcFunction;
  try {
    v8.setFlagsFromString('--expose-gc');
    const fn: unknown = vm.runInNewContext('gc');
    return typeof fn === 'function' ? (fn as GcFunction) : undefined;
  } catch {
    return undefined;
  } finally {
    v8.setFlagsFromString('--no-expose-gc');
  }
}

export interface ReleasedMemory {
  /** Resident set size before and after, bytes. */
  readonly rssBefore: number;
  readonly rssAfter: number;
  /** How long the collection held the event loop, ms. */
  readonly ms: number;
}

/** Runs the collection once; undefined when this runtime offers no way to ask for it. */
export function releaseStartupMemory(): ReleasedMemory | undefined {
  const gc = gcFunction();
  if (gc === undefined) return undefined;
  const rssBefore = process.memoryUsage.rss();
  const started = performance.now();
  gc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
  return { rssBefore, rssAfter: process.memoryUsage.rss(), ms: Math.round(performance.now() - started) };
}

/**
 * Runs the collection once, `STARTUP_SETTLE_MS` from now, unless `busy()` says by then that work
 * keeps the process going anyway; logs what it gave back at debug. Returns what cancels it (the
 * timer keeps no process alive).
 */
export function releaseStartupMemoryLater(log: Pick<Logger, 'debug'>, busy: () => boolean = () => false): () => void {
  const timer = setTimeout(() => {
    if (busy()) return;
    const released = releaseStartupMemory();
    if (released) log.debug({ rssBeforeMB: Math.round(released.rssBefore / 1e6), rssAfterMB: Math.round(released.rssAfter / 1e6), ms: released.ms }, 'start-up memory released');
  }, STARTUP_SETTLE_MS);
  timer.unref();
  return () => clearTimeout(timer);
}
