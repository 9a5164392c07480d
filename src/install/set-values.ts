/**
 * `--set <path>=<value>` on the MeshOperator spec, and the reverse (`profile dump -o flags`).
 *
 * The path is relative to `spec` (a leading `spec.` is accepted and dropped) and follows the
 * syntax of src/install/path.ts: `profile=demo`, `components.meshd.enabled=false`,
 * `meshConfig.defaultConfig.proxyMetadata.foo\.bar=1` (escaped dot: the key is `foo.bar`),
 * `components.ingressGateways[0].k8s.replicaCount=2` (or `.[0].`),
 * `components.ingressGateways.[name:mesh-ingressgateway].enabled=false`.
 * The path ends at the first `=` that is not escaped with a backslash.
 *
 * The value is typed as follows:
 *  - `true` / `false`                → boolean
 *  - a decimal number (`3`, `-1.5`, `1e3`; not `0755`) → number
 *  - `"text"` or `\"text\"`          → the string `text` (how to pass `"true"` or `"80"` as a string;
 *                                       the shell turns `\"` into `"`, both forms are accepted)
 *  - `[a,b,c]`                       → a list; each item typed by these rules (`\,` is a literal comma,
 *                                       items are trimmed); `[]` is the empty list
 *  - `{}`                            → the empty map
 *  - `null`                          → removes the key (or list item) at the path
 *  - anything else, including the empty text → that string
 * A number or boolean given where the schema wants a string (e.g. `tag=1.20`, `…proxyMetadata.x=1`)
 * is turned back into the text exactly as typed, so unquoted values do what they look like.
 */
import { PathError, deleteAt, formatPath, parsePath, setAt, type ConcretePath, type PathSegment } from './path.js';
import { isMap, type Tree } from './tree.js';

/** Marks `path=null`: remove the node. */
export const DELETE = Symbol('delete');

export interface SetFlag {
  /** The flag as given. */
  readonly text: string;
  readonly path: readonly PathSegment[];
  readonly value: unknown;
}

/** A bad `--set` flag; `exitCode` makes the CLI print it as a user error. */
export class SetValueError extends Error {
  readonly exitCode = 1;
  constructor(message: string) {
    super(message);
    this.name = 'SetValueError';
  }
}

const NUMBER = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/;

function parseScalar(text: string): unknown {
  if (text === 'true') return true;
  if (text === 'false') return false;
  if (NUMBER.test(text)) return Number(text);
  if (text.length >= 4 && text.startsWith('\\"') && text.endsWith('\\"')) return text.slice(2, -2);
  if (text.length >= 2 && text.startsWith('"') && text.endsWith('"')) return text.slice(1, -1);
  return text;
}

function splitItems(body: string): string[] {
  const items: string[] = [];
  let cur = '';
  for (let i = 0; i < body.length; i++) {
    if (body[i] === '\\' && body[i + 1] === ',') {
      cur += ',';
      i++;
    } else if (body[i] === ',') {
      items.push(cur.trim());
      cur = '';
    } else cur += body[i];
  }
  items.push(cur.trim());
  return items;
}

/** The typed value of the text after `=`. */
export function parseSetValue(text: string): unknown {
  if (text === 'null') return DELETE;
  if (text === '{}') return {};
  if (text.startsWith('[') && text.endsWith(']')) {
    const body = text.slice(1, -1);
    return body.trim() === '' ? [] : splitItems(body).map(parseScalar);
  }
  return parseScalar(text);
}

/** Parses one `--set` argument; throws `SetValueError` quoting the flag and the reason. */
export function parseSetFlag(text: string): SetFlag {
  let eq = -1;
  for (let i = 0; i < text.length; i++) {
    if (text[i] === '\\') i++;
    else if (text[i] === '=') {
      eq = i;
      break;
    }
  }
  const fail = (why: string) => new SetValueError(`--set ${JSON.stringify(text)}: ${why}`);
  if (eq < 0) throw fail('expected <path>=<value>');
  if (eq === 0) throw fail('the path before "=" is empty');
  let path: PathSegment[];
  try {
    path = parsePath(text.slice(0, eq));
  } catch (err) {
    throw fail(`bad path: ${(err as Error).message}`);
  }
  if (path[0].type === 'key' && path[0].key === 'spec' && path.length > 1) path = path.slice(1);
  if (path[0].type !== 'key') throw fail('the path must start with a field name, e.g. components.meshd.enabled');
  return { text, path, value: parseSetValue(text.slice(eq + 1)) };
}

/** JSON text of a concrete path: the key of `SetResult.typedFrom`. */
export function concreteKey(path: readonly (string | number)[]): string {
  return JSON.stringify(path);
}

export interface SetResult {
  /**
   * Concrete paths (relative to spec, `concreteKey`) of numbers and booleans that came from unquoted
   * text, with that text: the validator turns them back into strings where the schema wants one.
   */
  readonly typedFrom: ReadonlyMap<string, string>;
}

function recordTyped(typed: Map<string, string>, at: ConcretePath, value: unknown, raw: string): void {
  if (typeof value === 'number' || typeof value === 'boolean') typed.set(concreteKey(at), raw);
  else if (Array.isArray(value)) {
    const items = splitItems(raw.slice(1, -1));
    value.forEach((v, i) => recordTyped(typed, [...at, i], v, items[i] ?? String(v)));
  }
}

/** Applies the flags in order to `spec` (changed in place). Throws `SetValueError` for a path that cannot be followed. */
export function applySetFlags(spec: Tree, flags: readonly SetFlag[]): SetResult {
  const typedFrom = new Map<string, string>();
  for (const flag of flags) {
    try {
      if (flag.value === DELETE) {
        deleteAt(spec, flag.path);
        continue;
      }
      const at = setAt(spec, flag.path, flag.value, { createLists: true });
      const raw = flag.text.slice(flag.text.length - rawValueLength(flag.text));
      recordTyped(typedFrom, at, flag.value, raw);
    } catch (err) {
      if (err instanceof PathError) throw new SetValueError(`--set ${JSON.stringify(flag.text)}: ${err.message}`);
      throw err;
    }
  }
  return { typedFrom };
}

function rawValueLength(text: string): number {
  for (let i = 0; i < text.length; i++) {
    if (text[i] === '\\') i++;
    else if (text[i] === '=') return text.length - i - 1;
  }
  return 0;
}

/** How a string must be written so that `parseSetValue` gives it back unchanged. */
function formatString(value: string): string {
  const plain = parseSetValue(value);
  return plain === value ? value : `"${value}"`;
}

function formatScalar(value: unknown): string {
  if (typeof value === 'string') return formatString(value);
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return JSON.stringify(value);
}

/**
 * The `path=value` arguments that rebuild `tree` with `--set` from nothing: one per leaf, list
 * items by index, `{}` and `[]` for empty maps and lists. `prefix` is prepended to every path.
 */
export function toSetFlags(tree: unknown, prefix: readonly PathSegment[] = []): string[] {
  const out: string[] = [];
  const walk = (node: unknown, at: PathSegment[]) => {
    if (isMap(node)) {
      const entries = Object.entries(node).filter(([, v]) => v !== undefined && v !== null);
      if (entries.length === 0 && at.length > 0) out.push(`${formatPath(at)}={}`);
      for (const [k, v] of entries) walk(v, [...at, { type: 'key', key: k }]);
    } else if (Array.isArray(node)) {
      if (node.length === 0) out.push(`${formatPath(at)}=[]`);
      node.forEach((v, i) => walk(v, [...at, { type: 'index', index: i }]));
    } else if (at.length > 0) {
      out.push(`${formatPath(at)}=${formatScalar(node)}`);
    }
  };
  walk(tree, [...prefix]);
  return out;
}

/** `arg` quoted for a POSIX shell when it needs to be. */
export function shellQuote(arg: string): string {
  return /^[A-Za-z0-9_./:=@%+,-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`;
}
