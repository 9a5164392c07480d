/**
 * Public key sets of RequestAuthentication `jwksUri`s as the model sees them (docs/adr/0100): an
 * immutable view per snapshot, filled by a resolver outside the model (src/security/jwks-resolver.ts)
 * that fetches them. A snapshot reads a key set through `PushContext.jwks(uri)`, which records the
 * dependency key `jwks:<uri>`; when the resolver's view changes, the next snapshot's change set
 * names exactly the URIs whose entry changed, so only the listeners that inlined them are rebuilt.
 */

/** What the resolver knows about one URI. */
export type JwksEntry =
  /** The key set last fetched (JSON text with a non-empty `keys` array). */
  | { readonly state: 'keys'; readonly jwks: string; readonly version: number }
  /** No key set was ever fetched: the reason of the last failure. */
  | { readonly state: 'failed'; readonly reason: string; readonly version: number };

/** URI → entry; URIs absent are not fetched yet (the first fetch is running). */
export type JwksView = ReadonlyMap<string, JwksEntry>;

export const EMPTY_JWKS_VIEW: JwksView = new Map();

/** Where the model gets key sets from and tells which ones it needs. */
export interface JwksSource {
  /** The current view (a new map object after every change). */
  view(): JwksView;
  /** The URIs the current snapshot needs; others are forgotten, new ones fetched. */
  want(uris: ReadonlySet<string>): void;
  /** Called after the view changed. */
  onChange(listener: () => void): () => void;
}

/**
 * A key set no token verifies against: one EC P-256 public key whose private key was discarded when
 * it was made. Envoy accepts it like any key set; a provider holding it rejects every token of its
 * issuer (fail closed) while requests without a token still reach authorization.
 */
export const UNVERIFIABLE_JWKS = JSON.stringify({
  keys: [{ kty: 'EC', crv: 'P-256', kid: 'mesh-unverifiable', alg: 'ES256', use: 'sig', x: 'MezAum_tZTI8TbpDWrbopviqRjwWJ3uGM0Wlvbm68RQ', y: 'RZJCdANcuGi24hg9HJeFjQ7iJQ0eJFYFHhlrKVQiBy8' }],
});

/** Reasons a key set fetched or given inline is not usable; undefined when it is. */
export function jwksProblem(text: string): string | undefined {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    return 'not JSON';
  }
  if (typeof doc !== 'object' || doc === null || !Array.isArray((doc as { keys?: unknown }).keys)) return 'no "keys" array';
  const keys = (doc as { keys: unknown[] }).keys;
  if (keys.length === 0) return 'the "keys" array is empty';
  const bad = keys.findIndex((k) => typeof k !== 'object' || k === null || typeof (k as { kty?: unknown }).kty !== 'string');
  if (bad >= 0) return `keys[${bad}] has no "kty"`;
  return undefined;
}
