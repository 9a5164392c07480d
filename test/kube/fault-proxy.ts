/**
 * A reverse proxy between a client under test and the real API server, to inject network faults
 * a test cannot get otherwise: cut every open connection, refuse new ones, freeze open streams
 * without closing them (a half-open connection), or make the next watch ask the real API server
 * for an older resourceVersion. The client speaks plain HTTP to the proxy; the proxy speaks HTTPS
 * with the admin credentials to the API server. Every answer comes from the real server.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { Socket } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import type { KubeconfigCredentials } from '../support/cluster.js';

export interface ProxiedRequest {
  readonly method: string;
  readonly path: string;
  readonly watch: boolean;
}

export class FaultProxy {
  readonly requests: ProxiedRequest[] = [];
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();
  private readonly upstreams = new Set<IncomingMessage>();
  /** Chunks held back from frozen streams, with the response they belong to. */
  private readonly held = new Map<IncomingMessage, { readonly res: ServerResponse; readonly chunks: Buffer[] }>();
  private refusing = false;
  /** Streams frozen by `freeze(true)`: those open at that moment. */
  private frozen = new Set<IncomingMessage>();
  private nextWatchRV: string | undefined;
  private port = 0;

  constructor(private readonly creds: KubeconfigCredentials) {
    this.server = createServer((req, res) => this.forward(req, res));
    this.server.on('connection', (socket) => {
      if (this.refusing) {
        socket.destroy();
        return;
      }
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
  }

  async listen(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    const addr = this.server.address();
    this.port = typeof addr === 'object' && addr ? addr.port : 0;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** A kubeconfig that reaches the API server through this proxy. */
  kubeConfig(): KubeConfig {
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'proxy', server: this.url, skipTLSVerify: true }],
      users: [{ name: 'proxy' }],
      contexts: [{ name: 'proxy', cluster: 'proxy', user: 'proxy' }],
      currentContext: 'proxy',
    });
    return kc;
  }

  /** Destroys every open connection (clients see a reset). */
  cut(): void {
    for (const s of this.sockets) s.destroy();
    for (const u of this.upstreams) u.destroy();
  }

  /** While on, new connections are reset at once (as if the server were unreachable). */
  refuse(on: boolean): void {
    this.refusing = on;
    if (on) this.cut();
  }

  /** Streams open now stop delivering data but stay open, until `freeze(false)`; new ones work. */
  freeze(on: boolean): void {
    if (on) {
      this.frozen = new Set(this.upstreams);
      return;
    }
    this.frozen.clear();
    for (const [u, h] of this.held) {
      for (const c of h.chunks) h.res.write(c);
      u.resume();
    }
    this.held.clear();
  }

  /** The next watch request is sent to the API server with this resourceVersion instead. */
  rewriteNextWatchResourceVersion(rv: string): void {
    this.nextWatchRV = rv;
  }

  watchesSince(index: number): ProxiedRequest[] {
    return this.requests.slice(index).filter((r) => r.watch);
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private forward(req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url ?? '/', this.creds.server);
    const watch = url.searchParams.get('watch') === 'true';
    if (watch && this.nextWatchRV !== undefined) {
      url.searchParams.set('resourceVersion', this.nextWatchRV);
      this.nextWatchRV = undefined;
    }
    this.requests.push({ method: req.method ?? 'GET', path: url.pathname + url.search, watch });
    const headers = { ...req.headers, host: url.host };
    delete headers.authorization;
    const up = httpsRequest(url, { method: req.method, headers, ca: this.creds.ca, cert: this.creds.cert, key: this.creds.key }, (upRes) => {
      this.upstreams.add(upRes);
      upRes.on('close', () => {
        this.upstreams.delete(upRes);
        this.held.delete(upRes);
      });
      res.writeHead(upRes.statusCode ?? 502, upRes.headers);
      res.flushHeaders();
      upRes.on('data', (chunk: Buffer) => {
        if (this.frozen.has(upRes)) {
          upRes.pause();
          const h = this.held.get(upRes) ?? { res, chunks: [] };
          h.chunks.push(chunk);
          this.held.set(upRes, h);
          return;
        }
        res.write(chunk);
      });
      upRes.on('end', () => res.end());
      upRes.on('error', () => res.destroy());
    });
    up.on('error', () => res.destroy());
    res.on('close', () => up.destroy());
    req.pipe(up);
  }
}
