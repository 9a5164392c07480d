/**
 * Authentication by client certificate. The TLS handshake has already checked the certificate's
 * chain against every root the secured port trusts (the CA's trust bundle and the roots of other
 * trust domains, SPIFFE_BUNDLE_ENDPOINTS); here the certificate must name one SPIFFE identity and
 * be signed by a certificate that vouches for that identity's trust domain: the mesh's own CA for
 * its own trust domain, a fetched bundle for another. Foreign trust domains are accepted only where
 * the caller allows them (xDS with DISC_SKIP_VALIDATE_TRUST_DOMAIN); the certificate service
 * renews only what this mesh's CA issued.
 */
import { createHash } from 'node:crypto';
import { DerError, issuedBy, parseCertificate, type Certificate } from '../ca/x509.js';
import { AuthError, type Authenticator, type CallCredentials, type Caller } from './authn.js';
import { parseSpiffeId } from './spiffe.js';

/** Certificates that may sign workload certificates, per trust domain. */
export interface IssuerSource {
  /** The mesh's trust domain. */
  trustDomain(): string;
  /** The mesh CA's signing certificate, intermediates and roots (old roots during a rotation). */
  ownIssuers(): ReadonlyArray<Certificate>;
  /** Roots fetched for another trust domain (empty when none). */
  foreignIssuers(trustDomain: string): ReadonlyArray<Certificate>;
}

/** Verified certificates remembered (by SHA-256 of their DER) until they expire; at most this many. */
const MAX_REMEMBERED = 4096;

/**
 * SHA-256 of a certificate, remembered per Buffer: the calls of one connection hand over the same
 * Buffer (./authn.ts keeps it per connection), so a connection's certificate is hashed once.
 */
const digests = new WeakMap<Buffer, string>();
function digestOf(der: Buffer): string {
  let d = digests.get(der);
  if (d === undefined) digests.set(der, (d = createHash('sha256').update(der).digest('base64url')));
  return d;
}

export class ClientCertificateAuthenticator implements Authenticator {
  /**
   * A workload presents the same certificate on every call of a connection: its verdict is kept,
   * keyed by digest (≈ 200 bytes an entry, so the cache stays under 1 MiB), until the certificate
   * expires or the issuers change (a rotation).
   */
  private readonly remembered = new Map<string, Caller>();
  private issuersSeen: ReadonlyArray<Certificate> | undefined;

  constructor(
    private readonly issuers: IssuerSource,
    /** Accept identities of other trust domains whose roots are known (xDS with DISC_SKIP_VALIDATE_TRUST_DOMAIN). */
    private readonly acceptForeign: boolean,
  ) {}

  async authenticate(credentials: CallCredentials): Promise<Caller | undefined> {
    if (!credentials.peerCertificate) return undefined;
    const own = this.issuers.ownIssuers();
    if (own !== this.issuersSeen) {
      this.remembered.clear();
      this.issuersSeen = own;
    }
    const key = digestOf(credentials.peerCertificate);
    const hit = this.remembered.get(key);
    if (hit && (hit.expiresAt ?? 0) > Date.now()) return hit;
    const caller = this.verify(credentials.peerCertificate);
    if (this.remembered.size >= MAX_REMEMBERED) this.remembered.delete(this.remembered.keys().next().value!);
    this.remembered.set(key, caller);
    return caller;
  }

  private verify(der: Buffer): Caller {
    let cert: Certificate;
    try {
      cert = parseCertificate(der, 'client certificate');
    } catch (err) {
      throw new AuthError('malformed', err instanceof DerError ? err.message : 'client certificate does not parse');
    }
    const ids = cert.altNames.uris.map(parseSpiffeId).filter((x) => x !== undefined);
    if (ids.length !== 1) {
      throw new AuthError('no_identity', `the client certificate names ${ids.length} SPIFFE identities of the form spiffe://<trust-domain>/ns/<ns>/sa/<sa>; want exactly one`, true);
    }
    const id = ids[0];
    const own = id.trustDomain === this.issuers.trustDomain();
    if (!own && !this.acceptForeign) {
      throw new AuthError('trust_domain', `the client certificate is for trust domain ${id.trustDomain}, not ${this.issuers.trustDomain()}`);
    }
    const candidates = own ? this.issuers.ownIssuers() : this.issuers.foreignIssuers(id.trustDomain);
    if (!candidates.some((c) => issuedBy(cert, c))) {
      throw new AuthError('untrusted_certificate', own ? 'the client certificate was not issued by this mesh\'s CA' : `the client certificate is not signed by a root of trust domain ${id.trustDomain}`);
    }
    const now = Date.now();
    if (cert.notAfter.getTime() <= now || cert.notBefore.getTime() > now + 60_000) {
      throw new AuthError('expired', 'the client certificate is not valid now');
    }
    return { identity: id, method: 'certificate', expiresAt: cert.notAfter.getTime() };
  }
}
