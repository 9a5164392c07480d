import { parse as parseYaml } from 'yaml';
import { colorEnabled, parseOutputFormat, renderJson, renderTable, renderYaml } from '../../src/cli/output.js';
import { CliError } from '../../src/cli/runner.js';

describe('renderTable', () => {
  it('aligns columns under an upper-case header, three spaces apart, without trailing spaces', () => {
    const text = renderTable(
      ['name', 'namespace', 'age'],
      [
        ['reviews', 'default', '3d'],
        ['productpage-v1', 'bookinfo', '12m'],
      ],
    );
    expect(text).toBe(['NAME             NAMESPACE   AGE', 'reviews          default     3d', 'productpage-v1   bookinfo    12m', ''].join('\n'));
    // Every column starts at the same offset on every line.
    const starts = text
      .trimEnd()
      .split('\n')
      .map((l) => [...l.matchAll(/(?:^|\s{3})(\S)/g)].map((m) => m.index! + m[0].length - 1));
    expect(new Set(starts.map((s) => s.join(','))).size).toBe(1);
  });

  it('shows empty cells as <none>, flattens line breaks and counts code points, not UTF-16 units', () => {
    const text = renderTable(['a', 'b'], [['', 'x\ny'], ['😀😀', 'z']]);
    expect(text).toBe('A        B\n<none>   x y\n😀😀       z\n');
  });

  it('makes the header bold only when asked, and refuses a row of the wrong width', () => {
    expect(renderTable(['a'], [], { color: true })).toBe('\u001b[1mA\u001b[0m\n');
    expect(renderTable(['a'], [])).toBe('A\n');
    expect(() => renderTable(['a', 'b'], [['1']])).toThrow('table row 0 has 1 cells, the header 2');
  });
});

describe('colorEnabled', () => {
  it('allows colour only on a terminal whose TERM is not dumb, without NO_COLOR', () => {
    expect(colorEnabled({ env: { NO_COLOR: '1' }, isTTY: true })).toBe(false);
    expect(colorEnabled({ env: { NO_COLOR: '' }, isTTY: true })).toBe(false);
    expect(colorEnabled({ env: {}, isTTY: true })).toBe(true);
    expect(colorEnabled({ env: { TERM: 'xterm-256color' }, isTTY: true })).toBe(true);
    expect(colorEnabled({ env: { TERM: 'dumb' }, isTTY: true })).toBe(false);
    expect(colorEnabled({ env: {}, isTTY: false })).toBe(false);
    expect(colorEnabled({ env: {} })).toBe(false);
  });
});

describe('renderJson and renderYaml', () => {
  const value = { name: 'x', enabled: 'yes', mode: 'on', short: 'y', octal: '0777', time: '12:30', big: '1_000', real: true, port: 15012, n: 'N', list: ['off', 'plain'] };

  it('writes JSON with a 2-space indent and a final newline', () => {
    expect(renderJson({ a: [1] })).toBe('{\n  "a": [\n    1\n  ]\n}\n');
  });

  it('quotes the strings a YAML 1.1 reader would take for booleans or numbers, and keys too', async () => {
    const text = await renderYaml(value);
    for (const word of ['yes', 'on', 'y', '0777', '12:30', '1_000', 'N', 'off']) expect(text).toContain(`"${word}"`);
    expect(text).toContain('name: x\n');
    expect(text).toContain('real: true\n');
    expect(text).toContain('port: 15012\n');
    expect(text).toContain('"n": "N"'); // the key n is a boolean in YAML 1.1
    expect(text.endsWith('\n')).toBe(true);
    // It reads back unchanged with the 1.1 rules and with the 1.2 rules.
    expect(parseYaml(text, { version: '1.1' })).toEqual(value);
    expect(parseYaml(text)).toEqual(value);
  });

  it('does not fold long strings', async () => {
    const long = 'word '.repeat(40).trim();
    expect(await renderYaml({ long })).toBe(`long: ${long}\n`);
  });
});

describe('parseOutputFormat', () => {
  it('returns an allowed value', () => {
    expect(parseOutputFormat('yaml', ['json', 'yaml'])).toBe('yaml');
  });

  it('names the flag and the allowed values in its error', () => {
    expect(() => parseOutputFormat('xml', ['json', 'yaml'], '-o/--output')).toThrow(new CliError('-o/--output: invalid value "xml" (choose from json, yaml)'));
    expect(() => parseOutputFormat(undefined, ['short', 'json'], '--output')).toThrow('--output: a value is required (choose from short, json)');
    try {
      parseOutputFormat('x', ['table']);
    } catch (err) {
      expect(err).toBeInstanceOf(CliError);
      expect((err as CliError).exitCode).toBe(1);
    }
  });
});
