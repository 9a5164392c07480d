/**
 * ControlZ (docs/adr/0061): the daemon's introspection listener on `--ctrlz_address`:`--ctrlz_port`
 * (localhost:9876). A page for people (`/`, controlz-page.ts: one self-contained HTML file, no
 * scripts from elsewhere) over a JSON API that `meshctl admin log` and scripts use:
 *
 *   GET  /scopej                 log scopes: [{name, outputLevel, stackTraceLevel}]
 *   POST /scopej                 {scope, outputLevel?, stackTraceLevel?}: change one scope (or `all`, `default`)
 *   POST /scopej/reset           every scope back to output level info, no stack traces
 *   GET  /memj                   memory: process and V8 heap figures
 *   GET  /loopj                  event loop: delay percentiles and utilization since the last minute
 *   GET  /procj                  process: pid, uptime, CPU time, Node, platform, host
 *   GET  /versionj               build information
 *   GET  /envj                   environment (values of secret-looking names redacted)
 *   GET  /argj                   command-line arguments
 *   GET  /metricj                the Prometheus text of the daemon's metrics
 *   POST /signalj                {signal: "SIGTERM"}: a graceful stop, as `kill -TERM` would
 *   /debug/pprof/...             with `--profile`: CPU profiles and heap snapshots (profiler.ts)
 *
 * Changes (POST) must come as `application/json` and, from a browser, from the page's own origin:
 * another site's page cannot send either without a CORS preflight, which this server never grants.
 * The Host header must name this listener, an IP address or localhost (no DNS rebinding).
 */
import os from 'node:os';
import { monitorEventLoopDelay, performance, type EventLoopUtilization } from 'node:perf_hooks';
import v8 from 'node:v8';
import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import { LOG_LEVELS, LOGGER_SCOPES, resetScopeLevels, scopeLevels, scopeStackTraceLevels, setScopeLevel, setScopeStackTraceLevel } from '../log/logger.js';
import { ConfigError } from '../util/config-error.js';
import { getBuildInfo } from '../version/build-info.js';
import { CONTROLZ_PAGE } from './controlz-page.js';
import { HttpService, type HttpReply } from './http.js';
import { PPROF_INDEX, Profiler } from './profiler.js';

/** The JSON changes ControlZ takes are small; anything larger is refused unread (src/server/http.ts). */
const JSON_BODY = { maxBodyBytes: 4096 } as const;

const LOOP_RESOLUTION_MS = 10;
/** Milliseconds a tick of the delay histogram came late. */
const lag = (ns: number): number => (Number.isFinite(ns) ? Math.max(0, ns / 1e6 - LOOP_RESOLUTION_MS) : 0);

/** Signals the page offers; the daemon stops gracefully on each. */
export const CONTROLZ_SIGNALS = ['SIGTERM', 'SIGINT'] as const;

/** Environment variable names whose values are never shown. */
const SECRET_NAME = /(TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|PRIVATE|API_?KEY|_KEY$|^KEY$|AUTH)/i;

export interface ControlZOptions {
  /** The daemon's metrics as Prometheus text. */
  readonly metrics: () => Promise<{ contentType: string; text: string }>;
  /** Serve `/debug/pprof/` (`--profile`). */
  readonly profile: boolean;
  readonly env?: Readonly<Record<string, string | undefined>>;
  readonly argv?: readonly string[];
  /** Sends a signal to this process (tests replace it). */
  readonly kill?: (signal: (typeof CONTROLZ_SIGNALS)[number]) => void;
  /** Told of each connection closed for sending nothing within FIRST_BYTES_MS (first-bytes.ts). */
  readonly silentClosed?: () => void;
}

export interface ControlZ {
  readonly http: HttpService;
  close(): Promise<void>;
}

export function scopesView(): Array<{ name: string; outputLevel: string; stackTraceLevel: string }> {
  const out = scopeLevels();
  const stack = scopeStackTraceLevels();
  return LOGGER_SCOPES.map((name) => ({ name, outputLevel: out[name], stackTraceLevel: stack[name] }));
}

function redactedEnv(env: Readonly<Record<string, string | undefined>>): Array<{ name: string; value: string }> {
  return Object.keys(env)
    .sort()
    .map((name) => ({ name, value: SECRET_NAME.test(name) ? '<redacted>' : (env[name] ?? '') }));
}

const bad = (message: string): HttpReply => ({ status: 400, body: { error: message } });

function parseJson(body: string): Record<string, unknown> | undefined {
  try {
    const v = JSON.parse(body) as unknown;
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** Why a change request is refused (see the module comment), or undefined. */
export function changeRefusal(req: IncomingMessage): string | undefined {
  if (req.method !== 'POST') return `${req.method ?? ''} not allowed: use POST`;
  if (!(req.headers['content-type'] ?? '').toLowerCase().startsWith('application/json')) return 'changes must be sent as application/json';
  const origin = req.headers.origin;
  if (origin !== undefined && origin !== 'null') {
    let host: string;
    try {
      host = new URL(origin).host;
    } catch {
      return `bad Origin ${JSON.stringify(origin)}`;
    }
    if (host !== req.headers.host) return `cross-origin change refused (Origin ${origin})`;
  } else if (origin === 'null') return 'cross-origin change refused (Origin null)';
  return undefined;
}

/** True when the Host header names an IP address, localhost or `listen` (the configured host). */
export function hostAllowed(hostHeader: string | undefined, listen: string): boolean {
  if (!hostHeader) return true; // HTTP/1.0 clients; browsers always send one
  const host = hostHeader.startsWith('[') ? hostHeader.slice(1, hostHeader.indexOf(']')) : hostHeader.replace(/:\d+$/, '');
  return host === 'localhost' || isIP(host) !== 0 || (listen !== '' && host === listen);
}

/** Builds the ControlZ service (not yet listening). */
export function createControlZ(o: ControlZOptions, listenHost: string): ControlZ {
  const http = new HttpService('controlz', o.silentClosed);
  const env = o.env ?? process.env;
  const argv = o.argv ?? process.argv;
  const kill = o.kill ?? ((signal) => process.kill(process.pid, signal));
  // The histogram records the time between its timer's ticks, so the tick itself is taken off below.
  const delay = monitorEventLoopDelay({ resolution: LOOP_RESOLUTION_MS });
  delay.enable();
  let elu: EventLoopUtilization = performance.eventLoopUtilization();
  let window = Date.now();
  const profiler = new Profiler();

  const guard = (handler: (req: IncomingMessage, url: URL, body: string) => Promise<HttpReply> | HttpReply) => (req: IncomingMessage, url: URL, body: string) => {
    if (!hostAllowed(req.headers.host, listenHost)) return { status: 403, body: { error: `host ${JSON.stringify(req.headers.host)} is not this server` } };
    return handler(req, url, body);
  };
  const change = (handler: (body: Record<string, unknown>) => HttpReply) =>
    guard((req, _url, body) => {
      const refusal = changeRefusal(req);
      if (refusal) return { status: req.method === 'POST' ? 403 : 405, body: { error: refusal } };
      const parsed = parseJson(body === '' ? '{}' : body);
      if (!parsed) return bad('the body must be a JSON object');
      return handler(parsed);
    });

  http
    .route('/', guard(() => ({ contentType: 'text/html; charset=utf-8', headers: { 'cache-control': 'no-store', 'content-security-policy': "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'" }, body: CONTROLZ_PAGE })))
    .route(
      '/scopej',
      guard((req, url, body) => {
        if (req.method === 'GET' || req.method === 'HEAD') return { body: { levels: LOG_LEVELS, scopes: scopesView() } };
        return change((b) => {
          const scope = b.scope;
          if (typeof scope !== 'string' || scope === '') return bad('scope: a scope name is required');
          if (b.outputLevel === undefined && b.stackTraceLevel === undefined) return bad('give outputLevel, stackTraceLevel or both');
          try {
            if (b.outputLevel !== undefined) setScopeLevel(scope, String(b.outputLevel));
            if (b.stackTraceLevel !== undefined) setScopeStackTraceLevel(scope, String(b.stackTraceLevel));
          } catch (err) {
            if (err instanceof ConfigError) return bad(err.message);
            throw err;
          }
          return { body: { levels: LOG_LEVELS, scopes: scopesView() } };
        })(req, url, body);
      }),
      JSON_BODY,
    )
    .route(
      '/scopej/reset',
      change(() => {
        resetScopeLevels();
        return { body: { levels: LOG_LEVELS, scopes: scopesView() } };
      }),
      JSON_BODY,
    )
    .route(
      '/memj',
      guard(() => {
        const m = process.memoryUsage();
        const h = v8.getHeapStatistics();
        return {
          body: {
            rss: m.rss,
            heapTotal: m.heapTotal,
            heapUsed: m.heapUsed,
            external: m.external,
            arrayBuffers: m.arrayBuffers,
            heapSizeLimit: h.heap_size_limit,
            mallocedMemory: h.malloced_memory,
            nativeContexts: h.number_of_native_contexts,
            spaces: v8.getHeapSpaceStatistics().map((s) => ({ name: s.space_name, size: s.space_size, used: s.space_used_size })),
          },
        };
      }),
    )
    .route(
      '/loopj',
      guard(() => {
        const now = performance.eventLoopUtilization();
        const since = performance.eventLoopUtilization(now, elu);
        const body = {
          windowSeconds: (Date.now() - window) / 1000,
          utilization: since.utilization,
          delayMs: { min: lag(delay.min), mean: lag(delay.mean), p50: lag(delay.percentile(50)), p90: lag(delay.percentile(90)), p99: lag(delay.percentile(99)), max: lag(delay.max) },
        };
        // a sliding window of about a minute
        if (Date.now() - window > 60_000) {
          elu = now;
          window = Date.now();
          delay.reset();
        }
        return { body };
      }),
    )
    .route(
      '/procj',
      guard(() => {
        const cpu = process.cpuUsage();
        return {
          body: {
            pid: process.pid,
            ppid: process.ppid,
            uptimeSeconds: process.uptime(),
            startedAt: new Date(Date.now() - process.uptime() * 1000).toISOString(),
            cpuUserSeconds: cpu.user / 1e6,
            cpuSystemSeconds: cpu.system / 1e6,
            node: process.version,
            v8: process.versions.v8,
            platform: `${process.platform}/${process.arch}`,
            hostname: os.hostname(),
            cwd: process.cwd(),
            cpus: os.cpus().length,
            loadAverage: os.loadavg(),
            profiling: o.profile,
          },
        };
      }),
    )
    .route('/versionj', guard(() => ({ body: getBuildInfo() })))
    .route('/envj', guard(() => ({ body: redactedEnv(env) })))
    .route('/argj', guard(() => ({ body: [...argv] })))
    .route(
      '/metricj',
      guard(async () => {
        const m = await o.metrics();
        return { contentType: m.contentType, body: m.text };
      }),
    )
    .route(
      '/signalj',
      change((b) => {
        const signal = b.signal;
        if (!CONTROLZ_SIGNALS.includes(signal as never)) return bad(`signal: one of ${CONTROLZ_SIGNALS.join(', ')} is required`);
        // answer first, then signal: the stop closes this listener too
        setTimeout(() => kill(signal as (typeof CONTROLZ_SIGNALS)[number]), 100).unref();
        return { body: { sent: signal } };
      }),
      JSON_BODY,
    );

  if (o.profile) {
    http
      .route('/debug/pprof/', guard(() => ({ contentType: 'text/html; charset=utf-8', body: PPROF_INDEX })))
      .route(
        '/debug/pprof/profile',
        guard((_req, url) => {
          let seconds: number;
          try {
            seconds = Profiler.seconds(url.searchParams.get('seconds'));
          } catch (err) {
            return bad((err as Error).message);
          }
          return profiler.cpuProfile(seconds);
        }),
      )
      .route('/debug/pprof/heap', guard(() => profiler.heapSnapshot()));
  }

  return {
    http,
    async close() {
      delay.disable();
      await http.close();
    },
  };
}
