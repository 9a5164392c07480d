/**
 * Where profiles, CRDs and user files come from.
 *
 * A manifests directory holds `profiles/<name>.yaml` (MeshOperator documents; `default.yaml` is the
 * full base, every other profile overlays it) and may hold `crds/*.yaml` (or `crds/all.yaml`). The built-in one is
 * `manifests/` of the package, with the CRDs from `crds/`; both are found relative to this module,
 * which sits at the same depth in `src/` and `dist/`. `--manifests/-d <dir>` names another
 * directory with the same layout; without its own `crds/` the built-in CRDs are used.
 */
import { readFile, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { INSTALL_API_VERSION, MESH_OPERATOR_KIND, checkOperatorDocument, type InstallIssue } from './api.js';
import { InstallError } from './errors.js';
import type { K8sObject } from './render/types.js';
import { isMap, type Tree } from './tree.js';
import { parseYamlDocuments } from './yaml-io.js';

export const BUILTIN_MANIFESTS_DIR = fileURLToPath(new URL('../../manifests/', import.meta.url));
export const BUILTIN_CRDS_DIR = fileURLToPath(new URL('../../crds/', import.meta.url));
export const DEFAULT_PROFILE = 'default';

export interface ManifestSource {
  /** Folder with `<name>.yaml` profiles. */
  readonly profilesDir: string;
  /** Folder with CRD YAML files. */
  readonly crdsDir: string;
}

async function isDir(p: string): Promise<boolean> {
  return stat(p).then((s) => s.isDirectory(), () => false);
}

/** The built-in manifests, or the directory of `--manifests` (checked for a `profiles/` folder). */
export async function manifestSource(dir?: string): Promise<ManifestSource> {
  if (!dir) return { profilesDir: path.join(BUILTIN_MANIFESTS_DIR, 'profiles'), crdsDir: BUILTIN_CRDS_DIR };
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(dir)) {
    throw new InstallError(`--manifests ${dir}: URLs are not supported; download and unpack the release, then pass its manifests directory`);
  }
  if (!(await isDir(dir))) throw new InstallError(`--manifests ${dir}: not a directory`);
  const profilesDir = path.join(dir, 'profiles');
  if (!(await isDir(profilesDir))) throw new InstallError(`--manifests ${dir}: no profiles/ folder (expected ${path.join(dir, 'profiles', '<name>.yaml')})`);
  const ownCrds = path.join(dir, 'crds');
  return { profilesDir, crdsDir: (await isDir(ownCrds)) ? ownCrds : BUILTIN_CRDS_DIR };
}

/** Profile names (file names without `.yaml`), sorted. */
export async function listProfiles(src: ManifestSource): Promise<string[]> {
  const names = await readdir(src.profilesDir);
  return names.filter((n) => n.endsWith('.yaml')).map((n) => n.slice(0, -'.yaml'.length)).sort();
}

/** Type and unknown-field problems of a partial document; missing required fields and `null`s (deletions) are fine in an overlay. */
export function overlayIssues(doc: unknown): InstallIssue[] {
  return checkOperatorDocument(doc).filter((i) => !i.message.startsWith('required field is missing') && !i.message.endsWith('got null'));
}

/** Reads one MeshOperator document from `text`; `origin` names it in errors. Returns its `spec` (empty when absent). */
export function operatorSpecFrom(text: string, origin: string): Tree {
  const docs = parseYamlDocuments(text, origin);
  if (docs.length === 0) return {};
  if (docs.length > 1) throw new InstallError(`${origin}: holds ${docs.length} documents; a MeshOperator file holds one`);
  const doc = docs[0];
  if (!isMap(doc)) throw new InstallError(`${origin}: expected a MeshOperator document (a map), got ${Array.isArray(doc) ? 'a list' : typeof doc}`);
  if (doc.kind !== MESH_OPERATOR_KIND || doc.apiVersion !== INSTALL_API_VERSION) {
    throw new InstallError(`${origin}: expected apiVersion ${INSTALL_API_VERSION} and kind ${MESH_OPERATOR_KIND}, got ${String(doc.apiVersion)} ${String(doc.kind)}`);
  }
  const issues = overlayIssues(doc);
  if (issues.length > 0) throw InstallError.fromIssues(origin, issues);
  return isMap(doc.spec) ? doc.spec : {};
}

/** The spec of a `-f` file. */
export async function readOperatorFile(file: string): Promise<Tree> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw new InstallError(`${file}: cannot read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  return operatorSpecFrom(text, file);
}

/** The spec of a profile; an unknown name is an error listing the known ones. */
export async function readProfile(src: ManifestSource, name: string): Promise<Tree> {
  const known = await listProfiles(src);
  if (!known.includes(name)) {
    throw new InstallError(`unknown profile "${name}" (known profiles: ${known.join(', ')})`);
  }
  const file = path.join(src.profilesDir, `${name}.yaml`);
  return operatorSpecFrom(await readFile(file, 'utf8'), file);
}

const crdCache = new Map<string, { stamp: string; crds: K8sObject[] }>();

/**
 * The CustomResourceDefinitions of `src.crdsDir`, each name once, sorted by name: from `all.yaml`
 * when the folder has one (the generator writes every CRD there too), else from every `*.yaml`.
 * Parsed once per process while the files stay unchanged.
 */
export async function readCrds(src: ManifestSource): Promise<K8sObject[]> {
  const yamlFiles = (await readdir(src.crdsDir)).filter((n) => n.endsWith('.yaml')).sort();
  const files = (yamlFiles.includes('all.yaml') ? ['all.yaml'] : yamlFiles).map((f) => path.join(src.crdsDir, f));
  const stats = await Promise.all(files.map((f) => stat(f)));
  const stamp = files.map((f, i) => `${f}:${stats[i].size}:${stats[i].mtimeMs}`).join('|');
  const cached = crdCache.get(src.crdsDir);
  if (cached?.stamp === stamp) return cached.crds;
  const byName = new Map<string, K8sObject>();
  for (const file of files) {
    for (const doc of parseYamlDocuments(await readFile(file, 'utf8'), file)) {
      if (!isMap(doc) || doc.kind !== 'CustomResourceDefinition') continue;
      const name = isMap(doc.metadata) ? doc.metadata.name : undefined;
      if (typeof name !== 'string') throw new InstallError(`${file}: a CustomResourceDefinition without metadata.name`);
      if (!byName.has(name)) byName.set(name, doc as unknown as K8sObject);
    }
  }
  const crds = [...byName.keys()].sort().map((n) => byName.get(n) as K8sObject);
  crdCache.set(src.crdsDir, { stamp, crds });
  return crds;
}
