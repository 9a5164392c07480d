/**
 * Parses configuration documents (multi-document YAML or JSON) into validated `ConfigObject`s.
 * Every document is judged on its own: a broken document becomes a `ConfigRejection` naming
 * `origin#index` (0-based), kind/name when they could be read, and the field path; the good
 * documents of the same text still load.
 *
 * YAML is read the project's one way (src/util/yaml.ts: as Kubernetes reads it: bare yes/no/on/off
 * are booleans, 0777 is octal, `.`, timestamps and base-60 numbers stay strings, `[2001:db8::]` is a
 * list of one address), so a file means the same here as when applied to a cluster.
 */
import type { Document } from 'yaml';
import { CONFIG_KINDS, kindByName, type KindDefinition } from './kinds.js';
import type { ConfigMeta, ConfigObject, ConfigRejection, FieldIssue } from './types.js';
import { yieldPoint } from '../util/cooperative.js';
import { unpackYielding } from '../util/packed-json.js';
import { encodeUtf8Yielding } from '../util/yielding-bytes.js';
import { inWorker, LARGE_DOCUMENT_CHARS, LargeDocumentError, type LargeDocumentLimits } from './large-documents.js';
import { seedContentHash } from './store.js';
import { isRecord } from '../util/record.js';
import { readYamlDocuments, yamlValue } from '../util/yaml.js';
import { type ConfigIssue, isDns1123Label, isDns1123Subdomain, isWarning, join } from './validation/common.js';
import { describeValue, formatSchemaIssue } from './validation/schema-issues.js';

export interface ParseResult {
  readonly objects: ConfigObject[];
  readonly rejections: ConfigRejection[];
}

const TOP_LEVEL_FIELDS = new Set(['apiVersion', 'kind', 'metadata', 'spec', 'status']);

/**
 * What one document of a text parsed to, reusable when the same document comes again at the same
 * index (a file of many objects where one was edited). Only valid objects are kept: a rejection's
 * message carries line numbers, which depend on the documents before it.
 */
export type DocumentCache = Map<string, ConfigObject>;

/**
 * Parses every document of `text`. With `cache` (what the previous parse of the same origin left in
 * it), documents whose text is unchanged at the same index are not parsed again, and `cache` is
 * refilled with this text's documents.
 */
export function parseConfigDocuments(text: string, origin: string, defaultNamespace: string, cache?: DocumentCache): ParseResult {
  const results = (cache && parseByDocument(text, origin, defaultNamespace, cache)) ?? parseWhole(readYamlDocuments(text), origin, defaultNamespace);
  return collect(results, origin);
}

/**
 * As parseConfigDocuments, yielding the event loop between documents through the cooperative turn
 * queue (src/util/cooperative.ts): a file of thousands of documents is parsed over many turns, so
 * no synchronous stretch is longer than one document (docs/adr/0113). Same results as
 * parseConfigDocuments. A text that cannot be split with certainty is parsed whole, at once.
 */
export async function parseConfigDocumentsYielding(
  text: string,
  origin: string,
  defaultNamespace: string,
  cache: DocumentCache = new Map(),
  limits: LargeDocumentLimits = {},
): Promise<ParseResult> {
  const pieces = await splitDocumentsYielding(text);
  let results: DocumentResult[] | undefined;
  if (pieces) {
    results = [];
    const next: DocumentCache = new Map();
    for (const [index, piece] of pieces.entries()) {
      const turn = yieldPoint();
      if (turn) await turn;
      // one document's YAML parse cannot be cut into turns: a large one is parsed in a worker thread (docs/adr/0183)
      const outcome = await parsePiece(piece, index, origin, defaultNamespace, cache, next, limits);
      if (outcome === 'unsplittable') {
        results = undefined;
        break;
      }
      results.push(outcome.result);
    }
    if (results) refill(cache, next);
  }
  if (!results) {
    results =
      text.length >= LARGE_DOCUMENT_CHARS
        ? await parseLarge({ text, line: 0, origin, index: 0, defaultNamespace, whole: true }, limits)
        : parseWhole(readYamlDocuments(text), origin, defaultNamespace);
  }
  return collect(results, origin);
}

/** What the worker thread parses (parse-worker.ts): one document's text at `index` of `origin`, or with `whole` a whole text. */
export interface DocumentJob {
  readonly text: string;
  /** The document's first line in the whole text (0-based), for the line numbers of its errors. */
  readonly line: number;
  readonly origin: string;
  readonly index: number;
  readonly defaultNamespace: string;
  readonly whole: boolean;
}

/** A job as posted to the worker: the text as UTF-8 bytes. */
export type WorkerJob = Omit<DocumentJob, 'text'> & { readonly bytes: Uint8Array };

/** The worker's side of a job: the results of the document(s), or 'unsplittable' when the piece is not exactly one document. */
export function parseDocumentJob(job: DocumentJob): DocumentResult[] | 'unsplittable' {
  if (job.whole) return parseWhole(readYamlDocuments(job.text), job.origin, job.defaultNamespace);
  // a JSON document is read as JSON, as kubectl reads it: a fraction of the YAML reader's time and
  // memory (whose document tree is ~80 times the text; docs/adr/0204); on any doubt, as YAML
  const json = readJsonObject(job.text);
  if (json !== undefined) return [buildObject(json, `${job.origin}#${job.index}`, job.defaultNamespace)];
  const outcome = readOneDocument(job.text, job.line, `${job.origin}#${job.index}`, job.defaultNamespace);
  return outcome === 'unsplittable' ? outcome : [outcome.result];
}

/**
 * The value of `text` when it is one JSON object with no key twice in any object; otherwise
 * undefined, and the caller reads it as YAML (which reports syntax errors with their lines and
 * refuses duplicate keys, as kubectl's strict field validation does). Read as YAML, such a text
 * means the same: JSON's escapes and numbers are YAML's, and plain scalars do not occur.
 */
function readJsonObject(text: string): Record<string, unknown> | undefined {
  if (!/^\s*\{/.test(text)) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  // JSON.parse keeps the last of duplicate keys: more keys in the text than in the value means one was repeated
  if (!isRecord(value) || countKeys(value) !== countKeyTokens(text)) return undefined;
  return value;
}

function countKeys(root: unknown): number {
  let n = 0;
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v !== 'object' || v === null) continue;
    if (Array.isArray(v)) for (const item of v) stack.push(item);
    else {
      for (const item of Object.values(v)) {
        n++;
        stack.push(item);
      }
    }
  }
  return n;
}

/** Strings of a JSON text followed by `:` (the text is valid JSON). */
function countKeyTokens(text: string): number {
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    if (text.charCodeAt(i) !== 34 /* " */) continue;
    for (i++; text.charCodeAt(i) !== 34; i++) if (text.charCodeAt(i) === 92 /* \ */) i++;
    let j = i + 1;
    while (j < text.length && (text.charCodeAt(j) === 32 || text.charCodeAt(j) === 9 || text.charCodeAt(j) === 10 || text.charCodeAt(j) === 13)) j++;
    if (text.charCodeAt(j) === 58 /* : */) n++;
  }
  return n;
}

async function parseLarge(job: DocumentJob & { whole: true }, limits: LargeDocumentLimits): Promise<DocumentResult[]>;
async function parseLarge(job: DocumentJob, limits: LargeDocumentLimits): Promise<DocumentResult[] | 'unsplittable'>;
async function parseLarge(job: DocumentJob, limits: LargeDocumentLimits): Promise<DocumentResult[] | 'unsplittable'> {
  let answer;
  try {
    // the text goes as UTF-8 bytes, encoded over turns, in a buffer the worker takes over (posted as
    // a string, it is copied in one piece on this thread; docs/adr/0204)
    const { text, ...rest } = job;
    const bytes = await encodeUtf8Yielding(text);
    const message: WorkerJob = { ...rest, bytes };
    answer = await inWorker(message, limits, [bytes.buffer]);
  } catch (err) {
    if (!(err instanceof LargeDocumentError)) throw err;
    // no kind or name known: the file source keeps every object of the file's last good version
    const size = `${(Buffer.byteLength(job.text) / 2 ** 20).toFixed(1)} MiB`;
    const what = job.whole ? `the file (${size})` : `this document (${size})`;
    return [{ origin: job.whole ? job.origin : `${job.origin}#${job.index}`, issues: [{ path: '', message: `${what} was not read: ${err.message}` }] }];
  }
  if ('unsplittable' in answer) return 'unsplittable';
  const out: DocumentResult[] = [];
  for (const [k, raw] of answer.results.entries()) {
    const plan = answer.specs[k];
    const spec = plan === undefined ? undefined : await unpackYielding(plan, answer.buffer);
    out.push(revive(raw as DocumentResult, spec, answer.hashes[k]));
  }
  return out;
}

/**
 * A result as it comes from the worker (a structured clone without its spec): its kind's own `gvk`
 * object back, its spec (parsed from the worker's buffer over turns, frozen) put back, frozen as a
 * parsed one is, its content hash known to the store.
 */
function revive(raw: DocumentResult, spec: unknown, hash: string | undefined): DocumentResult {
  if (raw === undefined) return undefined;
  const object = (o: ConfigObject): ConfigObject => {
    const def = kindByName(o.meta.gvk.kind);
    const meta = Object.freeze({ ...o.meta, gvk: def?.gvk ?? o.meta.gvk, labels: Object.freeze(o.meta.labels), annotations: Object.freeze(o.meta.annotations) });
    return o.warnings ? { meta, spec, warnings: Object.freeze(o.warnings) } : { meta, spec };
  };
  if ('issues' in raw) return raw.salvaged ? { ...raw, salvaged: object(raw.salvaged) } : raw;
  const revived = object(raw);
  if (hash !== undefined) seedContentHash(revived, hash);
  return revived;
}

/** As parseConfigDocuments, for the documents of a text already read with readYamlDocuments. */
export function parseConfigYamlDocuments(docs: ReadonlyArray<Document.Parsed>, origin: string, defaultNamespace: string): ParseResult {
  return collect(parseWhole(docs, origin, defaultNamespace), origin);
}

function collect(results: ReadonlyArray<DocumentResult>, origin: string): ParseResult {
  const objects: ConfigObject[] = [];
  const rejections: ConfigRejection[] = [];
  const seen = new Map<string, number>();
  results.forEach((result, index) => {
    if (result === undefined) return;
    if ('issues' in result) {
      rejections.push(result);
      return;
    }
    const docOrigin = `${origin}#${index}`;
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

export type DocumentResult = ConfigObject | ConfigRejection | undefined;

function parseWhole(docs: ReadonlyArray<Document.Parsed>, origin: string, defaultNamespace: string): DocumentResult[] {
  return docs.map((doc, index) => parseDocument(doc, `${origin}#${index}`, defaultNamespace));
}

/**
 * Parses document by document, reusing `cache`. Undefined when the text cannot be split with
 * certainty (a directive with no marker after it, a piece that is not exactly one document): the
 * caller then parses it whole.
 */
function parseByDocument(text: string, origin: string, defaultNamespace: string, cache: DocumentCache): DocumentResult[] | undefined {
  const pieces = splitDocuments(text);
  if (!pieces) return undefined;
  const results: DocumentResult[] = [];
  const next: DocumentCache = new Map();
  for (const [index, piece] of pieces.entries()) {
    const outcome = parsePiece(piece, index, origin, defaultNamespace, cache, next);
    if (outcome === 'unsplittable') return undefined;
    results.push(outcome.result);
  }
  refill(cache, next);
  return results;
}

type PieceOutcome = { result: DocumentResult } | 'unsplittable';

/**
 * One document of a split text: from `cache` when unchanged at its index, else parsed; valid results
 * go into `next`. With `limits`, a large document is parsed in the worker thread (a promise).
 */
function parsePiece(piece: { text: string; line: number }, index: number, origin: string, defaultNamespace: string, cache: DocumentCache, next: DocumentCache): PieceOutcome;
function parsePiece(
  piece: { text: string; line: number },
  index: number,
  origin: string,
  defaultNamespace: string,
  cache: DocumentCache,
  next: DocumentCache,
  limits: LargeDocumentLimits,
): PieceOutcome | Promise<PieceOutcome>;
function parsePiece(
  piece: { text: string; line: number },
  index: number,
  origin: string,
  defaultNamespace: string,
  cache: DocumentCache,
  next: DocumentCache,
  limits?: LargeDocumentLimits,
): PieceOutcome | Promise<PieceOutcome> {
  const key = `${index}\n${piece.text}`;
  const known = cache.get(key);
  if (known) {
    next.set(key, known);
    return { result: known };
  }
  const keep = (outcome: PieceOutcome): PieceOutcome => {
    if (outcome !== 'unsplittable' && outcome.result && !('issues' in outcome.result)) next.set(key, outcome.result);
    return outcome;
  };
  if (limits && piece.text.length >= LARGE_DOCUMENT_CHARS) {
    return parseLarge({ text: piece.text, line: piece.line, origin, index, defaultNamespace, whole: false }, limits).then((r) => keep(r === 'unsplittable' ? r : { result: r[0] }));
  }
  return keep(readOneDocument(piece.text, piece.line, `${origin}#${index}`, defaultNamespace));
}

/** The one document of `text` (whose first line is `line` of the whole text), or 'unsplittable'. */
function readOneDocument(text: string, line: number, docOrigin: string, defaultNamespace: string): { result: DocumentResult } | 'unsplittable' {
  let docs = readYamlDocuments(text);
  if (docs.length !== 1) return 'unsplittable';
  // A broken document is parsed again behind blank lines, so its errors name the lines of the whole text.
  if (docs[0].errors.length > 0 && line > 0) docs = readYamlDocuments('\n'.repeat(line) + text);
  return { result: parseDocument(docs[0], docOrigin, defaultNamespace) };
}

function refill(cache: DocumentCache, next: DocumentCache): void {
  cache.clear();
  for (const [k, v] of next) cache.set(k, v);
}

/**
 * The documents of a YAML stream as texts, each with its first line (0-based), found the way the
 * YAML lexer finds them: a line starting with `---` followed by a space, a tab or the end of the
 * line starts a document, and one starting with `...` so followed ends it; YAML forbids such lines
 * inside a document's content, so the split is exact. Directives (`%` lines at the start of the
 * stream or after a `...`) belong to the document whose `---` follows them, comments and blank lines
 * before the first marker to the first document. Undefined when a directive is not followed by a
 * marker (the caller parses such a text whole). Only lines starting with `-`, `.` or `%` are looked
 * at closely once a document has content, so a text of many megabytes splits in a few milliseconds.
 */
function splitDocuments(text: string): Array<{ text: string; line: number }> | undefined {
  const steps = splitSteps(text);
  let r = steps.next();
  while (!r.done) r = steps.next();
  return r.value;
}

/** As splitDocuments, yielding the loop every SPLIT_STEP_LINES lines (a file of 12 MB has 400,000). */
async function splitDocumentsYielding(text: string): Promise<Array<{ text: string; line: number }> | undefined> {
  const steps = splitSteps(text);
  let r = steps.next();
  while (!r.done) {
    const turn = yieldPoint();
    if (turn) await turn;
    r = steps.next();
  }
  return r.value;
}

const SPLIT_STEP_LINES = 1 << 15;

function* splitSteps(text: string): Generator<void, Array<{ text: string; line: number }> | undefined, void> {
  const starts: Array<{ pos: number; line: number }> = [{ pos: 0, line: 0 }];
  /** The current document has content (or its `---`): the next marker starts another one. */
  let content = false;
  /** The current document was closed by `...`: what comes next is another one. */
  let ended = false;
  /** At the start of the stream or after `...`, where `%` lines are directives. */
  let directives = true;
  /** Where the pending directives of the next document start. */
  let pending: { pos: number; line: number } | undefined;
  let line = 0;
  for (let pos = 0; pos <= text.length; line++) {
    if (line % SPLIT_STEP_LINES === SPLIT_STEP_LINES - 1) yield;
    let end = text.indexOf('\n', pos);
    if (end < 0) end = text.length;
    const c = text.charCodeAt(pos);
    if (c === 45 /* - */ && isMarkerLine(text, pos, '---')) {
      if (content || ended) starts.push(pending ?? { pos, line });
      content = true;
      ended = false;
      directives = false;
      pending = undefined;
    } else if (c === 46 /* . */ && isMarkerLine(text, pos, '...')) {
      ended = true;
      directives = true;
    } else if (c === 37 /* % */ && directives) {
      pending ??= { pos, line };
    } else if ((!content || ended || pending) && !blankOrComment(text, pos, end)) {
      if (pending) return undefined; // a directive with no marker after it
      if (ended) starts.push({ pos, line }); // a bare document after `...`
      content = true;
      ended = false;
      directives = false;
    }
    pos = end + 1;
  }
  // each piece keeps its line ends, so errors at the end of a document point where they would in the whole text
  return starts.map((start, k) => ({ text: text.slice(start.pos, starts[k + 1]?.pos ?? text.length), line: start.line }));
}

/** Whether the line at `pos` is the marker `m` (`---` or `...`) ended as the YAML lexer ends it: by a space, a tab or the line's end. */
function isMarkerLine(text: string, pos: number, m: string): boolean {
  if (!text.startsWith(m, pos)) return false;
  const next = text.charCodeAt(pos + 3);
  return Number.isNaN(next) || next === 32 || next === 9 || next === 13 || next === 10;
}

/** Whether text[pos, end) is blank or a comment. */
function blankOrComment(text: string, pos: number, end: number): boolean {
  for (let i = pos; i < end; i++) {
    const c = text.charCodeAt(i);
    if (c === 35 /* # */) return true;
    if (c !== 32 && c !== 9 && c !== 13) return false;
  }
  return true;
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
    value = yamlValue(doc);
  } catch (err) {
    return { origin, issues: [{ path: '', message: `YAML: ${firstLine((err as Error).message)}` }] };
  }
  if (value === null || value === undefined) return undefined;
  return buildObject(value, origin, defaultNamespace);
}

function safeToJs(doc: Document.Parsed): unknown {
  try {
    return yamlValue(doc);
  } catch {
    return undefined;
  }
}

function firstLine(message: string): string {
  return message.split('\n')[0].replace(/:$/, '');
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
  const context = { namespace: meta.namespace, name: meta.name, annotations: meta.annotations };
  if (!parsed.success) {
    const errors = parsed.error.issues.flatMap((i) => formatSchemaIssue(i, 'spec'));
    const salvaged = salvage(def, rawSpec);
    return { ...reject(errors), ...(salvaged !== undefined ? { salvaged: { meta, spec: deepFreeze(salvaged) } } : {}) };
  }
  const semantic = def.validate(parsed.data, context);
  const errors = semantic.filter((i) => !isWarning(i)).map(plainIssue);
  const warnings = semantic.filter(isWarning).map(plainIssue);
  const spec = deepFreeze(parsed.data);
  if (errors.length > 0) return { ...reject(errors), ...(warnings.length > 0 ? { warnings } : {}), salvaged: { meta, spec } };
  return warnings.length > 0 ? { meta, spec, warnings: Object.freeze(warnings) } : { meta, spec };
}

const plainIssue = (i: ConfigIssue): FieldIssue => ({ path: i.path, message: i.message });

const MAX_SALVAGE_ROUNDS = 5;

/**
 * The spec with the fields its schema refuses left out, so the rest can be analysed; undefined
 * when a required field is missing or the schema still refuses it after a few rounds.
 */
function salvage(def: KindDefinition, raw: Record<string, unknown>): unknown {
  let spec: unknown = structuredClone(raw);
  for (let round = 0; round < MAX_SALVAGE_ROUNDS; round++) {
    const r = def.schema.safeParse(spec);
    if (r.success) return r.data;
    for (const issue of r.error.issues) {
      const path = issue.path.filter((p): p is string | number => typeof p !== 'symbol');
      if (issue.code === 'unrecognized_keys') for (const k of issue.keys) removeAt(spec, [...path, k]);
      else if (issue.code === 'invalid_type' && issue.input === undefined) return undefined; // a required field is missing
      else if (path.length === 0) return undefined;
      else removeAt(spec, path);
    }
    spec = compactLists(spec);
  }
  return undefined;
}

/** Removes the value at `path` (list items become holes, closed by compactLists). */
function removeAt(root: unknown, path: ReadonlyArray<string | number>): void {
  let cur: unknown = root;
  for (const p of path.slice(0, -1)) {
    if (typeof cur !== 'object' || cur === null) return;
    cur = (cur as Record<string | number, unknown>)[p];
  }
  const last = path[path.length - 1];
  if (Array.isArray(cur) && typeof last === 'number') cur[last] = HOLE;
  else if (isRecord(cur)) delete cur[String(last)];
}

const HOLE = Symbol('removed');

function compactLists(value: unknown): unknown {
  if (Array.isArray(value)) return value.filter((v) => v !== HOLE).map(compactLists);
  if (!isRecord(value)) return value;
  for (const [k, v] of Object.entries(value)) value[k] = compactLists(v);
  return value;
}

/** What the validating webhook answers for one object: the errors that refuse it and the warnings. */
export interface AdmissionVerdict {
  readonly errors: ReadonlyArray<FieldIssue>;
  readonly warnings: ReadonlyArray<FieldIssue>;
}

/**
 * Validates one decoded object as every other entry point does (files, the CRD source, `meshctl
 * validate`) and says what an admission review should return: errors refuse it, warnings go back
 * to the client.
 */
export function admissionVerdict(value: unknown, defaultNamespace: string): AdmissionVerdict {
  const r = buildObject(value, 'admission', defaultNamespace);
  if ('issues' in r) return { errors: r.issues, warnings: r.warnings ?? [] };
  return { errors: [], warnings: r.warnings ?? [] };
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
    issues.push({ path: 'metadata.name', message: `name must be a string, got ${describeValue(name)} (quote it in YAML)` });
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
    else issues.push({ path: join(path, k), message: `value must be a string, got ${describeValue(v)} (quote it in YAML)` });
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

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}
