/** Polling helpers: the e2e tests wait for a condition to hold rather than sleeping a fixed time. */

export interface PollOptions {
  /** Give up after this long (default 10 s). */
  readonly timeoutMs?: number;
  /** Pause between attempts (default 100 ms). */
  readonly intervalMs?: number;
  /** What is being waited for, for the error message. */
  readonly what?: string;
  /** Extra text for the error message (logs, last observation), computed only on failure. */
  readonly diagnostics?: () => string;
}

export const delay = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function describe(value: unknown): string {
  if (value instanceof Error) return value.message;
  try {
    return JSON.stringify(value);
  } catch {
    return String(value);
  }
}

/**
 * Calls `probe` until it returns a value other than `undefined`/`false`, and returns that value.
 * A probe that throws counts as "not yet"; its last error goes into the timeout message.
 */
export async function pollUntil<T>(probe: () => T | undefined | false | Promise<T | undefined | false>, options: PollOptions = {}): Promise<T> {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const intervalMs = options.intervalMs ?? 100;
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined && value !== false) return value;
      last = value;
    } catch (err) {
      last = err;
    }
    if (Date.now() >= deadline) break;
    await delay(Math.min(intervalMs, Math.max(0, deadline - Date.now())));
  }
  const extra = options.diagnostics ? `\n${options.diagnostics()}` : '';
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${options.what ?? 'condition'}; last observation: ${describe(last)}${extra}`);
}

/** The last `max` characters of a text, marked when cut. */
export function tail(text: string, max = 4000): string {
  return text.length <= max ? text : `…${text.slice(text.length - max)}`;
}
