/**
 * The workload's certificate, kept current: an ECDSA P-256 key and CSR (the project's own X.509
 * code, src/ca), signed by meshd's certificate service (./ca-client.ts) with the pod's projected
 * token, then renewed before it expires — once `graceRatio` of its lifetime has passed, give or
 * take `jitterRatio` of it, so that a fleet started together does not renew together — with the
 * current certificate as the credential (the token when the certificate is no longer good or is
 * refused). Each attempt that fails for a reason that can pass (meshd away, overloaded) is retried
 * a bounded number of times with exponential backoff; a refusal is not retried at once. Listeners
 * get every new certificate and every change of the mounted root bundle. No key or token is logged.
 */
import type { Logger } from 'pino';
import { generateKey, createCsr, parseCertificatePem, privateKeyPem } from '../ca/x509.js';
import { CaCallError, createCertificate, type CaClientOptions, type CaCredential } from './ca-client.js';

/** What the agent holds and serves: chain (leaf and intermediates), key, and the mesh roots. */
export interface WorkloadCertificate {
  /** Leaf first, then intermediates; PEM. */
  readonly certChainPem: string;
  readonly keyPem: string;
  /** The trust bundle (the mounted mesh-ca-root-cert file). */
  readonly rootPem: string;
  readonly notBefore: Date;
  readonly notAfter: Date;
  /** When the agent received it: the CA backdates notBefore, so lifetimes count from here. */
  readonly receivedAt: Date;
  readonly identity: string;
  /** Counts certificates and root changes: 1 for the first, then one more per change. */
  readonly version: number;
}

export interface RetryPolicy {
  /** Attempts per renewal (the first included). */
  readonly attempts: number;
  readonly initialDelayMs: number;
  readonly maxDelayMs: number;
}

export interface CertificateManagerOptions {
  readonly ca: Omit<CaClientOptions, 'rootPem'>;
  /** The SPIFFE identity asked for in the CSR. */
  readonly identity: string;
  /** Reads the projected token (re-read on each use: the kubelet rotates it). */
  readonly readToken: () => Promise<string>;
  /** Reads the mesh root bundle. */
  readonly readRoots: () => Promise<string>;
  /** Lifetime asked for, seconds. */
  readonly ttlSeconds: number;
  /** Fraction of the lifetime after which the certificate is renewed (0 < r < 1). */
  readonly graceRatio: number;
  /** Spread of the renewal time, as a fraction of the lifetime, either side. */
  readonly jitterRatio: number;
  readonly retry: RetryPolicy;
  /** How often the root bundle is read again (the kubelet updates the ConfigMap volume in place). */
  readonly rootPollMs: number;
  readonly log: Logger;
  /** Metrics hooks (the agent's own metrics). */
  readonly onRenewal?: (result: 'success' | 'failure', via: CaCredential['kind']) => void;
}

export type CertificateListener = (cert: WorkloadCertificate) => void;

const sleep = (ms: number, signal: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done(): void {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });

/** When to renew a certificate good from `notBefore` (or its receipt) to `notAfter` (unix ms), `random` in [0, 1). */
export function renewalTime(notBefore: number, notAfter: number, graceRatio: number, jitterRatio: number, random: number): number {
  const life = Math.max(0, notAfter - notBefore);
  const jitter = (random * 2 - 1) * jitterRatio * life;
  const at = notBefore + graceRatio * life + jitter;
  // Never past 95 % of the lifetime, never before it is issued.
  return Math.min(Math.max(at, notBefore), notBefore + 0.95 * life);
}

export class CertificateManager {
  private cert: WorkloadCertificate | undefined;
  private readonly listeners = new Set<CertificateListener>();
  private readonly stopping = new AbortController();
  private renewTimer: NodeJS.Timeout | undefined;
  private rootTimer: NodeJS.Timeout | undefined;
  private version = 0;
  private renewing: Promise<void> | undefined;

  constructor(private readonly o: CertificateManagerOptions) {
    if (!(o.graceRatio > 0 && o.graceRatio < 1)) throw new Error(`graceRatio ${o.graceRatio}: must be between 0 and 1`);
    if (!(o.jitterRatio >= 0 && o.jitterRatio < o.graceRatio && o.graceRatio + o.jitterRatio < 1)) throw new Error(`jitterRatio ${o.jitterRatio}: must be at least 0 and leave the renewal time inside the lifetime`);
  }

  current(): WorkloadCertificate | undefined {
    return this.cert;
  }

  onChange(listener: CertificateListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Gets the first certificate (with the retry policy); rejects when every attempt failed. */
  async start(): Promise<WorkloadCertificate> {
    await this.issue();
    this.rootTimer = setInterval(() => void this.checkRoots(), this.o.rootPollMs);
    this.rootTimer.unref();
    return this.cert as WorkloadCertificate;
  }

  stop(): void {
    this.stopping.abort();
    if (this.renewTimer) clearTimeout(this.renewTimer);
    if (this.rootTimer) clearInterval(this.rootTimer);
  }

  /** Renews now (and reschedules); resolves when done. */
  renewNow(): Promise<void> {
    this.renewing ??= this.issue().finally(() => (this.renewing = undefined));
    return this.renewing;
  }

  private credentialFor(now: number): Promise<CaCredential> | CaCredential {
    const c = this.cert;
    // Good for the call still (a margin of 5 s, or a fifth of a short lifetime).
    const margin = c ? Math.min(5_000, 0.2 * (c.notAfter.getTime() - c.receivedAt.getTime())) : 0;
    if (c && c.notAfter.getTime() - now > margin) return { kind: 'certificate', certChainPem: c.certChainPem, keyPem: c.keyPem };
    return this.o.readToken().then((token) => ({ kind: 'token', token: token.trim() }));
  }

  private async issue(): Promise<void> {
    const { retry, log } = this.o;
    let delay = retry.initialDelayMs;
    let lastError: Error | undefined;
    for (let attempt = 1; attempt <= retry.attempts && !this.stopping.signal.aborted; attempt++) {
      let via: CaCredential['kind'] = 'token';
      try {
        const roots = await this.o.readRoots();
        const key = await generateKey('ec-p256');
        const csr = await createCsr(key, { uris: [this.o.identity] });
        let credential = await this.credentialFor(Date.now());
        via = credential.kind;
        let chain: string[];
        try {
          chain = await createCertificate({ ...this.o.ca, rootPem: roots }, credential, csr, this.o.ttlSeconds);
        } catch (err) {
          // A certificate refused for renewal (revoked root, another CA): start over with the token.
          if (!(err instanceof CaCallError) || err.retryable || credential.kind !== 'certificate') throw err;
          log.warn({ code: err.code }, `renewal with the current certificate refused (${err.message}); asking with the service-account token`);
          credential = await this.credentialFor(Number.POSITIVE_INFINITY);
          via = credential.kind;
          chain = await createCertificate({ ...this.o.ca, rootPem: roots }, credential, csr, this.o.ttlSeconds);
        }
        const leaf = parseCertificatePem(chain[0] as string, 'issued certificate');
        if (!leaf.altNames.uris.includes(this.o.identity)) throw new Error(`the issued certificate is for ${leaf.altNames.uris.join(', ') || 'no URI'}, not ${this.o.identity}`);
        // The answer ends with the root; Envoy serves leaf and intermediates.
        const served = chain.length > 1 ? chain.slice(0, -1) : chain;
        this.cert = {
          certChainPem: served.map((p) => (p.endsWith('\n') ? p : `${p}\n`)).join(''),
          keyPem: privateKeyPem(key),
          rootPem: roots,
          notBefore: leaf.notBefore,
          notAfter: leaf.notAfter,
          receivedAt: new Date(Math.max(Date.now(), leaf.notBefore.getTime())),
          identity: this.o.identity,
          version: ++this.version,
        };
        this.o.onRenewal?.('success', via);
        log.info({ identity: this.o.identity, serial: leaf.serialHex, notAfter: leaf.notAfter.toISOString(), via }, 'workload certificate issued');
        this.schedule();
        this.emit();
        return;
      } catch (err) {
        lastError = err as Error;
        this.o.onRenewal?.('failure', via);
        const retryable = !(err instanceof CaCallError) || err.retryable;
        log.warn({ attempt, of: retry.attempts, retryable }, `certificate request failed: ${lastError.message}`);
        if (!retryable || attempt === retry.attempts) break;
        await sleep(delay, this.stopping.signal);
        delay = Math.min(delay * 2, retry.maxDelayMs);
      }
    }
    if (this.stopping.signal.aborted) return;
    // Out of attempts: keep what is held and try again later, while it is still of use.
    if (this.cert) this.scheduleAt(Date.now() + retry.maxDelayMs);
    throw lastError ?? new Error('certificate request failed');
  }

  private schedule(): void {
    const c = this.cert as WorkloadCertificate;
    this.scheduleAt(renewalTime(c.receivedAt.getTime(), c.notAfter.getTime(), this.o.graceRatio, this.o.jitterRatio, Math.random()));
  }

  private scheduleAt(at: number): void {
    if (this.renewTimer) clearTimeout(this.renewTimer);
    if (this.stopping.signal.aborted) return;
    this.renewTimer = setTimeout(() => {
      this.renewNow().catch((err: unknown) => this.o.log.error(`certificate renewal failed, will try again: ${(err as Error).message}`));
    }, Math.max(0, at - Date.now()));
    this.renewTimer.unref();
  }

  private async checkRoots(): Promise<void> {
    if (!this.cert) return;
    let roots: string;
    try {
      roots = await this.o.readRoots();
    } catch (err) {
      this.o.log.warn(`mesh root bundle unreadable, keeping the last one: ${(err as Error).message}`);
      return;
    }
    if (roots === this.cert.rootPem || !roots.includes('-----BEGIN CERTIFICATE-----')) return;
    this.cert = { ...this.cert, rootPem: roots, version: ++this.version };
    this.o.log.info('mesh root bundle changed');
    this.emit();
  }

  private emit(): void {
    const c = this.cert as WorkloadCertificate;
    for (const l of this.listeners) {
      try {
        l(c);
      } catch (err) {
        this.o.log.error(`certificate listener failed: ${(err as Error).message}`);
      }
    }
  }
}
