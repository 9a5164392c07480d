/**
 * Reads gRPC messages from an ADS stream without keeping the bytes they arrived in (docs/adr/0191).
 *
 * Node's HTTP/2 session hands each DATA frame to its stream as a view into the buffer of the socket
 * read that carried it, shared by every stream whose frames were in that read. grpc-js's own decoder
 * keeps such views: the chunks of a message being assembled, and after the message is complete its
 * one-byte compression flag and its chunks, until the stream's next message starts. A sidecar's last
 * request of a connect storm (an ACK listing thousands of names) is therefore held for as long as
 * the stream lives, together with the other streams' bytes that shared its reads: 150–270 MB of
 * external memory at 2,000 sidecars, allocated below the mmap threshold, where it fragments glibc's
 * heap (measured in ADR 0191).
 *
 * `MessageReader` copies each message's bytes, as they arrive, into a buffer of the message's own,
 * sized by its prefix: one copy, as grpc-js's joining is one, and no view of a socket read kept past
 * its data event. Holding views while a message was incomplete kept every socket read of the requests
 * being assembled (a 64 KiB buffer from glibc's arena per read) until their last byte arrived: in a
 * storm of ACKs listing thousands of names, hundreds of MB of arena that glibc keeps (ADR 0202).
 * `compactReads` puts it in place of grpc-js's decoder of a server call; where the internals are
 * not as expected it leaves the call as it is, which is correct and keeps the views as before.
 */

import { readVarint } from './request-scan.js';

/** Bytes of the gRPC message prefix: compression flag, message length (big-endian uint32). */
const PREFIX = 5;
/**
 * Longest buffer allocated ahead of the bytes that fill it. A message up to this long (every
 * request of a 1,000-service mesh: EDS ~165 KB) is copied straight into one buffer of its announced
 * length; a longer one is read into blocks of this size, allocated as bytes arrive, and joined once
 * complete, so that announcing a long message without sending it costs at most one block.
 */
export const MESSAGE_BLOCK_BYTES = 256 * 1024;

/**
 * Messages at least this long that a reader returned in a buffer of their own are given back by
 * `releaseMessage` (smaller ones are not worth it: Node's pool or glibc's arena takes them back at once).
 */
const RELEASE_MIN_BYTES = 16 * 1024;
/** The buffers of messages a reader returned whole, which nothing else shares (see releaseMessage). */
const owned = new WeakSet<ArrayBufferLike>();

/** What grpc-js's server call decodes with: `write(chunk)` returns the complete messages, prefix included. */
export interface MessageDecoder {
  write(data: Buffer): Buffer[];
}

/**
 * Where a reader of DiscoveryRequests finds the name lists a request may repeat (ADR 0209): given the
 * first resource_names field of a request (tag, length and name), the encoded runs of names it may
 * be the start of: the stream's current subscriptions (its ACKs repeat them byte for byte) and the
 * lists other streams sent (every sidecar of a scope asks for the same names in the same order).
 */
export type NameRuns = (firstField: Buffer) => ReadonlyArray<Buffer>;

/**
 * gRPC length-prefixed messages from a byte stream. Each returned message is one buffer, prefix
 * included (the form grpc-js's server call expects). The reader never keeps a chunk it was given: the
 * bytes are copied as they arrive into a buffer of the message's own (one copy, as grpc-js's joining
 * of the pieces is one), so a socket read is let go as soon as its data event is handled, and an
 * incomplete message holds only the bytes that arrived (ADR 0202).
 *
 * With `nameRuns` the messages are DiscoveryRequests, and their resource names are not kept when
 * they repeat a known run (ADR 0209): while a request arrives its names are compared with the runs
 * it may repeat, byte for byte, and only its other fields are kept. The message returned then lacks
 * the names; `elidedNames` gives the run that stood in it. A request whose names match no known run
 * is kept whole, as without `nameRuns`.
 */
export class MessageReader implements MessageDecoder {
  private readonly prefix = Buffer.alloc(PREFIX);
  private prefixHave = 0;
  /** Blocks of the message being read, the first one starting with the prefix; undefined between messages. */
  private blocks: Buffer[] | undefined;
  /** Bytes written into the last block. */
  private blockHave = 0;
  /** Message bytes (without the prefix) received. */
  private have = 0;
  private length = 0;
  /** The message being read field by field (names compared, not kept); undefined when read whole. */
  private fields: RequestFields | undefined;

  /** `maxMessageBytes`: longest message accepted (grpc.max_receive_message_length; -1: no limit). */
  constructor(
    private readonly maxMessageBytes: number,
    private readonly nameRuns?: NameRuns,
  ) {}

  /** Bytes the reader holds for an incomplete message (tests). */
  get heldBytes(): number {
    if (this.fields) return this.fields.heldBytes;
    return this.blocks ? this.have : 0;
  }

  write(data: Buffer): Buffer[] {
    const out: Buffer[] = [];
    let at = 0;
    while (at < data.length || (this.fields && this.fields.complete)) {
      if (this.fields) {
        const f = this.fields;
        at = f.write(data, at);
        if (f.complete) {
          this.fields = undefined;
          out.push(f.message(this.prefix[0]));
        } else if (f.whole) {
          // names no known run has: the message is kept whole from here on
          this.fields = undefined;
          this.startBlocks();
          for (const piece of f.whole) this.append(piece, 0, piece.length);
          this.finishIfComplete(out);
        }
        continue;
      }
      if (this.blocks === undefined) {
        const n = Math.min(PREFIX - this.prefixHave, data.length - at);
        data.copy(this.prefix, this.prefixHave, at, at + n);
        this.prefixHave += n;
        at += n;
        if (this.prefixHave < PREFIX) break;
        this.prefixHave = 0;
        this.length = this.prefix.readUInt32BE(1);
        if (this.maxMessageBytes !== -1 && this.length > this.maxMessageBytes) {
          throw new Error(`a request message of ${this.length} bytes is larger than the limit of ${this.maxMessageBytes} bytes (MESH_GPRC_MAXRECVMSGSIZE)`);
        }
        // an uncompressed request long enough to carry a list of names is read field by field
        if (this.nameRuns && this.prefix[0] === 0 && this.length >= FIELDS_MIN_BYTES) {
          this.fields = new RequestFields(this.length, this.nameRuns);
          continue;
        }
        this.startBlocks();
      } else {
        at = this.append(data, at, data.length);
      }
      this.finishIfComplete(out);
    }
    return out;
  }

  /** The first block of a message kept whole, starting with its prefix. */
  private startBlocks(): void {
    const first = Buffer.allocUnsafe(Math.min(PREFIX + this.length, MESSAGE_BLOCK_BYTES));
    this.prefix.copy(first, 0);
    this.blocks = [first];
    this.blockHave = PREFIX;
    this.have = 0;
  }

  /** Copies `data[from, to)` (at most what the message lacks) into its blocks; returns where it stopped. */
  private append(data: Buffer, from: number, to: number): number {
    const blocks = this.blocks!;
    let at = from;
    while (at < to && this.have < this.length) {
      let block = blocks[blocks.length - 1];
      if (this.blockHave === block.length) {
        block = Buffer.allocUnsafe(Math.min(this.length - this.have, MESSAGE_BLOCK_BYTES));
        blocks.push(block);
        this.blockHave = 0;
      }
      const n = Math.min(block.length - this.blockHave, to - at, this.length - this.have);
      data.copy(block, this.blockHave, at, at + n);
      this.blockHave += n;
      this.have += n;
      at += n;
    }
    return at;
  }

  private finishIfComplete(out: Buffer[]): void {
    if (this.blocks === undefined || this.have !== this.length) return;
    const blocks = this.blocks;
    const message = blocks.length === 1 ? blocks[0] : Buffer.concat(blocks, PREFIX + this.length);
    // the blocks of a long message are copied into it and seen by nobody else: their memory goes
    // back now, not at the next full GC (ADR 0209)
    if (blocks.length > 1) for (const b of blocks) if (ownsWhole(b)) detach(b.buffer);
    if (message.length >= RELEASE_MIN_BYTES && ownsWhole(message)) owned.add(message.buffer);
    out.push(message);
    this.blocks = undefined;
  }
}

/** Requests shorter than this are kept whole: too short for names worth comparing. */
const FIELDS_MIN_BYTES = 4 * 1024;
/** A first name field longer than this is not looked up (names are DNS-like, at most a few hundred bytes). */
const FIRST_FIELD_MAX_BYTES = 4 * 1024;
/** Fields other than the names past this are not worth reading apart: the message is kept whole. */
const OTHER_FIELDS_MAX_BYTES = 64 * 1024;
/** resource_names (3), length-delimited: the tag byte of every field of a run of names. */
const NAMES_TAG = 0x1a;

/** The runs of names that stood in returned messages, by the message's memory. */
const elided = new WeakMap<ArrayBufferLike, Buffer>();

/**
 * The encoded resource_names run that a reader with `nameRuns` left out of this message (any view
 * of it), or undefined when the message is whole. The run is one of those `nameRuns` offered,
 * shared, and never to be changed.
 */
export function elidedNames(view: Uint8Array): Buffer | undefined {
  return elided.get(view.buffer);
}

/**
 * One DiscoveryRequest read field by field: fields other than resource_names are kept; the names are
 * compared, as they arrive, with the runs they may repeat. `whole` is set (the bytes of the message so
 * far, in order) as soon as it cannot be read that way: names no known run has, a second run of
 * names, wire types of no DiscoveryRequest, or much else than names.
 */
class RequestFields {
  /** Kept bytes of fields other than the names, in order. */
  private kept = Buffer.allocUnsafeSlow(256);
  private keptLen = 0;
  /** The field header being read (tag, and length or value). */
  private readonly header = Buffer.alloc(20);
  private headerLen = 0;
  /** Bytes of the current field's body still to keep. */
  private bodyLeft = 0;
  /** The first names field being collected, its total length; undefined when not collecting. */
  private first: Buffer | undefined;
  private firstLen = 0;
  /** Runs the names still match, and how many bytes of them matched. */
  private candidates: ReadonlyArray<Buffer> | undefined;
  private matched = 0;
  /** The run being received on other streams too that the names follow (no list known yet). */
  private arriving: ArrivingRun | undefined;
  private nameState = NameState.Tag;
  private nameLeft = 0;
  private lengthShift = 1;
  /** The run the names were, and where in the kept bytes they stood. */
  private names: Buffer | undefined;
  private namesAt = 0;
  private consumed = 0;
  complete = false;
  whole: Buffer[] | undefined;

  constructor(
    private readonly length: number,
    private readonly nameRuns: NameRuns,
  ) {
    this.complete = length === 0;
  }

  get heldBytes(): number {
    return this.keptLen + this.headerLen + (this.first ? this.firstLen : 0);
  }

  /** Reads from `data[at]`; returns where it stopped (at the end of the message or of the data). */
  write(data: Buffer, at: number): number {
    while (at < data.length && !this.complete && !this.whole) {
      const end = Math.min(data.length, at + (this.length - this.consumed));
      const start = at;
      if (this.candidates) at = this.compare(data, at, end);
      else if (this.arriving) at = this.follow(data, at, end);
      else if (this.first) at = this.collectFirst(data, at, end);
      else if (this.bodyLeft > 0) {
        const n = Math.min(this.bodyLeft, end - at);
        this.keep(data, at, at + n);
        this.bodyLeft -= n;
        at += n;
      } else {
        at = this.readHeader(data, at, end);
      }
      this.consumed += at - start;
      if (this.whole) break;
      if (this.consumed === this.length) this.finish();
    }
    return at;
  }

  /** The message without its names, prefix included; its run is registered for `elidedNames`. */
  message(flag: number): Buffer {
    const out = Buffer.allocUnsafeSlow(PREFIX + this.keptLen);
    out[0] = flag;
    out.writeUInt32BE(this.keptLen, 1);
    this.kept.copy(out, PREFIX, 0, this.keptLen);
    if (this.names) elided.set(out.buffer, this.names);
    return out;
  }

  private finish(): void {
    if (this.bodyLeft > 0 || this.headerLen > 0 || this.first) return this.keepWhole(); // a field cut short: malformed, read whole
    if (this.candidates) {
      const run = this.candidates.find((c) => c.length === this.matched);
      if (!run) return this.keepWhole();
      this.endRun(run);
    }
    if (this.arriving) {
      // the names ended with the message: at a field boundary they are a run
      if (this.nameState !== NameState.Tag) return this.keepWhole();
      this.endRun(this.arriving.run(this.matched));
    }
    this.complete = true;
  }

  private readHeader(data: Buffer, at: number, end: number): number {
    while (at < end) {
      if (this.headerLen === this.header.length) {
        this.keepWhole();
        return at;
      }
      this.header[this.headerLen++] = data[at++];
      const parsed = parseHeader(this.header, this.headerLen);
      if (parsed === undefined) continue;
      if (parsed === 'bad') {
        this.keepWhole();
        return at;
      }
      const { field, wire, length: len } = parsed;
      if (field === 3 && wire === 2) {
        // a second run of names, or a first name too long to look up: read whole
        if (this.names || this.headerLen + len > FIRST_FIELD_MAX_BYTES) {
          this.keepWhole();
          return at;
        }
        this.firstLen = this.headerLen + len;
        this.first = Buffer.allocUnsafe(this.firstLen);
        this.header.copy(this.first, 0, 0, this.headerLen);
        this.collected = this.headerLen;
        this.headerLen = 0;
        if (this.collected === this.firstLen) this.lookUp();
        return at;
      }
      const headerLen = this.headerLen;
      this.headerLen = 0;
      this.keep(this.header, 0, headerLen);
      this.bodyLeft = len;
      return at;
    }
    return at;
  }

  private collected = 0;

  private collectFirst(data: Buffer, at: number, end: number): number {
    const n = Math.min(this.firstLen - this.collected, end - at);
    data.copy(this.first!, this.collected, at, at + n);
    this.collected += n;
    if (this.collected === this.firstLen) this.lookUp();
    return at + n;
  }

  /** The first names field is in: the runs starting with it are the candidates. */
  private lookUp(): void {
    const first = this.first!;
    const runs = this.nameRuns(first).filter((r) => r.length >= first.length && r.compare(first, 0, first.length, 0, first.length) === 0);
    if (runs.length > 0) {
      this.first = undefined;
      this.candidates = runs;
      this.matched = first.length;
      return;
    }
    // no list known yet: compared with the same names arriving on other streams (a connect storm)
    const joined = ArrivingRun.join(first, this);
    if (!joined) return this.keepWhole();
    this.first = undefined;
    this.arriving = joined;
    this.matched = first.length;
    this.nameState = NameState.Tag;
  }

  /**
   * Names compared with a run other streams are receiving: bytes it has are compared, bytes past
   * its end are added to it; the field boundaries are followed to know where the names end.
   */
  private follow(data: Buffer, at: number, end: number): number {
    const run = this.arriving!;
    while (at < end) {
      let n: number;
      if (this.nameState === NameState.Tag) {
        if (data[at] !== NAMES_TAG) {
          this.endRun(run.run(this.matched));
          return at;
        }
        n = 1;
      } else if (this.nameState === NameState.Length) {
        n = 1;
      } else {
        n = Math.min(this.nameLeft, end - at);
      }
      if (!run.take(data, at, n, this.matched)) {
        // other names from here on: the list that has them, if another stream is receiving it
        const other = run.fork(this, this.matched, data, at, n);
        if (!other) {
          this.keepWhole();
          return at;
        }
        this.arriving = other;
        return at;
      }
      if (this.nameState === NameState.Tag) {
        this.nameState = NameState.Length;
        this.nameLeft = 0;
        this.lengthShift = 1;
      } else if (this.nameState === NameState.Length) {
        const b = data[at];
        this.nameLeft += (b & 0x7f) * this.lengthShift;
        this.lengthShift *= 128;
        if (b < 0x80) this.nameState = this.nameLeft > 0 ? NameState.Body : NameState.Tag;
        else if (this.lengthShift > 128 ** 4) {
          this.keepWhole();
          return at;
        }
      } else {
        this.nameLeft -= n;
        if (this.nameLeft === 0) this.nameState = NameState.Tag;
      }
      this.matched += n;
      at += n;
    }
    return at;
  }

  private compare(data: Buffer, at: number, end: number): number {
    while (at < end) {
      const runs = this.candidates!;
      const done = runs.find((r) => r.length === this.matched);
      if (done && data[at] !== NAMES_TAG) {
        // the names ended where this run ends: the next byte starts another field
        this.endRun(done);
        return at;
      }
      const longer = runs.filter((r) => r.length > this.matched);
      if (longer.length === 0) {
        this.keepWhole();
        return at;
      }
      let step = end - at;
      for (const r of longer) step = Math.min(step, r.length - this.matched);
      const still = longer.filter((r) => data.compare(r, this.matched, this.matched + step, at, at + step) === 0);
      if (still.length === 0) {
        this.keepWhole();
        return at;
      }
      this.candidates = still;
      this.matched += step;
      at += step;
    }
    return at;
  }

  private endRun(run: Buffer): void {
    this.names = run;
    this.namesAt = this.keptLen;
    this.candidates = undefined;
    this.leaveArriving();
  }

  private leaveArriving(): void {
    this.arriving?.leave(this);
    this.arriving = undefined;
  }

  private keep(src: Buffer, from: number, to: number): void {
    const n = to - from;
    if (this.keptLen + n > OTHER_FIELDS_MAX_BYTES) {
      this.keepWhole(src.subarray(from, to));
      return;
    }
    if (this.keptLen + n > this.kept.length) {
      const grown = Buffer.allocUnsafeSlow(Math.max(this.kept.length * 2, this.keptLen + n));
      this.kept.copy(grown, 0, 0, this.keptLen);
      this.kept = grown;
    }
    src.copy(this.kept, this.keptLen, from, to);
    this.keptLen += n;
  }

  /**
   * The message so far, in order, as pieces (`extra`: bytes read from the data but not yet placed),
   * for the reader to keep the message whole from here.
   */
  private keepWhole(extra?: Buffer): void {
    const kept = this.kept.subarray(0, this.keptLen);
    const pieces: Buffer[] = this.names ? [kept.subarray(0, this.namesAt), this.names, kept.subarray(this.namesAt)] : [kept];
    if (this.candidates) pieces.push(this.candidates[0].subarray(0, this.matched));
    if (this.arriving) pieces.push(this.arriving.bytes(this.matched));
    this.leaveArriving();
    if (this.first) pieces.push(this.first.subarray(0, this.collected));
    if (this.headerLen > 0) pieces.push(this.header.subarray(0, this.headerLen));
    if (extra) pieces.push(extra);
    this.whole = pieces;
  }
}

const enum NameState {
  Tag,
  Length,
  Body,
}

/** Lists being received at most; past it, requests with names no list has yet are kept whole. */
const MAX_ARRIVING_RUNS = 256;
/** Lists being received at most that start with the same name (the scopes of one mesh often do). */
const MAX_RUNS_PER_FIRST_NAME = 32;

/**
 * A list of names several streams are receiving at once, before any of them finished it (a
 * connect storm: every sidecar of a scope asks for the same names at about the same moment). It
 * holds the bytes of the stream furthest on, once; the others compare theirs with it. Lists that
 * start alike and differ later (other scopes) fork: a stream whose bytes differ moves to the list
 * that has its bytes, or starts one with the part it shares.
 */
class ArrivingRun {
  /** Lists being received, by their first name field. */
  private static readonly byFirst = new Map<string, ArrivingRun[]>();
  private static count = 0;
  /** A reader that is collected mid-message (its stream gone) leaves the list it followed. */
  private static readonly abandoned = new FinalizationRegistry<{ run: ArrivingRun }>((held) => held.run.drop());
  private buf: Buffer;
  private len = 0;
  private members = 0;
  /** Runs handed out, by length: streams ending at the same place share one copy. */
  private readonly ends = new Map<number, Buffer>();

  private constructor(
    private readonly key: string,
    from: Buffer,
    n: number,
  ) {
    this.buf = Buffer.allocUnsafeSlow(Math.max(n, 64 * 1024));
    this.append(from, 0, n);
  }

  /** A list for a stream whose names start with `first` (undefined past the bounds). */
  static join(first: Buffer, member: object): ArrivingRun | undefined {
    const key = first.toString('latin1');
    const family = ArrivingRun.byFirst.get(key);
    const run = family?.[0] ?? ArrivingRun.create(key, first, first.length);
    run?.enter(member);
    return run;
  }

  private static create(key: string, from: Buffer, n: number): ArrivingRun | undefined {
    const family = ArrivingRun.byFirst.get(key) ?? [];
    if (ArrivingRun.count >= MAX_ARRIVING_RUNS || family.length >= MAX_RUNS_PER_FIRST_NAME) return undefined;
    const run = new ArrivingRun(key, from, n);
    family.push(run);
    ArrivingRun.byFirst.set(key, family);
    ArrivingRun.count++;
    return run;
  }

  private readonly held = { run: this as ArrivingRun };

  private enter(member: object): void {
    this.members++;
    ArrivingRun.abandoned.register(member, this.held, member);
  }

  leave(member: object): void {
    ArrivingRun.abandoned.unregister(member);
    this.drop();
  }

  private drop(): void {
    if (--this.members > 0) return;
    const family = ArrivingRun.byFirst.get(this.key);
    const i = family ? family.indexOf(this) : -1;
    if (i < 0) return;
    family!.splice(i, 1);
    ArrivingRun.count--;
    if (family!.length === 0) ArrivingRun.byFirst.delete(this.key);
  }

  /**
   * For a member whose names, equal to this list's first `from` bytes, go on differently
   * (`data[at, at+n)`): the list of the same first name that has those bytes and the next ones
   * (completed with them if it is behind), or a new one starting with them. Undefined past the bounds.
   */
  fork(member: object, from: number, data: Buffer, at: number, n: number): ArrivingRun | undefined {
    const family = ArrivingRun.byFirst.get(this.key) ?? [];
    let next = family.find((o) => {
      if (o === this) return false;
      const m = Math.min(from, o.len);
      if (o.buf.compare(this.buf, 0, m, 0, m) !== 0) return false;
      // and it has the member's next bytes, or is not that far yet
      const k = Math.min(n, o.len - from);
      return k <= 0 || data.compare(o.buf, from, from + k, at, at + k) === 0;
    });
    if (next && next.len < from) next.append(this.buf, next.len, from);
    next ??= ArrivingRun.create(this.key, this.buf, from);
    if (!next) return undefined;
    this.leave(member);
    next.enter(member);
    return next;
  }

  /** `data[at, at+n)`, the names at offset `from`: false when they differ from the list's bytes there. */
  take(data: Buffer, at: number, n: number, from: number): boolean {
    const common = Math.min(n, this.len - from);
    if (common > 0 && data.compare(this.buf, from, from + common, at, at + common) !== 0) return false;
    // past the end of what arrived so far: this stream is the furthest on
    if (common < n) this.append(data, at + common, at + n);
    return true;
  }

  private append(data: Buffer, from: number, to: number): void {
    const need = this.len + (to - from);
    if (need > this.buf.length) {
      const grown = Buffer.allocUnsafeSlow(Math.max(need, this.buf.length * 2));
      this.buf.copy(grown, 0, 0, this.len);
      this.buf = grown;
    }
    data.copy(this.buf, this.len, from, to);
    this.len = need;
  }

  /** The first `n` bytes, for a stream that leaves to keep its request whole (copied at once). */
  bytes(n: number): Buffer {
    return this.buf.subarray(0, n);
  }

  /** The run of the first `n` bytes (complete names), one buffer per length shared by the streams ending there. */
  run(n: number): Buffer {
    let out = this.ends.get(n);
    if (!out) {
      out = Buffer.from(this.buf.subarray(0, n));
      this.ends.set(n, out);
    }
    return out;
  }
}

/**
 * A protobuf field header (tag, then the length of a length-delimited field or the value of a
 * varint) from the first `n` bytes of `b`: undefined while incomplete (a varint too long never
 * completes: the header buffer fills and the message is read whole), 'bad' for a wire type a
 * DiscoveryRequest has not. Fixed-width fields are read as bodies of their width.
 */
function parseHeader(b: Buffer, n: number): { field: number; wire: number; length: number } | undefined | 'bad' {
  const bytes = b.subarray(0, n);
  const tag = readVarint(bytes, 0);
  if (!tag) return undefined;
  const field = Math.floor(tag[0] / 8);
  const wire = tag[0] & 7;
  if (wire === 1 || wire === 5) return tag[1] === n ? { field, wire, length: wire === 1 ? 8 : 4 } : 'bad';
  if (wire !== 0 && wire !== 2) return 'bad';
  const value = readVarint(bytes, tag[1]);
  if (!value) return undefined;
  if (value[1] !== n) return 'bad';
  return { field, wire, length: wire === 0 ? 0 : value[0] };
}

/**
 * Frees the memory of a request a reader returned (any view of it: grpc-js hands the message on
 * without its prefix) once the caller has read all it keeps from it, instead of at the next garbage
 * collection: in a storm of 2,000 ACKs of ~165 KB each, the requests already read were most of the
 * external memory waiting for a scavenge (ADR 0202). Every view of the buffer becomes empty; a
 * buffer the reader did not allocate whole (a small one, or one of another decoder) is left alone.
 */
export function releaseMessage(view: Uint8Array): void {
  if (owned.delete(view.buffer)) detach(view.buffer);
}

/** A buffer allocated on its own (not a slice of Node's pool): the whole ArrayBuffer is its bytes. */
function ownsWhole(b: Buffer): boolean {
  return b.byteOffset === 0 && b.buffer.byteLength === b.length;
}

/** Gives an ArrayBuffer's backing store back now (ES2024 ArrayBuffer.prototype.transfer, Node ≥ 21); every view of it becomes empty. */
function detach(buffer: ArrayBufferLike): void {
  (buffer as ArrayBuffer & { transfer?(length: number): ArrayBuffer }).transfer?.(0);
}

/** The part of grpc-js 1.10–1.14's StreamDecoder this module relies on (not its typed API). */
interface GrpcDecoder extends MessageDecoder {
  readonly readState: number;
  readonly maxReadMessageLength: number;
}

/** grpc-js's ReadState.NO_DATA: between two messages. */
const GRPC_NO_DATA = 0;

function grpcDecoderOf(inner: { decoder?: unknown }): GrpcDecoder | undefined {
  const d = inner.decoder as Partial<GrpcDecoder> | undefined;
  if (!d || typeof d !== 'object' || typeof d.write !== 'function') return undefined;
  if (typeof d.readState !== 'number' || typeof d.maxReadMessageLength !== 'number') return undefined;
  return d as GrpcDecoder;
}

/**
 * Replaces the decoder of a grpc-js server call (`call.call.decoder`) with a `MessageReader`
 * (reading DiscoveryRequests' names against `nameRuns` when given); true when it did. A message grpc-js had started to read is finished by grpc-js's decoder first.
 */
export function compactReads(call: object, nameRuns?: NameRuns): boolean {
  const inner = (call as { call?: unknown }).call as { decoder?: unknown } | undefined;
  if (!inner || typeof inner !== 'object') return false;
  const theirs = grpcDecoderOf(inner);
  if (!theirs) return false;
  const ours = new MessageReader(theirs.maxReadMessageLength, nameRuns);
  if (theirs.readState === GRPC_NO_DATA) {
    inner.decoder = ours;
    return true;
  }
  const handOver: MessageDecoder = {
    write: (data) => {
      const out = theirs.write(data);
      // once between messages, grpc-js's decoder (and the views it keeps) is let go
      if (theirs.readState === GRPC_NO_DATA && inner.decoder === handOver) inner.decoder = ours;
      return out;
    },
  };
  inner.decoder = handOver;
  return true;
}
