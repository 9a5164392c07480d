/**
 * From user input to a validated MeshOperator spec: ONE layering, the same for every command and
 * for the operator controller (docs/adr/0031):
 *
 *   1. the overlays are merged left to right (maps merge, lists replace, `null` deletes): the `-f`
 *      files of a command, or the spec of a MeshOperator resource; each was checked as an overlay
 *      first (types and unknown fields; missing required fields may come from the profile);
 *   2. the profile is chosen: the explicit one (`profile dump <name>`), else the last
 *      `--set profile=…`, else `spec.profile` of the overlays, else `default`;
 *   3. the tree is `default` profile ⊕ chosen profile ⊕ overlays;
 *   4. the `--set` flags are applied in order on that tree;
 *   5. `-r/--revision` sets `spec.revision` (an error when `--set revision=` says otherwise);
 *   6. `namespace` defaults to `mesh-system` and `tag` to `defaultTag` (the version of meshctl, or
 *      of the operator);
 *   7. the result is checked (schema, then cross-field rules). With `force`, unknown fields are
 *      dropped and cross-field problems become warnings; type errors always stop.
 * Failures are InstallErrors with the issues (full paths from `spec`); a profile that cannot be
 * read or laid under the overlays is a ProfileError.
 *
 * `layerSpec` takes parsed layers; `resolveSpec` reads a command's files first.
 */
import { getBuildInfo } from '../version/build-info.js';
import {
  DEFAULT_NAMESPACE,
  INSTALL_API_VERSION,
  MESH_OPERATOR_KIND,
  formatIssue,
  parseSpec,
  semanticIssues,
  type InstallIssue,
  type MeshOperatorSpec,
} from './api.js';
import { InstallError, ProfileError } from './errors.js';
import { concreteKey, applySetFlags, parseSetFlag, type SetFlag } from './set-values.js';
import { DEFAULT_PROFILE, manifestSource, overlayIssues, readOperatorFile, readProfile, type ManifestSource } from './sources.js';
import { deepMerge, isMap, type Tree } from './tree.js';
import type { z } from 'zod';

export interface SpecLayers {
  /** Where the profiles come from. */
  readonly source: ManifestSource;
  /** Specs laid over the profile, left to right, each already checked as an overlay. */
  readonly overlays?: ReadonlyArray<Tree>;
  /** Names the overlays in messages (`files given with -f`, `spec`). */
  readonly origin?: string;
  /** A profile chosen by argument (wins over `--set profile` and the overlays). */
  readonly profile?: string;
  /** `--set` arguments, applied in order. */
  readonly sets?: readonly string[];
  /** `-r/--revision`. */
  readonly revision?: string;
  /** `--force`: proceed despite validation errors where possible. */
  readonly force?: boolean;
  /** Tag when the spec sets none; default the version of this program. */
  readonly defaultTag?: string;
}

export interface ResolveRequest {
  /** `--manifests/-d`. */
  readonly manifests?: string;
  /** `-f` files, overlaid left to right. */
  readonly files?: readonly string[];
  readonly sets?: readonly string[];
  readonly revision?: string;
  readonly profile?: string;
  readonly force?: boolean;
  readonly defaultTag?: string;
}

export interface ResolvedSpec {
  readonly spec: MeshOperatorSpec;
  /** The spec as a MeshOperator document. */
  readonly operator: { apiVersion: string; kind: string; spec: MeshOperatorSpec };
  /** Problems skipped because of `force`. */
  readonly warnings: readonly string[];
  readonly source: ManifestSource;
}

/**
 * Problems of a MeshOperator spec as an overlay (types, unknown fields; no profile merged yet),
 * with paths from `spec`. A resource's spec is checked with this; files are checked when read.
 */
export function specOverlayIssues(spec: unknown): InstallIssue[] {
  if (spec === undefined || spec === null) return [];
  if (!isMap(spec)) return [{ path: 'spec', message: 'expected a map' }];
  return overlayIssues({ apiVersion: INSTALL_API_VERSION, kind: MESH_OPERATOR_KIND, spec });
}

function profileOf(tree: Tree, origin: string): string | undefined {
  const p = tree.profile;
  if (p === undefined) return undefined;
  if (typeof p !== 'string' || p === '') {
    const issue = { path: 'spec.profile', message: `expected a profile name, got ${JSON.stringify(p)}` };
    throw new InstallError(`${origin}: ${issue.path}: ${issue.message}`, [issue]);
  }
  return p;
}

/** Reads `default` ⊕ `profile`; any failure is a ProfileError on `spec.profile`. */
async function profileTree(source: ManifestSource, profile: string): Promise<Tree> {
  try {
    let tree = deepMerge({}, await readProfile(source, DEFAULT_PROFILE)) as Tree;
    if (profile !== DEFAULT_PROFILE) tree = deepMerge(tree, await readProfile(source, profile)) as Tree;
    return tree;
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    throw new ProfileError(message, [{ path: 'spec.profile', message }]);
  }
}

/** Builds the spec tree (steps 1–6) without checking it. */
export async function buildSpecTree(layers: SpecLayers): Promise<{ tree: Tree; typedFrom: ReadonlyMap<string, string> }> {
  const flags: SetFlag[] = (layers.sets ?? []).map(parseSetFlag);
  let user: Tree = {};
  for (const overlay of layers.overlays ?? []) user = deepMerge(user, overlay, true) as Tree;

  const setProfile = [...flags].reverse().find((f) => f.path.length === 1 && f.path[0].type === 'key' && f.path[0].key === 'profile');
  let profile = layers.profile;
  if (profile === undefined && setProfile) {
    if (typeof setProfile.value !== 'string' || setProfile.value === '') throw new InstallError(`--set ${JSON.stringify(setProfile.text)}: expected a profile name`);
    profile = setProfile.value;
  }
  profile ??= profileOf(user, layers.origin ?? 'spec') ?? DEFAULT_PROFILE;

  const tree = deepMerge(await profileTree(layers.source, profile), user) as Tree;
  tree.profile = profile;

  const { typedFrom } = applySetFlags(tree, flags);
  if (layers.revision !== undefined && layers.revision !== '') {
    const setRevision = flags.some((f) => f.path.length === 1 && f.path[0].type === 'key' && f.path[0].key === 'revision');
    if (setRevision && tree.revision !== layers.revision) {
      throw new InstallError(`--revision ${layers.revision} contradicts --set revision=${String(tree.revision)}`);
    }
    tree.revision = layers.revision;
  }
  if (tree.namespace === undefined) tree.namespace = DEFAULT_NAMESPACE;
  if (tree.tag === undefined) tree.tag = layers.defaultTag ?? getBuildInfo().version;
  return { tree, typedFrom };
}

/** Turns numbers and booleans that `--set` typed back into their text where the schema wants a string. */
function coerceTyped(tree: Tree, issues: ReadonlyArray<z.core.$ZodIssue>, typedFrom: ReadonlyMap<string, string>): boolean {
  let changed = false;
  for (const issue of issues) {
    if (issue.code !== 'invalid_type' || issue.expected !== 'string') continue;
    const raw = typedFrom.get(concreteKey(issue.path as Array<string | number>));
    if (raw === undefined) continue;
    let node: unknown = tree;
    const steps = issue.path as Array<string | number>;
    for (const step of steps.slice(0, -1)) node = (node as Record<string | number, unknown>)[step];
    (node as Record<string | number, unknown>)[steps[steps.length - 1]] = raw;
    changed = true;
  }
  return changed;
}

/** Drops the unknown fields that `issues` name; true when any was dropped. */
function dropUnknown(tree: Tree, issues: ReadonlyArray<z.core.$ZodIssue>): boolean {
  let changed = false;
  for (const issue of issues) {
    if (issue.code !== 'unrecognized_keys') continue;
    let node: unknown = tree;
    for (const step of issue.path) node = isMap(node) || Array.isArray(node) ? (node as Record<PropertyKey, unknown>)[step] : undefined;
    if (!isMap(node)) continue;
    for (const k of issue.keys) delete node[k];
    changed = true;
  }
  return changed;
}

/** Checks a spec tree (step 7). */
export function checkSpecTree(tree: Tree, typedFrom: ReadonlyMap<string, string>, force = false): { spec: MeshOperatorSpec; warnings: string[] } {
  const warnings: string[] = [];
  for (let round = 0; ; round++) {
    const parsed = parseSpec(tree);
    if (parsed.ok) {
      const issues = semanticIssues(parsed.spec);
      if (issues.length > 0 && !force) throw InstallError.fromIssues('invalid MeshOperator', issues);
      warnings.push(...issues.map((i) => `${i.path}: ${i.message} (ignored: --force)`));
      return { spec: parsed.spec, warnings };
    }
    if (round < 5 && coerceTyped(tree, parsed.issues, typedFrom)) continue;
    const issues: InstallIssue[] = parsed.issues.flatMap((i) => formatIssue(i, ['spec']));
    if (force && round < 5 && issues.every((i) => i.message === 'unknown field') && dropUnknown(tree, parsed.issues)) {
      warnings.push(...issues.map((i) => `${i.path}: unknown field dropped (--force)`));
      continue;
    }
    throw InstallError.fromIssues('invalid MeshOperator', issues);
  }
}

/** Steps 1–7 on parsed layers. */
export async function layerSpec(layers: SpecLayers): Promise<ResolvedSpec> {
  const { tree, typedFrom } = await buildSpecTree(layers);
  const { spec, warnings } = checkSpecTree(tree, typedFrom, layers.force);
  return { spec, warnings, source: layers.source, operator: { apiVersion: INSTALL_API_VERSION, kind: MESH_OPERATOR_KIND, spec } };
}

/** Steps 1–7 for a command: the `-f` files are read (and checked) first. */
export async function resolveSpec(req: ResolveRequest): Promise<ResolvedSpec> {
  const source = await manifestSource(req.manifests);
  const overlays: Tree[] = [];
  for (const file of req.files ?? []) overlays.push(await readOperatorFile(file));
  return layerSpec({ source, overlays, origin: 'files given with -f', profile: req.profile, sets: req.sets, revision: req.revision, force: req.force, defaultTag: req.defaultTag });
}
