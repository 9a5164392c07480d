/**
 * `meshctl bug-report`: what a maintainer needs from a cluster, gathered into one .tar.gz
 * (docs/adr/0120):
 *
 *   summary.json                 flags, window, every file and every item that failed, and why
 *   cluster/                     version, nodes, namespaces, pods (summaries), Secrets as names and keys only
 *   mesh/                        every mesh config object (resources.yaml), refused ones, the mesh ConfigMap
 *   meshd/<pod>/<container>.log  meshd logs in the time window
 *   meshd/debug/<meshd>/<view>.json  meshd's debug views over the xDS debug channel
 *   proxies/<ns>/<pod>/          <container>.log (selected by --include/--exclude), config-dump.json
 *                                (the proxy's admin port), meshd-config-dump.json (what meshd sends it)
 *   analyze.txt                  `meshctl analyze` of the whole cluster
 *
 * Every item is fetched under the overall deadline (`--timeout`) and a per-request bound; an item
 * that fails (a pod without logs, a proxy that cannot be reached, a forbidden list) is recorded in
 * summary.json with its reason and the rest goes on. Secret data is never read into the archive, and
 * private keys in config dumps are replaced. Plain data out; the command formats it.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { queryString, type KubeClient } from '../../../kube/client.js';
import { KubeApiError } from '../../../kube/errors.js';
import type { KubeObject } from '../../../kube/types.js';
import { PROXY_CONTAINER } from '../../../inject/names.js';
import { readCluster } from '../analyze/cluster.js';
import { podHttp } from '../diag/port-forward.js';
import { PROXY_ADMIN_PORT } from '../diag/run-proxy-status.js';
import { queryDebug, resolveTargets, type XdsConnectFlags, type XdsTarget } from '../diag/xds-client.js';
import { importance, withinWindow, type Importance, type TimeWindow } from './logs.js';
import { deploymentOf, selected, type SelectionSpec } from './select.js';
import { writeTarGz, type TarEntry } from './tar.js';

/** The meshd debug views a report holds. */
export const DEBUG_VIEWS = ['version', 'syncz', 'connections', 'push_status', 'configz', 'registryz', 'endpointz', 'distributionz'] as const;
/** Longest any single request may take (less when the overall deadline is nearer). */
const REQUEST_BOUND_MS = 30_000;
/** Bytes of one container log read (its newest part). */
const LOG_LIMIT_BYTES = 16 << 20;

export interface BugReportInput {
  readonly client: () => Promise<KubeClient>;
  readonly xds: XdsConnectFlags;
  /** The control plane's namespace (`--istio-namespace`). */
  readonly meshNamespace: string;
  readonly meshdSelector: string;
  readonly include: readonly SelectionSpec[];
  readonly exclude: readonly SelectionSpec[];
  readonly window: TimeWindow;
  readonly criticalErrs: readonly string[];
  readonly ignoreErrs: readonly string[];
  /** Where temporary files and the archive go. */
  readonly dir: string;
  readonly archiveName: string;
  readonly timeoutMs: number;
  readonly dryRun: boolean;
  /** `meshctl analyze` of the cluster, as text. */
  readonly analyze: (signal: AbortSignal) => Promise<string>;
  readonly progress?: (line: string) => void;
  readonly now?: () => number;
}

export interface ItemError {
  readonly item: string;
  readonly error: string;
}

export interface LogImportance extends Importance {
  readonly log: string;
  readonly bytes: number;
}

export interface BugReport {
  /** Path of the archive (absent on a dry run). */
  readonly archive?: string;
  readonly files: string[];
  readonly errors: ItemError[];
  /** True when --timeout ended the collection early. */
  readonly timedOut: boolean;
  /** On a dry run: what would be fetched. */
  readonly planned: string[];
  /** Why no meshd answered over the xDS debug channel, when none did. */
  readonly meshdUnreachable?: string;
  readonly logs: LogImportance[];
}

type Pod = V1Pod & KubeObject;

interface PodInfo {
  readonly namespace: string;
  readonly name: string;
  readonly containers: string[];
  readonly pod: Pod;
}

class Deadline {
  private readonly controller = new AbortController();
  private readonly timer: NodeJS.Timeout;
  constructor(
    private readonly at: number,
    private readonly now: () => number,
  ) {
    this.timer = setTimeout(() => this.controller.abort(new Error('--timeout reached')), Math.max(0, at - now()));
  }
  get signal(): AbortSignal {
    return this.controller.signal;
  }
  get expired(): boolean {
    return this.controller.signal.aborted || this.now() >= this.at;
  }
  /** A bound for one request. */
  bound(): number {
    return Math.max(1, Math.min(REQUEST_BOUND_MS, this.at - this.now()));
  }
  /** `p`, or a rejection when the request bound or the deadline passes first. */
  race<T>(p: Promise<T>, what: string): Promise<T> {
    const ms = this.bound();
    let timer: NodeJS.Timeout | undefined;
    const limit = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what}: no answer within ${Math.ceil(ms / 1000)}s`)), ms);
    });
    return Promise.race([p, limit]).finally(() => clearTimeout(timer));
  }
  clear(): void {
    clearTimeout(this.timer);
  }
}

const message = (err: unknown): string => {
  const e = err as { statusCode?: number; message?: string };
  const text = (e?.message ?? String(err)).split('\n')[0];
  return e?.statusCode === 403 ? `forbidden: ${text}` : text;
};

/** Replaces private keys and passwords anywhere in a JSON document. */
export function redactKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(redactKeys);
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, /private_?key|password/i.test(k) ? '[redacted]' : redactKeys(v)]));
}

async function listAll<T extends KubeObject>(client: KubeClient, apiVersion: string, kind: string, signal: AbortSignal, namespace?: string, labelSelector?: string): Promise<T[]> {
  const out: T[] = [];
  let cont: string | undefined;
  do {
    const page = await client.list<T>(apiVersion, kind, { namespace, labelSelector, limit: 500, continue: cont, signal });
    out.push(...(page.items ?? []));
    cont = page.metadata?.continue || undefined;
  } while (cont);
  return out;
}

const podInfo = (p: Pod): PodInfo => ({
  namespace: p.metadata?.namespace ?? '',
  name: p.metadata?.name ?? '',
  containers: (p.spec?.containers ?? []).map((c) => c.name),
  pod: p,
});

export async function collectBugReport(input: BugReportInput): Promise<BugReport> {
  const now = input.now ?? Date.now;
  const deadline = new Deadline(now() + input.timeoutMs, now);
  const errors: ItemError[] = [];
  const files: TarEntry[] = [];
  const planned: string[] = [];
  const logs: LogImportance[] = [];
  const progress = input.progress ?? (() => undefined);
  await mkdir(input.dir, { recursive: true });
  const staging = await mkdtemp(path.join(input.dir, 'bug-report-'));

  const put = async (rel: string, content: string): Promise<void> => {
    const file = path.join(staging, ...rel.split('/'));
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, content);
    files.push({ path: rel, file });
  };
  const json = (v: unknown): string => `${JSON.stringify(v, null, 2)}\n`;
  /** Runs one item; a failure is recorded, never thrown. */
  const item = async (name: string, fn: () => Promise<void>): Promise<void> => {
    if (deadline.expired) {
      errors.push({ item: name, error: 'skipped: --timeout reached' });
      return;
    }
    try {
      await fn();
    } catch (err) {
      errors.push({ item: name, error: deadline.signal.aborted ? `--timeout reached (${message(err)})` : message(err) });
    }
  };

  try {
    const client = await input.client();
    // the API server must answer at all: without it there is nothing to report
    progress('reading the cluster version');
    const version = await deadline.race(client.request<Record<string, unknown>>({ method: 'GET', path: '/version', signal: deadline.signal, timeoutMs: deadline.bound() }), 'GET /version');

    let pods: Pod[] = [];
    await item('cluster/pods', async () => {
      pods = await listAll<Pod>(client, 'v1', 'Pod', deadline.signal);
    });
    const meshd = pods.filter((p) => p.metadata?.namespace === input.meshNamespace && selectorMatches(input.meshdSelector, p.metadata?.labels ?? {})).map(podInfo);
    const proxies = pods
      .filter((p) => (p.spec?.containers ?? []).some((c) => c.name === PROXY_CONTAINER))
      .map(podInfo)
      .map((p) => ({
        ...p,
        containers: p.containers.filter((c) =>
          selected(input.include, input.exclude, { namespace: p.namespace, name: p.name, deployment: deploymentOf(p.pod.metadata?.ownerReferences), labels: p.pod.metadata?.labels ?? {}, annotations: p.pod.metadata?.annotations ?? {} }, c),
        ),
      }))
      .filter((p) => p.containers.length > 0);

    if (input.dryRun) {
      planned.push('GET /version, nodes, namespaces, pods, Secret names');
      planned.push('every mesh config object and the mesh ConfigMap');
      for (const p of meshd) for (const c of p.containers) planned.push(`logs of meshd ${p.namespace}/${p.name} container ${c}`);
      planned.push(`meshd debug views over the xDS debug channel: ${DEBUG_VIEWS.join(', ')}`);
      const specs = (list: readonly SelectionSpec[]): string => (list.length === 0 ? 'none' : list.map((s) => JSON.stringify(s.text)).join(' '));
      planned.push(`proxy logs selected by --include ${input.include.length === 0 ? 'all' : specs(input.include)}, --exclude ${specs(input.exclude)}`);
      for (const p of proxies) {
        for (const c of p.containers) planned.push(`logs of ${p.namespace}/${p.name} container ${c}`);
        planned.push(`config dump of ${p.namespace}/${p.name}: its admin port and meshd's view`);
      }
      planned.push('meshctl analyze --all-namespaces');
      return { files: [], errors, timedOut: false, planned, logs };
    }

    await put('cluster/version.json', json(version));
    progress('reading nodes, namespaces and pods');
    await item('cluster/nodes', async () => {
      const nodes = await listAll<KubeObject & { status?: { nodeInfo?: Record<string, string>; conditions?: Array<{ type: string; status: string }>; capacity?: Record<string, string> } }>(client, 'v1', 'Node', deadline.signal);
      await put(
        'cluster/nodes.json',
        json(
          nodes.map((n) => ({
            name: n.metadata?.name,
            ready: n.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True',
            kubeletVersion: n.status?.nodeInfo?.kubeletVersion,
            os: n.status?.nodeInfo?.operatingSystem,
            arch: n.status?.nodeInfo?.architecture,
            zone: n.metadata?.labels?.['topology.kubernetes.io/zone'],
            capacity: n.status?.capacity,
          })),
        ),
      );
    });
    await item('cluster/namespaces', async () => {
      const nss = await listAll<KubeObject>(client, 'v1', 'Namespace', deadline.signal);
      await put('cluster/namespaces.json', json(nss.map((n) => ({ name: n.metadata?.name, labels: n.metadata?.labels ?? {} }))));
    });
    await put(
      'cluster/pods.json',
      json(
        pods.map((p) => ({
          namespace: p.metadata?.namespace,
          name: p.metadata?.name,
          phase: p.status?.phase,
          node: p.spec?.nodeName,
          labels: p.metadata?.labels ?? {},
          containers: (p.spec?.containers ?? []).map((c) => ({ name: c.name, image: c.image })),
        })),
      ),
    );
    await item('cluster/secrets', async () => {
      // names, types and keys only: Secret data never enters the archive
      const secrets = await listAll<KubeObject & { type?: string; data?: Record<string, string> }>(client, 'v1', 'Secret', deadline.signal, input.meshNamespace);
      await put('cluster/secrets.json', json(secrets.map((s) => ({ namespace: s.metadata?.namespace, name: s.metadata?.name, type: s.type, keys: Object.keys(s.data ?? {}).sort() }))));
    });

    progress('reading mesh configuration');
    await item('mesh/resources', async () => {
      const view = await readCluster(client, { meshNamespace: input.meshNamespace, meshConfigMapName: 'mesh', domain: 'cluster.local', signal: deadline.signal });
      const docs = view.objects.map((o) => ({
        apiVersion: `${o.meta.gvk.group}/${o.meta.gvk.version}`,
        kind: o.meta.gvk.kind,
        metadata: { name: o.meta.name, namespace: o.meta.namespace, labels: o.meta.labels, annotations: o.meta.annotations, generation: o.meta.generation },
        spec: o.spec,
      }));
      await put('mesh/resources.yaml', docs.map((d) => stringify(d)).join('---\n'));
      await put('mesh/rejected.json', json(view.rejected));
      if (view.missingKinds.length > 0) await put('mesh/missing-kinds.json', json(view.missingKinds));
      if (view.meshConfig) await put('mesh/meshconfig.yaml', view.meshConfig.text);
    });

    const fetchLog = async (p: PodInfo, container: string, rel: string): Promise<void> => {
      await item(`${rel} (logs of ${p.namespace}/${p.name} container ${container})`, async () => {
        const sinceSeconds = input.window.start !== undefined ? Math.max(1, Math.ceil((now() - input.window.start) / 1000)) : undefined;
        const text = await deadline.race(
          podLog(client, p, container, sinceSeconds),
          `logs of ${p.namespace}/${p.name}/${container}`,
        );
        const kept = withinWindow(text, input.window);
        await put(rel, kept);
        logs.push({ log: rel, bytes: Buffer.byteLength(kept), ...importance(kept, input.criticalErrs, input.ignoreErrs) });
      });
    };

    progress(`reading the logs of ${meshd.length} meshd pod(s)`);
    for (const p of meshd) for (const c of p.containers) await fetchLog(p, c, `meshd/${p.name}/${c}.log`);

    progress('asking meshd for its debug views');
    let targets: XdsTarget[] = [];
    let targetError = '';
    let meshdAnswered = false;
    await item('meshd/debug', async () => {
      try {
        targets = await resolveTargets({ ...input.xds, timeoutMs: deadline.bound() }, input.client);
      } catch (err) {
        targetError = message(err);
        throw err;
      }
      for (const view of DEBUG_VIEWS) {
        await item(`meshd/debug ${view}`, async () => {
          const results = await queryDebug({ ...input.xds, timeoutMs: deadline.bound() }, targets, view, {}, input.client);
          for (const r of results) {
            if (r.body !== undefined) {
              meshdAnswered = true;
              await put(`meshd/debug/${safe(r.target.name)}/${view}.json`, json(r.body));
            } else errors.push({ item: `meshd/debug/${safe(r.target.name)}/${view}.json`, error: r.error ?? 'no answer' });
          }
        });
      }
    });

    let n = 0;
    for (const p of proxies) {
      n++;
      progress(`proxy ${n}/${proxies.length}: ${p.namespace}/${p.name}`);
      const base = `proxies/${p.namespace}/${p.name}`;
      for (const c of p.containers) await fetchLog(p, c, `${base}/${c}.log`);
      await item(`${base}/config-dump.json (admin port of ${p.namespace}/${p.name})`, async () => {
        const res = await deadline.race(podHttp(client, p, PROXY_ADMIN_PORT, '/config_dump?include_eds', { timeoutMs: deadline.bound() }), `admin port of ${p.namespace}/${p.name}`);
        if (res.status !== 200) throw new Error(`/config_dump answered HTTP ${res.status}`);
        await put(`${base}/config-dump.json`, json(redactKeys(JSON.parse(res.body))));
      });
      await item(`${base}/meshd-config-dump.json (meshd's view of ${p.name}.${p.namespace})`, async () => {
        if (targets.length === 0) throw new Error(`no meshd to ask: ${targetError || 'none found'}`);
        const results = await queryDebug({ ...input.xds, timeoutMs: deadline.bound() }, targets, 'config_dump', { proxyID: `${p.name}.${p.namespace}`, format: 'envoy' }, input.client);
        const found = results.find((r) => r.body !== undefined);
        if (!found) throw new Error(results.map((r) => `meshd ${r.target.name}: ${r.error}`).join('; '));
        await put(`${base}/meshd-config-dump.json`, json(redactKeys(found.body)));
      });
    }

    progress('analyzing the cluster');
    await item('analyze.txt', async () => {
      await put('analyze.txt', await deadline.race(input.analyze(deadline.signal), 'analyze'));
    });

    logs.sort((a, b) => b.criticalCount - a.criticalCount || b.errors - a.errors || a.log.localeCompare(b.log));
    const timedOut = deadline.expired;
    await put(
      'summary.json',
      json({
        createdAt: new Date(now()).toISOString(),
        meshNamespace: input.meshNamespace,
        window: { start: input.window.start !== undefined ? new Date(input.window.start).toISOString() : null, end: new Date(input.window.end).toISOString() },
        include: input.include.map((s) => s.text),
        exclude: input.exclude.map((s) => s.text),
        timedOut,
        files: [...files.map((f) => f.path), 'summary.json'].sort(),
        errors,
        logs,
      }),
    );
    progress('writing the archive');
    const archive = path.join(input.dir, input.archiveName);
    await writeTarGz(archive, files);
    const meshdError = errors.find((e) => e.item.startsWith('meshd/debug'))?.error ?? targetError;
    const meshdUnreachable = meshdAnswered ? undefined : meshdError || 'no answer';
    return { archive, files: files.map((f) => f.path).sort(), errors, timedOut, planned, logs, meshdUnreachable };
  } finally {
    deadline.clear();
    await rm(staging, { recursive: true, force: true });
  }
}

const safe = (name: string): string => name.replace(/[^A-Za-z0-9._-]+/g, '_');

/** Equality-based label selector (`a=b,c=d`), as meshd pods are found. */
function selectorMatches(selector: string, labels: Readonly<Record<string, string>>): boolean {
  return selector
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')
    .every((term) => {
      const [k, v] = term.split('=');
      return v === undefined ? k in labels : labels[k] === v;
    });
}

/** A container's log as text (the pods/log subresource), at most LOG_LIMIT_BYTES. */
async function podLog(client: KubeClient, p: PodInfo, container: string, sinceSeconds: number | undefined): Promise<string> {
  const path = `/api/v1/namespaces/${encodeURIComponent(p.namespace)}/pods/${encodeURIComponent(p.name)}/log`;
  const query = queryString({ container, timestamps: true, sinceSeconds, limitBytes: LOG_LIMIT_BYTES });
  const res = await client.transport.send({ method: 'GET', path: path + query });
  const text = res.body.toString('utf8');
  if (res.status < 200 || res.status >= 300) {
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {
      // keep the text
    }
    throw KubeApiError.fromResponse('GET', path, res.status, body);
  }
  return text;
}
