/**
 * The webhook server of meshd (`--httpsAddr`, :15017; the meshd Service's port 443): HTTPS with the
 * daemon's serving certificate (the DNS names the API server dials, `meshd.<ns>.svc`), taken anew
 * for each handshake so a renewed or rotated certificate is used at once.
 *
 *   POST /inject    AdmissionReview of a pod → JSON patch with the proxy (src/inject/admission.ts);
 *                   with INJECT_ENABLED=false an HTTP 500 saying so (the API server applies the
 *                   webhook's failurePolicy)
 *   POST /validate  AdmissionReview of a mesh config object → the daemon's own validation: refused
 *                   with the fields named, warnings returned as admission warnings
 *   GET  /ready     200 once the server listens
 *
 * Bodies are limited (an AdmissionReview carries at most two objects of the API server's 3 MiB
 * limit), so no request can hold more memory than that; a request that does not finish in time is
 * dropped. Every outcome is counted (sidecar_injection_*, cfg_validation_*); no request crashes the
 * server.
 */
import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createSecureContext, type SecureContext, type SecureContextOptions } from 'node:tls';
import type { Logger } from 'pino';
import { CONFIG_KINDS } from '../config/kinds.js';
import { admissionVerdict } from '../config/parse.js';
import { admissionReview, AdmissionReviewError, answerInjection, parseAdmissionReview, type AdmissionRequest, type AdmissionResponse } from '../inject/admission.js';
import type { InjectorState } from '../inject/source.js';
import type { Metrics } from '../metrics/metrics.js';
import type { ListenAddress } from './listen.js';
import { closeSilentConnections } from './first-bytes.js';

/** Largest request body read (bytes). */
export const MAX_ADMISSION_BODY = 8 << 20;
/** A request must arrive whole within this time. */
const REQUEST_TIMEOUT_MS = 30_000;

/** The serving material of the webhook server, read for each handshake. */
export interface WebhookTls {
  /** PEM key and certificate chain now in force; the same object until it changes. */
  current(): { readonly keyPem: string; readonly certChainPem: string };
  readonly ciphers?: string;
}

export interface WebhookServerOptions {
  readonly tls: WebhookTls;
  /** The injector's inputs now; undefined turns `/inject` off (INJECT_ENABLED=false). */
  readonly injector?: () => InjectorState;
  readonly metrics: Pick<
    Metrics,
    'injectionRequests' | 'injectionSuccess' | 'injectionSkip' | 'injectionFailure' | 'validationPassed' | 'validationFailed' | 'validationHttpError' | 'halfOpenClosed'
  >;
  readonly log: Logger;
}

const MESH_GROUPS = new Set(CONFIG_KINDS.map((k) => k.group));

class BodyTooLarge extends Error {}

function readBody(req: IncomingMessage, limit: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length'] ?? '0');
    if (declared > limit) {
      reject(new BodyTooLarge(`request body of ${declared} bytes is larger than ${limit}`));
      req.resume();
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > limit) {
        reject(new BodyTooLarge(`request body larger than ${limit} bytes`));
        req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  res.writeHead(status, { 'content-type': typeof body === 'string' ? 'text/plain; charset=utf-8' : 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

export class WebhookServer {
  private server: Server | undefined;
  private context: { material: object; context: SecureContext } | undefined;
  private listening = false;

  constructor(private readonly o: WebhookServerOptions) {}

  private contextOptions(material: { readonly keyPem: string; readonly certChainPem: string }): SecureContextOptions {
    return { key: material.keyPem, cert: material.certChainPem, minVersion: 'TLSv1.2', ...(this.o.tls.ciphers ? { ciphers: this.o.tls.ciphers } : {}) };
  }

  /** The TLS context of the material in force (built once per material); the server's default follows it. */
  private secureContext(): SecureContext {
    const material = this.o.tls.current();
    if (this.context?.material !== material) {
      this.context = { material, context: createSecureContext(this.contextOptions(material)) };
      this.server?.setSecureContext(this.contextOptions(material));
    }
    return this.context.context;
  }

  async listen(addr: ListenAddress): Promise<number> {
    const material = this.o.tls.current();
    const server = createServer(
      {
        ...this.contextOptions(material),
        SNICallback: (_name, cb) => {
          try {
            cb(null, this.secureContext());
          } catch (err) {
            cb(err as Error);
          }
        },
        requestTimeout: REQUEST_TIMEOUT_MS,
        headersTimeout: 10_000,
      },
      (req, res) => void this.handle(req, res),
    );
    this.server = server;
    // a connection that sends nothing (not even its TLS hello) is closed after FIRST_BYTES_MS, not Node's 120 s
    closeSilentConnections(server, () => this.o.metrics.halfOpenClosed.inc({ listener: 'https' }));
    this.context = { material, context: createSecureContext(this.contextOptions(material)) };
    server.on('tlsClientError', (err) => this.o.log.debug({ err: err.message }, 'webhooks: TLS handshake failed'));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(addr.port, addr.host || undefined, () => {
        server.off('error', reject);
        resolve();
      });
    });
    this.listening = true;
    const a = server.address();
    return typeof a === 'object' && a ? a.port : addr.port;
  }

  async close(): Promise<void> {
    const s = this.server;
    if (!s) return;
    this.listening = false;
    s.closeAllConnections();
    await new Promise<void>((resolve) => s.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    // A client without SNI (an IP address in the URL) gets the default context: keep it current too.
    this.secureContext();
    const path = (req.url ?? '/').split('?')[0];
    try {
      if (path === '/ready' && req.method === 'GET') {
        send(res, this.listening ? 200 : 503, this.listening ? 'ready\n' : 'not ready\n');
        return;
      }
      if (path === '/inject') {
        if (this.o.injector) await this.inject(req, res, this.o.injector);
        else this.injectionOff(res);
        return;
      }
      if (path === '/validate') {
        await this.validate(req, res);
        return;
      }
      send(res, 404, `no webhook at ${path}\n`);
    } catch (err) {
      // never reached by design; a last guard so that one request cannot end the server
      this.o.log.error({ err: err instanceof Error ? err.stack : String(err), path }, 'webhooks: request failed');
      if (!res.headersSent) send(res, 500, 'internal error\n');
    }
  }

  /**
   * `/inject` with INJECT_ENABLED=false: an HTTP error, so the API server applies the webhook's
   * failurePolicy (Fail refuses the pod, Ignore admits it unmodified), with a text it shows the user
   * (it shows the body of a 500, not of a 404). Counted as a failure with reason `disabled`.
   */
  private injectionOff(res: ServerResponse): void {
    this.o.metrics.injectionRequests.inc();
    this.o.metrics.injectionFailure.inc({ reason: 'disabled' });
    send(res, 500, 'sidecar injection is off in this meshd (INJECT_ENABLED=false): turn it on, or remove the MutatingWebhookConfiguration that sends pods here\n');
  }

  private async review(req: IncomingMessage, res: ServerResponse, onError: (status: number) => void): Promise<AdmissionRequest | undefined> {
    if (req.method !== 'POST') {
      onError(405);
      send(res, 405, 'POST an AdmissionReview\n');
      return undefined;
    }
    let body: string;
    try {
      body = await readBody(req, MAX_ADMISSION_BODY);
    } catch (err) {
      const status = err instanceof BodyTooLarge ? 413 : 400;
      onError(status);
      if (!res.headersSent && !res.destroyed) send(res, status, `${(err as Error).message}\n`);
      return undefined;
    }
    try {
      return parseAdmissionReview(body);
    } catch (err) {
      if (!(err instanceof AdmissionReviewError)) throw err;
      onError(400);
      send(res, 400, `malformed AdmissionReview: ${err.message}\n`);
      return undefined;
    }
  }

  private async inject(req: IncomingMessage, res: ServerResponse, injector: () => InjectorState): Promise<void> {
    const m = this.o.metrics;
    m.injectionRequests.inc();
    const r = await this.review(req, res, () => m.injectionFailure.inc({ reason: 'request' }));
    if (!r) return;
    const state = injector();
    if ('unavailable' in state) {
      m.injectionFailure.inc({ reason: 'config' });
      this.o.log.warn({ uid: r.uid, namespace: r.namespace }, `inject: ${state.unavailable}`);
      send(res, 500, `sidecar injection unavailable: ${state.unavailable}\n`);
      return;
    }
    let answer;
    try {
      answer = answerInjection(r, state.inputs);
    } catch (err) {
      if (err instanceof AdmissionReviewError) {
        m.injectionFailure.inc({ reason: 'request' });
        send(res, 400, `malformed AdmissionReview: ${err.message}\n`);
        return;
      }
      m.injectionFailure.inc({ reason: 'internal' });
      this.o.log.error({ uid: r.uid, err: err instanceof Error ? err.stack : String(err) }, 'inject: internal error');
      send(res, 500, `sidecar injection failed: internal error (${err instanceof Error ? err.message : String(err)})\n`);
      return;
    }
    const pod = (r.object as { metadata?: { name?: string; generateName?: string } } | undefined)?.metadata;
    const who = `${r.namespace ?? ''}/${pod?.name || pod?.generateName || ''}`;
    if (answer.outcome === 'success') {
      m.injectionSuccess.inc();
      this.o.log.debug({ pod: who }, 'inject: injected');
    } else if (answer.outcome === 'skip') {
      m.injectionSkip.inc({ reason: answer.reason });
      this.o.log.debug({ pod: who, reason: answer.reason }, 'inject: skipped');
    } else {
      m.injectionFailure.inc({ reason: answer.reason });
      this.o.log.info({ pod: who, reason: answer.response.status?.message }, 'inject: refused');
    }
    send(res, 200, admissionReview(answer.response));
  }

  private async validate(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const m = this.o.metrics;
    const r = await this.review(req, res, (status) => m.validationHttpError.inc({ status: String(status) }));
    if (!r) return;
    send(res, 200, admissionReview(this.verdict(r)));
  }

  private verdict(r: AdmissionRequest): AdmissionResponse {
    const m = this.o.metrics;
    const ok: AdmissionResponse = { uid: r.uid, allowed: true };
    if ((r.operation !== 'CREATE' && r.operation !== 'UPDATE') || !MESH_GROUPS.has(r.kind.group) || r.subResource) return ok;
    const labels = { group: r.kind.group, version: r.kind.version, resource: r.resource?.resource ?? r.kind.kind };
    if (r.object === null || typeof r.object !== 'object') {
      m.validationFailed.inc({ ...labels, reason: 'no_object' });
      return { uid: r.uid, allowed: false, status: { code: 400, reason: 'BadRequest', message: 'request.object: missing' } };
    }
    const v = admissionVerdict(r.object, r.namespace || 'default');
    const warnings = v.warnings.map((w) => `${w.path}: ${w.message}`);
    if (v.errors.length > 0) {
      m.validationFailed.inc({ ...labels, reason: 'invalid' });
      const meta = (r.object as { metadata?: { name?: string } }).metadata;
      const what = `${r.kind.kind} ${r.namespace ? `${r.namespace}/` : ''}${meta?.name ?? r.name ?? ''}`;
      return {
        uid: r.uid,
        allowed: false,
        status: { code: 400, reason: 'Invalid', message: `configuration is invalid: ${what}: ${v.errors.map((e) => `${e.path}: ${e.message}`).join('; ')}` },
        ...(warnings.length > 0 ? { warnings } : {}),
      };
    }
    m.validationPassed.inc(labels);
    return warnings.length > 0 ? { ...ok, warnings } : ok;
  }
}
