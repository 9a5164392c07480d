/**
 * Durations in the notation the spec uses for every D-typed flag and variable: a sequence of
 * decimal numbers, each with an optional fraction and a unit suffix (`300ms`, `1.5h`, `2h45m`),
 * with an optional sign; `0` needs no unit. Units: ns, us (or µs/μs), ms, s, m, h.
 *
 * Parsing is exact (to the nanosecond, held as a bigint) and bounded like a signed 64-bit count
 * of nanoseconds, so the spec's "forever" value `2562047h47m16.854775807s` is the largest legal
 * input. The rest of the project works in milliseconds as a `number`: `parseDuration` returns
 * that, with sub-millisecond parts as a fraction.
 */

export class DurationError extends Error {
  constructor(
    readonly input: string,
    readonly reason?: string,
  ) {
    super(`invalid duration ${JSON.stringify(input)}${reason ? `: ${reason}` : ''}`);
    this.name = 'DurationError';
  }
}

const NS_PER_UNIT: ReadonlyMap<string, bigint> = new Map([
  ['ns', 1n],
  ['us', 1_000n],
  ['\u00b5s', 1_000n], // micro sign
  ['\u03bcs', 1_000n], // Greek small letter mu
  ['ms', 1_000_000n],
  ['s', 1_000_000_000n],
  ['m', 60_000_000_000n],
  ['h', 3_600_000_000_000n],
]);

/** Largest representable duration in nanoseconds (2^63 - 1), printed `2562047h47m16.854775807s`. */
export const MAX_DURATION_NS = (1n << 63n) - 1n;
/** `MAX_DURATION_NS` in milliseconds, as `parseDuration` returns it for the largest duration. */
export const MAX_DURATION_MS = Number(MAX_DURATION_NS) / 1e6;

// One component: digits, optional fraction, then the unit (everything up to the next digit or dot).
const COMPONENT = /^(\d*)(?:\.(\d*))?([^\d.]*)/;

/** Parses a duration to nanoseconds. Throws `DurationError`. */
export function parseDurationNs(input: string): bigint {
  let rest = input;
  let negative = false;
  if (rest.startsWith('-') || rest.startsWith('+')) {
    negative = rest.startsWith('-');
    rest = rest.slice(1);
  }
  if (rest === '0') return 0n;
  if (rest === '') throw new DurationError(input);

  // A negative total may reach 2^63, one more than a positive one.
  const limit = negative ? MAX_DURATION_NS + 1n : MAX_DURATION_NS;
  let total = 0n;
  while (rest !== '') {
    const m = COMPONENT.exec(rest);
    const [whole, intDigits, fracDigits, unit] = m ?? ['', '', undefined, ''];
    if (intDigits === '' && !fracDigits) throw new DurationError(input);
    if (unit === '') throw new DurationError(input, 'missing unit');
    const perUnit = NS_PER_UNIT.get(unit);
    if (perUnit === undefined) throw new DurationError(input, `unknown unit ${JSON.stringify(unit)}`);
    let value = BigInt(intDigits || '0') * perUnit;
    if (fracDigits) value += (BigInt(fracDigits) * perUnit) / 10n ** BigInt(fracDigits.length);
    total += value;
    if (total > limit) throw new DurationError(input, 'out of range');
    rest = rest.slice(whole.length);
  }
  return negative ? -total : total;
}

/** Parses a duration to milliseconds (fractional below 1ms). Throws `DurationError`. */
export function parseDuration(input: string): number {
  return Number(parseDurationNs(input)) / 1e6;
}

/** `value` as `<int>[.<fraction without trailing zeros>]`, where `value` counts units of 10^-digits. */
function decimal(value: bigint, digits: number): string {
  const scale = 10n ** BigInt(digits);
  const fraction = (value % scale).toString().padStart(digits, '0').replace(/0+$/, '');
  return `${value / scale}${fraction ? `.${fraction}` : ''}`;
}

/** Formats nanoseconds canonically: `0s`, `1.5µs`, `100ms`, `1.5s`, `1m30s`, `1h0m0s`. */
export function formatDurationNs(ns: bigint): string {
  if (ns === 0n) return '0s';
  const sign = ns < 0n ? '-' : '';
  const abs = ns < 0n ? -ns : ns;
  if (abs < 1_000n) return `${sign}${abs}ns`;
  if (abs < 1_000_000n) return `${sign}${decimal(abs, 3)}\u00b5s`;
  if (abs < 1_000_000_000n) return `${sign}${decimal(abs, 6)}ms`;

  const totalSeconds = abs / 1_000_000_000n;
  const hours = totalSeconds / 3600n;
  const minutes = (totalSeconds / 60n) % 60n;
  const seconds = decimal(abs % 60_000_000_000n, 9);
  if (hours > 0n) return `${sign}${hours}h${minutes}m${seconds}s`;
  if (minutes > 0n) return `${sign}${minutes}m${seconds}s`;
  return `${sign}${seconds}s`;
}

/** Formats milliseconds canonically (see `formatDurationNs`); sub-millisecond fractions are kept to the nanosecond. */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms)) throw new RangeError(`cannot format duration ${ms}`);
  const abs = Math.abs(ms);
  let ns: bigint;
  if (abs >= MAX_DURATION_MS) {
    ns = MAX_DURATION_NS;
  } else {
    const whole = Math.trunc(abs);
    ns = BigInt(whole) * 1_000_000n + BigInt(Math.round((abs - whole) * 1e6));
  }
  return formatDurationNs(ms < 0 ? -ns : ns);
}
