/**
 * The manifests of `meshctl manifest generate` (and of anything that wants meshctl's render of a
 * request): the spec resolved from profile, `-f` files and `--set`, rendered with the ownership of
 * meshctl's install record `installed-state[-<revision>]`, optionally only some components.
 */
import { CHARTS_DEPRECATED } from './charts-warning.js';
import { InstallError } from './errors.js';
import { CLI_OWNER_NAME } from './labels.js';
import { renderManifests, COMPONENT_NAMES, type ComponentManifest, type ComponentName } from './render/index.js';
import { resolveSpec, type ResolvedSpec } from './resolve.js';
import { readCrds } from './sources.js';

/** The flags that choose a spec, as `manifest generate`, `install` and `upgrade` have them. */
export interface SpecRequest {
  readonly files?: readonly string[];
  readonly sets?: readonly string[];
  readonly manifests?: string;
  readonly charts?: string;
  readonly revision?: string;
  readonly force?: boolean;
}

export interface GenerateRequest extends SpecRequest {
  readonly components?: readonly string[];
}

/** The spec a request chooses, with the warnings to show (the deprecated `--charts`, problems `--force` skipped). */
export async function resolveRequest(req: SpecRequest): Promise<{ resolved: ResolvedSpec; warnings: string[] }> {
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
  return { resolved, warnings };
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

/** The manifests of a request, with the warnings to show (deprecated flags, `--force` skips, empty components). */
export async function generateManifests(req: GenerateRequest): Promise<{ manifests: ComponentManifest[]; warnings: string[] }> {
  const { resolved, warnings } = await resolveRequest(req);
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
