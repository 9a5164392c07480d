/**
 * The folders of src/ as the layer table (eslint/layers.mjs) describes them, checked on the imports
 * themselves (scripts/folder-cycles.mjs reads them with TypeScript's pre-processor, independently of
 * ESLint's resolver): every folder is in the table, no import goes up outside the listed
 * exceptions, every exception is still needed, and no folder cycle remains.
 */
import fs from 'node:fs';
import path from 'node:path';
import { EXCEPTIONS, LAYERS, REPO_ROOT, SEAMS, layerOf } from '../../eslint/layers.mjs';
import { describeCycles, folderCycles, folderEdges, type FolderEdges } from '../../scripts/folder-cycles.mjs';

const SRC = path.join(REPO_ROOT, 'src');
const edges = folderEdges(SRC);

/** The exception that allows one import (`file: specifier` from folder `from` to folder `to`), if any. */
function exceptionFor(from: string, to: string, imp: string): (typeof EXCEPTIONS)[number] | undefined {
  const file = imp.slice(0, imp.indexOf(': '));
  return EXCEPTIONS.find((e) => e.to === to && (e.from === from || e.from === file));
}

/** The edges without the imports that an exception allows. */
function withoutExceptions(all: FolderEdges): FolderEdges {
  const out: FolderEdges = new Map();
  for (const [key, imports] of all) {
    const [from, to] = key.split(' -> ');
    const left = imports.filter((imp) => !exceptionFor(from, to, imp));
    if (left.length > 0) out.set(key, left);
  }
  return out;
}

describe('src/ folders', () => {
  it('are each in exactly one layer of the table, and the table names no missing folder', () => {
    const folders = fs.readdirSync(SRC, { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name).sort();
    expect([...LAYERS.flat()].sort()).toEqual(folders);
    expect(new Set(LAYERS.flat()).size).toBe(LAYERS.flat().length);
  });

  it('import only their own layer and the layers below, but for the listed exceptions', () => {
    const up: string[] = [];
    for (const [key, imports] of withoutExceptions(edges)) {
      const [from, to] = key.split(' -> ');
      if (layerOf(to)! > layerOf(from)!) up.push(...imports.map((i) => `${key}: ${i}`));
    }
    expect(up).toEqual([]);
  });

  it('reach a folder listed in SEAMS through its seam files only', () => {
    const outside: string[] = [];
    for (const s of SEAMS) {
      for (const imp of edges.get(`${s.from} -> ${s.to}`) ?? []) {
        const [file, spec] = imp.split(': ');
        const target = path.relative(path.join(SRC, s.to), path.resolve(path.dirname(path.join(SRC, file)), spec)).replace(/\.js$/, '.ts');
        if (!s.only.includes(target)) outside.push(imp);
      }
    }
    expect(outside).toEqual([]);
  });

  it('need every listed exception (remove one from eslint/layers.mjs once its imports are gone)', () => {
    const unused = EXCEPTIONS.filter((e) => {
      const folder = e.from.split('/')[0];
      return !(edges.get(`${folder} -> ${e.to}`) ?? []).some((imp) => exceptionFor(folder, e.to, imp) === e);
    });
    expect(unused).toEqual([]);
  });

  it('form no cycle, once the excepted imports are left out', () => {
    const rest = withoutExceptions(edges);
    const cycles = folderCycles(rest);
    if (cycles.length > 0) throw new Error(`folder cycles:\n${describeCycles(rest, cycles)}`);
  });

  it('would be reported in a cycle (the check can fail)', () => {
    const cyclic: FolderEdges = new Map([
      ['model -> xds', ['model/a.ts: ../xds/b.js']],
      ['xds -> model', ['xds/b.ts: ../model/a.js']],
      ['xds -> util', ['xds/b.ts: ../util/c.js']],
    ]);
    expect(folderCycles(cyclic)).toEqual([['model', 'xds']]);
    expect(describeCycles(cyclic, folderCycles(cyclic))).toContain('model -> xds (1): model/a.ts: ../xds/b.js');
  });
});
