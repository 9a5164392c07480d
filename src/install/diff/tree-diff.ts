/**
 * Differences between two data trees, as lines `path: OLD -> NEW`, used by `manifest diff` and
 * `profile diff`.
 *
 * Paths use the syntax of src/install/path.ts (so a path can be pasted into an overlay), with one
 * addition for lists: an item whose index changed is written `[OLD->NEW]`, and `?` stands for the
 * side where the item is absent (`[?->2]` added, `[1->?]` removed). List items are paired by their
 * `name` field when every item of both lists has a distinct one, otherwise by equal content; an
 * unpaired old and new item at the same index count as one changed item. An item is reported as
 * `moved` only when its order relative to the other items changed, not when it merely shifted
 * because something before it was added or removed. A multi-line text (an embedded config file)
 * that changed is shown as its removed (`- `) and added (`+ `) lines.
 */
import { formatPath, type PathSegment } from '../path.js';
import { deepEqual, isMap } from '../tree.js';

export const ABSENT = '<absent>';

export interface DiffLine {
  readonly path: string;
  readonly text: string;
}

/** A value as one line of text: scalars bare (strings quoted when they would read as another type), the rest as JSON. */
export function formatValue(value: unknown): string {
  if (value === undefined) return ABSENT;
  if (typeof value === 'string') {
    if (value === '' || /^(true|false|null|~|-?\d+(\.\d+)?([eE][+-]?\d+)?)$/.test(value) || value.includes('\n') || value === ABSENT) return JSON.stringify(value);
    return value;
  }
  return JSON.stringify(value);
}

function keyPath(prefix: string, key: string): string {
  const seg = formatPath([{ type: 'key', key } as PathSegment]);
  return prefix === '' ? seg : `${prefix}.${seg}`;
}

function namesOf(list: readonly unknown[]): string[] | undefined {
  const names = list.map((item) => (isMap(item) && typeof item.name === 'string' ? item.name : undefined));
  if (names.some((n) => n === undefined) || new Set(names).size !== names.length) return undefined;
  return names as string[];
}

/** Pairs of [oldIndex, newIndex]; unpaired indexes are left out. */
function pairItems(a: readonly unknown[], b: readonly unknown[]): Array<[number, number]> {
  const na = namesOf(a);
  const nb = namesOf(b);
  const pairs: Array<[number, number]> = [];
  const usedA = new Set<number>();
  const usedB = new Set<number>();
  if (na && nb && (a.length > 0 || b.length > 0)) {
    nb.forEach((name, j) => {
      const i = na.indexOf(name);
      if (i >= 0) pairs.push([i, j]);
    });
    return pairs;
  }
  b.forEach((item, j) => {
    const i = a.findIndex((x, k) => !usedA.has(k) && deepEqual(x, item));
    if (i >= 0) {
      usedA.add(i);
      usedB.add(j);
      pairs.push([i, j]);
    }
  });
  // An old and a new item left over at the same index: one item changed in place.
  for (let k = 0; k < Math.min(a.length, b.length); k++) if (!usedA.has(k) && !usedB.has(k)) pairs.push([k, k]);
  return pairs;
}

/** Indexes (into `pairs`, sorted by old index) that keep their relative order: a longest increasing run of new indexes. */
function inOrder(pairs: ReadonlyArray<[number, number]>): Set<number> {
  const n = pairs.length;
  const len = new Array<number>(n).fill(1);
  const prev = new Array<number>(n).fill(-1);
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < i; j++) {
      if (pairs[j][1] < pairs[i][1] && len[j] + 1 > len[i]) {
        len[i] = len[j] + 1;
        prev[i] = j;
      }
    }
  }
  let best = -1;
  for (let i = 0; i < n; i++) if (best < 0 || len[i] > len[best]) best = i;
  const keep = new Set<number>();
  for (let i = best; i >= 0; i = prev[i]) keep.add(i);
  return keep;
}

function diffLists(a: readonly unknown[], b: readonly unknown[], path: string, out: DiffLine[]): void {
  const pairs = pairItems(a, b).sort((x, y) => x[0] - y[0]);
  const keep = inOrder(pairs);
  const pairedA = new Set(pairs.map((p) => p[0]));
  const pairedB = new Set(pairs.map((p) => p[1]));
  const entries: Array<{ order: number; lines: DiffLine[] }> = [];
  a.forEach((item, i) => {
    if (pairedA.has(i)) return;
    const p = `${path}[${i}->?]`;
    entries.push({ order: i, lines: [{ path: p, text: `${p}: ${formatValue(item)} -> ${ABSENT}` }] });
  });
  pairs.forEach(([i, j], k) => {
    const seg = i === j ? `[${i}]` : `[${i}->${j}]`;
    const lines: DiffLine[] = [];
    diffInto(a[i], b[j], `${path}${seg}`, lines);
    if (!keep.has(k)) lines.unshift({ path: `${path}${seg}`, text: `${path}${seg}: moved` });
    if (lines.length > 0) entries.push({ order: i, lines });
  });
  b.forEach((item, j) => {
    if (pairedB.has(j)) return;
    const p = `${path}[?->${j}]`;
    entries.push({ order: a.length + j, lines: [{ path: p, text: `${p}: ${ABSENT} -> ${formatValue(item)}` }] });
  });
  entries.sort((x, y) => x.order - y.order);
  for (const e of entries) out.push(...e.lines);
}

function diffInto(a: unknown, b: unknown, path: string, out: DiffLine[]): void {
  if (deepEqual(a, b)) return;
  if (isMap(a) && isMap(b)) {
    const keys = [...Object.keys(a), ...Object.keys(b).filter((k) => !(k in a))];
    for (const k of keys) diffInto(a[k], b[k], keyPath(path, k), out);
    return;
  }
  if (Array.isArray(a) && Array.isArray(b)) {
    diffLists(a, b, path, out);
    return;
  }
  const shown = path || '(root)';
  if (typeof a === 'string' && typeof b === 'string' && (a.includes('\n') || b.includes('\n'))) {
    out.push({ path: shown, text: `${shown}: text changed:\n${lineDiff(a, b).map((l) => `${TEXT_INDENT}${l}`).join('\n')}` });
    return;
  }
  out.push({ path: shown, text: `${shown}: ${formatValue(a)} -> ${formatValue(b)}` });
}

/** Continuation lines of a text change, under the path line. */
const TEXT_INDENT = '      ';

/** The lines removed (`- `) and added (`+ `) from `a` to `b`, in order (no context lines). */
export function lineDiff(a: string, b: string): string[] {
  const x = a.split('\n');
  const y = b.split('\n');
  if (x.length * y.length > 250_000) return [...x.map((l) => `- ${l}`), ...y.map((l) => `+ ${l}`)];
  // lcs[i][j]: length of the longest common subsequence of x[i..] and y[j..].
  const lcs = Array.from({ length: x.length + 1 }, () => new Array<number>(y.length + 1).fill(0));
  for (let i = x.length - 1; i >= 0; i--) {
    for (let j = y.length - 1; j >= 0; j--) lcs[i][j] = x[i] === y[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
  }
  const out: string[] = [];
  let i = 0;
  let j = 0;
  while (i < x.length || j < y.length) {
    if (i < x.length && j < y.length && x[i] === y[j]) {
      i++;
      j++;
    } else if (i < x.length && (j === y.length || lcs[i + 1][j] >= lcs[i][j + 1])) {
      out.push(`- ${x[i++]}`);
    } else {
      out.push(`+ ${y[j++]}`);
    }
  }
  return out;
}

/** The differences from `a` to `b`, in the order of `a`'s keys then `b`'s new ones. */
export function diffTrees(a: unknown, b: unknown, prefix = ''): DiffLine[] {
  const out: DiffLine[] = [];
  diffInto(a, b, prefix, out);
  return out;
}
