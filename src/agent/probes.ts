/**
 * The application probes the injector rewrote to the agent (`/app-health/<container>/<kind>`): the
 * agent runs the original HTTP or TCP probe against the application, from the proxy's uid (which
 * the capture rules let through), on the pod IP or on localhost (REWRITE_PROBE_LEGACY_LOCALHOST_
 * DESTINATION). Success is what the kubelet counts as success: an HTTP status from 200 to 399, or
 * a TCP connection made. Each probe is bounded by its timeout (default 1 s, as the kubelet's).
 */
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { connect } from 'node:net';
import type { AppProber } from './settings.js';

export interface ProbeResult {
  readonly ok: boolean;
  /** The application's status code (HTTP probes), else 200/503 for the agent's answer. */
  readonly status: number;
  readonly detail: string;
}

export function runProbe(p: AppProber, host: string): Promise<ProbeResult> {
  const timeoutMs = (p.timeoutSeconds ?? 1) * 1000;
  if (p.tcpSocket) {
    const target = p.tcpSocket.host || host;
    return new Promise((resolve) => {
      const sock = connect({ host: target, port: p.tcpSocket!.port, timeout: timeoutMs });
      const done = (r: ProbeResult): void => {
        sock.destroy();
        resolve(r);
      };
      sock.once('connect', () => done({ ok: true, status: 200, detail: `tcp ${target}:${p.tcpSocket!.port}: connected` }));
      sock.once('timeout', () => done({ ok: false, status: 503, detail: `tcp ${target}:${p.tcpSocket!.port}: timed out after ${timeoutMs} ms` }));
      sock.once('error', (err) => done({ ok: false, status: 503, detail: `tcp ${target}:${p.tcpSocket!.port}: ${err.message}` }));
    });
  }
  const h = p.httpGet!;
  const https = h.scheme === 'HTTPS';
  const headers: Record<string, string> = { 'user-agent': 'kube-probe/mesh-agent' };
  for (const x of h.httpHeaders ?? []) headers[x.name.toLowerCase() === 'host' ? 'host' : x.name] = x.value;
  const target = h.host || host;
  return new Promise((resolve) => {
    const req = (https ? httpsRequest : httpRequest)(
      { host: target, port: h.port, path: h.path || '/', method: 'GET', headers, timeout: timeoutMs, ...(https ? { rejectUnauthorized: false } : {}) },
      (res) => {
        res.resume();
        const code = res.statusCode ?? 0;
        resolve({ ok: code >= 200 && code < 400, status: code, detail: `http ${target}:${h.port}${h.path || '/'}: ${code}` });
      },
    );
    req.once('timeout', () => req.destroy(new Error(`timed out after ${timeoutMs} ms`)));
    req.once('error', (err) => resolve({ ok: false, status: 503, detail: `http ${target}:${h.port}${h.path || '/'}: ${err.message}` }));
    req.end();
  });
}
