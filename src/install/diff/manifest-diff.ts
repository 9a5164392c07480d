/**
 * `meshctl manifest diff`: compares two sets of Kubernetes objects (two files, or with
 * `--directory` two folders of YAML files) object by object, keyed `<Kind>:<namespace>:<name>`.
 *
 *  - `--select` / `--ignore`: comma-separated `<Kind>:<namespace>:<name>` patterns; `*` matches any
 *    run of characters, an empty or missing part matches anything (`::` and `Deployment` are valid).
 *    An object is compared when it matches a select pattern and no ignore pattern.
 *  - `--rename`: comma-separated `A->B` pairs of `<Kind>:<namespace>:<name>`; an object of the first
 *    set that matches A is compared with B of the second. A part of B that is `*` or empty keeps
 *    the object's own value.
 * The result lists objects found on one side only, then each object that differs with its
 * changed paths (src/install/diff/tree-diff.ts), and the counts; the command formats it
 * (src/cli/meshctl/manifest/run-manifest.ts).
 */
import { readFile, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { InstallError } from '../errors.js';
import { compareObjects } from '../render/order.js';
import type { K8sObject } from '../render/types.js';
import { isMap } from '../tree.js';
import { parseYamlDocuments } from '../yaml-io.js';
import { diffTrees } from './tree-diff.js';

/** Errors of `manifest diff` exit with 2, as `diff` does: 0 same, 1 different, 2 trouble. */
export const DIFF_ERROR_EXIT = 2;

function diffError(message: string): InstallError {
  return new InstallError(message, [], DIFF_ERROR_EXIT);
}

export interface ObjectId {
  readonly kind: string;
  readonly namespace: string;
  readonly name: string;
}

export function idText(id: ObjectId): string {
  return `${id.kind}:${id.namespace}:${id.name}`;
}

function idOf(o: K8sObject): ObjectId {
  return { kind: o.kind, namespace: o.metadata.namespace ?? '', name: o.metadata.name };
}

type Pattern = readonly [RegExp, RegExp, RegExp];

function glob(part: string): RegExp {
  if (part === '' || part === '*') return /^/;
  return new RegExp(`^${part.split('*').map((s) => s.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`);
}

function splitId(text: string, flag: string): [string, string, string] {
  const parts = text.trim().split(':');
  if (parts.length > 3) throw diffError(`${flag}: "${text}" has more than three parts (use <Kind>:<namespace>:<name>)`);
  return [parts[0] ?? '', parts[1] ?? '', parts[2] ?? ''];
}

/** Parses a `--select`/`--ignore` list. */
export function parsePatterns(text: string, flag: string): Pattern[] {
  return text
    .split(',')
    .filter((t) => t.trim() !== '')
    .map((t) => splitId(t, flag).map(glob) as unknown as Pattern);
}

function matches(patterns: readonly Pattern[], id: ObjectId): boolean {
  return patterns.some(([k, ns, n]) => k.test(id.kind) && ns.test(id.namespace) && n.test(id.name));
}

export interface Rename {
  readonly from: Pattern;
  readonly to: readonly [string, string, string];
}

/** Parses `--rename` (`A->B,C->D`). */
export function parseRenames(text: string): Rename[] {
  return text
    .split(',')
    .filter((t) => t.trim() !== '')
    .map((pair) => {
      const arrow = pair.indexOf('->');
      if (arrow < 0) throw diffError(`--rename: "${pair}" is not a pair A->B`);
      return { from: splitId(pair.slice(0, arrow), '--rename').map(glob) as unknown as Pattern, to: splitId(pair.slice(arrow + 2), '--rename') };
    });
}

function renamed(id: ObjectId, renames: readonly Rename[]): ObjectId {
  const r = renames.find((x) => matches([x.from], id));
  if (!r) return id;
  const keep = (v: string, own: string) => (v === '' || v === '*' ? own : v);
  return { kind: keep(r.to[0], id.kind), namespace: keep(r.to[1], id.namespace), name: keep(r.to[2], id.name) };
}

async function yamlFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (d: string) => {
    const entries = (await readdir(d, { withFileTypes: true })).sort((x, y) => (x.name < y.name ? -1 : x.name > y.name ? 1 : 0));
    for (const e of entries) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) await walk(p);
      else if (/\.(ya?ml|json)$/.test(e.name)) out.push(p);
    }
  };
  await walk(dir);
  return out;
}

/** The objects of a file, or of every YAML/JSON file under a folder (`directory`), keyed by id. */
export async function readManifestObjects(target: string, directory: boolean): Promise<Map<string, { id: ObjectId; object: K8sObject; origin: string }>> {
  const st = await stat(target).catch(() => undefined);
  if (!st) throw diffError(`${target}: no such file or directory`);
  if (st.isDirectory() && !directory) throw diffError(`${target} is a directory: use -r/--directory to compare directories`);
  if (!st.isDirectory() && directory) throw diffError(`${target} is not a directory (-r/--directory compares directories)`);
  const files = directory ? await yamlFiles(target) : [target];
  const out = new Map<string, { id: ObjectId; object: K8sObject; origin: string }>();
  for (const file of files) {
    let docs: unknown[];
    try {
      docs = parseYamlDocuments(await readFile(file, 'utf8'), file);
    } catch (err) {
      if (err instanceof InstallError) throw diffError(err.message);
      throw err;
    }
    docs.forEach((doc, i) => {
      const origin = `${file} (document ${i + 1})`;
      const meta = isMap(doc) && isMap(doc.metadata) ? doc.metadata : undefined;
      if (!isMap(doc) || typeof doc.kind !== 'string' || !meta || typeof meta.name !== 'string') {
        throw diffError(`${origin}: not a Kubernetes object (needs kind and metadata.name)`);
      }
      const object = doc as unknown as K8sObject;
      const id = idOf(object);
      const key = idText(id);
      const first = out.get(key);
      if (first) throw diffError(`${origin}: ${key} is also in ${first.origin}`);
      out.set(key, { id, object, origin });
    });
  }
  return out;
}

/** `before` with the kind, namespace and name of `after`: a renamed object is compared under its new identity. */
function asIdentity(before: K8sObject, after: K8sObject): K8sObject {
  if (before.kind === after.kind && before.metadata.name === after.metadata.name && before.metadata.namespace === after.metadata.namespace) return before;
  const metadata: K8sObject['metadata'] = { ...before.metadata, name: after.metadata.name };
  if (after.metadata.namespace === undefined) delete metadata.namespace;
  else metadata.namespace = after.metadata.namespace;
  return { ...before, kind: after.kind, metadata };
}

export interface DiffOptions {
  readonly select?: string;
  readonly ignore?: string;
  readonly rename?: string;
}

export interface ObjectOnOneSide {
  readonly id: ObjectId;
  readonly object: K8sObject;
}

export interface ManifestDiffResult {
  readonly same: boolean;
  /** Objects compared on each side (after select, ignore and rename). */
  readonly leftCount: number;
  readonly rightCount: number;
  readonly onlyLeft: readonly ObjectOnOneSide[];
  readonly onlyRight: readonly ObjectOnOneSide[];
  /** Objects on both sides. */
  readonly both: number;
  /** Objects on both sides that differ, with their changed paths (tree-diff lines). */
  readonly changed: ReadonlyArray<{ readonly object: string; readonly lines: readonly string[] }>;
}

/** Compares the objects of `a` and `b` (files, or folders with `directory`). */
export async function diffManifests(a: string, b: string, directory: boolean, opts: DiffOptions = {}): Promise<ManifestDiffResult> {
  const select = parsePatterns(opts.select ?? '::', '--select');
  const ignore = parsePatterns(opts.ignore ?? '', '--ignore');
  const renames = parseRenames(opts.rename ?? '');
  const left = await readManifestObjects(a, directory);
  const right = await readManifestObjects(b, directory);
  const wanted = (id: ObjectId) => matches(select, id) && !matches(ignore, id);

  const leftById = new Map<string, { id: ObjectId; object: K8sObject }>();
  for (const { id, object } of left.values()) {
    const rid = renamed(id, renames);
    if (wanted(rid)) leftById.set(idText(rid), { id: rid, object });
  }
  const rightById = new Map<string, { id: ObjectId; object: K8sObject }>();
  for (const { id, object } of right.values()) if (wanted(id)) rightById.set(idText(id), { id, object });

  const order = (x: { object: K8sObject }, y: { object: K8sObject }) => compareObjects(x.object, y.object);
  const onlyLeft = [...leftById.entries()].filter(([k]) => !rightById.has(k)).map(([, v]) => v).sort(order);
  const onlyRight = [...rightById.entries()].filter(([k]) => !leftById.has(k)).map(([, v]) => v).sort(order);
  const both = [...rightById.entries()].filter(([k]) => leftById.has(k)).map(([k, v]) => ({ key: k, object: v.object })).sort(order);

  const changed: Array<{ object: string; lines: string[] }> = [];
  for (const { key, object } of both) {
    const lines = diffTrees(asIdentity(leftById.get(key)?.object as K8sObject, object), object);
    if (lines.length > 0) changed.push({ object: key, lines: lines.map((l) => l.text) });
  }
  const same = onlyLeft.length === 0 && onlyRight.length === 0 && changed.length === 0;
  return { same, leftCount: leftById.size, rightCount: rightById.size, onlyLeft, onlyRight, both: both.length, changed };
}
