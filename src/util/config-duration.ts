/**
 * Durations in configuration are strings: the protobuf JSON form (`"1.5s"`, `"0.100s"`) or the
 * unit form (`"100ms"`, `"1m30s"`, `"1h"`). They stay strings in the parsed types; consumers
 * convert with `durationMs()`.
 */

import { parseDuration } from './duration.js';

/** One or more `<number><unit>` terms; units ns, us, µs, ms, s, m, h. No sign: config durations are never negative. */
export const DURATION_PATTERN = /^(?:\d+(?:\.\d+)?(?:ns|us|µs|ms|s|m|h))+$/;

export function isDuration(text: string): boolean {
  return DURATION_PATTERN.test(text);
}

/** Milliseconds of a duration string (fractions kept, e.g. `"1500us"` → 1.5). Throws on a malformed string. */
export function durationMs(text: string): number {
  if (!DURATION_PATTERN.test(text)) {
    throw new Error(`invalid duration "${text}": expected forms like "1.5s", "100ms" or "1m30s"`);
  }
  return parseDuration(text);
}
