/**
 * What `--vklog` shows: the Kubernetes requests meshctl makes, on standard error.
 *
 *   level 0–5  nothing;
 *   level ≥ 6  one line per request: method, URL, status and duration
 *              (`kube: GET https://10.0.0.1:6443/api/v1/namespaces?limit=500 200 OK in 12ms`);
 *   level ≥ 8  the request and response headers below each line, with the credentials of
 *              Authorization redacted (`Authorization: Bearer <redacted>`) and cookies left out.
 *
 * Bodies are never shown: they can hold Secrets. The redaction is the transport's
 * (src/kube/transport.ts `redactCredentials`), so no observer ever sees a token.
 */
import { STATUS_CODES } from 'node:http';
import type { RequestInfo, RequestObserver } from '../../kube/transport.js';

export const VKLOG_REQUESTS = 6;
export const VKLOG_HEADERS = 8;

const headerLines = (title: string, headers: Readonly<Record<string, string>> | undefined): string[] =>
  headers ? [`kube:   ${title}:`, ...Object.entries(headers).map(([name, value]) => `kube:     ${name}: ${value}`)] : [];

/** The lines of one request at `level`. */
export function formatKubeRequest(info: RequestInfo, level: number): string {
  const ms = Math.round(info.durationMs);
  const outcome = info.status === 0 ? `failed after ${ms}ms${info.error ? `: ${info.error}` : ''}` : `${info.status} ${STATUS_CODES[info.status] ?? ''} in ${ms}ms`.replace('  ', ' ');
  const lines = [`kube: ${info.method} ${info.url} ${outcome}`];
  if (level >= VKLOG_HEADERS) lines.push(...headerLines('request headers', info.requestHeaders), ...headerLines('response headers', info.responseHeaders));
  return `${lines.join('\n')}\n`;
}

/** The request observer for `--vklog <level>`, writing to `write`; undefined below level 6. */
export function kubeRequestLog(level: number, write: (text: string) => void): { onRequest?: RequestObserver; observeHeaders: boolean } {
  if (level < VKLOG_REQUESTS) return { observeHeaders: false };
  return { onRequest: (info) => write(formatKubeRequest(info, level)), observeHeaders: level >= VKLOG_HEADERS };
}
