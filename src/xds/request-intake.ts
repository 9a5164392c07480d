/**
 * State-of-the-world requests as the ADS server keeps them between arrival and processing.
 *
 * A sidecar's EDS request lists thousands of cluster names (~165 KB for 3,000 clusters), and every
 * sidecar of a scope sends the same list in the same order, once to subscribe and again in each ACK.
 * Decoding each into strings made gigabytes of garbage in a connect storm, and requests waiting for
 * their turn kept their raw buffers alive long enough to be promoted to the old generation, where
 * only a full GC frees them (ADR 0022). So a request is read when it arrives: the names are located
 * as one byte span (request-scan.ts), looked up among the spans seen before — one decode per distinct
 * list, shared by every proxy that sends it — and the raw buffer is dropped at once.
 */
import { DiscoveryRequest } from '../gen/envoy/service/discovery/v3/discovery.js';
import type { Node } from '../gen/envoy/config/core/v3/base.js';
import { readVarint, scanDiscoveryRequest } from './request-scan.js';

export interface SotwRequest {
  readonly typeUrl: string;
  readonly nonce: string;
  readonly node?: Node;
  readonly error?: { readonly code: number; readonly message: string };
  /** The requested names without '*': shared, never mutated (proxies asking alike get one Set). */
  readonly names: ReadonlySet<string>;
  /** '*' was among the names. */
  readonly star: boolean;
  /** No names at all (a wildcard request for CDS/LDS, or none yet). */
  readonly empty: boolean;
  /**
   * The encoded names, shared by requests listing the same names in the same order; an ACK that
   * repeats its subscription is recognised by this buffer. Undefined when the names were not in one
   * run (a full decode was needed).
   */
  readonly namesBytes?: Buffer;
}

export class MalformedRequestError extends Error {}

/**
 * Reads a state-of-the-world request; throws MalformedRequestError for bytes that are not one.
 * `expected`: name spans the request is likely to repeat (the stream's current subscriptions), each
 * recognised with one comparison instead of a walk over its fields.
 */
export function readSotwRequest(raw: Buffer, expected?: ReadonlyArray<Buffer>, elided?: Buffer): SotwRequest {
  // names the frame reader left out (frame-reader.ts elidedNames): a run these tables handed it
  if (elided) return readWithout(raw, elided);
  const scan = scanDiscoveryRequest(raw, expected);
  if (!scan) {
    const req = decode(raw);
    return {
      typeUrl: req.typeUrl,
      nonce: req.responseNonce,
      node: req.node,
      error: errorOf(req),
      ...namesOf(req.resourceNames),
    };
  }
  const list = (scan.known && listsByBytes.get(scan.known)) ?? spans.get(scan.names);
  let node: Node | undefined;
  let error: SotwRequest['error'];
  if (scan.needsDecode) {
    // node or error_detail: decode everything but the names, which are known or decoded below
    const start = scan.names.byteOffset - raw.byteOffset;
    const rest = scan.names.length === 0 ? raw : Buffer.concat([raw.subarray(0, start), raw.subarray(start + scan.names.length)]);
    const req = decode(rest);
    node = req.node;
    error = errorOf(req);
  }
  return { typeUrl: scan.typeUrl, nonce: scan.nonce, node, error, ...list };
}

/** A request whose names run (`names`, one the tables know) was left out of `raw` by the frame reader. */
function readWithout(raw: Buffer, names: Buffer): SotwRequest {
  const scan = scanDiscoveryRequest(raw);
  // the reader read the other fields as such; a request it did not understand it kept whole
  if (!scan || scan.names.length > 0) throw new MalformedRequestError('malformed DiscoveryRequest: its fields could not be read');
  const list = listsByBytes.get(names) ?? spans.get(names);
  const req = scan.needsDecode ? decode(raw) : undefined;
  return { typeUrl: scan.typeUrl, nonce: scan.nonce, node: req?.node, error: req && errorOf(req), ...list };
}

/**
 * Encoded name runs a request starting with `firstField` (its first resource_names field, tag
 * included) may repeat: lists other streams sent, alive in the table (frame-reader.ts NameRuns).
 */
export function knownRuns(firstField: Buffer): Buffer[] {
  return spans.startingWith(firstField);
}

/** Name lists by their shared buffer: a stream's ACK finds its list even after the span table was cleared. */
const listsByBytes = new WeakMap<Buffer, NameList>();

function decode(bytes: Buffer): DiscoveryRequest {
  try {
    return DiscoveryRequest.decode(bytes);
  } catch (e) {
    throw new MalformedRequestError(`malformed DiscoveryRequest: ${e instanceof Error ? e.message : String(e)}`);
  }
}

function errorOf(req: DiscoveryRequest): SotwRequest['error'] {
  return req.errorDetail ? { code: req.errorDetail.code, message: req.errorDetail.message } : undefined;
}

type NameList = Pick<SotwRequest, 'names' | 'star' | 'empty' | 'namesBytes'>;

const NO_NAMES: NameList = { names: new Set(), star: false, empty: true };

function namesOf(list: ReadonlyArray<string>): NameList {
  if (list.length === 0) return NO_NAMES;
  return { names: canonicalNames(internNames(list)), star: list.includes('*'), empty: false };
}

/**
 * Name spans of the lists in use, keyed by a sample of their bytes and confirmed by comparing them
 * whole. The table holds its lists weakly: a list lives as long as a watch (or a request waiting its
 * turn) holds it, and leaves the table when the last one lets go, so the lists of clients that left
 * cost nothing (issue 15: departing clients each with a list of their own ran the daemon out of
 * memory). `bytes` counts the encoded size of the lists alive in the table.
 */
class SpanTable {
  private readonly byKey = new Map<string, Array<WeakRef<NameList>>>();
  /** The same lists by their first names field (frame-reader.ts compares arriving names with them). */
  private readonly byFirst = new Map<string, Array<WeakRef<NameList>>>();
  private liveBytes = 0;
  private liveEntries = 0;
  private readonly gone = new FinalizationRegistry<{ key: string; first: string | undefined; bytes: number }>((held) => this.forget(held.key, held.first, held.bytes));

  get(span: Buffer): NameList {
    if (span.length === 0) return NO_NAMES;
    const key = sampleKey(span);
    const bucket = this.byKey.get(key);
    if (bucket) {
      for (const ref of bucket) {
        const c = ref.deref();
        if (c?.namesBytes!.equals(span)) return c;
      }
    }
    // the span is a run of resource_names fields: decoded alone, it is a request with only names
    const list = namesOf(decode(span).resourceNames);
    const entry: NameList = { ...list, namesBytes: Buffer.from(span) }; // a copy: the request's buffer is let go
    listsByBytes.set(entry.namesBytes!, entry);
    const ref = new WeakRef(entry);
    if (bucket) bucket.push(ref);
    else this.byKey.set(key, [ref]);
    const first = firstFieldKey(span);
    if (first !== undefined) {
      const same = this.byFirst.get(first);
      if (same) same.push(ref);
      else this.byFirst.set(first, [ref]);
    }
    this.gone.register(entry, { key, first, bytes: span.length });
    this.liveEntries++;
    this.liveBytes += span.length;
    return entry;
  }

  /** A list was collected: its (empty) reference leaves its bucket. */
  private forget(key: string, first: string | undefined, bytes: number): void {
    this.liveEntries--;
    this.liveBytes -= bytes;
    dropCollected(this.byKey, key);
    if (first !== undefined) dropCollected(this.byFirst, first);
  }

  /** The newest lists alive whose first names field is `firstField` (at most MAX_RUNS_PER_FIRST). */
  startingWith(firstField: Buffer): Buffer[] {
    const bucket = this.byFirst.get(firstField.toString('latin1'));
    const out: Buffer[] = [];
    if (!bucket) return out;
    for (let i = bucket.length - 1; i >= 0 && out.length < MAX_RUNS_PER_FIRST; i--) {
      const list = bucket[i].deref();
      if (list) out.push(list.namesBytes!);
    }
    return out;
  }

  stats(): { entries: number; bytes: number } {
    return { entries: this.liveEntries, bytes: this.liveBytes };
  }

  clear(): void {
    this.byKey.clear();
    this.byFirst.clear();
  }
}

/** Lists compared with an arriving request at most (frame-reader.ts): the newest of a first name. */
const MAX_RUNS_PER_FIRST = 8;

/** Removes collected references from a bucket of `map`, and the bucket once empty. */
function dropCollected<K>(map: Map<K, Array<WeakRef<NameList>>>, key: K): void {
  const bucket = map.get(key);
  if (!bucket) return;
  const alive = bucket.filter((r) => r.deref() !== undefined);
  if (alive.length === 0) map.delete(key);
  else if (alive.length !== bucket.length) map.set(key, alive);
}

/** The first field of a run of names (tag, length, name) as a map key; undefined when not one. */
function firstFieldKey(span: Buffer): string | undefined {
  if (span[0] !== 0x1a) return undefined;
  const len = readVarint(span, 1);
  if (!len) return undefined;
  const end = len[1] + len[0];
  return end <= span.length ? span.toString('latin1', 0, end) : undefined;
}

/** Length and up to 64 bytes spread over the span (a hash of all of it would cost a pass per request). */
function sampleKey(span: Buffer): string {
  const step = Math.max(1, Math.floor(span.length / 64));
  let h = 0x811c9dc5;
  for (let i = 0; i < span.length; i += step) h = Math.imul(h ^ span[i], 0x01000193);
  h = Math.imul(h ^ span[span.length - 1], 0x01000193);
  return `${span.length}:${(h >>> 0).toString(36)}`;
}

const spans = new SpanTable();

/** Forget the remembered name lists (tests). */
export function clearRequestIntake(): void {
  spans.clear();
  canonical.clear();
  interned.clear();
  internedBytes = 0;
}

/**
 * What the intake holds for clients (tests, debug): name lists alive (held by a watch or a queued
 * request) and their encoded bytes, and the intern table's estimated bytes.
 */
export function requestIntakeStats(): { lists: number; listBytes: number; internedNames: number; internedBytes: number } {
  const s = spans.stats();
  return { lists: s.entries, listBytes: s.bytes, internedNames: interned.size, internedBytes };
}

/**
 * Requested names repeat across proxies (every sidecar asks for the same EDS clusters); keeping one
 * string per name instead of one per request keeps per-connection memory small. The table itself
 * holds at most INTERN_MAX_BYTES (estimated: two bytes a character and an entry's overhead) and is
 * cleared when full; the strings in use stay with the sets that hold them.
 */
const interned = new Map<string, string>();
const INTERN_MAX_BYTES = 16 * 1024 * 1024;
const INTERN_ENTRY_BYTES = 64;
let internedBytes = 0;

export function intern(name: string): string {
  const known = interned.get(name);
  if (known !== undefined) return known;
  const cost = 2 * name.length + INTERN_ENTRY_BYTES;
  if (internedBytes + cost > INTERN_MAX_BYTES) {
    interned.clear();
    internedBytes = 0;
  }
  interned.set(name, name);
  internedBytes += cost;
  return name;
}

function internNames(names: ReadonlyArray<string>): Set<string> {
  const out = new Set<string>();
  for (const n of names) if (n !== '*') out.add(intern(n));
  return out;
}

/**
 * State-of-the-world subscriptions are never mutated, so proxies asking for the same names share one
 * Set; generators use its identity to build a response once for all of them. Held weakly, like the
 * span table: a set goes when its last watch goes.
 */
const canonical = new Map<string, Array<WeakRef<Set<string>>>>();
const canonicalGone = new FinalizationRegistry<string>((key) => {
  const bucket = canonical.get(key);
  if (!bucket) return;
  const alive = bucket.filter((r) => r.deref() !== undefined);
  if (alive.length === 0) canonical.delete(key);
  else canonical.set(key, alive);
});

function canonicalNames(names: Set<string>): Set<string> {
  let h = 0;
  for (const n of names) for (let i = 0; i < n.length; i++) h = (Math.imul(h, 31) + n.charCodeAt(i)) | 0;
  const key = `${names.size}:${h}`;
  const bucket = canonical.get(key);
  if (bucket) {
    for (const ref of bucket) {
      const c = ref.deref();
      if (c && sameNames(c, names)) return c;
    }
    bucket.push(new WeakRef(names));
  } else {
    canonical.set(key, [new WeakRef(names)]);
  }
  canonicalGone.register(names, key);
  return names;
}

export function sameNames(a: ReadonlySet<string> | undefined, b: ReadonlySet<string> | undefined): boolean {
  if (a === b) return true;
  if (a === undefined || b === undefined) return false;
  if (a.size !== b.size) return false;
  for (const n of a) if (!b.has(n)) return false;
  return true;
}
