/**
 * Self-signed root rotation. Every CA_SELF_SIGNED_ROOT_CERT_CHECK_INTERVAL (zero or negative: never)
 * the rotator reads the store (adopting a root another replica wrote) and, once the root has less
 * than CA_SELF_SIGNED_ROOT_CERT_GRACE_PERIOD_PERCENTILE % of its lifetime left, makes a new root.
 * The trust bundle then holds the new root first and the old one after it until the old one
 * expires, so certificates the old root signed keep verifying while workloads renew. With
 * CA_ENABLE_JITTER_FOR_ROOT_CERT_ROTATOR the first check waits a random part of the interval, so
 * replicas started together do not race every time.
 *
 * Only the daemon's own self-signed root rotates; a plug-in CA is the operator's to replace.
 */
import type { Logger } from 'pino';
import type { CertificateAuthority } from './authority.js';
import { caFilesOf, readCaFiles, type SigningMaterial } from './material.js';
import { createSelfSignedMaterial, type SelfSignedOptions } from './self-signed.js';
import type { CaStore } from './store.js';

export interface RotationOptions extends SelfSignedOptions {
  readonly checkIntervalMs: number;
  readonly gracePeriodPercentile: number;
  readonly jitter: boolean;
}

/** Whether `root` is inside its grace period: less than `percentile` % of its lifetime left. */
export function inGracePeriod(root: { readonly notBefore: Date; readonly notAfter: Date }, percentile: number, now = Date.now()): boolean {
  const lifetime = root.notAfter.getTime() - root.notBefore.getTime();
  const left = root.notAfter.getTime() - now;
  return left <= (lifetime * percentile) / 100;
}

export type RotationOutcome = 'unchanged' | 'adopted' | 'rotated' | 'pruned';

export class RootRotator {
  private timer: NodeJS.Timeout | undefined;
  private version: string;
  private running: Promise<RotationOutcome> | undefined;
  private stopped = false;

  constructor(
    private readonly ca: CertificateAuthority,
    private readonly store: CaStore,
    version: string,
    private readonly opts: RotationOptions,
    private readonly log: Logger,
    private readonly random: () => number = Math.random,
  ) {
    this.version = version;
  }

  /** Starts the periodic check; does nothing when the interval is zero or negative. */
  start(): void {
    if (this.opts.checkIntervalMs <= 0) {
      this.log.info('root rotation disabled (CA_SELF_SIGNED_ROOT_CERT_CHECK_INTERVAL <= 0)');
      return;
    }
    const first = this.opts.jitter ? Math.floor(this.random() * this.opts.checkIntervalMs) : this.opts.checkIntervalMs;
    const schedule = (ms: number): void => {
      if (this.stopped) return;
      this.timer = setTimeout(() => {
        this.check()
          .catch((err: unknown) => this.log.error({ err: (err as Error).message }, 'root rotation check failed; retrying at the next interval'))
          .finally(() => schedule(this.opts.checkIntervalMs));
      }, ms);
      this.timer.unref();
    };
    schedule(first);
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
  }

  /** One check (also called by tests); concurrent calls share one run. */
  check(now = Date.now()): Promise<RotationOutcome> {
    this.running ??= this.checkOnce(now).finally(() => (this.running = undefined));
    return this.running;
  }

  private async checkOnce(now: number): Promise<RotationOutcome> {
    let outcome: RotationOutcome = 'unchanged';
    const stored = await this.store.load();
    if (stored && stored.version !== this.version) {
      this.ca.update(readCaFiles(stored.files, this.store.description, new Date(now)));
      this.version = stored.version;
      outcome = 'adopted';
      this.log.info({ store: this.store.description }, 'root: adopted the material another replica stored');
    }
    const current = this.ca.current();
    if (!inGracePeriod(current.root, this.opts.gracePeriodPercentile, now)) {
      const live = current.roots.filter((r) => r.notAfter.getTime() > now);
      if (live.length === current.roots.length) return outcome;
      return (await this.write({ ...current, roots: live }, 'pruned expired roots from the trust bundle', now)) ? 'pruned' : 'adopted';
    }
    this.log.info({ notAfter: current.root.notAfter.toISOString(), percentile: this.opts.gracePeriodPercentile }, 'root: inside its grace period; rotating');
    const next = await createSelfSignedMaterial(this.opts, current.roots, now);
    return (await this.write(next, 'rotated the root; old and new roots are both trusted until the old one expires', now)) ? 'rotated' : 'adopted';
  }

  /** Stores `next` if nobody wrote meanwhile and switches to it; false when another replica's material was adopted instead. */
  private async write(next: SigningMaterial, message: string, now: number): Promise<boolean> {
    const files = caFilesOf(next);
    const previous = { files: caFilesOf(this.ca.current()), version: this.version };
    const stored = await this.store.replace(previous, files);
    this.version = stored.version;
    if (stored.files['ca-cert.pem'] === files['ca-cert.pem'] && stored.files['root-cert.pem'] === files['root-cert.pem']) {
      this.ca.update(next);
      this.log.info({ store: this.store.description, roots: next.roots.length, notAfter: next.root.notAfter.toISOString() }, `root: ${message}`);
      return true;
    }
    this.ca.update(readCaFiles(stored.files, this.store.description, new Date(now)));
    this.log.info({ store: this.store.description }, 'root: another replica rotated first; adopted its material');
    return false;
  }
}
