/**
 * `meshctl analyze`, the work behind the command (loaded only when it runs): gathers the mesh
 * config of the live cluster (cluster.ts), lays the given files over it (an object in a file
 * replaces the cluster's object of the same kind, namespace and name, so a change can be tried
 * before it is applied), runs the analyzers the daemon runs (src/analysis/), and reports.
 *
 * Objects that do not pass validation are findings too (MESH0107), whether in a file or in the
 * cluster. Findings are kept for the chosen namespace (`--namespace`, else `default`) unless
 * `--all-namespaces`; `--suppress` drops matching ones; `--output-threshold` hides lower levels;
 * the exit code is FINDINGS_EXIT_CODE when a remaining finding reaches `--failure-threshold`.
 */
import { setMaxListeners } from 'node:events';
import type { V1Service } from '@kubernetes/client-node';
import type { AnalysisLevel, Finding, WorkloadInfo } from '../../../analysis/types.js';
import type { KubeWorld } from '../../../analysis/world.js';
import type { ConfigObject } from '../../../config/types.js';
import type { KubeClient } from '../../../kube/client.js';
import type { MeshSettings } from '../../../model/mesh-settings.js';
import type { Service } from '../../../model/service.js';
import { CliError, type CommandOutcome } from '../../runner.js';
import { formatFindings, type AnalyzeOutput, type DisplayLevel } from './format.js';
import { parseSuppressions, suppressed } from './suppress.js';

/** Exit code when findings reach the failure threshold (distinct from 1, "could not analyze"). */
export const FINDINGS_EXIT_CODE = 79;

export const LEVELS: readonly DisplayLevel[] = ['Info', 'Warning', 'Error'];

export interface AnalyzeOptions {
  readonly files: readonly string[];
  readonly recursive: boolean;
  readonly useCluster: boolean;
  readonly allNamespaces: boolean;
  /** The namespace analyzed and given to file documents without one. */
  readonly namespace: string;
  readonly meshNamespace: string;
  readonly meshConfigFile?: string;
  readonly output: AnalyzeOutput;
  readonly outputThreshold: DisplayLevel;
  readonly failureThreshold: DisplayLevel;
  readonly suppress: readonly string[];
  readonly timeoutMs: number;
  /** Text of `--timeout` as given, for messages. */
  readonly timeoutText: string;
  readonly verbose: boolean;
  readonly color: boolean;
  readonly readStdin?: () => Promise<string>;
  /** Builds the cluster client (only called with `useCluster`). */
  readonly client: () => Promise<KubeClient>;
}

const DISPLAY: Readonly<Record<AnalysisLevel, DisplayLevel>> = { INFO: 'Info', WARNING: 'Warning', ERROR: 'Error' };
const rank = (l: DisplayLevel): number => LEVELS.indexOf(l);
const identity = (kind: string, namespace: string, name: string): string => `${kind}/${namespace}/${name}`;

export interface DisplayFinding extends Omit<Finding, 'level'> {
  readonly level: DisplayLevel;
}

/** Lists the analyzers and the codes they report (`--list-analyzers`). */
export async function listAnalyzers(): Promise<CommandOutcome> {
  const { ANALYZERS } = await import('../../../analysis/analyze.js');
  const { MESSAGE_TYPES } = await import('../../../analysis/messages.js');
  const byCode = new Map(MESSAGE_TYPES.map((m) => [m.code, m]));
  const lines = ['Available analyzers:'];
  for (const a of ANALYZERS) {
    lines.push(`* ${a.name}:`, `    ${a.description}`);
    for (const code of a.codes) {
      const m = byCode.get(code);
      if (m) lines.push(`    ${m.code} ${m.name} (${DISPLAY[m.level]})`);
    }
  }
  lines.push('* validation:', '    Objects that do not pass the daemon\'s validation.', `    MESH0107 SchemaValidationError (Error)`);
  return { stdout: `${lines.join('\n')}\n` };
}

export async function runAnalyze(opts: AnalyzeOptions): Promise<CommandOutcome> {
  const suppressions = parseSuppressions(opts.suppress);
  const { MESSAGES } = await import('../../../analysis/messages.js');
  const notes: string[] = [];
  const invalid: DisplayFinding[] = [];
  const schemaError = (kind: string, namespace: string, name: string, message: string, path?: string): void => {
    invalid.push({ kind, namespace, name, code: MESSAGES.SchemaValidationError.code, level: 'Error', message, ...(path ? { path } : {}) });
  };

  // 1. Files (validated exactly as `meshctl validate` and the daemon do). Refused objects are still
  // analysed for what can be analysed; the Kubernetes objects of the files join the world.
  const fileObjects: ConfigObject[] = [];
  const salvaged: ConfigObject[] = [];
  const fileKube: unknown[] = [];
  if (opts.files.length > 0) {
    const { readInputs } = await import('../validate/inputs.js');
    const { validateDocuments } = await import('../validate/documents.js');
    const read = await readInputs(opts.files, opts.readStdin, { recursive: opts.recursive });
    const unreadable = read.findings.filter((f) => f.level === 'Error');
    if (unreadable.length > 0) throw new CliError(unreadable.map((f) => `cannot read ${f.file}: ${f.message}`).join('\n'));
    for (const input of read.inputs) {
      const result = validateDocuments(input.text, input.file, opts.namespace);
      fileObjects.push(...result.objects);
      salvaged.push(...result.salvaged);
      fileKube.push(...result.kubeObjects);
      for (const f of result.findings) {
        if (f.level !== 'Error') continue;
        schemaError(f.kind ?? 'Unknown', f.namespace ?? opts.namespace, f.name ?? `${input.file}#${f.index ?? 0}`, `${input.file}${f.index === undefined ? '' : `#${f.index}`}: ${f.message}`, f.path || undefined);
      }
    }
  }

  // 2. The live cluster.
  let clusterObjects: ConfigObject[] = [];
  let services: Service[] = [];
  let workloads: WorkloadInfo[] | undefined;
  let clusterWorld: KubeWorld | undefined;
  let clusterMeshConfig: { readonly text: string; readonly origin: string } | undefined;
  if (opts.useCluster) {
    const client = await opts.client();
    const { readCluster } = await import('./cluster.js');
    const signal = AbortSignal.timeout(opts.timeoutMs);
    // Every list of the read listens on this one signal.
    setMaxListeners(0, signal);
    try {
      const view = await readCluster(client, { meshNamespace: opts.meshNamespace, meshConfigMapName: 'mesh', domain: 'cluster.local', signal });
      clusterObjects = view.objects;
      services = view.services;
      workloads = view.workloads;
      clusterWorld = view.world;
      clusterMeshConfig = view.meshConfig;
      for (const r of view.rejected) {
        for (const issue of r.issues) schemaError(r.kind ?? 'Unknown', r.namespace ?? '', r.name ?? r.origin, issue.message, issue.path || undefined);
      }
      if (view.missingKinds.length > 0) notes.push(`the cluster does not serve ${view.missingKinds.join(', ')} (CRDs not installed); analyzed without them`);
    } catch (err) {
      if (signal.aborted) throw new CliError(`analysis did not finish within --timeout ${opts.timeoutText} (reading the cluster)`);
      throw new CliError(`cannot read the cluster: ${err instanceof Error ? err.message : String(err)}`);
    } finally {
      client.close();
    }
  }

  // 3. Files over the cluster, and the analysis workloads (WorkloadEntries count as workloads).
  const merged = new Map<string, ConfigObject>();
  for (const o of clusterObjects) merged.set(identity(o.meta.gvk.kind, o.meta.namespace, o.meta.name), o);
  for (const o of fileObjects) merged.set(identity(o.meta.gvk.kind, o.meta.namespace, o.meta.name), o);
  // An invalid file version of a cluster object shadows it too: the user is replacing it.
  for (const f of invalid) merged.delete(identity(f.kind, f.namespace, f.name));
  // What can be analysed of the invalid objects is analysed too.
  const invalidKeys = new Set<string>();
  for (const o of salvaged) {
    const key = identity(o.meta.gvk.kind, o.meta.namespace, o.meta.name);
    if (merged.has(key)) continue;
    merged.set(key, o);
    invalidKeys.add(key);
  }
  const { kubeWorldFrom, overlayWorld } = await import('../../../analysis/world.js');
  const filesWorld = kubeWorldFrom(fileKube, opts.namespace);
  const world = clusterWorld ? overlayWorld(clusterWorld, filesWorld) : filesWorld;
  const fileServices = await servicesOf(fileKube, opts.namespace);
  if (fileServices.length > 0) {
    const replaced = new Set(fileServices.map((s) => `${s.namespace}/${s.name}`));
    services = [...services.filter((s) => !replaced.has(`${s.namespace}/${s.name}`)), ...fileServices];
  }
  // Workloads are known from the cluster, or from files that bring pods or deployments.
  if (workloads || filesWorld.pods.length > 0 || filesWorld.deployments.length > 0) {
    const fromFiles = [
      ...filesWorld.pods.map((p) => ({ namespace: p.namespace, labels: p.labels, name: p.name })),
      ...filesWorld.deployments.map((d) => ({ namespace: d.namespace, labels: d.template.labels, name: d.name })),
    ];
    const replaced = new Set(fromFiles.map((w) => `${w.namespace}/${w.name}`));
    workloads = [...(workloads ?? []).filter((w) => !replaced.has(`${w.namespace}/${w.name ?? ''}`)), ...fromFiles];
    for (const o of merged.values()) {
      if (o.meta.gvk.kind !== 'WorkloadEntry') continue;
      workloads.push({ namespace: o.meta.namespace, labels: (o.spec as { labels?: Record<string, string> }).labels ?? {}, name: o.meta.name });
    }
  }

  const mesh = await meshSettings(opts, clusterMeshConfig);
  const { MemoryConfigStore } = await import('../../../config/store.js');
  const { analyze, ANALYZERS } = await import('../../../analysis/analyze.js');
  const store = new MemoryConfigStore();
  store.applySource('analyze', [...merged.values()]);
  // Yield once before the CPU-bound part, so a large read does not hold timers back longer.
  await new Promise((resolve) => setImmediate(resolve));
  const result = analyze({ configs: store, services, workloads, mesh, kube: world, invalid: invalidKeys });

  // 4. Select, suppress, threshold.
  const all: DisplayFinding[] = [...invalid, ...result.findings.map((f) => ({ ...f, level: DISPLAY[f.level] }))];
  // A Namespace belongs to its own scope; other cluster-scoped objects to every scope.
  const scopeOf = (f: DisplayFinding): string => (f.kind === 'Namespace' ? f.name : f.namespace);
  const inScope = all.filter((f) => opts.allNamespaces || scopeOf(f) === opts.namespace || scopeOf(f) === '');
  const kept = inScope.filter((f) => !suppressed(suppressions, f));
  kept.sort((a, b) => rank(b.level) - rank(a.level) || a.code.localeCompare(b.code) || identity(a.kind, a.namespace, a.name).localeCompare(identity(b.kind, b.namespace, b.name)));
  const shown = kept.filter((f) => rank(f.level) >= rank(opts.outputThreshold));
  const failing = kept.some((f) => rank(f.level) >= rank(opts.failureThreshold));

  let stderr = notes.map((n) => `note: ${n}\n`).join('');
  if (opts.verbose) {
    stderr +=
      `analyzed ${merged.size} objects (${fileObjects.length} from files${opts.useCluster ? `, ${clusterObjects.length} from the cluster` : ''}), ` +
      `${services.length} services, ${workloads ? `${workloads.length} workloads` : 'workloads unknown'}; analyzers: ${ANALYZERS.map((a) => a.name).join(', ')}\n` +
      `${inScope.length - kept.length} findings suppressed, ${kept.length - shown.length} below --output-threshold ${opts.outputThreshold}\n`;
  }
  const scope = opts.allNamespaces ? 'all namespaces' : `namespace: ${opts.namespace}`;
  const stdout = await formatFindings(shown, { output: opts.output, color: opts.color, scope });
  return { stdout, stderr, exitCode: failing ? FINDINGS_EXIT_CODE : 0 };
}

/** The mesh services of the Kubernetes Services among `objects`, converted as the Cluster registry converts them. */
async function servicesOf(objects: readonly unknown[], defaultNamespace: string): Promise<Service[]> {
  const raw = objects.filter((o): o is V1Service => typeof o === 'object' && o !== null && (o as { kind?: unknown }).kind === 'Service');
  if (raw.length === 0) return [];
  const { convertService } = await import('../../../registry/kube/convert.js');
  const settings = { registry: 'Kubernetes', clusterId: 'Kubernetes', domain: 'cluster.local', trustDomain: 'cluster.local', edsForHeadless: false };
  return raw.flatMap((s) => {
    const withNamespace: V1Service = s.metadata?.namespace ? s : { ...s, metadata: { ...s.metadata, namespace: defaultNamespace } };
    const converted = convertService(withNamespace, settings);
    return converted ? [converted] : [];
  });
}

async function meshSettings(opts: AnalyzeOptions, fromCluster: { readonly text: string; readonly origin: string } | undefined): Promise<MeshSettings> {
  const { parseMeshConfig, meshSettingsFrom } = await import('../../../bootstrap/mesh-config.js');
  const { ConfigError } = await import('../../../util/config-error.js');
  const base = { domain: 'cluster.local', clusterId: 'Kubernetes' };
  let text: string | undefined;
  let origin = '';
  if (opts.meshConfigFile) {
    const { readFile } = await import('node:fs/promises');
    try {
      text = await readFile(opts.meshConfigFile, 'utf8');
    } catch (err) {
      throw new CliError(`--meshConfigFile ${opts.meshConfigFile}: ${(err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (err as Error).message}`);
    }
    origin = `--meshConfigFile ${opts.meshConfigFile}`;
  } else if (fromCluster) {
    text = fromCluster.text;
    origin = fromCluster.origin;
  }
  if (text === undefined) return meshSettingsFrom({}, base);
  try {
    return meshSettingsFrom(parseMeshConfig(text, origin), base);
  } catch (err) {
    if (err instanceof ConfigError) throw new CliError(`invalid mesh config: ${err.message}`);
    throw err;
  }
}
