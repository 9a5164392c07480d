/**
 * Parses configuration documents (multi-document YAML or JSON) into validated `ConfigObject`s.
 * Every document is judged on its own: a broken document becomes a `ConfigRejection` naming
 * `origin#index` (0-based), kind/name when they could be read, and the field path; the good
 * documents of the same text still load.
 *
 * YAML follows the 1.1 rules the Kubernetes tooling applies (bare yes/no/on/off are booleans,
 * 0777 is octal), so a file means the same here as when applied to a cluster; timestamps and
 * base-60 numbers stay strings, as they do there.
 */
import { parseAllDocuments, type Document, type Tags } from 'yaml';
import type { z } from 'zod';
import { CONFIG_KINDS, kindByName, type KindDefinition } from './kinds.js';
import type { ConfigMeta, ConfigObject, ConfigRejection } from './types.js';
import { type ConfigIssue, isDns1123Label, isDns1123Subdomain, join } from './validation/common.js';

export interface ParseResult {
  readonly objects: ConfigObject[];
  readonly rejections: ConfigRejection[];
}

const TOP_LEVEL_FIELDS = new Set(['apiVersion', 'kind', 'metadata', 'spec', 'status']);
const MAX_ALIASES = 100;

function withoutTimestamps(tags: Tags): Tags {
  return tags.filter((t) => typeof t === 'string' || (t.tag !== 'tag:yaml.org,2002:timestamp' && t.format !== 'TIME'));
}

export function parseConfigDocuments(text: string, origin: string, defaultNamespace: string): ParseResult {
  const objects: ConfigObject[] = [];
  const rejections: ConfigRejection[] = [];
  const seen = new Map<string, number>();
  const docs = parseAllDocuments(text, {
    version: '1.1',
    customTags: withoutTimestamps,
    uniqueKeys: true,
    prettyErrors: true,
  });
  docs.forEach((doc, index) => {
    const docOrigin = `${origin}#${index}`;
    const result = parseDocument(doc, docOrigin, defaultNamespace);
    if (result === undefined) return;
    if ('issues' in result) {
      rejections.push(result);
      return;
    }
    const key = `${result.meta.gvk.kind}/${result.meta.namespace}/${result.meta.name}`;
    const first = seen.get(key);
    if (first !== undefined) {
      rejections.push({
        origin: docOrigin,
        kind: result.meta.gvk.kind,
        name: result.meta.name,
        namespace: result.meta.namespace,
        issues: [{ path: 'metadata.name', message: `duplicate of document #${first}: the first one is used` }],
      });
      return;
    }
    seen.set(key, index);
    objects.push(result);
  });
  return { objects, rejections };
}

/**
 * Validates one already-decoded object (e.g. from the Kubernetes API) exactly as a document of a
 * file: kind and apiVersion, metadata, the spec schema and the semantic checks.
 */
export function parseConfigObject(value: unknown, origin: string, defaultNamespace: string): ConfigObject | ConfigRejection {
  return buildObject(value, origin, defaultNamespace);
}

/** undefined for an empty document (only comments, or a trailing `---`). */
function parseDocument(doc: Document.Parsed, origin: string, defaultNamespace: string): ConfigObject | ConfigRejection | undefined {
  if (doc.errors.length > 0) {
    const partial = safeToJs(doc);
    return {
      origin,
      ...identity(partial, defaultNamespace),
      issues: doc.errors.map((e) => ({ path: '', message: `YAML: ${firstLine(e.message)}` })),
    };
  }
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: MAX_ALIASES });
  } catch (err) {
    return { origin, issues: [{ path: '', message: `YAML: ${firstLine((err as Error).message)}` }] };
  }
  if (value === null || value === undefined) return undefined;
  return buildObject(value, origin, defaultNamespace);
}

function safeToJs(doc: Document.Parsed): unknown {
  try {
    return doc.toJS({ maxAliasCount: MAX_ALIASES });
  } catch {
    return undefined;
  }
}

function firstLine(message: string): string {
  return message.split('\n')[0].replace(/:$/, '');
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Kind, name and namespace of a document, as far as they can be read. */
function identity(value: unknown, defaultNamespace: string): Pick<ConfigRejection, 'kind' | 'name' | 'namespace'> {
  if (!isRecord(value)) return {};
  const kind = typeof value.kind === 'string' ? value.kind : undefined;
  const meta = isRecord(value.metadata) ? value.metadata : {};
  const name = typeof meta.name === 'string' ? meta.name : undefined;
  const namespace = typeof meta.namespace === 'string' && meta.namespace !== '' ? meta.namespace : defaultNamespace;
  return { kind, name, namespace: name === undefined ? undefined : namespace };
}

function buildObject(value: unknown, origin: string, defaultNamespace: string): ConfigObject | ConfigRejection {
  const reject = (issues: ConfigIssue[]): ConfigRejection => ({ origin, ...identity(value, defaultNamespace), issues });
  if (!isRecord(value)) {
    return reject([{ path: '', message: 'a document must be a mapping with apiVersion, kind, metadata and spec' }]);
  }
  const issues: ConfigIssue[] = [];
  for (const key of Object.keys(value)) {
    if (!TOP_LEVEL_FIELDS.has(key)) issues.push({ path: key, message: 'unknown field (expected apiVersion, kind, metadata, spec)' });
  }
  const def = checkKind(value, issues);
  const meta = def ? readMetadata(value.metadata, def, defaultNamespace, origin, issues) : undefined;
  if (!def || !meta || issues.length > 0) return reject(issues);

  const rawSpec = value.spec === undefined || value.spec === null ? {} : dropNulls(value.spec);
  if (!isRecord(rawSpec)) return reject([{ path: 'spec', message: 'spec must be a mapping' }]);
  const parsed = def.schema.safeParse(rawSpec, { reportInput: true });
  if (!parsed.success) return reject(parsed.error.issues.flatMap((i) => formatSchemaIssue(i, 'spec')));
  const semantic = def.validate(parsed.data);
  if (semantic.length > 0) return reject(semantic);
  return { meta, spec: deepFreeze(parsed.data) };
}

function checkKind(value: Record<string, unknown>, issues: ConfigIssue[]): KindDefinition | undefined {
  const { kind, apiVersion } = value;
  if (typeof kind !== 'string' || kind === '') {
    issues.push({ path: 'kind', message: 'kind is required' });
    return undefined;
  }
  const def = kindByName(kind);
  if (!def) {
    issues.push({ path: 'kind', message: `unknown kind "${kind}" (known: ${CONFIG_KINDS.map((k) => k.kind).join(', ')})` });
    return undefined;
  }
  if (apiVersion !== def.apiVersion) {
    const got = typeof apiVersion === 'string' ? `"${apiVersion}"` : 'nothing';
    issues.push({ path: 'apiVersion', message: `kind ${kind} needs apiVersion "${def.apiVersion}", got ${got}` });
    return undefined;
  }
  return def;
}

function readMetadata(
  raw: unknown,
  def: KindDefinition,
  defaultNamespace: string,
  origin: string,
  issues: ConfigIssue[],
): ConfigMeta | undefined {
  if (!isRecord(raw)) {
    issues.push({ path: 'metadata', message: 'metadata with a name is required' });
    return undefined;
  }
  const { name, namespace, generation } = raw;
  if (name === undefined || name === null || name === '') issues.push({ path: 'metadata.name', message: 'name is required' });
  else if (typeof name !== 'string') {
    issues.push({ path: 'metadata.name', message: `name must be a string, got ${describe(name)} (quote it in YAML)` });
  } else if (!isDns1123Subdomain(name)) {
    issues.push({ path: 'metadata.name', message: `"${name}" is not a valid name (lower-case DNS-1123 subdomain)` });
  }
  let ns = def.namespaced ? defaultNamespace : '';
  if (namespace !== undefined && namespace !== null && namespace !== '') {
    if (typeof namespace !== 'string' || !isDns1123Label(namespace)) {
      issues.push({ path: 'metadata.namespace', message: `${JSON.stringify(namespace)} is not a valid namespace (DNS-1123 label)` });
    } else if (def.namespaced) ns = namespace;
    else issues.push({ path: 'metadata.namespace', message: `${def.kind} is cluster-scoped and takes no namespace` });
  }
  const labels = readStringMap(raw.labels, 'metadata.labels', issues);
  const annotations = readStringMap(raw.annotations, 'metadata.annotations', issues);
  let gen = 1;
  if (generation !== undefined && generation !== null) {
    if (typeof generation !== 'number' || !Number.isSafeInteger(generation) || generation < 1) {
      issues.push({ path: 'metadata.generation', message: 'generation must be a positive integer' });
    } else gen = generation;
  }
  if (issues.length > 0 || typeof name !== 'string') return undefined;
  return Object.freeze({
    gvk: def.gvk,
    name,
    namespace: ns,
    labels,
    annotations,
    generation: gen,
    resourceVersion: '',
    origin,
  });
}

function readStringMap(raw: unknown, path: string, issues: ConfigIssue[]): Readonly<Record<string, string>> {
  if (raw === undefined || raw === null) return Object.freeze({});
  if (!isRecord(raw)) {
    issues.push({ path, message: 'must be a mapping of strings' });
    return Object.freeze({});
  }
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(raw)) {
    if (typeof v === 'string') out[k] = v;
    else issues.push({ path: join(path, k), message: `value must be a string, got ${describe(v)} (quote it in YAML)` });
  }
  return Object.freeze(out);
}

/** Null fields count as absent, as the Kubernetes API server treats them. Null list items stay (and fail). */
function dropNulls(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(dropNulls);
  if (!isRecord(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) if (v !== null) out[k] = dropNulls(v);
  return out;
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'object') return 'a mapping';
  return `${typeof v} ${JSON.stringify(v)}`;
}

/** One schema issue as field path + reason, in the words an operator needs. */
export function formatSchemaIssue(issue: z.core.$ZodIssue, base: string): ConfigIssue[] {
  const path = join(base, ...issue.path.filter((p): p is string | number => typeof p !== 'symbol'));
  switch (issue.code) {
    case 'unrecognized_keys':
      return issue.keys.map((k) => ({ path: join(path, k), message: 'unknown field' }));
    case 'invalid_type':
      if (issue.input === undefined) return [{ path, message: `required field is missing (expected ${issue.expected})` }];
      return [{ path, message: `expected ${issue.expected}, got ${describe(issue.input)}` }];
    case 'invalid_value':
      return [{ path, message: `${describe(issue.input)} is not one of ${issue.values.map((v) => String(v)).join(', ')}` }];
    case 'invalid_key':
      return [{ path, message: `invalid key: ${issue.issues.map((i) => i.message).join('; ')}` }];
    case 'invalid_union':
      return [{ path, message: 'value matches none of the allowed forms' }];
    default:
      return [{ path, message: issue.message }];
  }
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}
