/**
 * Plain data trees (what YAML and JSON parse into) and the one merge rule of the installer:
 * maps merge key by key, lists and scalars replace, and `null` in the overlay removes the key.
 * Profiles over the default profile, `-f` files over the profile, all use `deepMerge`.
 */

export type Tree = Record<string, unknown>;

export function isMap(value: unknown): value is Tree {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A deep copy of JSON-like data. */
export function cloneTree<T>(value: T): T {
  if (Array.isArray(value)) return value.map((v) => cloneTree(v)) as T;
  if (isMap(value)) {
    const out: Tree = {};
    for (const [k, v] of Object.entries(value)) out[k] = cloneTree(v);
    return out as T;
  }
  return value;
}

/**
 * `overlay` over `base`, as a new tree: keys of `base` keep their order and new keys follow in the
 * overlay's order. Maps merge recursively; any other overlay value (list, scalar) replaces; a
 * `null` overlay value deletes the key; `undefined` is ignored. With `keepNulls`, a `null` is kept
 * as a deletion marker instead (to merge overlays with each other before they meet their base).
 */
export function deepMerge(base: unknown, overlay: unknown, keepNulls = false): unknown {
  const fresh = (v: unknown) => (keepNulls ? cloneTree(v) : dropNulls(cloneTree(v)));
  if (!isMap(base) || !isMap(overlay)) return overlay === undefined ? cloneTree(base) : fresh(overlay);
  const out: Tree = {};
  for (const [k, v] of Object.entries(base)) out[k] = cloneTree(v);
  for (const [k, v] of Object.entries(overlay)) {
    if (v === undefined) continue;
    if (v === null && !keepNulls) delete out[k];
    else out[k] = k in out ? deepMerge(out[k], v, keepNulls) : fresh(v);
  }
  return out;
}

/** Removes `null` map values at any depth (a null in a fresh subtree means "not set"). */
function dropNulls(value: unknown): unknown {
  if (Array.isArray(value)) return value.map((v) => dropNulls(v));
  if (!isMap(value)) return value;
  const out: Tree = {};
  for (const [k, v] of Object.entries(value)) if (v !== null) out[k] = dropNulls(v);
  return out;
}

/** Deep equality of JSON-like data (map key order does not matter). */
export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((v, i) => deepEqual(v, b[i]));
  if (isMap(a)) {
    if (!isMap(b)) return false;
    const ka = Object.keys(a);
    return ka.length === Object.keys(b).length && ka.every((k) => k in b && deepEqual(a[k], b[k]));
  }
  return false;
}

/**
 * A copy of `value` with every map's keys in sorted order. Text the render embeds in objects (a
 * ConfigMap's YAML or JSON) is written from key-sorted values, so that the same spec gives the same
 * text whichever way its maps were ordered (a file's order, or the API server's sorted order).
 */
export function sortKeys<T>(value: T): T {
  if (Array.isArray(value)) return value.map((v) => sortKeys(v)) as T;
  if (typeof value !== 'object' || value === null) return value;
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(value).sort()) out[k] = sortKeys((value as Record<string, unknown>)[k]);
  return out as T;
}
