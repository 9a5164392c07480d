/**
 * Debug endpoints on the HTTP address (ENABLE_DEBUG_ON_HTTP): `/debug` lists them, and each view
 * of debug-views.ts is served at `/debug/<name>` (query parameters as the view reads them).
 */
import { jsonArrayChunks } from '../util/json-stream.js';
import { debugViews, synczEntries, type DebugDeps } from './debug-views.js';
import { Streamed, type HttpService } from './http.js';

export type { DebugDeps } from './debug-views.js';

export function registerDebug(http: HttpService, d: DebugDeps): void {
  http.route('/debug', () => ({ body: { endpoints: http.paths() } }));
  for (const [name, view] of debugViews(d)) {
    if (name === 'syncz') {
      // tens of MB with large subscriptions: rendered entry by entry and streamed (docs/adr/0113)
      http.route('/debug/syncz', () => ({ body: new Streamed(jsonArrayChunks(synczEntries(d))) }));
      continue;
    }
    http.route(`/debug/${name}`, (_req, url) => {
      const reply = view(url.searchParams);
      return { status: reply.status, body: reply.body as object };
    });
  }
}
