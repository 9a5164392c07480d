/** Reads tables out of the daemon spec, so tests can hold the code to the contract. */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const DAEMON_SPEC = path.resolve(REPO_ROOT, '../shared/spec/daemon-mesh-discovery.md');

/** Cells of the first table after the heading line `heading`, header row excluded; `\|` unescaped. */
export function specTable(heading: string, file = DAEMON_SPEC): string[][] {
  const lines = fs.readFileSync(file, 'utf8').split('\n');
  const start = lines.findIndex((l) => l.trim() === heading);
  if (start < 0) throw new Error(`heading ${JSON.stringify(heading)} not found in ${file}`);
  let i = start + 1;
  while (i < lines.length && !lines[i].startsWith('|')) i++;
  const rows: string[][] = [];
  for (; i < lines.length && lines[i].startsWith('|'); i++) {
    rows.push(lines[i].trim().slice(1, -1).split(/(?<!\\)\|/).map((c) => c.trim().replace(/\\\|/g, '|')));
  }
  return rows.slice(2); // header and separator
}

/** A cell without its backticks. */
export const plain = (cell: string): string => cell.replace(/`/g, '');
