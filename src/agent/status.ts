/**
 * The agent's HTTP servers for the kubelet and Prometheus:
 *
 *   health port (15021)  GET /healthz/ready: 200 when the workload certificate is held and the
 *                        proxy is ready (Envoy's admin /ready answers LIVE; in gRPC mode, the
 *                        bootstrap and certificate files are written), else 503 saying why
 *   status port (15020)  GET /stats/prometheus: the agent's own metrics, Envoy's
 *                        (admin /stats/prometheus) and the application's (if its scrape
 *                        annotations named a port), one after the other
 *                        GET /app-health/<container>/<readyz|livez|startupz>: the rewritten probes
 *
 * Every upstream fetch has a deadline and a byte bound; a part that cannot be had is left out of
 * the merged metrics (and counted), never fails the rest.
 */
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import type { Logger } from 'pino';
import { runProbe } from './probes.js';
import type { AppProber } from './settings.js';

const MAX_SCRAPE_BYTES = 32 << 20;

export interface Readiness {
  readonly ready: boolean;
  readonly reason: string;
}

export interface StatusServerOptions {
  readonly host: string;
  readonly healthPort: number;
  readonly statusPort: number;
  readonly readiness: () => Promise<Readiness>;
  readonly registry: Registry;
  /** Envoy's admin port (merged metrics); undefined when no Envoy runs. */
  readonly envoyAdminPort?: number;
  readonly appMetrics?: { readonly host: string; readonly port: number; readonly path: string };
  readonly appProbers: Readonly<Record<string, AppProber>>;
  readonly probeHost: string;
  readonly onScrapeFailure?: (source: 'envoy' | 'app') => void;
  readonly log: Logger;
}

/** GET http://host:port/path with a deadline and a byte bound; resolves to status and body. */
export function fetchText(host: string, port: number, path: string, timeoutMs: number, method = 'GET'): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host, port, path, method, timeout: timeoutMs }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        size += c.length;
        if (size > MAX_SCRAPE_BYTES) {
          req.destroy(new Error(`more than ${MAX_SCRAPE_BYTES} bytes`));
          return;
        }
        chunks.push(c);
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.once('timeout', () => req.destroy(new Error(`timed out after ${timeoutMs} ms`)));
    req.once('error', reject);
    req.end();
  });
}

function reply(res: ServerResponse, status: number, body: string, type = 'text/plain; charset=utf-8'): void {
  res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

export class StatusServers {
  private health: Server | undefined;
  private status: Server | undefined;

  constructor(private readonly o: StatusServerOptions) {}

  async start(): Promise<{ healthPort: number; statusPort: number }> {
    this.health = createServer((req, res) => void this.onHealth(req, res));
    this.status = createServer((req, res) => void this.onStatus(req, res));
    const listen = (s: Server, port: number): Promise<number> =>
      new Promise((resolve, reject) => {
        s.once('error', reject);
        s.listen(port, this.o.host, () => resolve((s.address() as AddressInfo).port));
      });
    return { healthPort: await listen(this.health, this.o.healthPort), statusPort: await listen(this.status, this.o.statusPort) };
  }

  async stop(): Promise<void> {
    for (const s of [this.health, this.status]) {
      if (!s) continue;
      s.closeAllConnections();
      await new Promise<void>((resolve) => s.close(() => resolve()));
    }
  }

  private async onHealth(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' || path !== '/healthz/ready') return reply(res, 404, 'not found: the health port serves GET /healthz/ready\n');
    const r = await this.o.readiness().catch((err: unknown) => ({ ready: false, reason: (err as Error).message }));
    reply(res, r.ready ? 200 : 503, `${r.reason}\n`);
  }

  private async onStatus(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    if (req.method !== 'GET') return reply(res, 405, 'only GET\n');
    if (path === '/stats/prometheus') return reply(res, 200, await this.mergedMetrics(), 'text/plain; version=0.0.4; charset=utf-8');
    const prober = this.o.appProbers[path];
    if (prober) {
      const r = await runProbe(prober, this.o.probeHost);
      return reply(res, r.ok ? 200 : r.status >= 400 && r.status < 600 ? r.status : 503, `${r.detail}\n`);
    }
    if (path.startsWith('/app-health/')) return reply(res, 404, `no application probe ${path} (the injector rewrote none by that name)\n`);
    return reply(res, 404, 'not found: the status port serves /stats/prometheus and /app-health/<container>/<probe>\n');
  }

  private async mergedMetrics(): Promise<string> {
    const parts: string[] = [await this.o.registry.metrics()];
    const scrape = async (source: 'envoy' | 'app', host: string, port: number, path: string): Promise<void> => {
      try {
        const r = await fetchText(host, port, path, 2_000);
        if (r.status !== 200) throw new Error(`HTTP ${r.status}`);
        parts.push(r.body);
      } catch (err) {
        this.o.onScrapeFailure?.(source);
        this.o.log.debug({ source }, `metrics of ${source} not merged: ${(err as Error).message}`);
      }
    };
    if (this.o.envoyAdminPort !== undefined) await scrape('envoy', '127.0.0.1', this.o.envoyAdminPort, '/stats/prometheus');
    if (this.o.appMetrics) await scrape('app', this.o.appMetrics.host, this.o.appMetrics.port, this.o.appMetrics.path);
    return parts.map((p) => (p.endsWith('\n') || p === '' ? p : `${p}\n`)).join('');
  }
}
