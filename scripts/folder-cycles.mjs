#!/usr/bin/env node
/**
 * Folder cycles among src/*: which top folders import each other, directly or through others.
 * Imports are read with TypeScript's pre-processor (static, `export … from`, dynamic `import()`,
 * type-only ones too) and resolved relative to the file; the `.js` of an import names the `.ts`
 * source. Run `node scripts/folder-cycles.mjs` to print the cycles (exit 1 when there is one);
 * test/lint/folder-cycles.test.ts runs the same check.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

function* sourceFiles(dir) {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) yield* sourceFiles(p);
    else if (entry.name.endsWith('.ts')) yield p;
  }
}

/**
 * Import edges between top folders of `srcDir`: a Map from `from -> to` to the imports behind it
 * (`file: specifier`, file relative to `srcDir`).
 */
export function folderEdges(srcDir = path.join(ROOT, 'src')) {
  const edges = new Map();
  for (const file of sourceFiles(srcDir)) {
    const rel = path.relative(srcDir, file);
    const from = rel.split(path.sep)[0];
    if (!rel.includes(path.sep)) continue; // a file directly under src/ belongs to no folder
    for (const { fileName } of ts.preProcessFile(fs.readFileSync(file, 'utf8'), true, true).importedFiles) {
      if (!fileName.startsWith('.')) continue;
      const target = path.relative(srcDir, path.resolve(path.dirname(file), fileName));
      if (target.startsWith('..') || !target.includes(path.sep)) continue;
      const to = target.split(path.sep)[0];
      if (to === from) continue;
      const key = `${from} -> ${to}`;
      if (!edges.has(key)) edges.set(key, []);
      edges.get(key).push(`${rel.split(path.sep).join('/')}: ${fileName}`);
    }
  }
  return edges;
}

/** Strongly connected groups of more than one folder (each a cycle or several), sorted. */
export function folderCycles(edges) {
  const next = new Map();
  for (const key of edges.keys()) {
    const [from, to] = key.split(' -> ');
    if (!next.has(from)) next.set(from, new Set());
    if (!next.has(to)) next.set(to, new Set());
    next.get(from).add(to);
  }
  // Tarjan's algorithm
  let counter = 0;
  const index = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const groups = [];
  const visit = (v) => {
    index.set(v, counter);
    low.set(v, counter++);
    stack.push(v);
    onStack.add(v);
    for (const w of next.get(v)) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v), low.get(w)));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v), index.get(w)));
    }
    if (low.get(v) === index.get(v)) {
      const group = [];
      let w;
      do {
        w = stack.pop();
        onStack.delete(w);
        group.push(w);
      } while (w !== v);
      if (group.length > 1) groups.push(group.sort());
    }
  };
  for (const v of [...next.keys()].sort()) if (!index.has(v)) visit(v);
  return groups.sort((a, b) => a.join().localeCompare(b.join()));
}

/** Text report of the cycles: each group, and the imports between its folders. */
export function describeCycles(edges, cycles) {
  const lines = [];
  for (const group of cycles) {
    lines.push(`cycle: ${group.join(', ')}`);
    for (const [key, imports] of [...edges].sort()) {
      const [from, to] = key.split(' -> ');
      if (!group.includes(from) || !group.includes(to)) continue;
      lines.push(`  ${key} (${imports.length}): ${imports.slice(0, 3).join('; ')}${imports.length > 3 ? '; …' : ''}`);
    }
  }
  return lines.join('\n');
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const edges = folderEdges();
  const cycles = folderCycles(edges);
  if (cycles.length === 0) console.log('no folder cycle among src/*');
  else {
    console.log(describeCycles(edges, cycles));
    process.exitCode = 1;
  }
}
