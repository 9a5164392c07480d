/**
 * Golden files: what a command prints, kept under test/golden/ and compared byte for byte.
 * `UPDATE_GOLDEN=1 npm test -- test/cli/golden.test.ts` rewrites them; review the diff before
 * committing. Values that differ from machine to machine (the Node version, the package version)
 * are replaced by placeholders before comparing.
 */
import fs from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from './spec-tables.js';

export const GOLDEN_DIR = path.join(REPO_ROOT, 'test/golden');
const updating = process.env.UPDATE_GOLDEN === '1';

/** `text` with `replacements` (literal → placeholder) applied, longest first. */
export function normalize(text: string, replacements: Readonly<Record<string, string>>): string {
  return Object.entries(replacements)
    .sort(([a], [b]) => b.length - a.length)
    .reduce((t, [from, to]) => (from === '' ? t : t.split(from).join(to)), text);
}

/** Compares `actual` with test/golden/<name>, or writes it there with UPDATE_GOLDEN=1. */
export function expectGolden(name: string, actual: string): void {
  const file = path.join(GOLDEN_DIR, name);
  if (updating) {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, actual);
    return;
  }
  if (!fs.existsSync(file)) throw new Error(`test/golden/${name} is missing: run UPDATE_GOLDEN=1 npm test -- test/cli/golden.test.ts and review it`);
  expect({ golden: name, text: actual }).toEqual({ golden: name, text: fs.readFileSync(file, 'utf8') });
}
