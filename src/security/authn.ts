/**
 * Who is calling: the seam between the daemon's gRPC services (the certificate service, the secured
 * and plaintext xDS ports) and the ways a caller proves its identity (docs/adr/0042). Transports
 * hand over what the call carried (`CallCredentials`); authenticators turn it into a `Caller` or
 * an `AuthError` whose `reason` is a short fixed word for metrics and whose message says what to
 * fix. Secret material (tokens, keys) never appears in an error or a log line.
 */
import type * as grpc from '@grpc/grpc-js';
import { isRecord } from '../util/record.js';
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

/**
 * The verified client certificate of each HTTP/2 connection, read once (docs/adr/0180). grpc-js's
 * auth context turns the peer certificate into a JavaScript object (names, fingerprints, raw bytes)
 * on every call, which was the largest single cost of a certificate request on the event loop
 * (≈ 85 µs of ≈ 0.5 ms). Within one connection the certificate cannot change: it is fixed by the
 * handshake and Node disables TLS renegotiation on HTTP/2 sockets. Kept weakly: it goes with the
 * connection. `null`: the connection has no verified client certificate.
 */
const connectionCertificates = new WeakMap<object, Buffer | null>();

/**
 * The HTTP/2 session a grpc-js server call runs on. grpc-js does not expose it, so it is found by the
 * shape of its call objects (the surface call's `call`, down its `nextCall`s to the one holding the
 * `stream`); undefined when the shape differs, and then the auth context is read on every call.
 */
function http2SessionOf(call: unknown): object | undefined {
  let c = isRecord(call) ? call.call : undefined;
  for (let depth = 0; depth < 4 && isRecord(c); depth++) {
    const stream = c.stream;
    if (isRecord(stream)) return isRecord(stream.session) ? stream.session : undefined;
    c = c.nextCall;
  }
  return undefined;
}

type AuthContextCall = { metadata: grpc.Metadata; getAuthContext?: () => { sslPeerCertificate?: { raw?: Buffer } } | null };

/** The verified client certificate of the call's connection; `null`: none; undefined: it could not be read. */
function peerCertificateOf(call: AuthContextCall): Buffer | null | undefined {
  try {
    return call.getAuthContext?.()?.sslPeerCertificate?.raw ?? null;
  } catch {
    return undefined;
  }
}

/** What a gRPC server call carried: `authorization` metadata and the verified client certificate. */
export function callCredentials(call: AuthContextCall): CallCredentials {
  const authorization = call.metadata.get('authorization').map((v) => (typeof v === 'string' ? v : v.toString('utf8')));
  const session = http2SessionOf(call);
  let peerCertificate = session ? connectionCertificates.get(session) : undefined;
  if (peerCertificate === undefined) {
    peerCertificate = peerCertificateOf(call);
    if (session && peerCertificate !== undefined) connectionCertificates.set(session, peerCertificate);
  }
  return { authorization, peerCertificate: peerCertificate ?? undefined };
}
