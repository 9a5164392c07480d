/**
 * Durations in configuration are strings: the protobuf JSON form (`"1.5s"`, `"0.100s"`) or the
 * unit form (`"100ms"`, `"1m30s"`, `"1h"`). They stay strings in the parsed types; consumers
 * convert with `durationMs()`.
 */

/** One or more `<number><unit>` terms; units ns, us, µs, ms, s, m, h. No sign: config durations are never negative. */
export const DURATION_PATTERN = /^(?:\d+(?:\.\d+)?(?:ns|us|µs|ms|s|m|h))+$/;

const TERM = /(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/g;

const UNIT_NS: Readonly<Record<string, number>> = {
  ns: 1,
  us: 1e3,
  µs: 1e3,
  ms: 1e6,
  s: 1e9,
  m: 60e9,
  h: 3600e9,
};

export function isDuration(text: string): boolean {
  return DURATION_PATTERN.test(text);
}

/** Milliseconds of a duration string (fractions kept, e.g. `"1500us"` → 1.5). Throws on a malformed string. */
export function durationMs(text: string): number {
  if (!DURATION_PATTERN.test(text)) {
    throw new Error(`invalid duration "${text}": expected forms like "1.5s", "100ms" or "1m30s"`);
  }
  // Summed in whole nanoseconds so that decimal inputs like "1.1s" give exact results.
  let ns = 0;
  for (const term of text.matchAll(TERM)) {
    ns += Math.round(Number(term[1]) * UNIT_NS[term[2]]);
  }
  return ns / 1e6;
}
