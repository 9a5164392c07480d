/**
 * The JWKS resolver (docs/adr/0100): fetches the public key sets of RequestAuthentication
 * `jwksUri`s so that proxies get them inline. It implements the model's JwksSource seam:
 *
 * - `want(uris)` after every snapshot: new URIs are fetched at once, URIs no longer named are
 *   forgotten.
 * - Every fetch is bounded: one deadline for connect + response (`timeoutMs`), a byte bound on the
 *   body (`maxBytes`), at most `maxUris` URIs held. HTTPS verifies the server against Node's trust
 *   store (system roots plus NODE_EXTRA_CA_CERTS).
 * - Every `refreshMs` (DISC_JWT_PUB_KEY_REFRESH_INTERVAL) all held URIs are fetched again; a URI
 *   whose first fetch failed is retried sooner, with a doubling back-off up to that interval.
 * - A failed fetch is logged with the URI and the reason and counted in
 *   disc_jwks_resolver_network_fetch_fail_total (a success in _success_total). A URI that never gave
 *   a usable key set is `failed` in the view (its providers then fail closed); a URI that did keeps
 *   its last good key set when a refresh fails.
 * - The view is a new map whenever an entry changes (a different key set, or a first failure), and
 *   listeners are told: the model then pushes through its ordinary path (Dep.jwks).
 */
import http from 'node:http';
import https from 'node:https';
import type { Logger } from 'pino';
import { jwksProblem, type JwksEntry, type JwksSource, type JwksView } from '../model/policy/jwks.js';

export interface JwksResolverOptions {
  /** DISC_JWT_PUB_KEY_REFRESH_INTERVAL. */
  readonly refreshMs: number;
  /** Deadline of one fetch, connect to last byte. */
  readonly timeoutMs?: number;
  /** Largest body accepted. */
  readonly maxBytes?: number;
  /** Most URIs held at once; more are refused (failed) and logged. */
  readonly maxUris?: number;
  /** First retry delay after a failed first fetch. */
  readonly retryMs?: number;
  /** `retry`: a fetch is scheduled early because the last one failed and no key set is held (num_outgoing_retries). */
  readonly counters: { success(): void; fail(): void; retry?(): void };
  readonly log: Logger;
}

export const DEFAULT_JWKS_TIMEOUT_MS = 5_000;
export const DEFAULT_JWKS_MAX_BYTES = 1 << 20;
export const DEFAULT_JWKS_MAX_URIS = 1_000;

interface Held {
  entry?: JwksEntry;
  inFlight: boolean;
  /** Timer of the next fetch (retry or refresh). */
  timer?: NodeJS.Timeout;
  failures: number;
}

export class JwksResolver implements JwksSource {
  private current: JwksView = new Map();
  private readonly held = new Map<string, Held>();
  private readonly listeners = new Set<() => void>();
  private version = 0;
  private stopped = false;
  private readonly timeoutMs: number;
  private readonly maxBytes: number;
  private readonly maxUris: number;
  private readonly retryMs: number;

  constructor(private readonly opts: JwksResolverOptions) {
    this.timeoutMs = opts.timeoutMs ?? DEFAULT_JWKS_TIMEOUT_MS;
    this.maxBytes = opts.maxBytes ?? DEFAULT_JWKS_MAX_BYTES;
    this.maxUris = opts.maxUris ?? DEFAULT_JWKS_MAX_URIS;
    this.retryMs = opts.retryMs ?? 1_000;
  }

  view(): JwksView {
    return this.current;
  }

  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  want(uris: ReadonlySet<string>): void {
    if (this.stopped) return;
    let removed = false;
    for (const [uri, h] of this.held) {
      if (uris.has(uri)) continue;
      clearTimeout(h.timer);
      this.held.delete(uri);
      removed = true;
    }
    for (const uri of uris) {
      if (this.held.has(uri)) continue;
      const h: Held = { inFlight: false, failures: 0 };
      this.held.set(uri, h);
      if (this.held.size > this.maxUris) {
        this.opts.log.error({ uri, max: this.maxUris }, `jwks: not fetching ${uri}: more than ${this.maxUris} jwksUris are in use; its providers fail closed`);
        this.settle(h, { state: 'failed', reason: `more than ${this.maxUris} jwksUris in use`, version: ++this.version });
        continue;
      }
      void this.fetchNow(uri, h);
    }
    if (removed) this.publish();
  }

  /** Stops every timer; fetches running finish without effect. */
  stop(): void {
    this.stopped = true;
    for (const h of this.held.values()) clearTimeout(h.timer);
    this.held.clear();
  }

  private async fetchNow(uri: string, h: Held): Promise<void> {
    if (h.inFlight || this.stopped) return;
    h.inFlight = true;
    let result: { ok: true; body: string } | { ok: false; reason: string };
    try {
      const body = await this.get(uri);
      const problem = jwksProblem(body);
      result = problem ? { ok: false, reason: `the response is not a key set (${problem})` } : { ok: true, body };
    } catch (e) {
      result = { ok: false, reason: e instanceof Error ? e.message : String(e) };
    }
    h.inFlight = false;
    if (this.stopped || this.held.get(uri) !== h) return;
    if (result.ok) {
      this.opts.counters.success();
      h.failures = 0;
      const before = h.entry;
      if (before?.state !== 'keys' || before.jwks !== result.body) {
        if (before?.state === 'failed') this.opts.log.info({ uri }, `jwks: fetched ${uri} after ${before.reason}`);
        this.settle(h, { state: 'keys', jwks: result.body, version: ++this.version });
      }
      this.schedule(uri, h, this.opts.refreshMs);
      return;
    }
    this.opts.counters.fail();
    h.failures++;
    const kept = h.entry?.state === 'keys';
    this.opts.log.warn(
      { uri, reason: result.reason, failures: h.failures },
      kept
        ? `jwks: fetching ${uri} failed (${result.reason}); keeping the key set fetched before`
        : `jwks: fetching ${uri} failed (${result.reason}); providers with this jwksUri reject every token of their issuer until a fetch succeeds`,
    );
    if (!kept && (h.entry === undefined || (h.entry.state === 'failed' && h.entry.reason !== result.reason))) {
      this.settle(h, { state: 'failed', reason: result.reason, version: ++this.version });
    }
    if (!kept) this.opts.counters.retry?.();
    this.schedule(uri, h, kept ? this.opts.refreshMs : Math.min(this.opts.refreshMs, this.retryMs * 2 ** Math.min(h.failures - 1, 16)));
  }

  private schedule(uri: string, h: Held, ms: number): void {
    clearTimeout(h.timer);
    h.timer = setTimeout(() => void this.fetchNow(uri, h), ms);
    h.timer.unref();
  }

  private settle(h: Held, entry: JwksEntry): void {
    h.entry = entry;
    this.publish();
  }

  private publish(): void {
    const next = new Map<string, JwksEntry>();
    for (const [uri, h] of this.held) if (h.entry) next.set(uri, h.entry);
    this.current = next;
    for (const l of this.listeners) l();
  }

  /** One bounded GET: the body as text, or an error naming what went wrong. */
  private get(uri: string): Promise<string> {
    return new Promise((resolve, reject) => {
      let url: URL;
      try {
        url = new URL(uri);
      } catch {
        reject(new Error('not a URL'));
        return;
      }
      if (url.protocol !== 'https:' && url.protocol !== 'http:') {
        reject(new Error(`scheme ${url.protocol} is not http or https`));
        return;
      }
      const client = url.protocol === 'https:' ? https : http;
      const req = client.get(url, { headers: { accept: 'application/json' } }, (res) => {
        if ((res.statusCode ?? 0) < 200 || (res.statusCode ?? 0) >= 300) {
          res.resume();
          fail(new Error(`HTTP status ${res.statusCode}`));
          return;
        }
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          size += c.length;
          if (size > this.maxBytes) {
            fail(new Error(`the response is larger than ${this.maxBytes} bytes`));
            return;
          }
          chunks.push(c);
        });
        res.on('end', () => {
          if (done) return;
          done = true;
          clearTimeout(deadline);
          resolve(Buffer.concat(chunks).toString('utf8'));
        });
        res.on('error', (e) => fail(e));
      });
      let done = false;
      const fail = (e: Error): void => {
        if (done) return;
        done = true;
        clearTimeout(deadline);
        req.destroy();
        reject(e);
      };
      const deadline = setTimeout(() => fail(new Error(`no complete response within ${this.timeoutMs} ms`)), this.timeoutMs);
      req.on('error', (e) => fail(e));
    });
  }
}
