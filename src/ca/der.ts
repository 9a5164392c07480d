/**
 * The few DER (ASN.1 Distinguished Encoding Rules) pieces the certificate authority needs to read
 * certificate signing requests and certificates and to write certificates (docs/adr/0040).
 *
 * The reader is strict: definite lengths only, minimal length encodings, no value running past its
 * parent, and the caller states how many elements it expects. Anything else is a `DerError` naming
 * what was being read. Input comes from clients, so every read is bounded by the buffer it is given.
 */

export class DerError extends Error {
  override readonly name = 'DerError';
}

/** Universal and context tags used here. */
export const Tag = {
  BOOLEAN: 0x01,
  INTEGER: 0x02,
  BIT_STRING: 0x03,
  OCTET_STRING: 0x04,
  NULL: 0x05,
  OID: 0x06,
  UTF8_STRING: 0x0c,
  PRINTABLE_STRING: 0x13,
  IA5_STRING: 0x16,
  UTC_TIME: 0x17,
  GENERALIZED_TIME: 0x18,
  SEQUENCE: 0x30,
  SET: 0x31,
} as const;

/** One element: its tag, the whole encoding (`raw`) and the content octets (`value`). */
export interface Element {
  readonly tag: number;
  readonly raw: Buffer;
  readonly value: Buffer;
}

/** Reads the element at `offset`; `end` is the first byte after it. */
export function readElement(buf: Buffer, offset: number, what: string): { element: Element; end: number } {
  if (offset + 2 > buf.length) throw new DerError(`${what}: truncated`);
  const tag = buf[offset];
  if ((tag & 0x1f) === 0x1f) throw new DerError(`${what}: multi-byte tags are not supported`);
  let length = buf[offset + 1];
  let header = 2;
  if (length & 0x80) {
    const count = length & 0x7f;
    if (count === 0) throw new DerError(`${what}: indefinite length is not DER`);
    if (count > 4) throw new DerError(`${what}: length of ${count} bytes is too large`);
    if (offset + 2 + count > buf.length) throw new DerError(`${what}: truncated length`);
    length = 0;
    for (let i = 0; i < count; i++) length = length * 256 + buf[offset + 2 + i];
    if (length < 128 || buf[offset + 2] === 0) throw new DerError(`${what}: length is not minimally encoded`);
    header += count;
  }
  const end = offset + header + length;
  if (end > buf.length) throw new DerError(`${what}: value runs past the end (${length} bytes announced)`);
  return { element: { tag, raw: buf.subarray(offset, end), value: buf.subarray(offset + header, end) }, end };
}

/** Reads exactly one element filling `buf`. */
export function readOne(buf: Buffer, what: string, tag?: number): Element {
  const { element, end } = readElement(buf, 0, what);
  if (end !== buf.length) throw new DerError(`${what}: ${buf.length - end} trailing bytes`);
  if (tag !== undefined) expectTag(element, tag, what);
  return element;
}

/** The elements inside a constructed element (SEQUENCE, SET, context-specific constructed). */
export function children(el: Element, what: string): Element[] {
  if (!(el.tag & 0x20)) throw new DerError(`${what}: expected a constructed element, got tag 0x${el.tag.toString(16)}`);
  const out: Element[] = [];
  let offset = 0;
  while (offset < el.value.length) {
    const { element, end } = readElement(el.value, offset, what);
    out.push(element);
    offset = end;
  }
  return out;
}

export function expectTag(el: Element, tag: number, what: string): void {
  if (el.tag !== tag) throw new DerError(`${what}: expected tag 0x${tag.toString(16)}, got 0x${el.tag.toString(16)}`);
}

/** Dotted text of an OBJECT IDENTIFIER. */
export function readOid(el: Element, what: string): string {
  expectTag(el, Tag.OID, what);
  const v = el.value;
  if (v.length === 0) throw new DerError(`${what}: empty object identifier`);
  const arcs: number[] = [];
  let n = 0;
  for (let i = 0; i < v.length; i++) {
    if (n === 0 && v[i] === 0x80) throw new DerError(`${what}: object identifier arc is not minimally encoded`);
    n = n * 128 + (v[i] & 0x7f);
    if (n > Number.MAX_SAFE_INTEGER / 128) throw new DerError(`${what}: object identifier arc too large`);
    if (!(v[i] & 0x80)) {
      if (arcs.length === 0) arcs.push(n < 80 ? Math.floor(n / 40) : 2, n < 80 ? n % 40 : n - 80);
      else arcs.push(n);
      n = 0;
    } else if (i === v.length - 1) {
      throw new DerError(`${what}: object identifier ends inside an arc`);
    }
  }
  return arcs.join('.');
}

/** The bytes of a BIT STRING with no unused bits (signatures, keys). */
export function readBitString(el: Element, what: string): Buffer {
  expectTag(el, Tag.BIT_STRING, what);
  if (el.value.length === 0 || el.value[0] !== 0) throw new DerError(`${what}: bit string with unused bits`);
  return el.value.subarray(1);
}

/** A UTCTime or GeneralizedTime in the forms RFC 5280 allows (`...Z`, seconds present). */
export function readTime(el: Element, what: string): Date {
  const text = el.value.toString('latin1');
  let m: RegExpExecArray | null;
  if (el.tag === Tag.UTC_TIME && (m = /^(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})Z$/.exec(text))) {
    const yy = Number(m[1]);
    return new Date(Date.UTC(yy < 50 ? 2000 + yy : 1900 + yy, Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6])));
  }
  if (el.tag === Tag.GENERALIZED_TIME && (m = /^(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})Z$/.exec(text))) {
    return new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6])));
  }
  throw new DerError(`${what}: not a UTCTime or GeneralizedTime in UTC: ${JSON.stringify(text.slice(0, 32))}`);
}

// ---------------------------------------------------------------------------------------------
// Writing

function lengthBytes(n: number): Buffer {
  if (n < 0x80) return Buffer.from([n]);
  const bytes: number[] = [];
  for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

export function tlv(tag: number, ...parts: ReadonlyArray<Buffer>): Buffer {
  const value = parts.length === 1 ? parts[0] : Buffer.concat(parts);
  return Buffer.concat([Buffer.from([tag]), lengthBytes(value.length), value]);
}

export const seq = (...parts: ReadonlyArray<Buffer>): Buffer => tlv(Tag.SEQUENCE, ...parts);
export const set = (...parts: ReadonlyArray<Buffer>): Buffer => tlv(Tag.SET, ...parts);
/** `[n]` EXPLICIT (constructed context tag). */
export const explicit = (n: number, ...parts: ReadonlyArray<Buffer>): Buffer => tlv(0xa0 | n, ...parts);
export const octetString = (b: Buffer): Buffer => tlv(Tag.OCTET_STRING, b);
export const bitString = (b: Buffer): Buffer => tlv(Tag.BIT_STRING, Buffer.from([0]), b);
export const utf8 = (s: string): Buffer => tlv(Tag.UTF8_STRING, Buffer.from(s, 'utf8'));
export const boolean = (b: boolean): Buffer => tlv(Tag.BOOLEAN, Buffer.from([b ? 0xff : 0]));
export const nullValue = (): Buffer => Buffer.from([Tag.NULL, 0]);

/** A non-negative INTEGER from its big-endian magnitude. */
export function unsignedInteger(magnitude: Buffer): Buffer {
  let start = 0;
  while (start < magnitude.length - 1 && magnitude[start] === 0) start++;
  const v = magnitude.subarray(start);
  return tlv(Tag.INTEGER, v.length === 0 ? Buffer.from([0]) : v[0] & 0x80 ? Buffer.concat([Buffer.from([0]), v]) : v);
}

export function smallInteger(n: number): Buffer {
  const hex = n.toString(16);
  return unsignedInteger(Buffer.from(hex.length % 2 ? `0${hex}` : hex, 'hex'));
}

export function oid(dotted: string): Buffer {
  const arcs = dotted.split('.').map(Number);
  if (arcs.length < 2 || arcs.some((a) => !Number.isSafeInteger(a) || a < 0)) throw new Error(`bad object identifier ${dotted}`);
  const out: number[] = [];
  const push = (n: number): void => {
    const bytes = [n & 0x7f];
    for (let v = Math.floor(n / 128); v > 0; v = Math.floor(v / 128)) bytes.unshift((v & 0x7f) | 0x80);
    out.push(...bytes);
  };
  push(arcs[0] * 40 + arcs[1]);
  for (const a of arcs.slice(2)) push(a);
  return tlv(Tag.OID, Buffer.from(out));
}

/** RFC 5280: UTCTime through 2049, GeneralizedTime from 2050; whole seconds. */
export function time(d: Date): Buffer {
  const iso = new Date(Math.floor(d.getTime() / 1000) * 1000).toISOString(); // 2026-11-02T10:20:30.000Z
  const digits = iso.slice(0, 19).replace(/[-:T]/g, '');
  const year = d.getUTCFullYear();
  if (year >= 1950 && year < 2050) return tlv(Tag.UTC_TIME, Buffer.from(`${digits.slice(2)}Z`, 'latin1'));
  return tlv(Tag.GENERALIZED_TIME, Buffer.from(`${digits}Z`, 'latin1'));
}
