/**
 * Reads tables out of the contract, so tests can hold the code to it. The contract is the
 * project's own copy in docs/spec/ (the user's reference for this product); tests never read
 * anything outside the repository, except test/cli/spec-copy.test.ts, which compares that copy
 * with the shared original when one lies beside the repository.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const SPEC_DIR = path.join(REPO_ROOT, 'docs/spec');
export const DAEMON_SPEC = path.join(SPEC_DIR, 'daemon-mesh-discovery.md');
export const MESHCTL_SPEC_PART1 = path.join(SPEC_DIR, 'meshctl-part1-global-admin-to-experimental.md');
export const MESHCTL_SPEC_PART2 = path.join(SPEC_DIR, 'meshctl-part2-install-to-version.md');

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
