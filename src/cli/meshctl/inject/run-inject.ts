/**
 * What `meshctl cluster-inject`, `meshctl x cluster-uninject` and `meshctl x injector list` do, as
 * command outcomes (the work is in src/inject/manual.ts and src/inject/injector-list.ts): read the
 * input (`-f <file>` or `-f -`), inject or uninject it, write the result to standard output or
 * `-o <file>`; list the injectors as a table.
 */
import { readFile, writeFile } from 'node:fs/promises';
import type { KubeClient } from '../../../kube/client.js';
import { listInjectorNamespaces } from '../../../inject/injector-list.js';
import { injectStream, loadInjectionInputs, needsCluster, uninjectStream, type InputSources } from '../../../inject/manual.js';
import { renderJson, renderTable } from '../../output.js';
import { CliError, type CommandOutcome } from '../../runner.js';
import { withKubeClient, type ClientFactory } from '../kube.js';

export interface StreamRequest {
  readonly filename: string;
  readonly output?: string;
  readonly defaultNamespace: string;
  readonly readStdin?: () => Promise<string>;
}

export interface InjectRequest extends StreamRequest {
  readonly injectConfigFile?: string;
  readonly valuesFile?: string;
  readonly meshConfigFile?: string;
  readonly meshConfigMapName?: string;
  readonly meshNamespace: string;
  readonly revision?: string;
  readonly webhookConfig?: string;
}

async function readInput(filename: string, flag: string, readStdin: (() => Promise<string>) | undefined): Promise<{ text: string; origin: string }> {
  if (filename === '-') {
    if (!readStdin) throw new CliError(`${flag}: standard input cannot be read here`);
    return { text: await readStdin(), origin: '<stdin>' };
  }
  try {
    return { text: await readFile(filename, 'utf8'), origin: filename };
  } catch (err) {
    throw new CliError(`${flag}: cannot read ${filename}: ${(err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (err as Error).message}`);
  }
}

async function emit(text: string, output: string | undefined): Promise<CommandOutcome> {
  if (!output) return { stdout: text };
  try {
    await writeFile(output, text);
  } catch (err) {
    throw new CliError(`--output: cannot write ${output}: ${(err as Error).message}`);
  }
  return {};
}

export async function runClusterInject(req: InjectRequest, client: ClientFactory): Promise<CommandOutcome> {
  if (!req.filename) throw new CliError('--filename: give the file to inject, or - for standard input');
  const input = await readInput(req.filename, '--filename', req.readStdin);
  const file = async (path: string | undefined, flag: string) => (path ? readInput(path, flag, req.readStdin) : undefined);
  const sources: InputSources = {
    injectConfig: await file(req.injectConfigFile, '--injectConfigFile'),
    values: await file(req.valuesFile, '--valuesFile'),
    meshConfig: await file(req.meshConfigFile, '--meshConfigFile'),
    meshNamespace: req.meshNamespace,
    meshConfigMapName: req.meshConfigMapName,
    revision: req.revision,
    webhookConfig: req.webhookConfig,
  };
  const inputs = needsCluster(sources) ? await withKubeClient(client, (c: KubeClient) => loadInjectionInputs(sources, c)) : await loadInjectionInputs(sources, undefined);
  const { text } = injectStream(input.text, input.origin, inputs, req.defaultNamespace);
  return emit(text, req.output);
}

export async function runClusterUninject(req: StreamRequest): Promise<CommandOutcome> {
  if (!req.filename) throw new CliError('--filename: give the file to uninject, or - for standard input');
  const input = await readInput(req.filename, '--filename', req.readStdin);
  const { text } = uninjectStream(input.text, input.origin, req.defaultNamespace);
  return emit(text, req.output);
}

export async function runInjectorList(client: KubeClient, opts: { readonly output: 'table' | 'json'; readonly color?: boolean }): Promise<CommandOutcome> {
  const rows = await listInjectorNamespaces(client);
  if (opts.output === 'json') return { stdout: renderJson(rows) };
  if (rows.length === 0) return { stdout: 'No namespace is labelled for injection and no pod is injected.\n' };
  const by = (r: (typeof rows)[number]) =>
    Object.entries(r.injectedBy)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([rev, n]) => `${rev}:${n}`)
      .join(',') || '-';
  return {
    stdout: renderTable(
      ['NAMESPACE', 'LABEL', 'REVISION', 'WEBHOOK', 'PODS', 'INJECTED', 'INJECTED-BY'],
      rows.map((r) => [r.namespace, r.label || '-', r.revision ? (r.tag ? `${r.revision} (tag ${r.tag})` : r.revision) : '-', r.webhook || (r.revision ? '(not installed)' : '-'), String(r.pods), String(r.injectedPods), by(r)]),
      { color: opts.color },
    ),
  };
}
