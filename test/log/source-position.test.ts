/**
 * Stack frames of bundled code back in source terms (src/log/source-position.ts): a frame in a
 * minified file with a map beside it names the source file and line; a frame without a map, or
 * without a location, stays as it is.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { transformSync } from 'esbuild';
import { framePosition, mapFrame } from '../../src/log/source-position.js';

let dir = '';
let out = '';

beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mesh-source-position-'));
  const source = ['export function first(): number {', '  return 1;', '}', '', 'export function second(): string {', "  return 'two';", '}', ''].join('\n');
  // Minified onto one line, as the bundle is; the map names the source relative to the output.
  const r = transformSync(source, { loader: 'ts', format: 'esm', minifyWhitespace: true, sourcemap: 'external', sourcefile: '../src/thing.ts' });
  out = path.join(dir, 'dist', 'thing.js');
  fs.mkdirSync(path.dirname(out));
  fs.writeFileSync(out, r.code);
  fs.writeFileSync(`${out}.map`, r.map);
});

afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('source positions of stack frames', () => {
  it('maps a position in a minified file to the source file and line', () => {
    const code = fs.readFileSync(out, 'utf8');
    expect(code.split('\n').filter((l) => l !== '')).toHaveLength(1);
    const column = code.indexOf('return"two"') + 1;
    expect(column).toBeGreaterThan(0);
    const pos = framePosition(`at second (file://${out}:1:${column})`);
    expect(pos).toMatchObject({ file: path.join(dir, 'src', 'thing.ts'), line: 6 });
    expect(mapFrame(`at second (${out}:1:${column})`)).toMatch(new RegExp(`^at second \\(${path.join(dir, 'src', 'thing.ts')}:6:\\d+\\)$`));
  });

  it('leaves frames without a map or a location as they are', () => {
    const plain = path.join(dir, 'plain.js');
    fs.writeFileSync(plain, 'export const x = 1;\n');
    expect(framePosition(`at f (${plain}:1:14)`)).toEqual({ file: plain, line: 1, column: 14 });
    expect(mapFrame('at process.processTicksAndRejections (node:internal/process/task_queues:104:5)')).toBe(
      'at process.processTicksAndRejections (node:internal/process/task_queues:104:5)',
    );
    expect(mapFrame('at new Promise (<anonymous>)')).toBe('at new Promise (<anonymous>)');
  });
});
