/**
 * RequestAuthentication JWT rules → the Envoy jwt_authn HTTP filter (docs/adr/0100).
 *
 * One rule is one provider. The filter's single requirement is "any provider, or no token at all"
 * (`requires_any` of every provider plus `allow_missing`): a request with a token that no provider
 * verifies (bad signature, expired, wrong issuer, wrong audience) is rejected with 401, and a request
 * without a token passes to authorization, which decides with `requestPrincipals` and
 * `request.auth.*` (those read the verified payload the providers write to dynamic metadata under
 * `envoy.filters.http.jwt_authn` / `payload`). CORS preflights pass without a token check.
 */
import {
  JwtAuthentication,
  type JwtProvider,
  type JwtRequirement,
} from '../../../gen/envoy/extensions/filters/http/jwt_authn/v3/config.js';
import type { JWTRule } from '../../../gen/config/schemas.js';
import { durationMs } from '../../../util/config-duration.js';
import { duration, pack, type Shape } from '../pack.js';
import { JWT_PAYLOAD_KEY } from './names.js';
import type { FilterShape } from './authz.js';

export const JWT_AUTHN_FILTER = 'envoy.filters.http.jwt_authn';

/** Where a provider's keys come from. */
export type ProviderKeys =
  /** A key set written into the configuration (fetched by meshd, inline in the rule, or the unverifiable one). */
  | { readonly kind: 'inline'; readonly jwks: string }
  /** The proxy fetches the key set itself through an outbound cluster it has (DISC_JWT_ENABLE_REMOTE_JWKS). */
  | { readonly kind: 'remote'; readonly uri: string; readonly cluster: string };

export interface JwtProviderInput {
  /** Unique within the filter. */
  readonly name: string;
  readonly rule: JWTRule;
  readonly keys: ProviderKeys;
}

/** Claims whose space-separated string values are matched per value, besides the rule's own. */
const DEFAULT_SPACE_DELIMITED = ['scope', 'permission'];
/** Fetch time-out of remote key sets when the rule sets none. */
const DEFAULT_REMOTE_TIMEOUT_MS = 5_000;

function provider(p: JwtProviderInput): Shape<JwtProvider> {
  const r = p.rule;
  const keys: Shape<JwtProvider> =
    p.keys.kind === 'inline'
      ? { localJwks: { inlineString: p.keys.jwks } }
      : {
          remoteJwks: {
            httpUri: { uri: p.keys.uri, cluster: p.keys.cluster, timeout: duration(r.timeout ? durationMs(r.timeout) : DEFAULT_REMOTE_TIMEOUT_MS) },
            asyncFetch: {},
          },
        };
  return {
    issuer: r.issuer,
    audiences: r.audiences ?? [],
    ...keys,
    forward: r.forwardOriginalToken ?? false,
    fromHeaders: (r.fromHeaders ?? []).map((h) => ({ name: h.name, valuePrefix: h.prefix ?? '' })),
    fromParams: r.fromParams ?? [],
    fromCookies: r.fromCookies ?? [],
    forwardPayloadHeader: r.outputPayloadToHeader ?? '',
    payloadInMetadata: JWT_PAYLOAD_KEY,
    normalizePayloadInMetadata: { spaceDelimitedClaims: [...new Set([...DEFAULT_SPACE_DELIMITED, ...(r.spaceDelimitedClaims ?? [])])] },
    claimToHeaders: (r.outputClaimToHeaders ?? []).map((c) => ({ headerName: c.header ?? '', claimName: c.claim ?? '' })),
  };
}

/** The jwt_authn filter of a workload's HTTP chains; undefined when no JWT rule applies. */
export function jwtAuthnFilter(providers: ReadonlyArray<JwtProviderInput>): FilterShape | undefined {
  if (providers.length === 0) return undefined;
  const requirements: Shape<JwtRequirement>[] = [...providers.map((p) => ({ providerName: p.name })), { allowMissing: {} }];
  return {
    name: JWT_AUTHN_FILTER,
    typedConfig: pack('envoy.extensions.filters.http.jwt_authn.v3.JwtAuthentication', JwtAuthentication, {
      providers: Object.fromEntries(providers.map((p) => [p.name, provider(p)])),
      rules: [{ match: { prefix: '/' }, requires: { requiresAny: { requirements } } }],
      bypassCorsPreflight: true,
    }),
  };
}
