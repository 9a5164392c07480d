/**
 * Authentication by Kubernetes service-account token: the API server's TokenReview says whether the
 * token is valid for one of TOKEN_AUDIENCES (JWT_POLICY third-party-jwt) and whose it is. A token
 * without an audience claim (a legacy first-party token) is reviewed without audiences, unless
 * REQUIRE_3P_TOKEN refuses it; with JWT_POLICY first-party-jwt every token is reviewed that way.
 * TOKEN_ISSUER and AUDIENCE, when set, are then required of the reviewed token's `iss` and `aud`.
 *
 * Results are cached by the token's SHA-256 (the token itself is not kept) until the token expires,
 * at most `maxCacheMs`, so that a deleted service account is refused within that time; failures
 * are cached for `negativeCacheMs`. Identical reviews in flight are shared. The cache is bounded in
 * bytes and drops its oldest entries first.
 */
import { createHash } from 'node:crypto';
import type { KubeClient } from '../kube/client.js';
import { AuthError, bearerToken, type Authenticator, type CallCredentials, type Caller } from './authn.js';
import { parseServiceAccountUser } from './spiffe.js';

export interface TokenReviewOptions {
  readonly audiences: ReadonlyArray<string>;
  /** JWT_POLICY: `third-party-jwt` or `first-party-jwt`. */
  readonly jwtPolicy: 'third-party-jwt' | 'first-party-jwt';
  /** REQUIRE_3P_TOKEN. */
  readonly requireThirdParty: boolean;
  /** TOKEN_ISSUER: the `iss` a token must carry. */
  readonly issuer?: string;
  /** AUDIENCE: an audience the token must carry. */
  readonly audience?: string;
  readonly trustDomain: () => string;
  /** Longest a positive result is reused (default 5 min). */
  readonly maxCacheMs?: number;
  /** How long a refusal is reused (default 5 s). */
  readonly negativeCacheMs?: number;
  /** Bytes the cache may hold (default 4 MiB). */
  readonly maxCacheBytes?: number;
  readonly now?: () => number;
}

/** The API server's answer, as far as it is read here. */
interface TokenReviewStatus {
  readonly authenticated?: boolean;
  readonly user?: { readonly username?: string; readonly uid?: string };
  readonly audiences?: ReadonlyArray<string>;
  readonly error?: string;
}

interface Claims {
  readonly aud?: string | ReadonlyArray<string>;
  readonly iss?: string;
  readonly exp?: number;
}

type Outcome = { readonly caller: Caller } | { readonly error: AuthError };

interface Entry {
  readonly outcome: Outcome;
  readonly until: number;
  readonly bytes: number;
}

/** Claims of a JWT, read without checking the signature (the API server checks it). */
function unverifiedClaims(token: string): Claims {
  const parts = token.split('.');
  if (parts.length !== 3) throw new AuthError('invalid_token', 'the bearer token is not a JWT');
  try {
    const claims = JSON.parse(Buffer.from(parts[1], 'base64url').toString('utf8')) as unknown;
    if (typeof claims !== 'object' || claims === null) throw new Error('not an object');
    return claims as Claims;
  } catch {
    throw new AuthError('invalid_token', 'the bearer token is not a JWT (its claims do not decode)');
  }
}

function audiencesOf(claims: Claims): string[] {
  if (claims.aud === undefined) return [];
  return typeof claims.aud === 'string' ? [claims.aud] : [...claims.aud].filter((a): a is string => typeof a === 'string');
}

/** The reason for a refusal the API server explained in `status.error`. */
function reasonOf(message: string): AuthError['reason'] {
  if (/expired/i.test(message)) return 'expired';
  if (/audience/i.test(message)) return 'audience';
  if (/not found|has been deleted|does not exist|invalid.*uid|uid.*(mismatch|invalid)/i.test(message)) return 'not_found';
  return 'invalid_token';
}

export class TokenReviewAuthenticator implements Authenticator {
  private readonly cache = new Map<string, Entry>();
  private cacheBytes = 0;
  private readonly inflight = new Map<string, Promise<Outcome>>();
  private readonly now: () => number;

  constructor(
    private readonly client: KubeClient,
    private readonly opts: TokenReviewOptions,
  ) {
    this.now = opts.now ?? Date.now;
  }

  /** Cached results and their approximate bytes (debug, tests). */
  get cacheStats(): { entries: number; bytes: number } {
    return { entries: this.cache.size, bytes: this.cacheBytes };
  }

  async authenticate(credentials: CallCredentials): Promise<Caller | undefined> {
    const token = bearerToken(credentials);
    if (token === undefined) return undefined;
    const key = createHash('sha256').update(token).digest('base64url');
    const now = this.now();
    const hit = this.cache.get(key);
    let outcome: Outcome;
    if (hit && hit.until > now) {
      outcome = hit.outcome;
    } else {
      if (hit) this.drop(key);
      let pending = this.inflight.get(key);
      if (!pending) {
        pending = this.review(token).finally(() => this.inflight.delete(key));
        this.inflight.set(key, pending);
      }
      outcome = await pending;
      this.remember(key, outcome);
    }
    if ('error' in outcome) throw outcome.error;
    if (outcome.caller.expiresAt !== undefined && outcome.caller.expiresAt <= now) {
      throw new AuthError('expired', 'the service-account token has expired');
    }
    return outcome.caller;
  }

  private async review(token: string): Promise<Outcome> {
    try {
      return { caller: await this.reviewOrThrow(token) };
    } catch (err) {
      if (err instanceof AuthError) return { error: err };
      throw err;
    }
  }

  private async reviewOrThrow(token: string): Promise<Caller> {
    const claims = unverifiedClaims(token);
    const tokenAudiences = audiencesOf(claims);
    const firstParty = this.opts.jwtPolicy === 'first-party-jwt' || tokenAudiences.length === 0;
    if (tokenAudiences.length === 0 && this.opts.requireThirdParty) {
      throw new AuthError('legacy_token', 'the token has no audience (a legacy service-account token) and REQUIRE_3P_TOKEN=true refuses such tokens; use a projected token for audience mesh-ca');
    }
    let status: TokenReviewStatus;
    try {
      const res = await this.client.request<{ status?: TokenReviewStatus }>({
        method: 'POST',
        path: '/apis/authentication.k8s.io/v1/tokenreviews',
        body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token, ...(firstParty ? {} : { audiences: this.opts.audiences }) } },
      });
      status = res.status ?? {};
    } catch (err) {
      throw new AuthError('review_failed', `the token could not be reviewed: ${(err as Error).message}`, false, true);
    }
    if (!status.authenticated) {
      const message = status.error || 'the API server did not authenticate the token';
      throw new AuthError(reasonOf(message), `token refused by the API server: ${message}`);
    }
    if (!firstParty && !(status.audiences ?? []).some((a) => this.opts.audiences.includes(a))) {
      throw new AuthError('audience', `the token is not for any of the audiences ${this.opts.audiences.join(', ')}`);
    }
    if (this.opts.issuer !== undefined && claims.iss !== this.opts.issuer) {
      throw new AuthError('issuer', `the token's issuer ${JSON.stringify(claims.iss ?? '')} is not TOKEN_ISSUER ${JSON.stringify(this.opts.issuer)}`);
    }
    if (this.opts.audience !== undefined && !tokenAudiences.includes(this.opts.audience)) {
      throw new AuthError('audience', `the token does not carry the audience ${JSON.stringify(this.opts.audience)} (AUDIENCE)`);
    }
    const sa = parseServiceAccountUser(status.user?.username ?? '');
    if (!sa) throw new AuthError('no_identity', `the token belongs to ${JSON.stringify(status.user?.username ?? '')}, not to a service account`, true);
    return {
      identity: { trustDomain: this.opts.trustDomain(), namespace: sa.namespace, serviceAccount: sa.serviceAccount },
      method: 'token',
      expiresAt: typeof claims.exp === 'number' ? claims.exp * 1000 : undefined,
    };
  }

  private remember(key: string, outcome: Outcome): void {
    const now = this.now();
    const maxMs = 'caller' in outcome ? (this.opts.maxCacheMs ?? 300_000) : (this.opts.negativeCacheMs ?? 5_000);
    const until = Math.min(now + maxMs, 'caller' in outcome && outcome.caller.expiresAt !== undefined ? outcome.caller.expiresAt : Infinity);
    if (until <= now) return;
    this.drop(key);
    // key, identity strings and bookkeeping; errors carry their message
    const bytes = 200 + key.length * 2 + ('error' in outcome ? outcome.error.message.length * 2 : 0);
    const max = this.opts.maxCacheBytes ?? 4 << 20;
    while (this.cacheBytes + bytes > max && this.cache.size > 0) this.drop(this.cache.keys().next().value!);
    this.cache.set(key, { outcome, until, bytes });
    this.cacheBytes += bytes;
  }

  private drop(key: string): void {
    const e = this.cache.get(key);
    if (!e) return;
    this.cache.delete(key);
    this.cacheBytes -= e.bytes;
  }
}
