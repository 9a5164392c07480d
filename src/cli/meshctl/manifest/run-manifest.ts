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
import { diffManifests, type DiffOptions } from '../../../install/diff/manifest-diff.js';
import { generateManifests, parseComponents, type GenerateRequest as GenerateSpec } from '../../../install/generate.js';
import { toYamlDocuments } from '../../../install/yaml-io.js';
import type { CommandOutcome } from '../../runner.js';
import { formatManifestDiff } from '../install/format.js';

export interface GenerateRequest extends GenerateSpec {
  readonly output?: string;
  readonly dryRun?: boolean;
}

function stderrOf(warnings: readonly string[]): string | undefined {
  return warnings.length > 0 ? `${warnings.join('\n')}\n` : undefined;
}

export async function runManifestGenerate(req: GenerateRequest): Promise<CommandOutcome> {
  parseComponents(req.components ?? []); // bad names fail before any work
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
  readonly verbose?: boolean;
}

/** Exit code 0 when the manifests are the same, 1 when they differ (errors: 2). */
export async function runManifestDiff(req: DiffRequest): Promise<CommandOutcome> {
  const result = await diffManifests(req.a, req.b, req.directory ?? false, req);
  return { stdout: formatManifestDiff(result, req.a, req.b, req.verbose ?? false), exitCode: result.same ? 0 : 1 };
}
