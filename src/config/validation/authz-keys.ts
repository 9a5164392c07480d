/**
 * AuthorizationPolicy `when` keys (the public API's condition attributes), parsed once for the
 * validator here and for the translation (src/model/policy/attributes.ts), so both agree on which
 * keys exist.
 */

/** The attributes a condition may name. */
export const CONDITION_ATTRIBUTES = [
  'request.headers',
  'source.ip',
  'remote.ip',
  'source.namespace',
  'source.principal',
  'request.auth.principal',
  'request.auth.audiences',
  'request.auth.presenter',
  'request.auth.claims',
  'destination.ip',
  'destination.port',
  'connection.sni',
] as const;

/** A condition key, parsed: its attribute and, for `[...]` keys, the bracketed parts. */
export interface ConditionKey {
  readonly attribute: (typeof CONDITION_ATTRIBUTES)[number];
  /** `request.headers[name]` → [name]; `request.auth.claims[a][b]` → [a, b]. */
  readonly path: ReadonlyArray<string>;
}

const KNOWN: ReadonlySet<string> = new Set(CONDITION_ATTRIBUTES);

/** Parses a condition key; undefined when the key names no attribute. */
export function parseConditionKey(key: string): ConditionKey | undefined {
  const bracket = key.indexOf('[');
  const base = bracket < 0 ? key : key.slice(0, bracket);
  if (!KNOWN.has(base)) return undefined;
  const attribute = base as ConditionKey['attribute'];
  const wantsPath = attribute === 'request.headers' || attribute === 'request.auth.claims';
  if (bracket < 0) return wantsPath ? undefined : { attribute, path: [] };
  if (!wantsPath) return undefined;
  const rest = key.slice(bracket);
  const parts = [...rest.matchAll(/\[([^[\]]+)\]/g)].map((m) => m[1]);
  if (parts.length === 0 || parts.map((p) => `[${p}]`).join('') !== rest) return undefined;
  if (attribute === 'request.headers' && parts.length !== 1) return undefined;
  return { attribute, path: parts };
}

/**
 * What is wrong with a peer principal (`<trust domain>/ns/<namespace>/sa/<service account>`, `*`
 * only at either end), or undefined. Such a value is accepted (the public API does not refuse it)
 * but matches no peer where the problem says so.
 */
export function peerPrincipalProblem(v: string): string | undefined {
  if (v === '' || v === '*') return undefined;
  if (v.startsWith('spiffe://')) return `"${v}" starts with spiffe://, which principals are written without (the proxy adds it): it matches no peer`;
  const inner = v.replace(/^\*/, '').replace(/\*$/, '');
  if (inner.includes('*')) return `"${v}" has "*" inside it; only a leading or trailing "*" is a wildcard: it matches only that literal text, so no peer`;
  if (v.startsWith('*') || v.endsWith('*')) return undefined;
  if (!/^[^/]+\/ns\/[^/]+\/sa\/[^/]+$/.test(v)) return `"${v}" is not <trust domain>/ns/<namespace>/sa/<service account>: it matches no peer`;
  return undefined;
}
