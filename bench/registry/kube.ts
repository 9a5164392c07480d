/**
 * The benchmark's own small Kubernetes client: the current context of a kubeconfig (server, CA,
 * client certificate or token), JSON requests over one keep-alive agent, and a retry of throttled
 * (429) or failed (5xx, reset) requests. Kept apart from src/ so the benchmark loads nothing of the
 * daemon under test.
 */
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:https';
import { dirname, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';

interface Named {
  readonly name: string;
  readonly [k: string]: unknown;
}

export class KubeError extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

export class Kube {
  readonly server: URL;
  private readonly agent: Agent;
  private readonly headers: Record<string, string> = {};

  constructor(kubeconfig: string, maxSockets: number) {
    const doc = parseYaml(readFileSync(kubeconfig, 'utf8')) as Record<string, unknown>;
    const pick = (list: unknown, name: unknown, field: string): Record<string, unknown> => {
      const hit = (Array.isArray(list) ? (list as Named[]) : []).find((e) => e.name === name);
      if (!hit) throw new Error(`${kubeconfig}: no ${field} named ${String(name)}`);
      return hit[field] as Record<string, unknown>;
    };
    const ctx = pick(doc.contexts, doc['current-context'], 'context');
    const cluster = pick(doc.clusters, ctx.cluster, 'cluster');
    const user = pick(doc.users, ctx.user, 'user');
    const base = dirname(kubeconfig);
    const bytes = (data: unknown, file: unknown): Buffer | undefined =>
      typeof data === 'string' ? Buffer.from(data, 'base64') : typeof file === 'string' ? readFileSync(resolve(base, file)) : undefined;
    this.server = new URL(String(cluster.server));
    if (typeof user.token === 'string') this.headers.Authorization = `Bearer ${user.token}`;
    this.agent = new Agent({
      keepAlive: true,
      maxSockets,
      ca: bytes(cluster['certificate-authority-data'], cluster['certificate-authority']),
      cert: bytes(user['client-certificate-data'], user['client-certificate']),
      key: bytes(user['client-key-data'], user['client-key']),
    });
  }

  /** One JSON request; retries 429, 5xx and connection failures (up to 8 times, growing waits). */
  async json<T>(method: string, path: string, body?: unknown): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.once<T>(method, path, body);
      } catch (err) {
        const status = err instanceof KubeError ? err.status : 0;
        const retry = status === 0 || status === 429 || status >= 500;
        if (!retry || attempt >= 8) throw err;
        await new Promise((r) => setTimeout(r, Math.min(5000, 100 * 2 ** attempt)));
      }
    }
  }

  close(): void {
    this.agent.destroy();
  }

  private once<T>(method: string, path: string, body?: unknown): Promise<T> {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    return new Promise<T>((resolvePromise, reject) => {
      const req = request(
        new URL(path, this.server),
        {
          method,
          agent: this.agent,
          headers: {
            ...this.headers,
            Accept: 'application/json',
            ...(payload === undefined ? {} : { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(payload) }),
          },
          timeout: 60_000,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            const status = res.statusCode ?? 0;
            if (status >= 200 && status < 300) resolvePromise((text ? JSON.parse(text) : {}) as T);
            else reject(new KubeError(`${method} ${path}: HTTP ${status}: ${text.slice(0, 300)}`, status));
          });
          res.on('error', reject);
        },
      );
      req.on('timeout', () => req.destroy(new Error(`${method} ${path}: timed out`)));
      req.on('error', reject);
      req.end(payload);
    });
  }
}

/** Runs `task(i)` for i in [0, n) with at most `concurrency` in flight. */
export async function pool(n: number, concurrency: number, task: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < n) {
      const i = next++;
      await task(i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, n) }, worker));
}
