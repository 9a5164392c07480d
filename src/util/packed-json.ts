/**
 * A JSON value handed from a worker thread to the event loop in slices (docs/adr/0204). Posted as
 * is, a value of a million objects (a ServiceEntry of 200,000 endpoints) is one structured clone
 * on the receiving side, a synchronous stretch of a second or more on a busy machine. Packed, it
 * is one transferable buffer of UTF-8 JSON texts, none longer than about `sliceChars`, plus a small
 * plan saying how they nest; `unpackYielding` decodes and parses one slice at a time, yielding the
 * loop between slices, and returns the value deep-frozen.
 *
 * Only JSON values: what JSON cannot say (undefined, -0, non-finite numbers) does not survive, so
 * callers pack values that came from JSON or YAML and were validated.
 */
import { yieldPoint } from './cooperative.js';

/** Byte range [start, end) of the buffer holding one JSON text. */
type Range = readonly [number, number];

/**
 * How a value is laid out: `j` one JSON text; `a` an array whose parts are JSON texts of runs of
 * items (`j`) or one large item (`one`); `o` an object whose parts are JSON texts of runs of
 * entries (`j`) or one large entry (`key`, `one`).
 */
export type PackPlan =
  | { readonly j: Range }
  | { readonly a: ReadonlyArray<{ readonly j: Range } | { readonly one: PackPlan }> }
  | { readonly o: ReadonlyArray<{ readonly j: Range } | { readonly key: string; readonly one: PackPlan }> };

/** Slices of about this many characters parse in well under a millisecond. */
export const DEFAULT_SLICE_CHARS = 64 * 1024;

/** Collects JSON texts and writes them into one buffer. */
class Texts {
  private readonly texts: string[] = [];
  private bytes = 0;

  add(text: string): Range {
    const start = this.bytes;
    this.bytes += Buffer.byteLength(text);
    this.texts.push(text);
    return [start, this.bytes];
  }

  buffer(): ArrayBuffer {
    const out = new Uint8Array(new ArrayBuffer(this.bytes));
    const encoder = new TextEncoder();
    let at = 0;
    for (const t of this.texts) at += encoder.encodeInto(t, out.subarray(at)).written;
    return out.buffer;
  }
}

/** Packs each of `values` (JSON values) into one buffer; `plans[k]` lays out `values[k]`. */
export function packJson(values: ReadonlyArray<unknown>, sliceChars = DEFAULT_SLICE_CHARS): { plans: PackPlan[]; buffer: ArrayBuffer } {
  const texts = new Texts();
  const plans = values.map((v) => packValue(v, JSON.stringify(v) ?? 'null', texts, sliceChars));
  return { plans, buffer: texts.buffer() };
}

function packValue(value: unknown, json: string, texts: Texts, sliceChars: number): PackPlan {
  if (json.length <= sliceChars || typeof value !== 'object' || value === null) return { j: texts.add(json) };
  if (Array.isArray(value)) {
    const parts: Array<{ j: Range } | { one: PackPlan }> = [];
    let run: string[] = [];
    let runChars = 0;
    const flush = (): void => {
      if (run.length > 0) parts.push({ j: texts.add(`[${run.join(',')}]`) });
      run = [];
      runChars = 0;
    };
    for (const item of value) {
      const text = JSON.stringify(item) ?? 'null';
      if (text.length > sliceChars) {
        flush();
        parts.push({ one: packValue(item, text, texts, sliceChars) });
        continue;
      }
      if (runChars + text.length > sliceChars) flush();
      run.push(text);
      runChars += text.length + 1;
    }
    flush();
    return { a: parts };
  }
  const parts: Array<{ j: Range } | { key: string; one: PackPlan }> = [];
  let run: string[] = [];
  let runChars = 0;
  const flush = (): void => {
    if (run.length > 0) parts.push({ j: texts.add(`{${run.join(',')}}`) });
    run = [];
    runChars = 0;
  };
  for (const [key, item] of Object.entries(value)) {
    const text = JSON.stringify(item);
    if (text === undefined) continue; // as JSON.stringify leaves it out
    if (text.length > sliceChars) {
      flush();
      parts.push({ key, one: packValue(item, text, texts, sliceChars) });
      continue;
    }
    const entry = `${JSON.stringify(key)}:${text}`;
    if (runChars + entry.length > sliceChars) flush();
    run.push(entry);
    runChars += entry.length + 1;
  }
  flush();
  return { o: parts };
}

/**
 * The value `plan` lays out in `buffer`, deep-frozen; parsed one slice at a time, yielding the loop
 * through the cooperative turn queue between slices (src/util/cooperative.ts).
 */
export async function unpackYielding(plan: PackPlan, buffer: ArrayBuffer): Promise<unknown> {
  const decoder = new TextDecoder();
  const parse = async ([start, end]: Range): Promise<unknown> => {
    const turn = yieldPoint();
    if (turn) await turn;
    return deepFreeze(JSON.parse(decoder.decode(new Uint8Array(buffer, start, end - start))));
  };
  const build = async (p: PackPlan): Promise<unknown> => {
    if ('j' in p) return parse(p.j);
    if ('a' in p) {
      const out: unknown[] = [];
      for (const part of p.a) {
        if ('one' in part) out.push(await build(part.one));
        else for (const item of (await parse(part.j)) as unknown[]) out.push(item); // not a spread: a run may hold thousands of items
      }
      return Object.freeze(out);
    }
    const out: Record<string, unknown> = {};
    for (const part of p.o) {
      if ('one' in part) defineEntry(out, part.key, await build(part.one));
      else for (const [k, v] of Object.entries((await parse(part.j)) as Record<string, unknown>)) defineEntry(out, k, v);
    }
    return Object.freeze(out);
  };
  return build(plan);
}

/** Sets an own data property, as JSON.parse does (a key `__proto__` stays an ordinary entry). */
function defineEntry(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}
