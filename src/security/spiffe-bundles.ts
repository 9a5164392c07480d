/**
 * Roots of other trust domains (SPIFFE_BUNDLE_ENDPOINTS): each endpoint serves a SPIFFE bundle, a
 * JWK set whose `x509-svid` keys carry the domain's root certificates in `x5c`. They are fetched at
 * start-up (a failure stops the start, naming the endpoint) and again every `spiffe_refresh_hint`
 * seconds (5 minutes when absent, at least 30 s); a failed refresh keeps the last good roots.
 */
import type { Logger } from 'pino';
import { DerError, parseCertificate, type Certificate } from '../ca/x509.js';
import type { SpiffeBundleEndpoint } from './settings.js';

const MAX_BUNDLE_BYTES = 1 << 20;
const DEFAULT_REFRESH_S = 300;
const MIN_REFRESH_S = 30;

export class SpiffeBundleError extends Error {
  override readonly name = 'SpiffeBundleError';
}

interface Jwk {
  readonly use?: unknown;
  readonly x5c?: unknown;
}

/** The roots of one bundle document; `SpiffeBundleError` names what is wrong. */
export function parseSpiffeBundle(text: string, source: string): { roots: Certificate[]; refreshS: number } {
  let doc: { keys?: unknown; spiffe_refresh_hint?: unknown };
  try {
    doc = JSON.parse(text) as typeof doc;
  } catch {
    throw new SpiffeBundleError(`${source}: not JSON`);
  }
  if (!Array.isArray(doc.keys)) throw new SpiffeBundleError(`${source}: no "keys" array`);
  const roots: Certificate[] = [];
  for (const [i, k] of (doc.keys as Jwk[]).entries()) {
    if (k?.use !== 'x509-svid') continue;
    if (!Array.isArray(k.x5c) || k.x5c.length !== 1 || typeof k.x5c[0] !== 'string') throw new SpiffeBundleError(`${source}: keys[${i}]: an x509-svid key needs exactly one certificate in x5c`);
    try {
      roots.push(parseCertificate(Buffer.from(k.x5c[0], 'base64'), `${source} keys[${i}]`));
    } catch (err) {
      throw new SpiffeBundleError(err instanceof DerError ? err.message : `${source}: keys[${i}]: bad certificate`);
    }
  }
  if (roots.length === 0) throw new SpiffeBundleError(`${source}: no x509-svid root in the bundle`);
  const hint = typeof doc.spiffe_refresh_hint === 'number' && doc.spiffe_refresh_hint > 0 ? doc.spiffe_refresh_hint : DEFAULT_REFRESH_S;
  return { roots, refreshS: Math.max(MIN_REFRESH_S, hint) };
}

export class SpiffeBundles {
  private readonly roots = new Map<string, ReadonlyArray<Certificate>>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly listeners = new Set<() => void>();

  constructor(
    private readonly endpoints: ReadonlyArray<SpiffeBundleEndpoint>,
    private readonly log: Logger,
  ) {}

  /** Fetches every bundle once; rejects with the first failure. Then refreshes in the background. */
  async start(): Promise<void> {
    for (const e of this.endpoints) {
      const refreshS = await this.fetchOne(e);
      this.schedule(e, refreshS);
    }
  }

  stop(): void {
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
  }

  forDomain(trustDomain: string): ReadonlyArray<Certificate> {
    return this.roots.get(trustDomain) ?? [];
  }

  all(): Certificate[] {
    return [...this.roots.values()].flat();
  }

  onChange(l: () => void): void {
    this.listeners.add(l);
  }

  private schedule(e: SpiffeBundleEndpoint, seconds: number): void {
    const t = setTimeout(() => {
      this.timers.delete(t);
      this.fetchOne(e)
        .then((next) => this.schedule(e, next))
        .catch((err: unknown) => {
          this.log.warn({ trustDomain: e.trustDomain, url: e.url, err: (err as Error).message }, 'SPIFFE bundle refresh failed; keeping the last roots');
          this.schedule(e, seconds);
        });
    }, seconds * 1000);
    t.unref();
    this.timers.add(t);
  }

  private async fetchOne(e: SpiffeBundleEndpoint): Promise<number> {
    const source = `SPIFFE_BUNDLE_ENDPOINTS ${e.trustDomain} (${e.url})`;
    let text: string;
    try {
      const res = await fetch(e.url, { signal: AbortSignal.timeout(10_000), redirect: 'error' });
      if (!res.ok) throw new SpiffeBundleError(`${source}: HTTP ${res.status}`);
      const length = Number(res.headers.get('content-length') ?? 0);
      if (length > MAX_BUNDLE_BYTES) throw new SpiffeBundleError(`${source}: bundle larger than ${MAX_BUNDLE_BYTES} bytes`);
      text = await res.text();
      if (text.length > MAX_BUNDLE_BYTES) throw new SpiffeBundleError(`${source}: bundle larger than ${MAX_BUNDLE_BYTES} bytes`);
    } catch (err) {
      if (err instanceof SpiffeBundleError) throw err;
      const cause = (err as { cause?: { message?: string } }).cause?.message;
      throw new SpiffeBundleError(`${source}: ${(err as Error).message}${cause ? ` (${cause})` : ''}`);
    }
    const { roots, refreshS } = parseSpiffeBundle(text, source);
    const before = this.roots.get(e.trustDomain);
    this.roots.set(e.trustDomain, roots);
    if (!before || before.length !== roots.length || before.some((c, i) => !c.der.equals(roots[i].der))) {
      this.log.info({ trustDomain: e.trustDomain, roots: roots.length }, 'SPIFFE bundle loaded');
      for (const l of this.listeners) l();
    }
    return refreshS;
  }
}
