import {
  DurationError,
  MAX_DURATION_MS,
  MAX_DURATION_NS,
  formatDuration,
  formatDurationNs,
  parseDuration,
  parseDurationNs,
} from '../../src/util/duration.js';

describe('parseDuration', () => {
  it.each([
    ['0', 0],
    ['0s', 0],
    ['-0', 0],
    ['100ms', 100],
    ['1.5s', 1500],
    ['-1s', -1000],
    ['+2m', 120_000],
    ['1h0m0s', 3_600_000],
    ['2h45m', 9_900_000],
    ['87600h0m0s', 315_360_000_000],
    ['1us', 0.001],
    ['1µs', 0.001],
    ['1μs', 0.001],
    ['500ns', 0.0005],
    ['.5s', 500],
    ['1.s', 1000],
  ])('%s is %d ms', (text, ms) => {
    expect(parseDuration(text)).toBeCloseTo(ms, 9);
  });

  it('parses the largest duration exactly and to a finite number of ms', () => {
    expect(parseDurationNs('2562047h47m16.854775807s')).toBe(MAX_DURATION_NS);
    const ms = parseDuration('2562047h47m16.854775807s');
    expect(Number.isFinite(ms)).toBe(true);
    expect(ms).toBe(MAX_DURATION_MS);
    expect(ms).toBeCloseTo(9_223_372_036_854.775, 0);
    expect(parseDurationNs('-2562047h47m16.854775808s')).toBe(-MAX_DURATION_NS - 1n);
  });

  it.each([
    ['5x', 'invalid duration "5x": unknown unit "x"'],
    ['abc', 'invalid duration "abc"'],
    ['', 'invalid duration ""'],
    ['-', 'invalid duration "-"'],
    ['1', 'invalid duration "1": missing unit'],
    ['1h5', 'invalid duration "1h5": missing unit'],
    ['.s', 'invalid duration ".s"'],
    ['1 s', 'invalid duration "1 s": unknown unit " s"'],
    ['2562047h47m16.854775808s', 'invalid duration "2562047h47m16.854775808s": out of range'],
    ['3000000h', 'invalid duration "3000000h": out of range'],
  ])('rejects %j', (text, message) => {
    expect(() => parseDuration(text)).toThrow(DurationError);
    expect(() => parseDuration(text)).toThrow(message);
  });
});

describe('formatDuration', () => {
  it.each([
    [0, '0s'],
    [100, '100ms'],
    [1500, '1.5s'],
    [-1000, '-1s'],
    [90_000, '1m30s'],
    [3_600_000, '1h0m0s'],
    [315_360_000_000, '87600h0m0s'],
    [0.001, '1µs'],
    [0.0015, '1.5µs'],
    [0.000001, '1ns'],
    [1.25, '1.25ms'],
    [61_001, '1m1.001s'],
    [MAX_DURATION_MS, '2562047h47m16.854775807s'],
  ])('%d ms is %s', (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });

  it('formats nanoseconds exactly', () => {
    expect(formatDurationNs(MAX_DURATION_NS)).toBe('2562047h47m16.854775807s');
    expect(formatDurationNs(-1n)).toBe('-1ns');
    expect(formatDurationNs(1_000_000_001n)).toBe('1.000000001s');
  });

  it.each(['100ms', '1h0m0s', '87600h0m0s', '2562047h47m16.854775807s', '1.5s', '-1s', '0s', '10s', '1m0s', '24h0m0s', '2160h0m0s', '20m0s', '500ms', '1µs'])(
    'round-trips %s',
    (text) => {
      expect(formatDuration(parseDuration(text))).toBe(text);
      expect(formatDurationNs(parseDurationNs(text))).toBe(text);
    },
  );

  it('normalizes non-canonical input', () => {
    expect(formatDuration(parseDuration('0'))).toBe('0s');
    expect(formatDuration(parseDuration('90m'))).toBe('1h30m0s');
    expect(formatDuration(parseDuration('1500ms'))).toBe('1.5s');
  });

  it('rejects non-finite numbers', () => {
    expect(() => formatDuration(Infinity)).toThrow(RangeError);
    expect(() => formatDuration(NaN)).toThrow(RangeError);
  });
});
