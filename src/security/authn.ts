/**
 * Who is calling: the seam between the daemon's gRPC services (the certificate service, the secured
 * and plaintext xDS ports) and the ways a caller proves its identity (docs/adr/0042). Transports
 * hand over what the call carried (`CallCredentials`); authenticators turn it into a `Caller` or
 * an `AuthError` whose `reason` is a short fixed word for metrics and whose message says what to
 * fix. Secret material (tokens, keys) never appears in an error or a log line.
 */
import type * as grpc from '@grpc/grpc-js';
import type { SpiffeId } from './spiffe.js';

/** What a call carried that can prove who it is. */
export interface CallCredentials {
  /** The `authorization` metadata value(s). */
  readonly authorization: ReadonlyArray<string>;
  /** The client certificate (DER) when the TLS handshake verified one against the trusted roots. */
  readonly peerCertificate?: Buffer;
}

/** An authenticated caller. */
export interface Caller {
  readonly identity: SpiffeId;
  /** How it proved it. */
  readonly method: 'token' | 'certificate';
  /** Unix ms after which the credential is no longer good (token or certificate expiry). */
  readonly expiresAt?: number;
}

export type AuthFailure =
  | 'no_credential'
  | 'malformed'
  | 'invalid_token'
  | 'expired'
  | 'audience'
  | 'issuer'
  | 'legacy_token'
  | 'not_found'
  | 'untrusted_certificate'
  | 'trust_domain'
  | 'no_identity'
  | 'review_failed';

export class AuthError extends Error {
  override readonly name = 'AuthError';
  constructor(
    readonly reason: AuthFailure,
    message: string,
    /** True when the credential was good but no workload identity could be taken from it. */
    readonly identityError = false,
    /** True when the failure is ours (the API server could not be asked), not the caller's. */
    readonly unavailable = false,
  ) {
    super(message);
  }
}

export interface Authenticator {
  /** Returns the caller, or undefined when this authenticator found no credential of its kind. Throws AuthError. */
  authenticate(credentials: CallCredentials): Promise<Caller | undefined>;
}

/** The bearer token of the call, or undefined; an error for other schemes or several tokens. */
export function bearerToken(credentials: CallCredentials, maxBytes = 16 * 1024): string | undefined {
  const values = credentials.authorization.filter((v) => v.trim() !== '');
  if (values.length === 0) return undefined;
  if (values.length > 1) throw new AuthError('malformed', 'more than one authorization header');
  const m = /^Bearer\s+(\S+)\s*$/i.exec(values[0]);
  if (!m) throw new AuthError('malformed', 'authorization must be "Bearer <token>"');
  if (m[1].length > maxBytes) throw new AuthError('malformed', `bearer token longer than ${maxBytes} bytes`);
  return m[1];
}

/**
 * Tries each authenticator in order and returns the first caller found. A credential that is
 * present but bad fails the call; no credential at all is `no_credential`.
 */
export class ChainAuthenticator {
  constructor(private readonly authenticators: ReadonlyArray<Authenticator>) {}

  async authenticate(credentials: CallCredentials): Promise<Caller> {
    for (const a of this.authenticators) {
      const caller = await a.authenticate(credentials);
      if (caller) return caller;
    }
    throw new AuthError(
      'no_credential',
      'no credential: send a service-account token as "authorization: Bearer <token>" or a client certificate issued by this mesh',
    );
  }
}

/** What a gRPC server call carried: `authorization` metadata and the verified client certificate. */
export function callCredentials(call: { metadata: grpc.Metadata; getAuthContext?: () => { sslPeerCertificate?: { raw?: Buffer } } | null }): CallCredentials {
  const authorization = call.metadata.get('authorization').map((v) => (typeof v === 'string' ? v : v.toString('utf8')));
  let peerCertificate: Buffer | undefined;
  try {
    peerCertificate = call.getAuthContext?.()?.sslPeerCertificate?.raw;
  } catch {
    peerCertificate = undefined;
  }
  return { authorization, peerCertificate };
}
