import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { ListenAddress } from './listen.js';

export type Handler = (req: IncomingMessage, url: URL, body: string) => Promise<HttpReply> | HttpReply;

export interface HttpReply {
  readonly status?: number;
  readonly contentType?: string;
  /** More response headers (content-disposition, cache-control …). */
  readonly headers?: Readonly<Record<string, string>>;
  readonly body: string | Buffer | object;
}

/** A tiny router over node:http: exact paths, JSON by default, errors become 500 with a message. */
export class HttpService {
  private readonly routes = new Map<string, Handler>();
  private server?: Server;

  constructor(private readonly name: string) {}

  route(path: string, handler: Handler): this {
    this.routes.set(path, handler);
    return this;
  }

  paths(): string[] {
    return [...this.routes.keys()].sort();
  }

  async listen(addr: ListenAddress): Promise<number> {
    this.server = createServer((req, res) => void this.handle(req, res));
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
    const handler = this.routes.get(url.pathname);
    if (!handler) {
      send(res, { status: 404, body: { error: `${this.name}: no handler for ${url.pathname}`, paths: this.paths() } });
      return;
    }
    try {
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      send(res, await handler(req, url, Buffer.concat(chunks).toString('utf8')));
    } catch (e) {
      send(res, { status: 500, body: { error: e instanceof Error ? e.message : String(e) } });
    }
  }
}

function send(res: ServerResponse, reply: HttpReply): void {
  const isText = typeof reply.body === 'string' || Buffer.isBuffer(reply.body);
  const payload = isText ? (reply.body as string | Buffer) : JSON.stringify(reply.body, null, 2) + '\n';
  res.writeHead(reply.status ?? 200, { ...reply.headers, 'content-type': reply.contentType ?? (isText ? 'text/plain; charset=utf-8' : 'application/json') });
  res.end(payload);
}
