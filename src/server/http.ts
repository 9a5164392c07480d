import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { closeSilentConnections } from './first-bytes.js';
import type { ListenAddress } from './listen.js';

export type Handler = (req: IncomingMessage, url: URL, body: string) => Promise<HttpReply> | HttpReply;

export interface HttpReply {
  readonly status?: number;
  readonly contentType?: string;
  /** More response headers (content-disposition, cache-control …). */
  readonly headers?: Readonly<Record<string, string>>;
  readonly body: string | Buffer | object | Streamed;
}

/**
 * A response body written chunk by chunk as the iterable yields (chunked transfer encoding), each
 * chunk waiting until the client has taken the previous ones (backpressure); abandoned when the
 * client goes.
 */
export class Streamed {
  constructor(readonly chunks: AsyncIterable<string | Buffer>) {}
}

export interface RouteOptions {
  /**
   * Largest request body the route reads, bytes (default 0: none). A request announcing or sending
   * more is answered 413 and its connection closed, without reading the rest (docs/adr/0057).
   */
  readonly maxBodyBytes?: number;
}

/** A body past its route's bound. */
class BodyTooLarge extends Error {}

/**
 * A tiny router over node:http: exact paths, JSON by default, errors become 500 with a message.
 * Each route reads at most its `maxBodyBytes` of request body.
 */
export class HttpService {
  private readonly routes = new Map<string, { handler: Handler; maxBodyBytes: number }>();
  private server?: Server;

  /** `silentClosed`: told of each connection closed for sending nothing within FIRST_BYTES_MS. */
  constructor(
    private readonly name: string,
    private readonly silentClosed: () => void = () => undefined,
  ) {}

  route(path: string, handler: Handler, opts: RouteOptions = {}): this {
    this.routes.set(path, { handler, maxBodyBytes: opts.maxBodyBytes ?? 0 });
    return this;
  }

  paths(): string[] {
    return [...this.routes.keys()].sort();
  }

  async listen(addr: ListenAddress): Promise<number> {
    this.server = createServer((req, res) => void this.handle(req, res));
    closeSilentConnections(this.server, this.silentClosed);
    await new Promise<void>((resolve, reject) => {
      this.server!.once('error', reject);
      this.server!.listen(addr.port, addr.host || undefined, () => resolve());
    });
    const a = this.server.address();
    return typeof a === 'object' && a ? a.port : addr.port;
  }

  async close(): Promise<void> {
    const s = this.server;
    if (!s) return;
    s.closeAllConnections?.();
    await new Promise<void>((resolve) => s.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const route = this.routes.get(url.pathname);
    if (!route) {
      refuseBody(req, res, { status: 404, body: { error: `${this.name}: no handler for ${url.pathname}`, paths: this.paths() } });
      return;
    }
    const tooLarge = (): HttpReply => ({ status: 413, body: { error: `${this.name}: ${url.pathname} takes a request body of at most ${route.maxBodyBytes} bytes` } });
    const announced = Number(req.headers['content-length'] ?? 0);
    if (announced > route.maxBodyBytes) {
      refuseBody(req, res, tooLarge());
      return;
    }
    let body: string;
    try {
      body = await readBody(req, route.maxBodyBytes);
    } catch (e) {
      if (e instanceof BodyTooLarge) refuseBody(req, res, tooLarge());
      else req.destroy();
      return;
    }
    try {
      const reply = await route.handler(req, url, body);
      if (reply.body instanceof Streamed) await sendStreamed(res, reply, reply.body);
      else send(res, reply);
    } catch (e) {
      if (!res.headersSent) send(res, { status: 500, body: { error: e instanceof Error ? e.message : String(e) } });
      else res.destroy(); // a streamed body that failed half-way: the client sees a cut response, not a valid one
    }
  }
}

/** The request body, at most `max` bytes; rejects with BodyTooLarge past it (the rest is not read). */
function readBody(req: IncomingMessage, max: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let bytes = 0;
    const onData = (c: Buffer): void => {
      bytes += c.length;
      if (bytes <= max) {
        chunks.push(c);
        return;
      }
      // stop reading, but keep the socket: it carries the answer
      req.off('data', onData);
      req.pause();
      reject(new BodyTooLarge());
    };
    req.on('data', onData);
    req.once('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.once('error', reject);
  });
}

/**
 * Answers without reading what is left of the body, then closes the connection: a client sending
 * a large body costs the daemon no more than what it already read.
 */
function refuseBody(req: IncomingMessage, res: ServerResponse, reply: HttpReply): void {
  if (req.complete || (req.headers['content-length'] === undefined && req.headers['transfer-encoding'] === undefined)) {
    send(res, reply);
    return;
  }
  res.shouldKeepAlive = false;
  const socket = req.socket;
  res.once('finish', () => socket?.destroySoon());
  send(res, reply);
  req.pause();
}

async function sendStreamed(res: ServerResponse, reply: HttpReply, body: Streamed): Promise<void> {
  res.writeHead(reply.status ?? 200, { ...reply.headers, 'content-type': reply.contentType ?? 'application/json' });
  for await (const chunk of body.chunks) {
    if (res.destroyed) return; // leaving the loop ends the generator
    if (!res.write(chunk)) await drainedOrClosed(res);
  }
  if (!res.destroyed) res.end();
}

function drainedOrClosed(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

function send(res: ServerResponse, reply: HttpReply): void {
  const isText = typeof reply.body === 'string' || Buffer.isBuffer(reply.body);
  const payload = isText ? (reply.body as string | Buffer) : JSON.stringify(reply.body, null, 2) + '\n';
  res.writeHead(reply.status ?? 200, { ...reply.headers, 'content-type': reply.contentType ?? (isText ? 'text/plain; charset=utf-8' : 'application/json') });
  res.end(payload);
}
