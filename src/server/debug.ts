/**
 * Debug endpoints on the HTTP address (ENABLE_DEBUG_ON_HTTP): `/debug` lists them, and each view
 * of debug-views.ts is served at `/debug/<name>` (query parameters as the view reads them), to
 * loopback clients only unless UNSAFE_ENABLE_ADMIN_ENDPOINTS is true (ADR 0112).
 */
import type { IncomingMessage } from 'node:http';
import { isStreamed, jsonChunks } from '../util/json-stream.js';
import { debugViews, type DebugDeps } from './debug-views.js';
import { Streamed, type HttpService } from './http.js';

export type { DebugDeps } from './debug-views.js';

export interface DebugAccess {
  /** UNSAFE_ENABLE_ADMIN_ENDPOINTS: answer clients on any address; otherwise loopback clients only. */
  readonly allowRemote: boolean;
}

/** 127.0.0.0/8 and ::1, also as IPv4-mapped IPv6 addresses. */
export function isLoopback(address: string | undefined): boolean {
  if (!address) return false;
  const v4 = address.startsWith('::ffff:') ? address.slice(7) : address;
  return v4.startsWith('127.') || address === '::1';
}

const REMOTE_REFUSED = {
  status: 403,
  body: { error: 'the debug interface answers loopback clients only; set UNSAFE_ENABLE_ADMIN_ENDPOINTS=true on the daemon to serve it to other addresses (it is not authenticated; not for production), or use meshctl, which reads the debug views over the xDS debug channel' },
};

export function registerDebug(http: HttpService, d: DebugDeps, access: DebugAccess = { allowRemote: false }): void {
  const allowed = (req: IncomingMessage): boolean => access.allowRemote || isLoopback(req.socket.remoteAddress);
  http.route('/debug', (req) => (allowed(req) ? { body: { endpoints: http.paths() } } : REMOTE_REFUSED));
  for (const [name, view] of debugViews(d)) {
    http.route(`/debug/${name}`, async (req, url) => {
      if (!allowed(req)) return REMOTE_REFUSED;
      const reply = await view(url.searchParams);
      // tens of MB with large subscriptions or configs: rendered item by item and streamed (docs/adr/0113, 0184)
      if (isStreamed(reply.body)) return { status: reply.status, body: new Streamed(jsonChunks(reply.body)) };
      return { status: reply.status, body: reply.body as object };
    });
  }
}
