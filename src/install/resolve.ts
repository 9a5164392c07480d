/**
 * From user input to a validated MeshOperator spec, the same way for every command:
 *
 *   1. the `-f` files are merged left to right (maps merge, lists replace, `null` deletes);
 *   2. the profile is chosen: the explicit one (`profile dump <name>`), else the last
 *      `--set profile=…`, else `spec.profile` of the files, else `default`;
 *   3. the tree is `default` profile ⊕ chosen profile ⊕ files;
 *   4. the `--set` flags are applied in order on that tree;
 *   5. `-r/--revision` sets `spec.revision` (an error when `--set revision=` says otherwise);
 *   6. `namespace` defaults to `mesh-system` and `tag` to the version of meshctl;
 *   7. the result is checked (schema, then cross-field rules). With `force`, unknown fields are
 *      dropped and cross-field problems become warnings; type errors always stop.
 */
import { formatSchemaIssue } from '../config/validation/schema-issues.js';
import { getBuildInfo } from '../version/build-info.js';
import {
  DEFAULT_NAMESPACE,
  INSTALL_API_VERSION,
  MESH_OPERATOR_KIND,
  parseSpec,
  semanticIssues,
  type InstallIssue,
  type MeshOperatorSpec,
} from './api.js';
import { InstallError } from './errors.js';
import { concreteKey, applySetFlags, parseSetFlag, type SetFlag } from './set-values.js';
import { DEFAULT_PROFILE, manifestSource, readOperatorFile, readProfile, type ManifestSource } from './sources.js';
import { deepMerge, isMap, type Tree } from './tree.js';
import type { z } from 'zod';

export interface ResolveRequest {
  /** `--manifests/-d`. */
  readonly manifests?: string;
  /** `-f` files, overlaid left to right. */
  readonly files?: readonly string[];
  /** `--set` arguments, applied in order. */
  readonly sets?: readonly string[];
  /** `-r/--revision`. */
  readonly revision?: string;
  /** A profile chosen by argument (wins over `--set profile` and the files). */
  readonly profile?: string;
  /** `--force`: proceed despite validation errors where possible. */
  readonly force?: boolean;
  /** Tag when the spec sets none; default the version of meshctl. */
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

function profileOf(tree: Tree, origin: string): string | undefined {
  const p = tree.profile;
  if (p === undefined) return undefined;
  if (typeof p !== 'string' || p === '') throw new InstallError(`${origin}: spec.profile: expected a profile name, got ${JSON.stringify(p)}`);
  return p;
}

/** Builds the spec tree (steps 1–6) without checking it. */
export async function buildSpecTree(req: ResolveRequest): Promise<{ tree: Tree; typedFrom: ReadonlyMap<string, string>; source: ManifestSource }> {
  const source = await manifestSource(req.manifests);
  const flags: SetFlag[] = (req.sets ?? []).map(parseSetFlag);
  let user: Tree = {};
  for (const file of req.files ?? []) user = deepMerge(user, await readOperatorFile(file), true) as Tree;

  const setProfile = [...flags].reverse().find((f) => f.path.length === 1 && f.path[0].type === 'key' && f.path[0].key === 'profile');
  let profile = req.profile;
  if (profile === undefined && setProfile) {
    if (typeof setProfile.value !== 'string' || setProfile.value === '') throw new InstallError(`--set ${JSON.stringify(setProfile.text)}: expected a profile name`);
    profile = setProfile.value;
  }
  profile ??= profileOf(user, 'files given with -f') ?? DEFAULT_PROFILE;

  let tree = deepMerge({}, await readProfile(source, DEFAULT_PROFILE)) as Tree;
  if (profile !== DEFAULT_PROFILE) tree = deepMerge(tree, await readProfile(source, profile)) as Tree;
  tree = deepMerge(tree, user) as Tree;
  tree.profile = profile;

  const { typedFrom } = applySetFlags(tree, flags);
  if (req.revision !== undefined && req.revision !== '') {
    const setRevision = flags.some((f) => f.path.length === 1 && f.path[0].type === 'key' && f.path[0].key === 'revision');
    if (setRevision && tree.revision !== req.revision) {
      throw new InstallError(`--revision ${req.revision} contradicts --set revision=${String(tree.revision)}`);
    }
    tree.revision = req.revision;
  }
  if (tree.namespace === undefined) tree.namespace = DEFAULT_NAMESPACE;
  if (tree.tag === undefined) tree.tag = req.defaultTag ?? getBuildInfo().version;
  return { tree, typedFrom, source };
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
    const issues: InstallIssue[] = parsed.issues.flatMap((i) => formatSchemaIssue(i, 'spec'));
    if (force && round < 5 && issues.every((i) => i.message === 'unknown field') && dropUnknown(tree, parsed.issues)) {
      warnings.push(...issues.map((i) => `${i.path}: unknown field dropped (--force)`));
      continue;
    }
    throw InstallError.fromIssues('invalid MeshOperator', issues);
  }
}

/** Steps 1–7: the validated spec of a request. */
export async function resolveSpec(req: ResolveRequest): Promise<ResolvedSpec> {
  const { tree, typedFrom, source } = await buildSpecTree(req);
  const { spec, warnings } = checkSpecTree(tree, typedFrom, req.force);
  return { spec, warnings, source, operator: { apiVersion: INSTALL_API_VERSION, kind: MESH_OPERATOR_KIND, spec } };
}
