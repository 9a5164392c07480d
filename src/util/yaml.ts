/**
 * The one way the project reads YAML: as Kubernetes reads it. `kubectl` and the API server turn
 * YAML into JSON with sigs.k8s.io/yaml (a go-yaml v2 fork), so a document here (config documents,
 * mesh config and networks, `meshctl validate` and `analyze`) must mean what it means there
 * (docs/adr/0045, 0034):
 *
 * - plain scalars resolve by go-yaml v2's rules, which are neither YAML 1.1 nor 1.2:
 *   `y`/`yes`/`on`/`true` (and capitalised forms) are true, `n`/`no`/`off`/`false` false,
 *   `~`/`null`/empty null; a scalar that starts with a digit or sign is an integer when Go's
 *   `ParseInt(s, 0, 64)` reads it with the underscores removed (`0777` and `0o777` octal, `0x`,
 *   `0b`), else a float when it has the YAML float shape (`1.`, `.5`, `1e3`), else a string;
 *   `.inf`/`.nan` are floats (which JSON cannot hold, so the document is refused). Everything else
 *   stays a string: `.`, `1:20`, timestamps, base-60 numbers, `0x1p-2`, `+inf`;
 * - in a flow collection a `:` directly followed by `,`, `]` or `}` does not end a plain scalar,
 *   so `[2001:db8::, fe80::]` is a list of two addresses (the YAML 1.2 reading is two mappings);
 * - duplicate keys are errors (kubectl's strict field validation refuses them too); aliases are
 *   bounded, so a small document cannot expand without limit.
 *
 * Checked against sigs.k8s.io/yaml v1.6.0 (test/util/yaml.test.ts holds its output). Keys resolve
 * the same way and become strings (`yes:` is the key "true"), as in the JSON Kubernetes makes.
 */
import { isScalar, isSeq, parseAllDocuments, parseDocument, Scalar, stringify, visit, type Document, type DocumentOptions, type ParseOptions, type SchemaOptions, type Tags } from 'yaml';

const NULL = /^(?:~|null|Null|NULL)?$/;
const TRUE = /^(?:y|Y|yes|Yes|YES|true|True|TRUE|on|On|ON)$/;
const FALSE = /^(?:n|N|no|No|NO|false|False|FALSE|off|Off|OFF)$/;
/** go-yaml's float shape, applied after the underscores are removed. */
const FLOAT_SHAPE = /^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$/;
const INT_FORMS: ReadonlyArray<[RegExp, number]> = [
  [/^0[xX]([0-9a-fA-F]+)$/, 16],
  [/^0[oO]([0-7]+)$/, 8],
  [/^0[bB]([01]+)$/, 2],
  [/^0([0-7]+)$/, 8],
  [/^([1-9][0-9]*|0)$/, 10],
];
const INT64_MAX = 2n ** 63n - 1n;
const UINT64_MAX = 2n ** 64n - 1n;

/** An integer as Go's ParseInt/ParseUint with base 0 read it, or undefined. */
function goInteger(text: string): number | undefined {
  const negative = text.startsWith('-');
  const body = text.startsWith('-') || text.startsWith('+') ? text.slice(1) : text;
  for (const [form, base] of INT_FORMS) {
    const m = form.exec(body);
    if (!m) continue;
    let value = 0n;
    for (const ch of m[1]) value = value * BigInt(base) + BigInt(parseInt(ch, base));
    const limit = negative ? INT64_MAX + 1n : text.startsWith('+') ? INT64_MAX : UINT64_MAX;
    if (value > limit) return undefined;
    return Number(negative ? -value : value);
  }
  return undefined;
}

const NON_JSON_FLOATS = new Set(['.inf', '.Inf', '.INF', '+.inf', '+.Inf', '+.INF', '-.inf', '-.Inf', '-.INF', '.nan', '.NaN', '.NAN']);

/** A plain scalar that starts like a number (digit, sign or dot), resolved as go-yaml v2 does. */
function resolveNumeric(text: string, onError: (message: string) => void): unknown {
  if (NON_JSON_FLOATS.has(text)) {
    onError(`${text} is not a number JSON can hold (Kubernetes refuses it too); quote it for a string`);
    return text;
  }
  if (text.startsWith('.')) {
    const f = FLOAT_SHAPE.test(text) ? Number(text) : NaN;
    return Number.isFinite(f) ? f : text;
  }
  const plain = text.replace(/_/g, '');
  const int = goInteger(plain);
  if (int !== undefined) return int;
  if (FLOAT_SHAPE.test(plain)) {
    const f = Number(plain);
    if (Number.isFinite(f)) return f;
  }
  return text;
}

const STR = 'tag:yaml.org,2002:str';

/** The plain-scalar resolvers of go-yaml v2, replacing the library's own (collections, `!!str`, `!!binary` and `<<` stay). */
function kubeTags(tags: Tags): Tags {
  const kept = tags.filter((t) => typeof t !== 'string' && (t.collection !== undefined || t.tag === STR || t.tag.endsWith(':binary') || t.tag.endsWith(':merge')));
  return [
    { tag: 'tag:yaml.org,2002:null', test: NULL, default: true, resolve: () => null },
    { tag: 'tag:yaml.org,2002:bool', test: TRUE, default: true, resolve: () => true },
    { tag: 'tag:yaml.org,2002:bool', test: FALSE, default: true, resolve: () => false },
    { tag: 'tag:yaml.org,2002:float', test: /^[-+0-9.]/, default: true, resolve: (s: string, onError: (m: string) => void) => resolveNumeric(s, onError) },
    ...kept,
  ];
}

export const YAML_READ_OPTIONS: ParseOptions & DocumentOptions & SchemaOptions = {
  version: '1.1',
  customTags: kubeTags,
  merge: true,
  uniqueKeys: true,
  prettyErrors: true,
};

/** Alias expansions a document may make before reading it fails. */
export const MAX_YAML_ALIASES = 100;

/**
 * In flow lists, turns the one-pair mappings that go-yaml reads as one plain scalar back into that
 * scalar: `[fe80::]` parses (1.2 rules) as `[{"fe80:": null}]`, a key written plain and followed
 * directly by `:` and a flow indicator, with no value.
 */
function joinFlowColons(doc: Document.Parsed, text: string): void {
  visit(doc, {
    Map(_, map, path) {
      const parent = path[path.length - 1];
      if (!map.flow || !isSeq(parent) || !parent.flow || map.items.length !== 1) return undefined;
      const { key, value } = map.items[0];
      if (!isScalar(key) || key.type !== 'PLAIN' || !key.range) return undefined;
      if (value !== null && !(isScalar(value) && value.value === null && value.source === '')) return undefined;
      const end = key.range[1];
      if (text[end] !== ':' || !',]}'.includes(text[end + 1] ?? '')) return undefined;
      const source = `${String(key.source)}:`;
      const scalar = new Scalar(source);
      scalar.source = source;
      scalar.type = 'PLAIN';
      scalar.range = [key.range[0], end + 1, end + 1];
      return scalar;
    },
  });
}

const FLOW_COLON = /:[,\]}]/;

/** Applies the flow-colon reading to a document of `text` that can need it (its text has ":" right before a flow indicator). */
function asKubernetesReads(doc: Document.Parsed, text: string): Document.Parsed {
  if (doc.errors.length === 0 && FLOW_COLON.test(text.slice(doc.range[0], doc.range[2]))) joinFlowColons(doc, text);
  return doc;
}

/** Every document of a YAML stream; each keeps its own errors (`doc.errors`). */
export function readYamlDocuments(text: string): Document.Parsed[] {
  return parseAllDocuments(text, YAML_READ_OPTIONS).map((doc) => asKubernetesReads(doc, text));
}

const values = new WeakMap<Document.Parsed, { value: unknown } | { error: Error }>();

/**
 * The value of a parsed document (null for an empty one), computed once per document: callers
 * must not change it. Throws when aliases expand too much.
 */
export function yamlValue(doc: Document.Parsed): unknown {
  let r = values.get(doc);
  if (!r) {
    try {
      r = { value: doc.toJS({ maxAliasCount: MAX_YAML_ALIASES }) };
    } catch (err) {
      r = { error: err instanceof Error ? err : new Error(String(err)) };
    }
    values.set(doc, r);
  }
  if ('error' in r) throw r.error;
  return r.value;
}

/** The value of a text of one document (null when empty). Throws the first syntax error. */
export function readYaml(text: string): unknown {
  const doc = asKubernetesReads(parseDocument(text, YAML_READ_OPTIONS), text);
  if (doc.errors.length > 0) throw doc.errors[0];
  return yamlValue(doc);
}

/**
 * YAML text of a value, in YAML 1.1 without line folding (what Kubernetes tools read). Callers that
 * load this module lazily get the library's `stringify` through it: a lazy `import('yaml')` of the
 * library itself yields only a default export in meshctl's bundle (a CommonJS package in a split
 * chunk), so `{ stringify }` would be undefined there.
 */
export function writeYaml(value: unknown): string {
  return stringify(value, { version: '1.1', lineWidth: 0 });
}

/** The library's own readers, for callers that load this module lazily (see writeYaml). */
export { parse as yamlParse, parseDocument as yamlParseDocument } from 'yaml';
