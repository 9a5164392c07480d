import { checkRange, parseBool, parseDecimal, parseInteger } from '../../src/util/parse.js';

describe('scalar parsers', () => {
  it('parses booleans like the spec tooling', () => {
    for (const t of ['1', 't', 'T', 'TRUE', 'true', 'True']) expect(parseBool(t)).toBe(true);
    for (const f of ['0', 'f', 'F', 'FALSE', 'false', 'False']) expect(parseBool(f)).toBe(false);
    for (const bad of ['yes', 'tRUE', '', ' true', 'on']) expect(() => parseBool(bad)).toThrow(`invalid boolean ${JSON.stringify(bad)}`);
  });

  it('parses integers strictly', () => {
    expect(parseInteger('42')).toBe(42);
    expect(parseInteger('-7')).toBe(-7);
    expect(parseInteger('+7')).toBe(7);
    for (const bad of ['1.5', '1e3', '', '0x10', '12a', '99999999999999999999']) expect(() => parseInteger(bad)).toThrow(`invalid integer ${JSON.stringify(bad)}`);
  });

  it('parses finite decimals', () => {
    expect(parseDecimal('80')).toBe(80);
    expect(parseDecimal('.5')).toBe(0.5);
    expect(parseDecimal('1e2')).toBe(100);
    expect(parseDecimal('-0.25')).toBe(-0.25);
    for (const bad of ['', 'NaN', 'Infinity', '1e999', '0x1', '1,5']) expect(() => parseDecimal(bad)).toThrow(`invalid number ${JSON.stringify(bad)}`);
  });

  it('checks ranges', () => {
    expect(checkRange(5, 0, 10)).toBe(5);
    expect(() => checkRange(11, 0, 10)).toThrow('11 is out of range: must be between 0 and 10');
    expect(() => checkRange(-1, 0)).toThrow('-1 is out of range: must be at least 0');
    expect(() => checkRange(9, undefined, 8)).toThrow('9 is out of range: must be at most 8');
  });
});
