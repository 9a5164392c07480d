/**
 * The few parts of the DNS message format (RFC 1035, AAAA from RFC 3596) the agent's DNS proxy needs:
 * read the header and the first question of a query, and write an answer of A or AAAA records, or an
 * answer without records (NXDOMAIN, SERVFAIL, NODATA). Everything else is forwarded as it came.
 * Pure functions over buffers; a message that cannot be read is a DnsFormatError.
 */
import { isIPv4, isIPv6 } from 'node:net';

export const QTYPE = Object.freeze({ A: 1, AAAA: 28 });
export const RCODE = Object.freeze({ NOERROR: 0, FORMERR: 1, SERVFAIL: 2, NXDOMAIN: 3, REFUSED: 5 });
const CLASS_IN = 1;
const HEADER = 12;
/** The longest name on the wire (RFC 1035 2.3.4). */
const MAX_NAME = 255;

export class DnsFormatError extends Error {
  override readonly name = 'DnsFormatError';
}

export interface DnsQuery {
  readonly id: number;
  /** Recursion desired, copied into the answer. */
  readonly rd: boolean;
  /** The question's name in lower case, without the final dot. */
  readonly name: string;
  readonly qtype: number;
  readonly qclass: number;
  /** Where the question ends: the bytes copied into an answer. */
  readonly questionEnd: number;
  /** Whether the message is a query (QR 0, opcode QUERY) with exactly one question. */
  readonly standard: boolean;
}

/** Reads the header and the first question of `msg`. */
export function parseQuery(msg: Buffer): DnsQuery {
  if (msg.length < HEADER) throw new DnsFormatError(`message of ${msg.length} bytes is shorter than a header`);
  const id = msg.readUInt16BE(0);
  const flags = msg.readUInt16BE(2);
  const qdcount = msg.readUInt16BE(4);
  const labels: string[] = [];
  let at = HEADER;
  let length = 0;
  if (qdcount < 1) throw new DnsFormatError('no question');
  for (;;) {
    if (at >= msg.length) throw new DnsFormatError('question name runs past the end');
    const len = msg[at] as number;
    if (len === 0) {
      at += 1;
      break;
    }
    // a question's name is not compressed (nothing precedes it to point at)
    if (len > 63) throw new DnsFormatError(`label length ${len} in the question`);
    if (at + 1 + len > msg.length) throw new DnsFormatError('label runs past the end');
    labels.push(msg.toString('latin1', at + 1, at + 1 + len).toLowerCase());
    length += len + 1;
    if (length > MAX_NAME) throw new DnsFormatError('name longer than 255 bytes');
    at += 1 + len;
  }
  if (at + 4 > msg.length) throw new DnsFormatError('question type and class run past the end');
  const qtype = msg.readUInt16BE(at);
  const qclass = msg.readUInt16BE(at + 2);
  const qr = (flags & 0x8000) !== 0;
  const opcode = (flags >> 11) & 0xf;
  return { id, rd: (flags & 0x0100) !== 0, name: labels.join('.'), qtype, qclass, questionEnd: at + 4, standard: !qr && opcode === 0 && qdcount === 1 };
}

/** The header of an answer to `q`: QR, AA (the agent is the authority for its table), RD copied, RA. */
function header(q: DnsQuery, rcode: number, ancount: number): Buffer {
  const h = Buffer.alloc(HEADER);
  h.writeUInt16BE(q.id, 0);
  h.writeUInt16BE(0x8000 | 0x0400 | (q.rd ? 0x0100 : 0) | 0x0080 | (rcode & 0xf), 2);
  h.writeUInt16BE(1, 4);
  h.writeUInt16BE(ancount, 6);
  return h;
}

/** The question of `query` as it came (bytes HEADER..questionEnd). */
function question(query: Buffer, q: DnsQuery): Buffer {
  return query.subarray(HEADER, q.questionEnd);
}

/** An answer without records: `rcode` (NOERROR for "the name exists, not with this type"). */
export function emptyAnswer(query: Buffer, q: DnsQuery, rcode: number): Buffer {
  return Buffer.concat([header(q, rcode, 0), question(query, q)]);
}

/**
 * An answer to `q` with one A (or AAAA) record per address of the question's family; the owner name
 * points at the question (compression pointer 0xc00c).
 */
export function addressAnswer(query: Buffer, q: DnsQuery, addresses: ReadonlyArray<string>, ttlSeconds: number): Buffer {
  const records: Buffer[] = [];
  for (const a of addresses) {
    let rdata: Buffer;
    if (q.qtype === QTYPE.A && isIPv4(a)) rdata = Buffer.from(a.split('.').map(Number));
    else if (q.qtype === QTYPE.AAAA && isIPv6(a)) rdata = ipv6Bytes(a);
    else continue;
    const rr = Buffer.alloc(12);
    rr.writeUInt16BE(0xc00c, 0);
    rr.writeUInt16BE(q.qtype, 2);
    rr.writeUInt16BE(CLASS_IN, 4);
    rr.writeUInt32BE(ttlSeconds, 6);
    rr.writeUInt16BE(rdata.length, 10);
    records.push(rr, rdata);
  }
  return Buffer.concat([header(q, RCODE.NOERROR, records.length / 2), question(query, q), ...records]);
}

/** The 16 bytes of an IPv6 address in text (`::` and an embedded IPv4 tail allowed; checked by isIPv6 first). */
export function ipv6Bytes(text: string): Buffer {
  let s = text;
  const lastColon = s.lastIndexOf(':');
  const tail = s.slice(lastColon + 1);
  if (tail.includes('.')) {
    const [a, b, c, d] = tail.split('.').map(Number) as [number, number, number, number];
    s = `${s.slice(0, lastColon + 1)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const groups = (part: string): number[] => (part === '' ? [] : part.split(':').map((x) => parseInt(x, 16)));
  const gap = s.indexOf('::');
  const all = gap < 0 ? groups(s) : [...groups(s.slice(0, gap)), ...new Array<number>(8 - groups(s.slice(0, gap)).length - groups(s.slice(gap + 2)).length).fill(0), ...groups(s.slice(gap + 2))];
  const out = Buffer.alloc(16);
  all.slice(0, 8).forEach((g, i) => out.writeUInt16BE(g & 0xffff, i * 2));
  return out;
}

/** The message id of an answer (to match an upstream's reply to its query). */
export function messageId(msg: Buffer): number {
  return msg.length >= 2 ? msg.readUInt16BE(0) : -1;
}
