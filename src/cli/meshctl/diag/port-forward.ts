/**
 * A local port forwarded to a pod's port through the API server (the pods/portforward subresource
 * over WebSocket, as kubectl port-forward does; client-node's implementation), and requests to a
 * pod's HTTP port through one: the proxy admin port (15000), ControlZ (9876).
 *
 * `forwardPort` listens on `address` (`localhost` tries 127.0.0.1 and ::1 and fails only if
 * neither binds, as the DG flags of the spec ask) and opens one forward per accepted connection.
 */
import net from 'node:net';
import { request } from 'node:http';
import type { KubeClient } from '../../../kube/client.js';
import { CliError } from '../../runner.js';

export interface Forward {
  /** The local port (on every bound address). */
  readonly port: number;
  /** The addresses bound (`127.0.0.1`, `::1` …). */
  readonly addresses: readonly string[];
  close(): Promise<void>;
}

/** Listens on `address`:`port` (0: any free port) and forwards each connection to `pod`:`podPort`. */
export async function forwardPort(client: KubeClient, pod: { namespace: string; name: string }, podPort: number, address = 'localhost', port = 0): Promise<Forward> {
  const { PortForward } = await import('@kubernetes/client-node');
  const pf = new PortForward(client.config, true);
  const onConnection = (socket: net.Socket): void => {
    socket.on('error', () => socket.destroy());
    pf.portForward(pod.namespace, pod.name, [podPort], socket, null, socket).catch((err: unknown) => {
      socket.destroy(err instanceof Error ? err : new Error(String(err)));
    });
  };
  const hosts = address === 'localhost' ? ['127.0.0.1', '::1'] : [address];
  const servers: net.Server[] = [];
  const bound: string[] = [];
  let chosen = port;
  const failures: string[] = [];
  for (const host of hosts) {
    const server = net.createServer(onConnection);
    try {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(chosen, host, () => resolve());
      });
      chosen = (server.address() as net.AddressInfo).port;
      servers.push(server);
      bound.push(host);
    } catch (err) {
      failures.push(`${host}: ${(err as Error).message}`);
    }
  }
  if (servers.length === 0) throw new CliError(`cannot listen on ${address}:${port}: ${failures.join('; ')}`);
  return {
    port: chosen,
    addresses: bound,
    close: () => Promise.all(servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve())))).then(() => undefined),
  };
}

export interface PodHttpReply {
  readonly status: number;
  readonly body: string;
}

export interface HttpRequestOptions {
  readonly method?: string;
  readonly body?: string;
  readonly contentType?: string;
  readonly timeoutMs?: number;
}

/** One HTTP request to `host`:`port`; rejects with the socket's error or a timeout naming its bound. */
export function httpRequest(host: string, port: number, path: string, options: HttpRequestOptions = {}): Promise<PodHttpReply> {
  const timeoutMs = options.timeoutMs ?? 30_000;
  return new Promise<PodHttpReply>((resolve, reject) => {
    const req = request(
      { host, port, path, method: options.method ?? 'GET', headers: options.body !== undefined ? { 'content-type': options.contentType ?? 'application/json' } : {}, timeout: timeoutMs },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs / 1000}s`)));
    req.on('error', reject);
    req.end(options.body);
  });
}

/** One HTTP request to `pod`:`podPort` through a port-forward; a CliError when the pod cannot be reached. */
export async function podHttp(client: KubeClient, pod: { namespace: string; name: string }, podPort: number, path: string, options: HttpRequestOptions = {}): Promise<PodHttpReply> {
  const forward = await forwardPort(client, pod, podPort, '127.0.0.1');
  try {
    return await httpRequest('127.0.0.1', forward.port, path, options);
  } catch (err) {
    throw new CliError(`cannot reach port ${podPort} of pod ${pod.namespace}/${pod.name} through the API server: ${(err as Error).message}`);
  } finally {
    await forward.close();
  }
}
