/**
 * `mesh-discovery request <method> <path> [<body>]`: one HTTP request to the daemon on this host.
 * Paths under `/metrics` go to the monitoring listener (127.0.0.1:15014), everything else to the
 * debug listener (127.0.0.1:8080), the default ports of `--monitoringAddr` and `--httpAddr`.
 * The command has no flags of its own (the spec lists none): run it where the daemon runs.
 *
 * The response body goes to standard output. A status of 400 or more, a connection failure or no
 * response within 30 seconds ends with `error: ...` and exit code 1.
 */
import http from 'node:http';
import { Command } from 'commander';
import { CliError, type Cli, type CommandOutcome } from './runner.js';

export const MONITORING_BASE_URL = 'http://127.0.0.1:15014';
export const DEBUG_BASE_URL = 'http://127.0.0.1:8080';
export const REQUEST_TIMEOUT_MS = 30_000;

export interface RequestTargets {
  readonly monitoring: string;
  readonly debug: string;
}

const DEFAULT_TARGETS: RequestTargets = { monitoring: MONITORING_BASE_URL, debug: DEBUG_BASE_URL };

/** The URL a daemon path is requested from. Throws `CliError` for a path without a leading `/`. */
export function requestUrl(path: string, targets: RequestTargets = DEFAULT_TARGETS): URL {
  if (!path.startsWith('/')) throw new CliError(`path must start with "/": ${JSON.stringify(path)}`);
  const metrics = path === '/metrics' || path.startsWith('/metrics/') || path.startsWith('/metrics?');
  return new URL(path, metrics ? targets.monitoring : targets.debug);
}

export interface DaemonResponse {
  readonly status: number;
  readonly statusText: string;
  readonly body: string;
}

/** Sends one request; rejects on connection errors and timeouts. */
export function sendRequest(method: string, url: URL, body?: string, timeoutMs = REQUEST_TIMEOUT_MS): Promise<DaemonResponse> {
  return new Promise((resolve, reject) => {
    const headers: http.OutgoingHttpHeaders = {};
    if (body !== undefined) {
      headers['content-type'] = /^\s*[[{]/.test(body) ? 'application/json' : 'text/plain; charset=utf-8';
      headers['content-length'] = Buffer.byteLength(body);
    }
    const req = http.request(url, { method, headers, timeout: timeoutMs }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', reject);
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, statusText: res.statusMessage ?? '', body: Buffer.concat(chunks).toString('utf8') }),
      );
    });
    req.on('timeout', () => req.destroy(new Error(`no response within ${timeoutMs / 1000}s`)));
    req.on('error', reject);
    req.end(body);
  });
}

export interface RequestArgs {
  readonly method: string;
  readonly path: string;
  readonly body?: string;
}

/** Runs the request command: the body on stdout, and an error outcome for HTTP or connection failures. */
export async function runRequest(args: RequestArgs, targets: RequestTargets = DEFAULT_TARGETS, timeoutMs = REQUEST_TIMEOUT_MS): Promise<CommandOutcome> {
  if (!/^[A-Za-z]+$/.test(args.method)) throw new CliError(`invalid method ${JSON.stringify(args.method)}`);
  const method = args.method.toUpperCase();
  const url = requestUrl(args.path, targets);
  let response: DaemonResponse;
  try {
    response = await sendRequest(method, url, args.body, timeoutMs);
  } catch (err) {
    throw new CliError(`${method} ${url.href}: ${(err as Error).message} (is the daemon running on this host?)`);
  }
  const stdout = response.body === '' || response.body.endsWith('\n') ? response.body : `${response.body}\n`;
  if (response.status >= 400) {
    return { stdout, stderr: `error: ${method} ${url.href}: ${response.status} ${response.statusText}\n`, exitCode: 1 };
  }
  return { stdout };
}

export function registerRequestCommand(program: Command, cli: Cli): Command {
  return program
    .command('request')
    .description("Makes one HTTP request to the daemon's metrics/debug endpoint.")
    .argument('<method>', 'HTTP method, e.g. GET or POST.')
    .argument('<path>', 'Path, e.g. /metrics (monitoring port 15014) or /debug/syncz (debug port 8080).')
    .argument('[body]', 'Request body.')
    .action(cli.action((method: string, path: string, body: string | undefined) => runRequest({ method, path, body })));
}
