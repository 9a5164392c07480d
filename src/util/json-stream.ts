/**
 * JSON text of a long array, rendered item by item: the same text as `JSON.stringify(items, null, 2)`
 * followed by a newline, in chunks of about CHUNK_CHARS, yielding the event loop between items
 * through the cooperative turn queue (cooperative.ts). A debug view of tens of MB thus never exists
 * as one string, and no synchronous stretch is longer than one item (docs/adr/0113).
 */
import { yieldPoint } from './cooperative.js';

const CHUNK_CHARS = 64 * 1024;

export async function* jsonArrayChunks(items: Iterable<unknown>, opts: { compact?: boolean } = {}): AsyncGenerator<string, void, undefined> {
  let pending = '';
  let first = true;
  for (const item of items) {
    const turn = yieldPoint();
    if (turn) await turn;
    // as JSON.stringify renders an array element: undefined, functions and symbols become null
    if (opts.compact) {
      pending += `${first ? '[' : ','}${JSON.stringify(item) ?? 'null'}`;
    } else {
      const text = JSON.stringify(item, null, 2) ?? 'null';
      pending += `${first ? '[\n' : ',\n'}  ${text.replaceAll('\n', '\n  ')}`;
    }
    first = false;
    if (pending.length >= CHUNK_CHARS) {
      yield pending;
      pending = '';
    }
  }
  // compact: the text of JSON.stringify(items)
  if (opts.compact) yield `${pending}${first ? '[' : ''}]`;
  else yield `${pending}${first ? '[]' : '\n]'}\n`;
}

/** A JSON array whose items are rendered one at a time (jsonArrayChunks) by whoever sends it. */
export class JsonArray {
  constructor(readonly items: Iterable<unknown>) {}
}
