/**
 * JSON patches (RFC 6902) between two JSON values: `jsonPatch(from, to)` gives the operations the
 * webhook returns, `applyJsonPatch(value, ops)` applies them (as the API server does; the tests
 * and `meshctl cluster-inject`'s equality with the webhook rely on it). Objects are compared key by
 * key; an array that only grew at its end gets `add …/-` operations, an array of the same length
 * is compared item by item, any other changed array is replaced whole.
 */
export type JsonPatchOp =
  | { readonly op: 'add'; readonly path: string; readonly value: unknown }
  | { readonly op: 'remove'; readonly path: string }
  | { readonly op: 'replace'; readonly path: string; readonly value: unknown };

/** A JSON pointer token: `~` as `~0`, `/` as `~1`. */
export function escapePointer(token: string): string {
  return token.replace(/~/g, '~0').replace(/\//g, '~1');
}

function unescapePointer(token: string): string {
  return token.replace(/~1/g, '/').replace(/~0/g, '~');
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** Deep equality of JSON values (key order does not matter). */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((x, i) => jsonEqual(x, b[i]));
  if (isObject(a)) {
    if (!isObject(b)) return false;
    const ka = Object.keys(a).filter((k) => a[k] !== undefined);
    const kb = Object.keys(b).filter((k) => b[k] !== undefined);
    return ka.length === kb.length && ka.every((k) => Object.hasOwn(b, k) && jsonEqual(a[k], b[k]));
  }
  return false;
}

function diff(from: unknown, to: unknown, path: string, ops: JsonPatchOp[]): void {
  if (jsonEqual(from, to)) return;
  if (isObject(from) && isObject(to)) {
    for (const k of Object.keys(from)) {
      if (from[k] === undefined) continue;
      if (to[k] === undefined) ops.push({ op: 'remove', path: `${path}/${escapePointer(k)}` });
    }
    for (const k of Object.keys(to)) {
      if (to[k] === undefined) continue;
      const p = `${path}/${escapePointer(k)}`;
      if (from[k] === undefined) ops.push({ op: 'add', path: p, value: to[k] });
      else diff(from[k], to[k], p, ops);
    }
    return;
  }
  if (Array.isArray(from) && Array.isArray(to)) {
    if (to.length > from.length && from.every((x, i) => jsonEqual(x, to[i]))) {
      for (const x of to.slice(from.length)) ops.push({ op: 'add', path: `${path}/-`, value: x });
      return;
    }
    if (to.length === from.length) {
      from.forEach((x, i) => diff(x, to[i], `${path}/${i}`, ops));
      return;
    }
  }
  ops.push({ op: 'replace', path, value: to });
}

/** The operations that turn `from` into `to`. */
export function jsonPatch(from: unknown, to: unknown): JsonPatchOp[] {
  const ops: JsonPatchOp[] = [];
  diff(JSON.parse(JSON.stringify(from ?? null)), JSON.parse(JSON.stringify(to ?? null)), '', ops);
  return ops;
}

export class JsonPatchError extends Error {
  override readonly name = 'JsonPatchError';
}

/** Applies `ops` to a copy of `value` and returns it. */
export function applyJsonPatch<T>(value: T, ops: ReadonlyArray<JsonPatchOp>): T {
  let root: unknown = JSON.parse(JSON.stringify(value ?? null));
  for (const op of ops) {
    if (op.path === '') {
      if (op.op === 'remove') throw new JsonPatchError('cannot remove the document');
      root = structuredClone(op.value);
      continue;
    }
    const tokens = op.path.split('/').slice(1).map(unescapePointer);
    const last = tokens.pop() as string;
    let parent: unknown = root;
    for (const t of tokens) {
      if (Array.isArray(parent)) parent = parent[Number(t)];
      else if (isObject(parent)) parent = parent[t];
      else parent = undefined;
      if (parent === undefined) throw new JsonPatchError(`${op.op} ${op.path}: ${t} does not exist`);
    }
    if (Array.isArray(parent)) {
      const i = last === '-' ? parent.length : Number(last);
      if (!Number.isInteger(i) || i < 0 || i > parent.length) throw new JsonPatchError(`${op.op} ${op.path}: index out of range`);
      if (op.op === 'add') parent.splice(i, 0, structuredClone(op.value));
      else if (op.op === 'remove') parent.splice(i, 1);
      else parent[i] = structuredClone(op.value);
    } else if (isObject(parent)) {
      if (op.op !== 'add' && !Object.hasOwn(parent, last)) throw new JsonPatchError(`${op.op} ${op.path}: no such member`);
      if (op.op === 'remove') delete parent[last];
      else parent[last] = structuredClone(op.value);
    } else {
      throw new JsonPatchError(`${op.op} ${op.path}: the parent is not a container`);
    }
  }
  return root as T;
}
