/**
 * The built-in certificate authority: signs workload certificates with the current signing
 * material, issues the daemon's own serving certificate, and tells listeners when the material
 * changes (a root rotation, a replaced plug-in CA). With a `pool` (the daemon's) certificates are
 * built and signed in its worker threads (./crypto-pool.ts), which bound their own queue; without
 * one, here, with the signature in libuv's thread pool, at most `signConcurrency` at a time (one by
 * default), requests beyond `maxQueued` waiting refused at once rather than held.
 */
import type { KeyObject } from 'node:crypto';
import type { Logger } from 'pino';
import type { CryptoPool } from './crypto-pool.js';
import { SignerError } from './signer-error.js';
import { chainAfterLeaf, chainExpiry, type SigningMaterial } from './material.js';
import type { CaMetrics } from './metrics.js';
import { certificatePem } from './pem.js';
import { createCertificate, generateKey, parseCertificate, privateKeyPem, spkiOf, type AltNames, type Certificate } from './x509.js';

/** Issues workload certificates: the built-in CA, or a registration authority (./cluster-signer.ts). */
export interface WorkloadSigner {
  /**
   * Signs the public key `spki` for `identity` (a SPIFFE URI) for `ttlMs`. Resolves to the PEM
   * chain, leaf first, root last. Throws `SignerError`.
   */
  sign(req: { readonly csrPem: string; readonly spki: Buffer; readonly identity: string; readonly ttlMs: number }): Promise<string[]>;
  /** The roots workloads should trust now (PEM, current first). */
  trustBundle(): ReadonlyArray<Certificate>;
  /** The CSR is passed on as it is, so it must itself name the identity (a registration authority). */
  readonly csrMustNameIdentity?: boolean;
}

export { SignerError };

/** Runs tasks at most `limit` at a time; refuses beyond `maxQueued` waiting. */
export class SignQueue {
  private running = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(
    private readonly limit: number,
    private readonly maxQueued: number,
  ) {}

  get queued(): number {
    return this.waiting.length;
  }

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.running >= this.limit) {
      if (this.waiting.length >= this.maxQueued) throw new SignerError('overloaded', `certificate authority busy: ${this.waiting.length} requests waiting; retry later`);
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    } else {
      this.running++;
    }
    try {
      return await task();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.running--;
    }
  }
}

export interface AuthorityOptions {
  readonly metrics: CaMetrics;
  readonly log: Logger;
  /** Signatures computed at once (default 1). */
  readonly signConcurrency?: number;
  /** Requests allowed to wait for a signature (default 10,000). */
  readonly maxQueued?: number;
  /** Backdating of notBefore against clock skew (default 60 s). */
  readonly backdateMs?: number;
  /** Worker threads that build and sign certificates (the daemon's); absent: this thread. */
  readonly pool?: CryptoPool;
}

export class CertificateAuthority implements WorkloadSigner {
  private material: SigningMaterial;
  private readonly listeners = new Set<(m: SigningMaterial) => void>();
  private readonly queue: SignQueue;

  constructor(
    material: SigningMaterial,
    private readonly opts: AuthorityOptions,
  ) {
    this.material = material;
    this.queue = new SignQueue(Math.max(1, opts.signConcurrency ?? 1), opts.maxQueued ?? 10_000);
    // read at each scrape: an expired root shows as such without waiting for a change
    opts.metrics.setExpirySource({ root: () => this.material.root.notAfter, chain: () => chainExpiry(this.material) });
  }

  current(): SigningMaterial {
    return this.material;
  }

  trustBundle(): ReadonlyArray<Certificate> {
    return this.material.roots;
  }

  /** Switches to new material (a rotation, or another replica's) and tells the listeners. */
  update(material: SigningMaterial): void {
    if (material === this.material) return;
    this.material = material;
    for (const l of this.listeners) {
      try {
        l(material);
      } catch (err) {
        this.opts.log.warn({ err: (err as Error).message }, 'CA: a listener of the signing material failed');
      }
    }
  }

  /** Told after every change of the signing material; returns the unsubscribe function. */
  onChange(listener: (m: SigningMaterial) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async sign(req: { readonly spki: Buffer; readonly identity: string; readonly ttlMs: number }): Promise<string[]> {
    const { der, material } = await this.issue(req.spki, { uris: [req.identity] }, req.ttlMs);
    return [certificatePem(der), ...chainAfterLeaf(material).map((c) => c.pem)];
  }

  /**
   * A serving certificate with a fresh ECDSA P-256 key (the daemon's own, for the secured port):
   * the chain PEM (leaf, intermediates, root) and the key PEM.
   */
  async issueKeyPair(altNames: Partial<AltNames>, ttlMs: number): Promise<{ certChainPem: string; keyPem: string; notAfter: Date; key: KeyObject }> {
    const key = await generateKey('ec-p256');
    // One signature now and then: on this thread, so an idle daemon starts no crypto worker for it (ADR 0194).
    const { der, material } = await this.issue(spkiOf(key), altNames, ttlMs, false);
    const leaf = parseCertificate(der);
    return { certChainPem: [leaf.pem, ...chainAfterLeaf(material).map((c) => c.pem)].join(''), keyPem: privateKeyPem(key), notAfter: leaf.notAfter, key };
  }

  private async issue(spki: Buffer, altNames: Partial<AltNames>, ttlMs: number, usePool = true): Promise<{ der: Buffer; material: SigningMaterial }> {
    const pool = usePool ? this.opts.pool : undefined;
    const build = async (): Promise<{ der: Buffer; material: SigningMaterial }> => {
      const material = this.material;
      const now = Date.now();
      // Never past the signing certificate: a leaf must not outlive what vouches for it.
      const notAfter = new Date(Math.min(now + ttlMs, chainExpiry(material).getTime()));
      const notBefore = new Date(Math.max(now - (this.opts.backdateMs ?? 60_000), material.signingCert.notBefore.getTime()));
      const template = { spki, notBefore, notAfter, isCA: false, altNames };
      const issuer = { subjectRaw: material.signingCert.subjectRaw, key: material.signingKey, keyId: material.signingCert.subjectKeyId };
      const der = pool ? await pool.createCertificate(template, issuer) : await createCertificate(template, issuer);
      return { der, material };
    };
    return pool ? build() : this.queue.run(build);
  }
}
