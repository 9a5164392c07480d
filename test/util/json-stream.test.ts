/**
 * The JSON text rendered over turns is the text `JSON.stringify` writes, for lists at any depth of a
 * tree of objects (a config dump), and an answer in parts joins back into the list (docs/adr/0184, 0185).
 */
import { JsonArray, jsonArrayParts, jsonChunks, lazyMap } from '../../src/util/json-stream.js';

async function text(chunks: AsyncIterable<string>): Promise<string> {
  let out = '';
  for await (const c of chunks) out += c;
  return out;
}

const plain = { a: 1, b: [1, { c: 'x\ny' }], d: { e: null, skipped: undefined, when: new Date(0) }, f: [] };

function tree(n: number): { streamed: unknown; expected: unknown } {
  const items = Array.from({ length: n }, (_, i) => ({ name: `r-${i}`, nested: { list: [i, i + 1], empty: {} }, none: undefined }));
  const streamed = {
    proxy: { id: 'p', metadata: { A: '1' } },
    config: { clusters: new JsonArray(lazyMap(items, (x) => ({ ...x, inner: new JsonArray([x.name, undefined]) }))), none: new JsonArray([]) },
    configs: new JsonArray([{ '@type': 't', dynamic: new JsonArray(items) }, plain]),
    plain,
  };
  const expected = {
    proxy: { id: 'p', metadata: { A: '1' } },
    config: { clusters: items.map((x) => ({ ...x, inner: [x.name, null] })), none: [] },
    configs: [{ '@type': 't', dynamic: items }, plain],
    plain,
  };
  return { streamed, expected };
}

describe('jsonChunks', () => {
  it.each([0, 1, 3, 2000])('writes what JSON.stringify writes, indented and compact (%i items)', async (n) => {
    const { streamed, expected } = tree(n);
    expect(await text(jsonChunks(streamed))).toBe(`${JSON.stringify(expected, null, 2)}\n`);
    expect(await text(jsonChunks(streamed, { compact: true }))).toBe(JSON.stringify(expected));
    // JSON.stringify of the streamed value itself renders its lists whole
    expect(JSON.stringify(streamed)).toBe(JSON.stringify(expected));
  });

  it('writes a top-level list and plain values', async () => {
    expect(await text(jsonChunks(new JsonArray([])))).toBe('[]\n');
    expect(await text(jsonChunks(new JsonArray([1, undefined, 'a'])))).toBe(`${JSON.stringify([1, null, 'a'], null, 2)}\n`);
    expect(await text(jsonChunks(plain, { compact: true }))).toBe(JSON.stringify(plain));
  });
});

describe('jsonArrayParts', () => {
  it.each([0, 1, 5, 3000])('cuts a list into complete lists that join into it (%i items)', async (n) => {
    const items = Array.from({ length: n }, (_, i) => ({ i, names: Array.from({ length: 20 }, (_, k) => `name-${i}-${k}`), list: new JsonArray([i]) }));
    const parts: string[] = [];
    for await (const p of jsonArrayParts(items, 10_000)) parts.push(p);
    const joined = parts.flatMap((p) => JSON.parse(p) as unknown[]);
    expect(joined).toEqual(JSON.parse(JSON.stringify(items)));
    if (n === 0) expect(parts).toEqual(['[]']);
    if (n === 3000) expect(parts.length).toBeGreaterThan(10);
    for (const p of parts.slice(0, -1)) expect(p.length).toBeGreaterThanOrEqual(10_000);
  });
});
