/**
 * Strict parsers for the scalar types of flags and environment variables (B, I, F in the spec's
 * legend). Each throws an `Error` whose message describes the bad value; callers prefix the
 * name of the flag or variable.
 */

const TRUE_WORDS: ReadonlySet<string> = new Set(['1', 't', 'T', 'TRUE', 'true', 'True']);
const FALSE_WORDS: ReadonlySet<string> = new Set(['0', 'f', 'F', 'FALSE', 'false', 'False']);

/** Booleans as the spec's tooling spells them: 1, t, T, TRUE, true, True and their false twins. */
export function parseBool(text: string): boolean {
  if (TRUE_WORDS.has(text)) return true;
  if (FALSE_WORDS.has(text)) return false;
  throw new Error(`invalid boolean ${JSON.stringify(text)} (use true or false)`);
}

/** A decimal integer with optional sign, within the safe integer range. */
export function parseInteger(text: string): number {
  const value = /^[+-]?\d+$/.test(text) ? Number(text) : NaN;
  if (!Number.isSafeInteger(value)) throw new Error(`invalid integer ${JSON.stringify(text)}`);
  return value;
}

/** A finite decimal number (`80`, `0.5`, `.5`, `1e3`); no hexadecimal, infinities or NaN. */
export function parseDecimal(text: string): number {
  const value = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(text) ? Number(text) : NaN;
  if (!Number.isFinite(value)) throw new Error(`invalid number ${JSON.stringify(text)}`);
  return value;
}

/** Checks `value` against optional inclusive bounds; throws with a readable range. */
export function checkRange(value: number, min?: number, max?: number): number {
  if ((min !== undefined && value < min) || (max !== undefined && value > max)) {
    const range = min !== undefined && max !== undefined ? `between ${min} and ${max}` : min !== undefined ? `at least ${min}` : `at most ${max}`;
    throw new Error(`${value} is out of range: must be ${range}`);
  }
  return value;
}
