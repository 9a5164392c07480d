/**
 * Paths into data trees, shared by `--set` (src/install/set-values.ts) and the overlays that patch
 * rendered objects (src/install/render/overlay.ts).
 *
 * Syntax: segments separated by `.`.
 *  - `name`          a map key. A backslash makes the next character literal, so `foo\.bar` is the
 *                    one key `foo.bar`; `\[`, `\]`, `\=`, `\:` and `\\` work the same way.
 *  - `[N]`           the list item at 0-based index N. It may follow a key directly: `args[0]` is
 *                    the same as `args.[0]`.
 *  - `[key:value]`   the list item (a map) whose field `key` equals `value` (compared as text),
 *                    e.g. `containers.[name:discovery]`.
 * Examples: `spec.template.spec.containers.[name:discovery].args.[0]`,
 * `components.ingressGateways[0].k8s.service.ports[1].port`,
 * `meshConfig.defaultConfig.proxyMetadata.foo\.bar`.
 */
import { isMap, type Tree } from './tree.js';

export type PathSegment =
  | { readonly type: 'key'; readonly key: string }
  | { readonly type: 'index'; readonly index: number }
  | { readonly type: 'match'; readonly key: string; readonly value: string };

export class PathError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PathError';
  }
}

const KEY_SPECIALS = /[.[\]\\=:]/g;

/** Parses `text` by the syntax above; throws `PathError` naming the position of a problem. */
export function parsePath(text: string): PathSegment[] {
  if (text === '') throw new PathError('empty path');
  const segments: PathSegment[] = [];
  let key = '';
  let inKey = false; // characters of a key segment have been read
  let closed = false; // the previous segment was a [..] selector
  let i = 0;
  const pushKey = () => {
    segments.push({ type: 'key', key });
    key = '';
    inKey = false;
  };
  while (i < text.length) {
    const c = text[i];
    if (c === '\\') {
      if (i + 1 >= text.length) throw new PathError(`path ends with a lone backslash`);
      key += text[i + 1];
      inKey = true;
      closed = false;
      i += 2;
    } else if (c === '.') {
      if (inKey) pushKey();
      else if (!closed) throw new PathError(`empty segment at position ${i + 1}`);
      closed = false;
      i += 1;
      if (i === text.length) throw new PathError('path ends with "."');
    } else if (c === '[') {
      if (inKey) pushKey();
      const end = findClose(text, i);
      segments.push(parseSelector(text.slice(i + 1, end), i));
      closed = true;
      i = end + 1;
      if (i < text.length && text[i] !== '.' && text[i] !== '[') {
        throw new PathError(`expected "." or "[" after "]" at position ${i + 1}`);
      }
    } else if (c === ']') {
      throw new PathError(`unexpected "]" at position ${i + 1}`);
    } else {
      if (closed) throw new PathError(`expected "." after "]" at position ${i + 1}`);
      key += c;
      inKey = true;
      i += 1;
    }
  }
  if (inKey) pushKey();
  return segments;
}

function findClose(text: string, open: number): number {
  for (let j = open + 1; j < text.length; j++) {
    if (text[j] === '\\') j++;
    else if (text[j] === ']') return j;
  }
  throw new PathError(`"[" at position ${open + 1} is not closed`);
}

function unescape(text: string): string {
  return text.replace(/\\(.)/g, '$1');
}

function parseSelector(body: string, open: number): PathSegment {
  if (/^\d+$/.test(body)) {
    const index = Number(body);
    if (!Number.isSafeInteger(index)) throw new PathError(`index [${body}] at position ${open + 1} is too large`);
    return { type: 'index', index };
  }
  let colon = -1;
  for (let j = 0; j < body.length; j++) {
    if (body[j] === '\\') j++;
    else if (body[j] === ':') {
      colon = j;
      break;
    }
  }
  if (colon > 0) return { type: 'match', key: unescape(body.slice(0, colon)), value: unescape(body.slice(colon + 1)) };
  throw new PathError(`bad list selector "[${body}]" at position ${open + 1} (use [N] or [key:value])`);
}

function escapeKey(key: string): string {
  return key.replace(KEY_SPECIALS, (c) => `\\${c}`);
}

/** The text form of a path, readable back by `parsePath` (indexes written as `name[0]`). */
export function formatPath(segments: readonly PathSegment[]): string {
  let out = '';
  for (const s of segments) {
    if (s.type === 'key') out += out === '' ? escapeKey(s.key) : `.${escapeKey(s.key)}`;
    else if (s.type === 'index') out += `[${s.index}]`;
    else out += `[${escapeKey(s.key)}:${s.value.replace(/[\]\\]/g, (c) => `\\${c}`)}]`;
  }
  return out;
}

/** Concrete steps into a tree: keys and indexes, as a zod issue path has them. */
export type ConcretePath = Array<string | number>;

function describeValue(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (isMap(value)) return 'a map';
  return `a ${typeof value} (${JSON.stringify(value)})`;
}

function selectorText(seg: PathSegment): string {
  return formatPath([seg]).replace(/^\./, '');
}

function findMatch(list: readonly unknown[], seg: { key: string; value: string }): number {
  return list.findIndex((item) => isMap(item) && item[seg.key] !== undefined && item[seg.key] !== null && String(item[seg.key]) === seg.value);
}

function matchFailure(list: readonly unknown[], seg: { key: string; value: string }, where: string): PathError {
  const present = list.filter(isMap).map((item) => item[seg.key]).filter((v) => v !== undefined);
  const known = present.length > 0 ? ` (${seg.key} values: ${present.map((v) => String(v)).join(', ')})` : '';
  return new PathError(`${where}: no list item with ${seg.key}=${seg.value}${known}`);
}

export interface SetOptions {
  /** Create missing maps and lists on the way (`--set`); when false only maps are created (overlays). */
  readonly createLists?: boolean;
}

/**
 * Sets the value at `path` inside `root` (changed in place). Missing maps are created; `[N]` may
 * name an existing item or `N` = length to append. Returns the concrete path that was set.
 * Throws `PathError` with the part of the path that could not be followed.
 */
export function setAt(root: Tree, path: readonly PathSegment[], value: unknown, opts: SetOptions = {}): ConcretePath {
  if (path.length === 0) throw new PathError('empty path');
  const concrete: ConcretePath = [];
  let node: unknown = root;
  for (let i = 0; i < path.length; i++) {
    const seg = path[i];
    const last = i === path.length - 1;
    const where = formatPath(path.slice(0, i)) || '(root)';
    const nextSeg = path[i + 1];
    const fresh = (): unknown => (nextSeg && nextSeg.type !== 'key' ? [] : {});
    if (seg.type === 'key') {
      if (!isMap(node)) throw new PathError(`${where} is ${describeValue(node)}, so it has no field "${seg.key}"`);
      concrete.push(seg.key);
      if (last) {
        node[seg.key] = value;
        return concrete;
      }
      let child = node[seg.key];
      if (child === undefined || child === null) {
        if (nextSeg.type !== 'key' && !opts.createLists) throw new PathError(`${formatPath(path.slice(0, i + 1))}: no list there to select ${selectorText(nextSeg)} from`);
        child = fresh();
        node[seg.key] = child;
      }
      node = child;
      continue;
    }
    if (!Array.isArray(node)) throw new PathError(`${where} is ${describeValue(node)}, not a list, so ${selectorText(seg)} cannot select from it`);
    let index: number;
    if (seg.type === 'index') {
      index = seg.index;
      if (index > node.length) {
        throw new PathError(`${where}${selectorText(seg)}: index out of range (the list has ${node.length} item${node.length === 1 ? '' : 's'}; use [${node.length}] to append)`);
      }
    } else {
      index = findMatch(node, seg);
      if (index < 0) throw matchFailure(node, seg, where);
    }
    concrete.push(index);
    if (last) {
      node[index] = value;
      return concrete;
    }
    if (node[index] === undefined || node[index] === null) node[index] = fresh();
    node = node[index];
  }
  return concrete;
}

/** The value at `path`, or undefined when any step is missing. */
export function getAt(root: unknown, path: readonly PathSegment[]): unknown {
  let node: unknown = root;
  for (const seg of path) {
    if (seg.type === 'key') {
      if (!isMap(node)) return undefined;
      node = node[seg.key];
    } else {
      if (!Array.isArray(node)) return undefined;
      node = seg.type === 'index' ? node[seg.index] : node[findMatch(node, seg)];
    }
  }
  return node;
}

/** Deletes the map key or list item at `path`; throws `PathError` when there is nothing there. */
export function deleteAt(root: Tree, path: readonly PathSegment[]): void {
  if (path.length === 0) throw new PathError('empty path');
  const parentPath = path.slice(0, -1);
  const parent = getAt(root, parentPath);
  const seg = path[path.length - 1];
  const where = formatPath(path);
  if (seg.type === 'key') {
    if (!isMap(parent) || !(seg.key in parent)) throw new PathError(`${where}: nothing to delete there`);
    delete parent[seg.key];
    return;
  }
  if (!Array.isArray(parent)) throw new PathError(`${where}: nothing to delete there (${formatPath(parentPath) || '(root)'} is ${describeValue(parent)}, not a list)`);
  const index = seg.type === 'index' ? seg.index : findMatch(parent, seg);
  if (seg.type === 'match' && index < 0) throw matchFailure(parent, seg, formatPath(parentPath));
  if (index >= parent.length) throw new PathError(`${where}: index out of range (the list has ${parent.length} items)`);
  parent.splice(index, 1);
}
