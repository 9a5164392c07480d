/**
 * What `meshctl manifest generate` and `meshctl manifest diff` do, behind the command modules
 * (src/cli/meshctl/commands/manifest.ts), which only declare flags and import this lazily.
 *
 * `generate -o <dir>` writes one file per component: `<dir>/<Component>/<Component>.yaml`
 * (Base, Meshd, IngressGateways, EgressGateways), each holding that component's objects in
 * order; components that render nothing get no file. With `--dry-run` the files are listed but
 * not written.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { CommandOutcome } from '../cli/runner.js';
import { CHARTS_DEPRECATED } from './charts-warning.js';
import { InstallError } from './errors.js';
import { CLI_OWNER_NAME } from './labels.js';
import { renderManifests, COMPONENT_NAMES, type ComponentManifest, type ComponentName } from './render/index.js';
import { resolveSpec } from './resolve.js';
import { readCrds } from './sources.js';
import { toYamlDocuments } from './yaml-io.js';
import { diffManifests, type DiffOptions } from './diff/manifest-diff.js';

export { CHARTS_DEPRECATED };

export interface GenerateRequest {
  readonly components?: readonly string[];
  readonly files?: readonly string[];
  readonly sets?: readonly string[];
  readonly manifests?: string;
  readonly charts?: string;
  readonly revision?: string;
  readonly output?: string;
  readonly dryRun?: boolean;
  readonly force?: boolean;
}

/** Component names as given to `--component`: the label value or the spec key, any case. */
export function parseComponents(names: readonly string[]): ComponentName[] {
  const out: ComponentName[] = [];
  for (const name of names) {
    const hit = COMPONENT_NAMES.find((c) => c.toLowerCase() === name.trim().toLowerCase());
    if (!hit) throw new InstallError(`--component: unknown component "${name}" (known: ${COMPONENT_NAMES.join(', ')})`);
    if (!out.includes(hit)) out.push(hit);
  }
  return out;
}

/** The manifests of a request: the resolved spec rendered, with ownership `installed-state[-<revision>]`. */
export async function generateManifests(req: GenerateRequest): Promise<{ manifests: ComponentManifest[]; warnings: string[] }> {
  const warnings: string[] = [];
  if (req.charts) warnings.push(CHARTS_DEPRECATED);
  const resolved = await resolveSpec({
    manifests: req.manifests || req.charts,
    files: req.files,
    sets: req.sets,
    revision: req.revision,
    force: req.force,
  });
  warnings.push(...resolved.warnings.map((w) => `warning: ${w}`));
  const spec = resolved.spec;
  const revision = spec.revision && spec.revision !== 'default' ? spec.revision : '';
  const crds = await readCrds(resolved.source);
  let manifests = renderManifests(spec, {
    owner: { name: revision ? `${CLI_OWNER_NAME}-${revision}` : CLI_OWNER_NAME, namespace: spec.namespace ?? 'mesh-system' },
    crds,
  });
  const wanted = parseComponents(req.components ?? []);
  if (wanted.length > 0) {
    for (const c of wanted) if (!manifests.some((m) => m.component === c)) warnings.push(`warning: component ${c} renders nothing: it is not enabled in the spec`);
    manifests = manifests.filter((m) => wanted.includes(m.component));
  }
  return { manifests, warnings };
}

function stderrOf(warnings: readonly string[]): string | undefined {
  return warnings.length > 0 ? `${warnings.join('\n')}\n` : undefined;
}

export async function runManifestGenerate(req: GenerateRequest): Promise<CommandOutcome> {
  const components = req.components ?? [];
  parseComponents(components); // bad names fail before any work
  const { manifests, warnings } = await generateManifests(req);
  if (!req.output) {
    return { stdout: toYamlDocuments(manifests.flatMap((m) => m.objects)), stderr: stderrOf(warnings) };
  }
  const lines: string[] = [];
  for (const m of manifests) {
    const file = path.join(req.output, m.component, `${m.component}.yaml`);
    if (!req.dryRun) {
      await mkdir(path.dirname(file), { recursive: true });
      await writeFile(file, toYamlDocuments(m.objects));
    }
    lines.push(`${req.dryRun ? 'would write' : 'wrote'} ${file} (${m.objects.length} objects)`);
  }
  return { stdout: lines.length > 0 ? `${lines.join('\n')}\n` : '', stderr: stderrOf(warnings) };
}

export interface DiffRequest extends DiffOptions {
  readonly a: string;
  readonly b: string;
  readonly directory?: boolean;
}

/** Exit code 0 when the manifests are the same, 1 when they differ (errors: 2). */
export async function runManifestDiff(req: DiffRequest): Promise<CommandOutcome> {
  const result = await diffManifests(req.a, req.b, req.directory ?? false, req);
  return { stdout: result.report, exitCode: result.same ? 0 : 1 };
}
