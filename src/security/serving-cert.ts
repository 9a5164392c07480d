/**
 * The secured port's serving certificate and the roots it trusts for client certificates, kept
 * current behind one `ReloadableServerCredentials`:
 * - from the built-in CA: a certificate for the daemon's DNS names (meshd.<ns>.svc, its cluster-domain
 *   form, MESHD_CUSTOM_HOST), renewed when 80 % of its lifetime has passed and reissued when the CA's
 *   material changes in a way it no longer chains to a trusted root (a rotation keeps it until its
 *   renewal, docs/adr/0147);
 * - from `--tlsCertFile`/`--tlsKeyFile` (and `--caCertFile`): read at start, read again when a file
 *   changes (checked every 30 s); a broken replacement is logged and the last good one kept.
 * Client roots: the CA's trust bundle, `--caCertFile`, and the roots of other trust domains.
 */
import { createPrivateKey } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import type { Logger } from 'pino';
import type { CertificateAuthority } from '../ca/authority.js';
import { parseCertificate, type Certificate } from '../ca/x509.js';
import { decodePemAll } from '../ca/pem.js';
import { ReloadableServerCredentials, type ServingMaterial } from './tls-credentials.js';
import type { ServingCertSource } from './settings.js';

export interface ServingCertOptions {
  readonly source: Exclude<ServingCertSource, { kind: 'none' }>;
  readonly ca?: CertificateAuthority;
  readonly dnsNames: ReadonlyArray<string>;
  readonly ttlMs: number;
  readonly ciphers?: string;
  /** `--caCertFile` when the serving certificate comes from the CA. */
  readonly caCertFile?: string;
  /** The mesh's own trust bundle (the CA's roots, or the external signer's), current value. */
  readonly ownRoots: () => ReadonlyArray<Certificate>;
  /** Roots of other trust domains, current value. */
  readonly foreignRoots: () => ReadonlyArray<Certificate>;
  readonly log: Logger;
  /** File check period (default 30 s). */
  readonly filePollMs?: number;
}

export class ServingCertificateError extends Error {
  override readonly name = 'ServingCertificateError';
}

function certificatesOf(pem: string, what: string): Certificate[] {
  try {
    return decodePemAll(pem, 'CERTIFICATE', what).map((d, i) => parseCertificate(d, `${what} certificate ${i + 1}`));
  } catch (err) {
    throw new ServingCertificateError((err as Error).message);
  }
}

export class ServingCertificate {
  readonly credentials: ReloadableServerCredentials;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private fileStamp = '';
  private leafNotAfter = 0;
  /** DER of the root the CA-issued certificate in use chains to (undefined: unknown, reissue on any CA change). */
  private leafRoot: Buffer | undefined;
  private extraRootsPem = '';
  private unsubscribe: (() => void) | undefined;
  private readonly listeners = new Set<() => void>();

  private constructor(
    private readonly o: ServingCertOptions,
    material: ServingMaterial,
  ) {
    this.credentials = new ReloadableServerCredentials(material, o.ciphers);
  }

  static async start(o: ServingCertOptions): Promise<ServingCertificate> {
    const extraRootsPem = o.caCertFile ? await ServingCertificate.readCaCertFile(o.caCertFile) : '';
    const first = o.source.kind === 'files' ? await ServingCertificate.readFiles(o.source) : undefined;
    const self = new ServingCertificate(o, { keyPem: '', certChainPem: '', clientRootsPem: '' });
    self.extraRootsPem = first?.caPem ?? extraRootsPem;
    if (first) {
      self.fileStamp = first.stamp;
      self.leafNotAfter = first.notAfter;
      self.update({ keyPem: first.keyPem, certChainPem: first.certChainPem, clientRootsPem: self.clientRoots() });
      self.scheduleFiles();
      self.unsubscribe = o.ca?.onChange(() => self.refreshRoots());
    } else {
      await self.issue();
      self.unsubscribe = o.ca?.onChange((m) => {
        if (self.leafStillTrusted(m.roots)) {
          self.refreshRoots();
          return;
        }
        self.issue().catch((err: unknown) => o.log.error({ err: (err as Error).message }, 'serving certificate: reissue after a CA change failed'));
      });
    }
    return self;
  }

  /** When the serving certificate in use expires (unix ms). */
  get notAfter(): number {
    return this.leafNotAfter;
  }

  /** Recomputes the client roots (after the foreign roots changed). */
  refreshRoots(): void {
    const m = this.credentials.current();
    this.update({ ...m, clientRootsPem: this.clientRoots() });
  }

  /**
   * PEM of the roots a client needs to verify this serving certificate (the `caBundle` of the
   * webhook configurations): the CA's trust bundle; with `--tlsCertFile`, `--caCertFile` when given,
   * else the last certificate of the file's chain.
   */
  caBundle(): string {
    if (this.o.source.kind !== 'files') return this.o.ownRoots().map((c) => c.pem).join('');
    if (this.extraRootsPem) return this.extraRootsPem;
    const chain = certificatesOf(this.credentials.current().certChainPem, `--tlsCertFile ${this.o.source.certFile}`);
    return chain[chain.length - 1]?.pem ?? '';
  }

  /** Calls `listener` after the serving material changed (issued, renewed, reloaded, new roots). */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private update(m: ServingMaterial): void {
    this.credentials.update(m);
    for (const l of this.listeners) l();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.unsubscribe?.();
  }

  private clientRoots(): string {
    const own = this.o.ownRoots().map((c) => c.pem).join('');
    return own + this.extraRootsPem + this.o.foreignRoots().map((c) => c.pem).join('');
  }

  /**
   * Whether the certificate in use chains to one of `roots` (after a CA change). A root rotation
   * keeps the old root trusted until it expires; the certificate it signed is kept until its
   * ordinary renewal (before that root expires: its lifetime ends with the chain's), so that clients
   * told of the new root a moment later (the webhook configurations' caBundle, written by the
   * leader) never meet a certificate from a root they do not know yet (docs/adr/0147).
   */
  private leafStillTrusted(roots: ReadonlyArray<Certificate>): boolean {
    const root = this.leafRoot;
    return root !== undefined && this.leafNotAfter > Date.now() && roots.some((r) => r.der.equals(root));
  }

  private async issue(): Promise<void> {
    const ca = this.o.ca;
    if (!ca) throw new ServingCertificateError('no CA to issue the serving certificate');
    const root = ca.current().root.der;
    const issued = await ca.issueKeyPair({ dnsNames: this.o.dnsNames }, this.o.ttlMs);
    this.leafRoot = ca.current().root.der === root ? root : undefined;
    this.leafNotAfter = issued.notAfter.getTime();
    this.update({ keyPem: issued.keyPem, certChainPem: issued.certChainPem, clientRootsPem: this.clientRoots() });
    this.o.log.info({ dnsNames: this.o.dnsNames, notAfter: issued.notAfter.toISOString() }, 'serving certificate issued by the mesh CA');
    if (this.timer) clearTimeout(this.timer);
    const lifetime = issued.notAfter.getTime() - Date.now();
    const renewIn = Math.max(1000, Math.floor(lifetime * 0.8));
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.issue().catch((err: unknown) => {
        this.o.log.error({ err: (err as Error).message }, 'serving certificate renewal failed; retrying in 10 s');
        this.timer = setTimeout(() => void this.issue().catch(() => undefined), 10_000);
        this.timer.unref();
      });
    }, renewIn);
    this.timer.unref();
  }

  private static async readCaCertFile(path: string): Promise<string> {
    let pem: string;
    try {
      pem = await readFile(path, 'utf8');
    } catch (err) {
      throw new ServingCertificateError(`--caCertFile ${path}: ${(err as Error).message}`);
    }
    return certificatesOf(pem, `--caCertFile ${path}`).map((c) => c.pem).join('');
  }

  private static async readFiles(src: { certFile: string; keyFile: string; caCertFile?: string }): Promise<{ keyPem: string; certChainPem: string; caPem: string; notAfter: number; stamp: string }> {
    const read = async (flag: string, path: string): Promise<string> => {
      try {
        return await readFile(path, 'utf8');
      } catch (err) {
        throw new ServingCertificateError(`${flag} ${path}: ${(err as Error).message}`);
      }
    };
    const certChainPem = await read('--tlsCertFile', src.certFile);
    const keyPem = await read('--tlsKeyFile', src.keyFile);
    const chain = certificatesOf(certChainPem, `--tlsCertFile ${src.certFile}`);
    let key;
    try {
      key = createPrivateKey(keyPem);
    } catch (err) {
      throw new ServingCertificateError(`--tlsKeyFile ${src.keyFile}: ${(err as Error).message}`);
    }
    if (!chain[0].x509.checkPrivateKey(key)) throw new ServingCertificateError(`--tlsKeyFile ${src.keyFile}: does not belong to the certificate of --tlsCertFile ${src.certFile}`);
    const caPem = src.caCertFile ? await ServingCertificate.readCaCertFile(src.caCertFile) : '';
    return { keyPem, certChainPem, caPem, notAfter: chain[0].notAfter.getTime(), stamp: await ServingCertificate.stamp(src) };
  }

  private static async stamp(src: { certFile: string; keyFile: string; caCertFile?: string }): Promise<string> {
    const parts: string[] = [];
    for (const p of [src.certFile, src.keyFile, src.caCertFile]) {
      if (!p) continue;
      try {
        const s = await stat(p);
        parts.push(`${s.mtimeMs}:${s.size}:${s.ino}`);
      } catch {
        parts.push('missing');
      }
    }
    return parts.join('|');
  }

  private scheduleFiles(): void {
    if (this.stopped || this.o.source.kind !== 'files') return;
    const src = this.o.source;
    this.timer = setTimeout(() => {
      void (async () => {
        const stamp = await ServingCertificate.stamp(src);
        if (stamp !== this.fileStamp) {
          try {
            const next = await ServingCertificate.readFiles(src);
            this.fileStamp = next.stamp;
            this.leafNotAfter = next.notAfter;
            this.extraRootsPem = next.caPem;
            this.update({ keyPem: next.keyPem, certChainPem: next.certChainPem, clientRootsPem: this.clientRoots() });
            this.o.log.info({ certFile: src.certFile }, 'serving certificate reloaded from its files');
          } catch (err) {
            this.o.log.error({ err: (err as Error).message }, 'serving certificate files changed but cannot be used; keeping the last good ones');
          }
        }
      })().finally(() => this.scheduleFiles());
    }, this.o.filePollMs ?? 30_000);
    this.timer.unref();
  }
}
