/**
 * `meshctl proxy-config cluster|listener|route|endpoint|secret|bootstrap|all|log`: a proxy's own
 * view, from its admin port (15000, through a port-forward) or from a saved config dump (`-f`),
 * as the tables operators know (`-o short`) or the matching resources as JSON/YAML.
 */
import { readFile } from 'node:fs/promises';
import type { KubeClient } from '../../../kube/client.js';
import { renderDocument, renderTable } from '../../output.js';
import { CliError, type CommandOutcome } from '../../runner.js';
import {
  clusterRows,
  endpointRows,
  listenerRows,
  matchingClusters,
  matchingListeners,
  matchingRoutes,
  parseConfigDump,
  redactedSecrets,
  routeRows,
  secretRows,
  type ClusterFilter,
  type ConfigDump,
  type EndpointFilter,
  type ListenerFilter,
} from './config-dump.js';
import type { PodRef } from './flags.js';
import { podHttp, type HttpRequestOptions, type PodHttpReply } from './port-forward.js';
import { resolvePod, type Pod } from './pods.js';
import { PROXY_ADMIN_PORT } from './run-proxy-status.js';

export type ProxyConfigOutput = 'short' | 'json' | 'yaml';
export type Section = 'cluster' | 'listener' | 'route' | 'endpoint' | 'secret' | 'bootstrap' | 'all';

export interface Source {
  /** `-f`: a saved dump. */
  readonly file?: string;
  /** The proxy, when read live. */
  readonly ref?: PodRef;
}

/** Reads the dump from the file or the proxy's admin port (`path` there). */
export async function loadDump(source: Source, client: (() => Promise<KubeClient>) | undefined, path = '/config_dump?include_eds'): Promise<ConfigDump> {
  if (source.file) {
    const text = await readFile(source.file, 'utf8').catch((err: NodeJS.ErrnoException) => {
      throw new CliError(`--file: cannot read ${source.file}: ${err.code === 'ENOENT' ? 'no such file' : (err.code ?? err.message)}`);
    });
    return parseConfigDump(text, source.file);
  }
  if (!source.ref) throw new CliError('name a proxy ([<type>/]<name>[.<namespace>]) or give --file with a config dump');
  if (!client) throw new CliError('reading a proxy needs a cluster');
  const kube = await client();
  const pod = await resolvePod(kube, source.ref);
  const res = await podHttp(kube, podOf(pod, source.ref), PROXY_ADMIN_PORT, path);
  if (res.status !== 200) throw new CliError(`proxy ${source.ref.name}.${source.ref.namespace}: ${path} answered HTTP ${res.status}: ${res.body.slice(0, 200)}`);
  return parseConfigDump(res.body, `proxy ${source.ref.name}.${source.ref.namespace}`);
}

const podOf = (pod: Pod, ref: PodRef) => ({ namespace: pod.metadata?.namespace ?? ref.namespace, name: pod.metadata?.name ?? ref.name });

export interface SectionFlags extends ClusterFilter, ListenerFilter, EndpointFilter {
  readonly name?: string;
  readonly verbose?: boolean;
  readonly listenerAddress?: string;
  readonly endpointAddress?: string;
}

function clusterTable(dump: ConfigDump, f: SectionFlags, color: boolean): string {
  const rows = clusterRows(dump, f);
  return renderTable(['SERVICE FQDN', 'PORT', 'SUBSET', 'DIRECTION', 'TYPE'], rows.map((r) => [r.fqdn, r.port || '-', r.subset || '-', r.direction || '-', r.type]), { color });
}

function listenerTable(dump: ConfigDump, f: SectionFlags, color: boolean): string {
  const rows = listenerRows(dump, { address: f.listenerAddress, port: f.port, type: f.type, routeName: f.routeName });
  const headers = f.verbose ? ['NAME', 'ADDRESS', 'PORT', 'MATCH', 'DESTINATION'] : ['ADDRESS', 'PORT', 'MATCH', 'DESTINATION'];
  return renderTable(headers, rows.map((r) => (f.verbose ? [r.name, r.address || '-', r.port || '-', r.match, r.destination] : [r.address || '-', r.port || '-', r.match, r.destination])), { color });
}

function routeTable(dump: ConfigDump, f: SectionFlags, color: boolean): string {
  const rows = routeRows(dump, { name: f.name, verbose: f.verbose });
  return renderTable(['NAME', 'VHOST NAME', 'DOMAINS', 'MATCH', 'DESTINATION'], rows.map((r) => [r.name, r.vhost, r.domains, r.match, r.action || '-']), { color });
}

function endpointTable(dump: ConfigDump, f: SectionFlags, color: boolean): string {
  const rows = endpointRows(dump, { address: f.endpointAddress, port: f.port, cluster: f.cluster, status: f.status });
  return renderTable(['ENDPOINT', 'STATUS', 'OUTLIER CHECK', 'CLUSTER'], rows.map((r) => [r.endpoint, r.status, r.outlierCheck, r.cluster]), { color });
}

function secretTable(dump: ConfigDump, color: boolean): string {
  const rows = secretRows(dump);
  return renderTable(['RESOURCE NAME', 'TYPE', 'STATUS', 'VALID CERT', 'SERIAL NUMBER', 'NOT AFTER', 'NOT BEFORE'], rows.map((r) => [r.name, r.type, r.status, r.valid, r.serial, r.notAfter, r.notBefore]), { color });
}

/** The JSON of a section: the resources the filters keep. */
function sectionDocument(dump: ConfigDump, section: Exclude<Section, 'all'>, f: SectionFlags): unknown {
  switch (section) {
    case 'cluster':
      return matchingClusters(dump, clusterRows(dump, f));
    case 'listener':
      return matchingListeners(dump, listenerRows(dump, { address: f.listenerAddress, port: f.port, type: f.type, routeName: f.routeName }));
    case 'route':
      return matchingRoutes(dump, f.name);
    case 'endpoint': {
      const keep = new Set(endpointRows(dump, { address: f.endpointAddress, port: f.port, cluster: f.cluster, status: f.status }).map((r) => r.cluster));
      return [...dump.endpoints.filter((e) => keep.has(String(e.clusterName))), ...dump.clusterStatuses.filter((c) => keep.has(String(c.name)))];
    }
    case 'secret':
      return redactedSecrets(dump);
    case 'bootstrap':
      return dump.bootstrap ?? {};
  }
}

export async function runProxyConfig(section: Section, dump: ConfigDump, flags: SectionFlags, output: ProxyConfigOutput, color = false): Promise<CommandOutcome> {
  // under `all`, --name selects listeners by the route configuration they use (spec part 2), and
  // the routes are all listed
  const f: SectionFlags = section === 'all' ? { ...flags, routeName: flags.name, name: undefined } : flags;
  if (output !== 'short') {
    const doc =
      section === 'all'
        ? { bootstrap: sectionDocument(dump, 'bootstrap', f), clusters: sectionDocument(dump, 'cluster', f), listeners: sectionDocument(dump, 'listener', f), routes: sectionDocument(dump, 'route', f), endpoints: sectionDocument(dump, 'endpoint', f), secrets: sectionDocument(dump, 'secret', f) }
        : sectionDocument(dump, section, f);
    return { stdout: await renderDocument(doc, output) };
  }
  switch (section) {
    case 'cluster':
      return { stdout: clusterTable(dump, f, color) };
    case 'listener':
      return { stdout: listenerTable(dump, f, color) };
    case 'route':
      return { stdout: routeTable(dump, f, color) };
    case 'endpoint':
      return { stdout: endpointTable(dump, f, color) };
    case 'secret':
      return { stdout: secretTable(dump, color) };
    case 'bootstrap': {
      const node = (dump.bootstrap?.node ?? {}) as { id?: string; metadata?: Record<string, unknown> };
      return { stdout: await renderDocument({ node: { id: node.id ?? '', metadata: node.metadata ?? {} } }, 'yaml') };
    }
    case 'all':
      return {
        stdout: [clusterTable(dump, f, color), listenerTable(dump, f, color), routeTable(dump, f, color), endpointTable(dump, f, color)].join('\n'),
      };
  }
}

// ---- log ---------------------------------------------------------------------------------------

/** Envoy's loggers (spec part 2) and levels. */
export const PROXY_LOGGERS = [
  'admin', 'aws', 'assert', 'backtrace', 'client', 'config', 'connection', 'conn_handler', 'dubbo', 'file', 'filter', 'forward_proxy', 'grpc', 'hc',
  'health_checker', 'http', 'http2', 'hystrix', 'init', 'io', 'jwt', 'kafka', 'lua', 'main', 'misc', 'mongo', 'quic', 'pool', 'rbac', 'redis', 'router',
  'runtime', 'stats', 'secret', 'tap', 'testing', 'thrift', 'tracing', 'upstream', 'udp', 'wasm',
] as const;
export const PROXY_LOG_LEVELS = ['trace', 'debug', 'info', 'warning', 'error', 'critical', 'off'] as const;

/** `[<logger>:]<level>,…` as admin `/logging` query strings; a CliError naming a bad logger or level. */
export function parseProxyLogLevels(text: string): string[] {
  return text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')
    .map((item) => {
      const colon = item.indexOf(':');
      const logger = colon < 0 ? '' : item.slice(0, colon);
      const level = colon < 0 ? item : item.slice(colon + 1);
      if (!(PROXY_LOG_LEVELS as readonly string[]).includes(level)) throw new CliError(`--level: unknown level ${JSON.stringify(level)} in ${JSON.stringify(item)} (levels: ${PROXY_LOG_LEVELS.join(', ')})`);
      if (logger && !(PROXY_LOGGERS as readonly string[]).includes(logger)) throw new CliError(`--level: unknown logger ${JSON.stringify(logger)} in ${JSON.stringify(item)}`);
      return logger ? `${logger}=${level}` : `level=${level}`;
    });
}

/** Envoy's `/logging` answer (`active loggers:\n  admin: info …`) as logger → level. */
export function parseLoggingReply(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const m = /^\s+([\w.-]+):\s*(\w+)\s*$/.exec(line);
    if (m) out[m[1]] = m[2];
  }
  return out;
}

export interface ProxyLogInput {
  readonly ref?: PodRef;
  readonly selector?: string;
  readonly namespace: string;
  readonly level?: string;
  readonly reset: boolean;
  readonly output: ProxyConfigOutput;
}

/** One request to a proxy's admin port: the pod, a path and options, the reply back. */
export type ProxyAdminCall = (pod: { readonly namespace: string; readonly name: string }, path: string, options?: HttpRequestOptions) => Promise<PodHttpReply>;

/** The admin `/logging` queries of `--level`/`--reset` (`--reset` sets every logger to warning). */
export function proxyLogUpdates(input: Pick<ProxyLogInput, 'level' | 'reset'>): string[] {
  if (input.reset && input.level) throw new CliError('--reset and --level cannot be combined');
  return input.reset ? ['level=warning'] : input.level ? parseProxyLogLevels(input.level) : [];
}

/** Sends `updates` to each pod's admin `/logging`, then reads its levels back: pod key → logger → level. */
export async function applyProxyLog(call: ProxyAdminCall, pods: ReadonlyArray<{ namespace: string; name: string }>, updates: readonly string[]): Promise<Record<string, Record<string, string>>> {
  const results: Record<string, Record<string, string>> = {};
  for (const pod of pods) {
    const post = async (path: string): Promise<string> => {
      const r = await call(pod, path, { method: 'POST' });
      if (r.status !== 200) throw new CliError(`proxy ${pod.name}.${pod.namespace}: POST ${path} answered HTTP ${r.status}${r.body.trim() ? `: ${r.body.trim().split('\n')[0]}` : ''}`);
      return r.body;
    };
    for (const q of updates) await post(`/logging?${q}`);
    results[`${pod.name}.${pod.namespace}`] = parseLoggingReply(await post('/logging'));
  }
  return results;
}

/** Reads (and with --level or --reset first sets) the log levels of one proxy, or of every pod `-l` selects. */
export async function runProxyLog(client: () => Promise<KubeClient>, input: ProxyLogInput, call?: ProxyAdminCall): Promise<CommandOutcome> {
  const updates = proxyLogUpdates(input);
  const kube = await client();
  let pods: Array<{ namespace: string; name: string }>;
  if (input.ref) {
    const pod = await resolvePod(kube, input.ref);
    pods = [podOf(pod, input.ref)];
  } else if (input.selector) {
    const list = await kube.list<Pod>('v1', 'Pod', { namespace: input.namespace, labelSelector: input.selector });
    pods = list.items.map((p) => ({ namespace: p.metadata?.namespace ?? input.namespace, name: p.metadata?.name ?? '' }));
    if (pods.length === 0) throw new CliError(`no pod matches ${input.selector} in namespace ${input.namespace}`);
  } else throw new CliError('name a proxy or give -l/--selector');
  const results = await applyProxyLog(call ?? ((pod, path, options) => podHttp(kube, pod, PROXY_ADMIN_PORT, path, options)), pods, updates);
  if (input.output !== 'short') return { stdout: await renderDocument(results, input.output) };
  const rows = Object.entries(results).flatMap(([pod, levels]) => Object.entries(levels).map(([logger, level]) => [pod, logger, level]));
  return { stdout: renderTable(['PROXY', 'LOGGER', 'LEVEL'], rows) };
}

