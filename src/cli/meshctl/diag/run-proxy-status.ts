/**
 * `meshctl proxy-status` and `x proxy-status`: every connected proxy's sync state per type from
 * every meshd replica (the `syncz` view over the xDS debug channel), and with a pod, the diff of
 * what meshd would send (`config_dump?format=envoy`) against what the proxy holds (its admin
 * `/config_dump` through a port-forward, or `--file`).
 */
import { readFile } from 'node:fs/promises';
import type { KubeClient } from '../../../kube/client.js';
import { renderDocument, renderTable } from '../../output.js';
import { CliError, type CommandOutcome } from '../../runner.js';
import { parseConfigDump, type ConfigDump } from './config-dump.js';
import type { PodRef } from './flags.js';
import { podHttp } from './port-forward.js';
import { resolvePod } from './pods.js';
import { answered, queryDebug, resolveTargets, type XdsConnectFlags } from './xds-client.js';

export const PROXY_ADMIN_PORT = 15000;

interface WatchView {
  readonly status: string;
  readonly sentVersion: string;
  readonly ackedVersion: string;
  readonly resources: number;
  readonly lastError?: string;
}

export interface SyncEntry {
  readonly proxy: string;
  readonly controlPlane: string;
  readonly type: string;
  readonly namespace: string;
  readonly workload: string;
  readonly proxyVersion: string;
  readonly watches: Readonly<Record<'cds' | 'eds' | 'lds' | 'rds', WatchView>>;
}

export interface ProxyStatusRow {
  readonly name: string;
  readonly type: string;
  readonly cds: string;
  readonly lds: string;
  readonly eds: string;
  readonly rds: string;
  readonly meshd: string;
  readonly version: string;
}

/** `STALE (sent v, acked v)` keeps the versions in view; the others read as they are. */
export function syncCell(w: WatchView | undefined): string {
  if (!w) return 'NOT SENT';
  if (w.status === 'STALE') return `STALE (sent ${w.sentVersion}, acked ${w.ackedVersion || 'none'})`;
  if (w.status === 'NACKED') return `NACKED (${(w.lastError ?? '').slice(0, 60)})`;
  return w.status;
}

export function proxyStatusRows(entries: readonly SyncEntry[]): ProxyStatusRow[] {
  return entries
    .map((e) => ({
      name: e.workload || e.proxy,
      type: e.type,
      cds: syncCell(e.watches.cds),
      lds: syncCell(e.watches.lds),
      eds: syncCell(e.watches.eds),
      rds: syncCell(e.watches.rds),
      meshd: e.controlPlane,
      version: e.proxyVersion,
    }))
    .sort((a, b) => a.name.localeCompare(b.name) || a.meshd.localeCompare(b.meshd));
}

export interface ProxyStatusOptions {
  readonly output: 'table' | 'json' | 'yaml';
  readonly color?: boolean;
}

/** Every daemon's sync state; daemons that did not answer are reported on standard error. */
export async function runProxyStatusList(flags: XdsConnectFlags, client: (() => Promise<KubeClient>) | undefined, opts: ProxyStatusOptions): Promise<CommandOutcome> {
  const targets = await resolveTargets(flags, client);
  const results = await queryDebug<SyncEntry[]>(flags, targets, 'syncz', {}, client);
  const ok = answered(results);
  const failed = results.filter((r) => r.body === undefined).map((r) => `meshd ${r.target.name}: ${r.error}\n`);
  const entries = ok.flatMap((r) => r.body);
  const stderr = failed.length > 0 ? failed.join('') : undefined;
  if (opts.output !== 'table') return { stdout: await renderDocument(entries, opts.output), stderr };
  const rows = proxyStatusRows(entries).map((r) => [r.name, r.type, r.cds, r.lds, r.eds, r.rds, r.meshd, r.version]);
  return { stdout: renderTable(['NAME', 'TYPE', 'CDS', 'LDS', 'EDS', 'RDS', 'MESHD', 'VERSION'], rows, { color: opts.color }), stderr };
}

// ---- one proxy: the diff --------------------------------------------------------------------

export interface KindDiff {
  readonly kind: 'clusters' | 'listeners' | 'routes';
  readonly match: boolean;
  readonly onlyMeshd: string[];
  readonly onlyProxy: string[];
  readonly differ: Array<{ readonly name: string; readonly diff: string }>;
}

/** JSON with sorted keys, one value per line: equal configs give equal text. */
function canonical(value: unknown): string {
  const sort = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(sort);
    if (typeof v !== 'object' || v === null) return v;
    return Object.fromEntries(
      Object.keys(v)
        .sort()
        .map((k) => [k, sort((v as Record<string, unknown>)[k])]),
    );
  };
  return JSON.stringify(sort(value), null, 2);
}

const MAX_DIFF_LINES = 4000;

/** A line diff (`-` meshd, `+` proxy) with a line of context, by longest common subsequence. */
export function lineDiff(a: string, b: string): string {
  const x = a.split('\n');
  const y = b.split('\n');
  if (x.length > MAX_DIFF_LINES || y.length > MAX_DIFF_LINES) return `  (${x.length} and ${y.length} lines: too long to show line by line)`;
  const n = x.length;
  const m = y.length;
  const lcs: Uint32Array[] = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) for (let j = m - 1; j >= 0; j--) lcs[i][j] = x[i] === y[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
  const out: Array<{ op: ' ' | '-' | '+'; text: string }> = [];
  let i = 0;
  let j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && x[i] === y[j]) {
      out.push({ op: ' ', text: x[i++] });
      j++;
    } else if (j < m && (i >= n || lcs[i][j + 1] >= lcs[i + 1][j])) out.push({ op: '+', text: y[j++] });
    else out.push({ op: '-', text: x[i++] });
  }
  const changed = (k: number): boolean => out[k] !== undefined && out[k].op !== ' ';
  const keep = out.map((_l, k) => changed(k - 1) || changed(k) || changed(k + 1));
  const lines: string[] = [];
  out.forEach((l, k) => {
    if (keep[k]) lines.push(`  ${l.op} ${l.text}`);
    else if (keep[k - 1]) lines.push('  ...');
  });
  return lines.join('\n');
}

function byName(list: ReadonlyArray<Record<string, unknown>>): Map<string, string> {
  return new Map(list.map((r) => [String(r.name), canonical(r)]));
}

export function diffDumps(meshd: ConfigDump, proxy: ConfigDump): KindDiff[] {
  return (['clusters', 'listeners', 'routes'] as const).map((kind) => {
    const a = byName(meshd[kind]);
    const b = byName(proxy[kind]);
    const onlyMeshd = [...a.keys()].filter((k) => !b.has(k)).sort();
    const onlyProxy = [...b.keys()].filter((k) => !a.has(k)).sort();
    const differ = [...a.keys()]
      .filter((k) => b.has(k) && a.get(k) !== b.get(k))
      .sort()
      .map((name) => ({ name, diff: lineDiff(a.get(name)!, b.get(name)!) }));
    return { kind, match: onlyMeshd.length === 0 && onlyProxy.length === 0 && differ.length === 0, onlyMeshd, onlyProxy, differ };
  });
}

const TITLE = { clusters: 'Clusters', listeners: 'Listeners', routes: 'Routes' } as const;

export function renderDiff(proxy: string, meshd: string, diffs: readonly KindDiff[]): string {
  const out = [`Comparing meshd ${meshd} with proxy ${proxy} (- meshd, + proxy)`];
  for (const d of diffs) {
    out.push(`${TITLE[d.kind]} ${d.match ? 'Match' : "Don't Match"}`);
    for (const n of d.onlyMeshd) out.push(`  - ${n}: sent by meshd, not held by the proxy`);
    for (const n of d.onlyProxy) out.push(`  + ${n}: held by the proxy, not sent by meshd`);
    for (const x of d.differ) out.push(`  ~ ${x.name}:`, x.diff);
  }
  return `${out.join('\n')}\n`;
}

export interface ProxyDiffInput {
  readonly ref: PodRef;
  /** `--file`: the proxy's config dump. */
  readonly file?: string;
  readonly output: 'table' | 'json' | 'yaml';
}

/** The diff for one proxy; exit code 1 when anything differs. */
export async function runProxyStatusDiff(flags: XdsConnectFlags, client: (() => Promise<KubeClient>) | undefined, input: ProxyDiffInput): Promise<CommandOutcome> {
  const { ref } = input;
  const workload = `${ref.name}.${ref.namespace}`;
  // the pod first: a pod that does not exist, or that this user may not read, is the answer
  // whatever meshd would say
  let pod: { readonly kube: KubeClient; readonly name: string } | undefined;
  if (!input.file) {
    if (!client) throw new CliError(`reading proxy ${workload} needs a cluster (or --file with its config dump)`);
    const kube = await client();
    pod = { kube, name: (await resolvePod(kube, ref)).metadata?.name ?? ref.name };
  }
  const targets = await resolveTargets(flags, client);
  const sync = answered(await queryDebug<SyncEntry[]>(flags, targets, 'syncz', {}, client));
  const holder = sync.find((r) => r.body.some((e) => e.workload === workload || e.proxy === ref.name));
  if (!holder) throw new CliError(`proxy ${workload} is connected to no meshd (${sync.map((r) => r.target.name).join(', ')})`);
  const entry = holder.body.find((e) => e.workload === workload || e.proxy === ref.name)!;
  const [meshdAnswer] = answered(await queryDebug<unknown>(flags, [holder.target], 'config_dump', { proxyID: entry.proxy, format: 'envoy' }, client));
  const meshd = parseConfigDump(JSON.stringify(meshdAnswer.body), `meshd ${holder.target.name}`);
  let proxyText: string;
  if (!pod) {
    proxyText = await readFile(input.file!, 'utf8').catch((err: NodeJS.ErrnoException) => {
      throw new CliError(`--file: cannot read ${input.file}: ${err.code ?? err.message}`);
    });
  } else {
    const res = await podHttp(pod.kube, { namespace: ref.namespace, name: pod.name }, PROXY_ADMIN_PORT, '/config_dump');
    if (res.status !== 200) throw new CliError(`proxy ${workload}: /config_dump answered HTTP ${res.status}`);
    proxyText = res.body;
  }
  const proxy = parseConfigDump(proxyText, input.file ?? `proxy ${workload}`);
  const diffs = diffDumps(meshd, proxy);
  const same = diffs.every((d) => d.match);
  if (input.output !== 'table') return { stdout: await renderDocument({ proxy: workload, meshd: holder.target.name, diffs }, input.output), exitCode: same ? 0 : 1 };
  return { stdout: renderDiff(workload, holder.target.name, diffs), exitCode: same ? 0 : 1 };
}
