/**
 * The one poll with a deadline for unit and end-to-end tests: tests wait for a condition to hold
 * rather than sleeping a fixed time, and every wait is bounded.
 */

export interface EventuallyOptions {
  /** Give up after this long (default 10 s). */
  readonly timeoutMs?: number;
  /** Pause between attempts (default 50 ms). */
  readonly intervalMs?: number;
  /**
   * A probe that throws counts as "not yet" and its last error goes into the timeout message
   * (for probes of something still starting). Default: the error fails the wait at once.
   */
  readonly retryErrors?: boolean;
  /** Extra text for the timeout message (logs, what was received), computed only on failure. */
  readonly diagnostics?: () => string;
}

export const delay = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function describe(value: unknown): string {
  if (value instanceof Error) return value.message;
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/**
 * Calls `probe` until it returns a truthy value, and returns that value. Rejects when `timeoutMs`
 * pass first, naming `what` and the last value seen.
 */
export async function eventually<T>(
  what: string,
  probe: () => T | undefined | null | false | Promise<T | undefined | null | false>,
  options: EventuallyOptions = {},
): Promise<T> {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const intervalMs = options.intervalMs ?? 50;
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value) return value;
      last = value;
    } catch (err) {
      if (!options.retryErrors) throw err;
      last = err;
    }
    if (Date.now() >= deadline) break;
    await delay(Math.min(intervalMs, Math.max(0, deadline - Date.now())));
  }
  const extra = options.diagnostics ? `\n${options.diagnostics()}` : '';
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what} (last: ${describe(last)})${extra}`);
}

/** `p`, or a rejection naming `what` when it has not settled after `ms`. */
export function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let t: NodeJS.Timeout | undefined;
  const timeout = new Promise<T>((_, reject) => (t = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms)));
  return Promise.race([p, timeout]).finally(() => clearTimeout(t));
}

/** The last `max` characters of a text, marked when cut. */
export function tail(text: string, max = 4000): string {
  return text.length <= max ? text : `…${text.slice(text.length - max)}`;
}
