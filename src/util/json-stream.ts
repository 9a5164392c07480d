/**
 * JSON text of large values, rendered piece by piece: the same text as `JSON.stringify(value, null, 2)`
 * followed by a newline (or, compact, as `JSON.stringify(value)`), in chunks of about CHUNK_CHARS,
 * yielding the event loop through the cooperative turn queue (cooperative.ts) between the items of
 * every `JsonArray` in it. A `JsonArray` may sit anywhere in a tree of plain objects (a config dump:
 * an object of lists), or in the items of another one. A debug view of tens of MB thus never exists
 * as one string, and no synchronous stretch is longer than one item (docs/adr/0113, 0162, 0184).
 */
import { yieldPoint } from './cooperative.js';

const CHUNK_CHARS = 64 * 1024;

/**
 * A JSON array whose items are rendered one at a time (jsonChunks) by whoever sends it. `items` may
 * be iterated more than once (a list mapped lazily: see `lazyMap`); `JSON.stringify` renders it as
 * an array of them.
 */
export class JsonArray {
  constructor(readonly items: Iterable<unknown>) {}

  toJSON(): unknown[] {
    return [...this.items];
  }
}

/** `list` mapped by `fn` item by item as it is iterated (again on every iteration). */
export function lazyMap<T, U>(list: Iterable<T>, fn: (item: T) => U): Iterable<U> {
  return {
    *[Symbol.iterator]() {
      for (const item of list) yield fn(item);
    },
  };
}

function isPlainRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof JsonArray) && typeof (v as { toJSON?: unknown }).toJSON !== 'function';
}

/** Whether `value` is or holds (through plain objects) a JsonArray. Plain arrays are not searched. */
export function isStreamed(value: unknown): boolean {
  if (value instanceof JsonArray) return true;
  if (!isPlainRecord(value)) return false;
  for (const v of Object.values(value)) if (isStreamed(v)) return true;
  return false;
}

interface Sink {
  text: string;
}

/** Appends the text of `value` at nesting `indent` to `sink`; yields (nothing) after each item of a JsonArray. */
async function* render(value: unknown, indent: string, compact: boolean, sink: Sink): AsyncGenerator<void, void, undefined> {
  const inner = compact ? '' : `${indent}  `;
  const newline = compact ? '' : '\n';
  if (value instanceof JsonArray) {
    let first = true;
    for (const item of value.items) {
      const turn = yieldPoint();
      if (turn) await turn;
      sink.text += `${first ? '[' : ','}${newline}${inner}`;
      first = false;
      // as JSON.stringify renders an array element: undefined, functions and symbols become null
      yield* render(item === undefined || typeof item === 'function' || typeof item === 'symbol' ? null : item, inner, compact, sink);
      yield;
    }
    sink.text += first ? '[]' : `${newline}${indent}]`;
    return;
  }
  if (isPlainRecord(value) && isStreamed(value)) {
    let first = true;
    for (const [key, v] of Object.entries(value)) {
      if (v === undefined || typeof v === 'function' || typeof v === 'symbol') continue;
      sink.text += `${first ? '{' : ','}${newline}${inner}${JSON.stringify(key)}${compact ? ':' : ': '}`;
      first = false;
      yield* render(v, inner, compact, sink);
    }
    sink.text += first ? '{}' : `${newline}${indent}}`;
    return;
  }
  const text = (compact ? JSON.stringify(value) : JSON.stringify(value, null, 2)) ?? 'null';
  sink.text += compact || indent === '' ? text : text.replaceAll('\n', `\n${indent}`);
}

/** The JSON text of `value` in chunks (see the module comment); not compact, it ends with a newline. */
export async function* jsonChunks(value: unknown, opts: { compact?: boolean } = {}): AsyncGenerator<string, void, undefined> {
  const sink: Sink = { text: '' };
  for await (const _ of render(value, '', opts.compact === true, sink)) {
    if (sink.text.length >= CHUNK_CHARS) {
      yield sink.text;
      sink.text = '';
    }
  }
  yield opts.compact ? sink.text : `${sink.text}\n`;
}

/** The JSON text of a long array in chunks: jsonChunks of a JsonArray of `items`. */
export function jsonArrayChunks(items: Iterable<unknown>, opts: { compact?: boolean } = {}): AsyncGenerator<string, void, undefined> {
  return jsonChunks(new JsonArray(items), opts);
}

/**
 * The compact JSON text of a long array as several complete arrays of consecutive items, each of
 * about `partChars` or more (at least one item): a reader parses and joins them one by one, and
 * neither side holds the whole text (the xDS debug channel's answers in parts, docs/adr/0185).
 */
export async function* jsonArrayParts(items: Iterable<unknown>, partChars: number): AsyncGenerator<string, void, undefined> {
  const sink: Sink = { text: '' };
  let first = true;
  let emitted = false;
  for (const item of items) {
    const turn = yieldPoint();
    if (turn) await turn;
    sink.text += first ? '[' : ',';
    first = false;
    for await (const _ of render(item === undefined || typeof item === 'function' || typeof item === 'symbol' ? null : item, '', true, sink)) {
      // a nested JsonArray yields between its items; the part grows on
    }
    if (sink.text.length >= partChars) {
      yield `${sink.text}]`;
      sink.text = '';
      first = true;
      emitted = true;
    }
  }
  if (!first) yield `${sink.text}]`;
  else if (!emitted) yield '[]';
}
