/**
 * HTTP transport to the API server: credentials from the kubeconfig (client certificates, tokens,
 * token files, exec plugins, through client-node's KubeConfig), one keep-alive agent shared by all
 * requests, the rate limiter in front of every request (watches included), timeouts and typed
 * errors. Both our own calls and client-node's generated API clients go through it.
 */
import { createHash } from 'node:crypto';
import { Agent as HttpAgent, request as httpRequest, type IncomingHttpHeaders, type IncomingMessage, type OutgoingHttpHeaders } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest, type RequestOptions } from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';
import { KubeApiError, KubeUnreachableError } from './errors.js';
import type { TokenBucket } from './rate-limiter.js';

export interface HttpRequest {
  readonly method: string;
  /** Path and query relative to the server URL, e.g. `/api/v1/namespaces?limit=10`. */
  readonly path: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: string | Buffer;
  readonly signal?: AbortSignal;
  /** Whole-request timeout for ordinary requests; for streams, the wait for the response headers. */
  readonly timeoutMs?: number;
}

export interface HttpResponse {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
}

/** What a request observer is told after every request (for a stream: once its headers came). */
export interface RequestInfo {
  readonly method: string;
  /** Absolute URL, query included. */
  readonly url: string;
  /** 0 when no answer came. */
  readonly status: number;
  readonly durationMs: number;
  /** Why no answer came (status 0). */
  readonly error?: string;
  /** The headers sent, credentials redacted (see `redactCredentials`); only with `observeHeaders`. */
  readonly requestHeaders?: Readonly<Record<string, string>>;
  /** The headers received, cookies redacted; only with `observeHeaders` and an answer. */
  readonly responseHeaders?: Readonly<Record<string, string>>;
}

/** Called after every request, for metrics and request logs (meshctl --vklog). */
export type RequestObserver = (info: RequestInfo) => void;

const REDACTED = '<redacted>';

/**
 * `headers` as they may be shown: the credentials of Authorization and Proxy-Authorization
 * replaced (the scheme kept: `Bearer <redacted>`), cookies replaced whole.
 */
export function redactCredentials(headers: Readonly<Record<string, string | string[] | number | undefined>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, raw] of Object.entries(headers)) {
    if (raw === undefined) continue;
    const value = Array.isArray(raw) ? raw.join(', ') : String(raw);
    const lower = name.toLowerCase();
    if (lower === 'authorization' || lower === 'proxy-authorization') out[name] = /^\S+\s/.test(value) ? `${value.split(/\s/, 1)[0]} ${REDACTED}` : REDACTED;
    else if (lower === 'cookie' || lower === 'set-cookie') out[name] = REDACTED;
    else out[name] = value;
  }
  return out;
}

export interface TransportOptions {
  readonly limiter: TokenBucket;
  readonly userAgent?: string;
  /** Default whole-request timeout (default 60 s). */
  readonly timeoutMs?: number;
  /** How long credentials read from files are reused before being read again (default 10 s). */
  readonly credentialTtlMs?: number;
  readonly onRequest?: RequestObserver;
  /** Give `onRequest` the request and response headers (redacted) too. */
  readonly observeHeaders?: boolean;
}

interface Prepared {
  readonly agent: HttpAgent;
  readonly headers: Record<string, string>;
  readonly servername?: string;
  readonly at: number;
}

const DEFAULT_TIMEOUT_MS = 60_000;

/** Filled by `open` with the headers it sends, for the observer. */
interface SentHeaders {
  headers?: OutgoingHttpHeaders;
}

export class KubeTransport {
  readonly server: URL;
  private readonly basePath: string;
  private readonly secure: boolean;
  private prepared: Prepared | undefined;
  private preparing: Promise<Prepared> | undefined;
  private agentKey = '';
  private agent: HttpAgent | undefined;
  private closed = false;

  constructor(
    private readonly kc: KubeConfig,
    private readonly opts: TransportOptions,
  ) {
    const cluster = kc.getCurrentCluster();
    if (!cluster?.server) throw new Error('kubeconfig: the current context has no cluster server');
    if (cluster.proxyUrl) throw new Error(`kubeconfig: cluster "${cluster.name}" uses proxy-url ${cluster.proxyUrl}, which is not supported`);
    this.server = new URL(cluster.server);
    if (this.server.protocol !== 'https:' && this.server.protocol !== 'http:') {
      throw new Error(`kubeconfig: server ${cluster.server} must be an http or https URL`);
    }
    this.secure = this.server.protocol === 'https:';
    this.basePath = this.server.pathname.replace(/\/+$/, '');
  }

  get limiter(): TokenBucket {
    return this.opts.limiter;
  }

  /** Absolute URL of a server-relative path (the server URL may carry a path prefix). */
  url(path: string): URL {
    return new URL(this.basePath + path, this.server.origin);
  }

  /** Sends a request and reads the whole answer; any status code resolves. */
  async send(req: HttpRequest): Promise<HttpResponse> {
    await this.opts.limiter.take(req.signal);
    const started = performance.now();
    const sent: SentHeaders = {};
    let res: IncomingMessage | undefined;
    let failure: unknown;
    try {
      res = await this.open(req, req.timeoutMs ?? this.opts.timeoutMs ?? DEFAULT_TIMEOUT_MS, true, sent);
      const status = res.statusCode ?? 0;
      const body = await readBody(res);
      if (status === 401) this.prepared = undefined;
      return { status, headers: res.headers, body };
    } catch (err) {
      failure = err;
      throw err;
    } finally {
      this.observe(req, started, sent, res, failure);
    }
  }

  private observe(req: HttpRequest, started: number, sent: SentHeaders, res: IncomingMessage | undefined, failure: unknown): void {
    if (!this.opts.onRequest) return;
    const headers = this.opts.observeHeaders === true;
    this.opts.onRequest({
      method: req.method,
      url: this.url(req.path).href,
      status: res?.statusCode ?? 0,
      durationMs: performance.now() - started,
      ...(failure !== undefined && !res ? { error: failure instanceof Error ? failure.message : String(failure) } : {}),
      ...(headers && sent.headers ? { requestHeaders: redactCredentials(sent.headers) } : {}),
      ...(headers && res ? { responseHeaders: redactCredentials(res.headers) } : {}),
    });
  }

  /** Sends a request and throws a KubeApiError unless the answer is 2xx; returns the parsed JSON. */
  async json<T>(req: HttpRequest): Promise<T> {
    const res = await this.send({ ...req, headers: { Accept: 'application/json', ...req.headers } });
    const text = res.body.toString('utf8');
    let parsed: unknown = text;
    if (text !== '') {
      try {
        parsed = JSON.parse(text);
      } catch {
        // not JSON: kept as text for the error message
      }
    }
    if (res.status < 200 || res.status > 299) throw KubeApiError.fromResponse(req.method, req.path, res.status, parsed);
    if (typeof parsed === 'string' && text !== '') {
      throw new Error(`${req.method} ${req.path}: the API server answered ${res.status} with a body that is not JSON`);
    }
    return parsed as T;
  }

  /**
   * Opens a streaming request (a watch). Resolves with the response once a 200 arrives; any other
   * status is read and thrown as a KubeApiError. `timeoutMs` bounds the wait for the headers only.
   */
  async stream(req: HttpRequest): Promise<IncomingMessage> {
    await this.opts.limiter.take(req.signal);
    const started = performance.now();
    const sent: SentHeaders = {};
    let res: IncomingMessage;
    try {
      res = await this.open({ ...req, headers: { Accept: 'application/json', ...req.headers } }, req.timeoutMs ?? 30_000, false, sent);
    } catch (err) {
      this.observe(req, started, sent, undefined, err);
      throw err;
    }
    const status = res.statusCode ?? 0;
    this.observe(req, started, sent, res, undefined);
    if (status === 200) return res;
    const body = await readBody(res).catch(() => Buffer.alloc(0));
    if (status === 401) this.prepared = undefined;
    let parsed: unknown = body.toString('utf8');
    try {
      parsed = JSON.parse(parsed as string);
    } catch {
      // keep the text
    }
    throw KubeApiError.fromResponse(req.method, req.path, status, parsed);
  }

  /** Closes idle keep-alive connections; requests after this fail. */
  close(): void {
    this.closed = true;
    this.agent?.destroy();
  }

  private async open(req: HttpRequest, timeoutMs: number, wholeRequest: boolean, sent: SentHeaders): Promise<IncomingMessage> {
    if (this.closed) throw new Error('Kubernetes client is closed');
    if (req.signal?.aborted) throw abortError(req.signal);
    const prepared = await this.prepare();
    // aborted while the credentials were read: the listener below would never fire
    if (req.signal?.aborted) throw abortError(req.signal);
    const url = this.url(req.path);
    const headers: OutgoingHttpHeaders = { ...prepared.headers, 'User-Agent': this.opts.userAgent ?? 'mesh-control-plane', ...req.headers };
    if (req.body !== undefined) headers['Content-Length'] = Buffer.byteLength(req.body);
    sent.headers = headers;
    const options: RequestOptions = { method: req.method, headers, agent: prepared.agent, servername: prepared.servername };
    const what = `${req.method} ${url.pathname}`;
    return new Promise<IncomingMessage>((resolve, reject) => {
      const r = (this.secure ? httpsRequest : httpRequest)(url, options);
      let settled = false;
      const timer = setTimeout(() => {
        r.destroy(Object.assign(new Error(`${what}: no answer from ${this.server.origin} within ${timeoutMs} ms`), { code: 'ETIMEDOUT' }));
      }, timeoutMs);
      const onAbort = (): void => {
        r.destroy(abortError(req.signal));
      };
      req.signal?.addEventListener('abort', onAbort, { once: true });
      const cleanup = (): void => {
        clearTimeout(timer);
        req.signal?.removeEventListener('abort', onAbort);
      };
      r.on('response', (res) => {
        settled = true;
        if (!wholeRequest) {
          cleanup();
          // The caller owns the stream from here; aborting the signal still tears it down.
          if (req.signal) {
            const onStreamAbort = (): void => {
              res.destroy(abortError(req.signal));
            };
            req.signal.addEventListener('abort', onStreamAbort, { once: true });
            res.once('close', () => req.signal?.removeEventListener('abort', onStreamAbort));
          }
        } else {
          res.once('close', cleanup);
        }
        resolve(res);
      });
      r.on('error', (err: NodeJS.ErrnoException) => {
        cleanup();
        if (settled) return;
        settled = true;
        if (err.name === 'AbortError') reject(err);
        else reject(new KubeUnreachableError(this.server.origin, `${what}: ${err.message}`, err.code, err));
      });
      r.end(req.body);
    });
  }

  /** Credentials and agent, re-read from the kubeconfig at most every `credentialTtlMs`. */
  private prepare(): Promise<Prepared> {
    const ttl = this.opts.credentialTtlMs ?? 10_000;
    const current = this.prepared;
    if (current && performance.now() - current.at < ttl) return Promise.resolve(current);
    this.preparing ??= this.readCredentials().finally(() => {
      this.preparing = undefined;
    });
    return this.preparing;
  }

  private async readCredentials(): Promise<Prepared> {
    const o: RequestOptions = { headers: {} };
    await this.kc.applyToHTTPSOptions(o);
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(o.headers ?? {})) if (v !== undefined) headers[k] = Array.isArray(v) ? v.join(', ') : String(v);
    if (o.auth) headers.Authorization = `Basic ${Buffer.from(o.auth).toString('base64')}`;
    const tls = { ca: o.ca, cert: o.cert, key: o.key, pfx: o.pfx, passphrase: o.passphrase, rejectUnauthorized: o.rejectUnauthorized };
    const key = createHash('sha256')
      .update(JSON.stringify([tls.ca, tls.cert, tls.key, tls.pfx, tls.passphrase, tls.rejectUnauthorized].map((v) => (Buffer.isBuffer(v) ? v.toString('base64') : v))))
      .digest('base64');
    if (!this.agent || key !== this.agentKey) {
      // New TLS material (a rotated client certificate): new connections from now on.
      const old = this.agent;
      this.agent = this.secure
        ? new HttpsAgent({ keepAlive: true, keepAliveMsecs: 30_000, ...stripUndefined(tls) })
        : new HttpAgent({ keepAlive: true, keepAliveMsecs: 30_000 });
      this.agentKey = key;
      if (old) setTimeout(() => old.destroy(), 60_000).unref();
    }
    const servername = (o as { servername?: string }).servername;
    const prepared: Prepared = { agent: this.agent, headers, servername, at: performance.now() };
    this.prepared = prepared;
    return prepared;
  }
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined && v !== null)) as Partial<T>;
}

function readBody(res: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    res.on('data', (c: Buffer) => chunks.push(c));
    res.on('end', () => resolve(Buffer.concat(chunks)));
    res.on('error', reject);
    res.on('aborted', () => reject(new Error('the connection closed before the answer was complete')));
  });
}

export function abortError(signal: AbortSignal | undefined): Error {
  const reason: unknown = signal?.reason;
  if (reason instanceof Error && reason.name === 'AbortError') return reason;
  const err = new Error(reason instanceof Error ? reason.message : 'the request was aborted');
  err.name = 'AbortError';
  return err;
}
