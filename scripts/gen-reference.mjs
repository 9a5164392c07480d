#!/usr/bin/env node
// Writes the reference pages docs/reference/{meshctl,mesh-discovery,mesh-operator}.md from the
// built programs (dist/): their commands, flags, examples, environment variables and metrics, as
// src/cli/reference.ts reads them from the code. test/cli/reference.test.ts fails when a page is out
// of date.
//
// Usage:  npm run gen:reference                      builds, then (re)writes docs/reference/;
//         node scripts/gen-reference.mjs --check     writes nothing; exits 1, naming the pages,
//                                                    when docs/reference/ differs from the code.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const outDir = join(root, 'docs', 'reference');
const check = process.argv.includes('--check');
for (const arg of process.argv.slice(2)) {
  if (arg !== '--check') {
    console.error(`gen-reference: unknown argument ${arg} (usage: node scripts/gen-reference.mjs [--check])`);
    process.exit(2);
  }
}

const module = join(root, 'dist', 'cli', 'reference.js');
if (!existsSync(module)) {
  console.error('gen-reference: dist/cli/reference.js is missing; run `npm run gen:reference` (it builds first)');
  process.exit(2);
}
const { referencePages } = await import(pathToFileURL(module).href);
const pages = await referencePages();

if (check) {
  const stale = pages.filter((p) => !existsSync(join(outDir, p.file)) || readFileSync(join(outDir, p.file), 'utf8') !== p.text);
  if (stale.length > 0) {
    console.error(`gen-reference: out of date: ${stale.map((p) => `docs/reference/${p.file}`).join(', ')}; run npm run gen:reference`);
    process.exit(1);
  }
  console.log(`gen-reference: docs/reference/ is up to date (${pages.length} pages)`);
} else {
  mkdirSync(outDir, { recursive: true });
  for (const p of pages) writeFileSync(join(outDir, p.file), p.text);
  console.log(`gen-reference: ${pages.map((p) => `docs/reference/${p.file}`).join(', ')}`);
}
