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
 * gRPC length-prefixed messages from a byte stream. Each returned message is one buffer, prefix
 * included (the form grpc-js's server call expects). The reader never keeps a chunk it was given: the
 * bytes are copied as they arrive into a buffer of the message's own (one copy, as grpc-js's joining
 * of the pieces is one), so a socket read is let go as soon as its data event is handled, and an
 * incomplete message holds only the bytes that arrived (ADR 0202).
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

  /** `maxMessageBytes`: longest message accepted (grpc.max_receive_message_length; -1: no limit). */
  constructor(private readonly maxMessageBytes: number) {}

  /** Bytes the reader holds for an incomplete message (tests). */
  get heldBytes(): number {
    return this.blocks ? this.have : 0;
  }

  write(data: Buffer): Buffer[] {
    const out: Buffer[] = [];
    let at = 0;
    while (at < data.length) {
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
        const first = Buffer.allocUnsafe(Math.min(PREFIX + this.length, MESSAGE_BLOCK_BYTES));
        this.prefix.copy(first, 0);
        this.blocks = [first];
        this.blockHave = PREFIX;
        this.have = 0;
      } else {
        let block = this.blocks[this.blocks.length - 1];
        if (this.blockHave === block.length) {
          block = Buffer.allocUnsafe(Math.min(this.length - this.have, MESSAGE_BLOCK_BYTES));
          this.blocks.push(block);
          this.blockHave = 0;
        }
        const n = Math.min(block.length - this.blockHave, data.length - at);
        data.copy(block, this.blockHave, at, at + n);
        this.blockHave += n;
        this.have += n;
        at += n;
      }
      if (this.blocks !== undefined && this.have === this.length) {
        const message = this.blocks.length === 1 ? this.blocks[0] : Buffer.concat(this.blocks, PREFIX + this.length);
        if (message.length >= RELEASE_MIN_BYTES && message.byteOffset === 0 && message.buffer.byteLength === message.length) owned.add(message.buffer);
        out.push(message);
        this.blocks = undefined;
      }
    }
    return out;
  }
}

/**
 * Frees the memory of a request a reader returned (any view of it: grpc-js hands the message on
 * without its prefix) once the caller has read all it keeps from it, instead of at the next garbage
 * collection: in a storm of 2,000 ACKs of ~165 KB each, the requests already read were most of the
 * external memory waiting for a scavenge (ADR 0202). Every view of the buffer becomes empty; a
 * buffer the reader did not allocate whole (a small one, or one of another decoder) is left alone.
 */
export function releaseMessage(view: Uint8Array): void {
  const buffer = view.buffer as ArrayBuffer & { transfer?(length: number): ArrayBuffer };
  if (!owned.delete(buffer)) return;
  // detaching gives the backing store back now (ES2024 ArrayBuffer.prototype.transfer, Node ≥ 21)
  buffer.transfer?.(0);
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
 * Replaces the decoder of a grpc-js server call (`call.call.decoder`) with a `MessageReader`; true
 * when it did. A message grpc-js had started to read is finished by grpc-js's decoder first.
 */
export function compactReads(call: object): boolean {
  const inner = (call as { call?: unknown }).call as { decoder?: unknown } | undefined;
  if (!inner || typeof inner !== 'object') return false;
  const theirs = grpcDecoderOf(inner);
  if (!theirs) return false;
  const ours = new MessageReader(theirs.maxReadMessageLength);
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
