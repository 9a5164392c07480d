/**
 * From a MeshOperator resource to a validated install spec, the way meshctl resolves `-f` files
 * (src/install/resolve.ts): the resource's spec is checked on its own (an overlay: `null` deletes,
 * missing required fields may come from the profile), laid over `default` ⊕ its profile, given
 * the namespace and tag defaults, and checked as a whole (schema, then cross-field rules).
 *
 * A failure says what failed, for the metrics and the status: `validation` (a field of the spec,
 * every issue with its full path from the document root) or `merge` (the profile cannot be read
 * or laid under the spec).
 */
import { formatSchemaIssue } from '../config/validation/schema-issues.js';
import { DEFAULT_NAMESPACE, parseSpec, type InstallIssue, type MeshOperatorSpec } from '../install/api.js';
import { InstallError } from '../install/errors.js';
import { checkSpecTree } from '../install/resolve.js';
import { DEFAULT_PROFILE, manifestSource, readCrds, readProfile, type ManifestSource } from '../install/sources.js';
import { deepMerge, isMap, type Tree } from '../install/tree.js';
import type { K8sObject } from '../install/render/types.js';

export type SpecFailureKind = 'validation' | 'merge';

export class OperatorSpecError extends Error {
  constructor(
    readonly failure: SpecFailureKind,
    message: string,
    readonly issues: readonly InstallIssue[] = [],
  ) {
    super(message);
    this.name = 'OperatorSpecError';
  }
}

export interface ResolveCrOptions {
  /** Tag when the spec sets none. */
  readonly defaultTag: string;
}

/** What the controller needs from the manifests directory; read once and kept. */
export interface SpecSources {
  readonly source: ManifestSource;
  readonly crds: readonly K8sObject[];
}

export async function loadSpecSources(manifests?: string): Promise<SpecSources> {
  const source = await manifestSource(manifests);
  return { source, crds: await readCrds(source) };
}

function issuesMessage(issues: readonly InstallIssue[]): string {
  return issues.map((i) => `${i.path}: ${i.message}`).join('; ');
}

/** Problems of the resource's own spec, as an overlay (no profile merged yet). */
export function specOverlayIssues(spec: unknown): InstallIssue[] {
  if (spec === undefined || spec === null) return [];
  if (!isMap(spec)) return [{ path: 'spec', message: 'expected a map' }];
  const parsed = parseSpec(spec);
  if (parsed.ok) return [];
  return parsed.issues
    .flatMap((i) => formatSchemaIssue(i, 'spec'))
    .filter((i) => !i.message.startsWith('required field is missing') && !i.message.endsWith('got null'));
}

/** The validated spec of a resource. Throws OperatorSpecError. */
export async function resolveOperatorSpec(spec: unknown, sources: SpecSources, opts: ResolveCrOptions): Promise<MeshOperatorSpec> {
  const own = specOverlayIssues(spec);
  if (own.length > 0) throw new OperatorSpecError('validation', issuesMessage(own), own);
  const user: Tree = isMap(spec) ? spec : {};
  let profile = DEFAULT_PROFILE;
  if (user.profile !== undefined) profile = user.profile as string;
  if (profile === '') throw new OperatorSpecError('validation', 'spec.profile: expected a profile name, got an empty text', [{ path: 'spec.profile', message: 'expected a profile name' }]);
  let tree: Tree;
  try {
    tree = deepMerge({}, await readProfile(sources.source, DEFAULT_PROFILE)) as Tree;
    if (profile !== DEFAULT_PROFILE) tree = deepMerge(tree, await readProfile(sources.source, profile)) as Tree;
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    throw new OperatorSpecError('merge', `spec.profile: ${message}`, [{ path: 'spec.profile', message }]);
  }
  tree = deepMerge(tree, user) as Tree;
  tree.profile = profile;
  if (tree.namespace === undefined) tree.namespace = DEFAULT_NAMESPACE;
  if (tree.tag === undefined) tree.tag = opts.defaultTag;
  try {
    return checkSpecTree(tree, new Map(), false).spec;
  } catch (err) {
    if (err instanceof InstallError) {
      const issues = err.issues.length > 0 ? err.issues : [{ path: 'spec', message: err.message }];
      throw new OperatorSpecError('validation', issuesMessage(issues), issues);
    }
    throw err;
  }
}
