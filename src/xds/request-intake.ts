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
import { scanDiscoveryRequest } from './request-scan.js';

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
export function readSotwRequest(raw: Buffer, expected?: ReadonlyArray<Buffer>): SotwRequest {
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
 * Name spans seen recently, keyed by a sample of their bytes and confirmed by comparing them whole.
 * Bounded in entries and bytes; cleared when full (the lists in use come back at the next request).
 */
class SpanTable {
  private readonly byKey = new Map<string, NameList[]>();
  private bytes = 0;
  private entries = 0;

  constructor(
    private readonly maxEntries: number,
    private readonly maxBytes: number,
  ) {}

  get(span: Buffer): NameList {
    if (span.length === 0) return NO_NAMES;
    const key = sampleKey(span);
    const candidates = this.byKey.get(key);
    const found = candidates?.find((c) => c.namesBytes!.equals(span));
    if (found) return found;
    // the span is a run of resource_names fields: decoded alone, it is a request with only names
    const list = namesOf(decode(span).resourceNames);
    const entry: NameList = { ...list, namesBytes: Buffer.from(span) }; // a copy: the request's buffer is let go
    listsByBytes.set(entry.namesBytes!, entry);
    if (this.entries >= this.maxEntries || this.bytes + span.length > this.maxBytes) this.clear();
    const bucket = this.byKey.get(key); // after a clear, not `candidates`
    if (bucket) bucket.push(entry);
    else this.byKey.set(key, [entry]);
    this.entries++;
    this.bytes += span.length;
    return entry;
  }

  clear(): void {
    this.byKey.clear();
    this.entries = 0;
    this.bytes = 0;
  }
}

/** Length and up to 64 bytes spread over the span (a hash of all of it would cost a pass per request). */
function sampleKey(span: Buffer): string {
  const step = Math.max(1, Math.floor(span.length / 64));
  let h = 0x811c9dc5;
  for (let i = 0; i < span.length; i += step) h = Math.imul(h ^ span[i], 0x01000193);
  h = Math.imul(h ^ span[span.length - 1], 0x01000193);
  return `${span.length}:${(h >>> 0).toString(36)}`;
}

const spans = new SpanTable(4096, 64 * 1024 * 1024);

/** Forget the remembered name lists (tests). */
export function clearRequestIntake(): void {
  spans.clear();
}

/**
 * Requested names repeat across proxies (every sidecar asks for the same EDS clusters); keeping one
 * string per name instead of one per request keeps per-connection memory small.
 */
const interned = new Map<string, string>();
const INTERN_LIMIT = 500_000;

export function intern(name: string): string {
  const known = interned.get(name);
  if (known !== undefined) return known;
  if (interned.size >= INTERN_LIMIT) interned.clear();
  interned.set(name, name);
  return name;
}

function internNames(names: ReadonlyArray<string>): Set<string> {
  const out = new Set<string>();
  for (const n of names) if (n !== '*') out.add(intern(n));
  return out;
}

/**
 * State-of-the-world subscriptions are never mutated, so proxies asking for the same names share one
 * Set; generators use its identity to build a response once for all of them.
 */
const canonical = new Map<string, Set<string>[]>();
const CANONICAL_LIMIT = 20_000;

function canonicalNames(names: Set<string>): Set<string> {
  let h = 0;
  for (const n of names) for (let i = 0; i < n.length; i++) h = (Math.imul(h, 31) + n.charCodeAt(i)) | 0;
  const key = `${names.size}:${h}`;
  const candidates = canonical.get(key);
  const found = candidates?.find((c) => sameNames(c, names));
  if (found) return found;
  if (canonical.size >= CANONICAL_LIMIT) canonical.clear();
  const bucket = canonical.get(key); // after a clear, not `candidates`
  if (bucket) bucket.push(names);
  else canonical.set(key, [names]);
  return names;
}

export function sameNames(a: ReadonlySet<string> | undefined, b: ReadonlySet<string> | undefined): boolean {
  if (a === b) return true;
  if (a === undefined || b === undefined) return false;
  if (a.size !== b.size) return false;
  for (const n of a) if (!b.has(n)) return false;
  return true;
}
