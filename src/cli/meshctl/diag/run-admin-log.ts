/**
 * `meshctl admin log`: lists and sets the log scopes of running meshd pods through their ControlZ
 * JSON API (docs/adr/0061; `/scopej`, `/scopej/reset`), reached on `--ctrlz_port` through one
 * port-forward per pod. Without a pod name every meshd pod of the mesh namespace that `--selector`
 * matches is changed; a pod that cannot be reached is reported by name and the others are still
 * done (exit code 1).
 */
import type { KubeClient } from '../../../kube/client.js';
import { renderDocument, renderTable } from '../../output.js';
import { CliError, type CommandOutcome } from '../../runner.js';
import { forwardPort, httpRequest, type HttpRequestOptions, type PodHttpReply } from './port-forward.js';
import type { Pod } from './pods.js';

/** The levels `--level` and `--stack-trace-level` take (spec part 1, admin log). */
export const ADMIN_LOG_LEVELS = ['none', 'error', 'warn', 'info', 'debug'] as const;
export type AdminLogLevel = (typeof ADMIN_LOG_LEVELS)[number];

export interface ScopeLevel {
  readonly scope: string;
  readonly level: AdminLogLevel;
}

export interface LogScope {
  readonly name: string;
  readonly outputLevel: string;
  readonly stackTraceLevel: string;
}

/** What to change; nothing given lists the scopes. */
export interface LogChange {
  readonly levels: readonly ScopeLevel[];
  readonly stackTraceLevels: readonly ScopeLevel[];
  readonly reset: boolean;
}

/** One request to a ControlZ listener: a path and options, the reply back. */
export type ControlzCall = (path: string, options?: HttpRequestOptions) => Promise<PodHttpReply>;

const SCOPE = /^[a-z0-9][a-z0-9_.-]*$/i;

/** `<scope>:<level>[,<scope>:<level>…]` of `flag`; a CliError naming the flag and the bad item. */
export function parseScopeLevels(flag: string, text: string | undefined): ScopeLevel[] {
  if (text === undefined) return [];
  const out: ScopeLevel[] = [];
  for (const item of text.split(',').map((s) => s.trim())) {
    const colon = item.lastIndexOf(':');
    if (colon <= 0) throw new CliError(`${flag}: ${JSON.stringify(item)} is not <scope>:<level> (e.g. ads:debug)`);
    const scope = item.slice(0, colon);
    const level = item.slice(colon + 1);
    if (!SCOPE.test(scope)) throw new CliError(`${flag}: ${JSON.stringify(scope)} is not a scope name`);
    if (!(ADMIN_LOG_LEVELS as readonly string[]).includes(level)) throw new CliError(`${flag}: unknown level ${JSON.stringify(level)} for scope ${scope} (choose from ${ADMIN_LOG_LEVELS.join(', ')})`);
    out.push({ scope, level: level as AdminLogLevel });
  }
  return out;
}

/** The change the flags ask for; a CliError for a combination the command refuses. */
export function logChange(flags: { readonly level?: string; readonly stackTraceLevel?: string; readonly reset: boolean }): LogChange {
  const levels = parseScopeLevels('--level', flags.level);
  const stackTraceLevels = parseScopeLevels('--stack-trace-level', flags.stackTraceLevel);
  if (flags.reset && (levels.length > 0 || stackTraceLevels.length > 0)) throw new CliError('--reset cannot be combined with --level or --stack-trace-level');
  return { levels, stackTraceLevels, reset: flags.reset };
}

function scopesOf(reply: PodHttpReply, what: string): LogScope[] {
  let body: unknown;
  try {
    body = JSON.parse(reply.body);
  } catch {
    throw new Error(`${what}: HTTP ${reply.status}, not JSON (is ${what} a ControlZ port?)`);
  }
  const error = (body as { error?: unknown } | null)?.error;
  if (reply.status !== 200) throw new Error(`${what}: HTTP ${reply.status}${typeof error === 'string' ? `: ${error}` : ''}`);
  const scopes = (body as { scopes?: unknown } | null)?.scopes;
  if (!Array.isArray(scopes)) throw new Error(`${what}: the reply holds no scopes`);
  return scopes as LogScope[];
}

/**
 * Applies `change` through `call` (reset, then each scope's levels in one request) and returns the
 * scopes as the daemon holds them afterwards. Errors name the request and the daemon's reason.
 */
export async function applyLogChange(call: ControlzCall, change: LogChange): Promise<LogScope[]> {
  if (change.reset) scopesOf(await call('/scopej/reset', { method: 'POST', body: '{}' }), 'POST /scopej/reset');
  const perScope = new Map<string, { outputLevel?: string; stackTraceLevel?: string }>();
  for (const l of change.levels) perScope.set(l.scope, { ...perScope.get(l.scope), outputLevel: l.level });
  for (const l of change.stackTraceLevels) perScope.set(l.scope, { ...perScope.get(l.scope), stackTraceLevel: l.level });
  for (const [scope, levels] of perScope) {
    scopesOf(await call('/scopej', { method: 'POST', body: JSON.stringify({ scope, ...levels }) }), `scope ${scope}`);
  }
  return scopesOf(await call('/scopej'), 'GET /scopej');
}

export interface AdminLogInput {
  /** A pod name of the mesh namespace; else every pod `selector` matches there. */
  readonly pod?: string;
  readonly selector: string;
  readonly namespace: string;
  readonly ctrlzPort: number;
  readonly change: LogChange;
  readonly output: 'short' | 'json' | 'yaml';
  readonly timeoutMs?: number;
}

/** `{<pod>.<namespace>: scopes}` of the pods that answered, and one line per pod that did not. */
export interface AdminLogResult {
  readonly scopes: Readonly<Record<string, readonly LogScope[]>>;
  readonly failures: readonly string[];
}

async function targetPods(kube: KubeClient, input: AdminLogInput): Promise<Array<{ namespace: string; name: string }>> {
  if (input.pod !== undefined) {
    const pod = await kube.find<Pod>({ apiVersion: 'v1', kind: 'Pod', namespace: input.namespace, name: input.pod });
    if (!pod) throw new CliError(`pod ${input.namespace}/${input.pod} not found`);
    return [{ namespace: input.namespace, name: input.pod }];
  }
  const list = await kube.list<Pod>('v1', 'Pod', { namespace: input.namespace, labelSelector: input.selector });
  const pods = list.items.filter((p) => p.status?.phase === 'Running' || p.status?.phase === undefined);
  if (pods.length === 0) throw new CliError(`no running meshd pod matches ${input.selector} in namespace ${input.namespace}`);
  return pods.map((p) => ({ namespace: p.metadata?.namespace ?? input.namespace, name: p.metadata?.name ?? '' }));
}

/** Applies the change on every target pod, one port-forward each; a pod's failure does not stop the others. */
export async function adminLog(kube: KubeClient, input: AdminLogInput): Promise<AdminLogResult> {
  const pods = await targetPods(kube, input);
  const scopes: Record<string, readonly LogScope[]> = {};
  const failures: string[] = [];
  for (const pod of pods) {
    const key = `${pod.name}.${pod.namespace}`;
    try {
      const forward = await forwardPort(kube, pod, input.ctrlzPort, '127.0.0.1');
      try {
        const call: ControlzCall = (path, options) =>
          httpRequest('127.0.0.1', forward.port, path, { timeoutMs: input.timeoutMs, ...options }).catch((err: unknown) => {
            throw new Error(`no answer through the API server's port-forward to the pod (${(err as Error).message})`);
          });
        scopes[key] = await applyLogChange(call, input.change);
      } finally {
        await forward.close();
      }
    } catch (err) {
      failures.push(`meshd ${key} (ControlZ port ${input.ctrlzPort}): ${(err as Error).message}`);
    }
  }
  return { scopes, failures };
}

/** The scopes as `-o short` (a table per daemon), json or yaml (keyed by `<pod>.<namespace>`). */
export async function renderLogScopes(scopes: Readonly<Record<string, readonly LogScope[]>>, output: AdminLogInput['output'], color = false): Promise<string> {
  if (output !== 'short') return renderDocument(scopes, output);
  const rows = Object.entries(scopes).flatMap(([pod, list]) => list.map((s) => [pod, s.name, s.outputLevel, s.stackTraceLevel]));
  return renderTable(['MESHD', 'SCOPE', 'OUTPUT LEVEL', 'STACK TRACE LEVEL'], rows, { color });
}

export async function runAdminLog(kube: KubeClient, input: AdminLogInput, color = false): Promise<CommandOutcome> {
  const result = await adminLog(kube, input);
  if (Object.keys(result.scopes).length === 0) throw new CliError(result.failures.join('\n'));
  const stdout = await renderLogScopes(result.scopes, input.output, color);
  return result.failures.length > 0 ? { stdout, stderr: result.failures.map((f) => `error: ${f}\n`).join(''), exitCode: 1 } : { stdout };
}
