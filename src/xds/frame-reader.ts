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
 * `MessageReader` joins each message once, like grpc-js, and keeps nothing of it afterwards; while a
 * message is incomplete, a piece that is a small part of a larger shared buffer is copied.
 * `compactReads` puts it in place of grpc-js's decoder of a server call; where the internals are
 * not as expected it leaves the call as it is, which is correct and keeps the views as before.
 */

/** Bytes of the gRPC message prefix: compression flag, message length (big-endian uint32). */
const PREFIX = 5;
/**
 * A piece of a chunk that is less than this share of the buffer behind it is copied rather than
 * kept as a view: a few bytes of a stream must not hold a whole socket read shared with others.
 */
const VIEW_MIN_SHARE = 4;

/** What grpc-js's server call decodes with: `write(chunk)` returns the complete messages, prefix included. */
export interface MessageDecoder {
  write(data: Buffer): Buffer[];
}

/**
 * gRPC length-prefixed messages from a byte stream. Each returned message is one buffer, prefix
 * included (the form grpc-js's server call expects), joined once when its last byte arrives, as
 * grpc-js does. While a message is incomplete its pieces are kept (as views, or copied when a view
 * would hold a much larger buffer); once it is complete the reader keeps nothing of it.
 */
export class MessageReader implements MessageDecoder {
  private readonly prefix = Buffer.alloc(PREFIX);
  private prefixHave = 0;
  /** Pieces of the message being read; undefined between messages. */
  private pieces: Buffer[] | undefined;
  private have = 0;
  private length = 0;

  /** `maxMessageBytes`: longest message accepted (grpc.max_receive_message_length; -1: no limit). */
  constructor(private readonly maxMessageBytes: number) {}

  /** Bytes the reader holds for an incomplete message (tests). */
  get heldBytes(): number {
    return this.pieces ? this.have : 0;
  }

  write(data: Buffer): Buffer[] {
    const out: Buffer[] = [];
    let at = 0;
    while (at < data.length) {
      if (this.pieces === undefined) {
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
        this.pieces = [];
        this.have = 0;
      } else {
        const n = Math.min(this.length - this.have, data.length - at);
        const piece = data.subarray(at, at + n);
        this.pieces.push(piece.length * VIEW_MIN_SHARE < piece.buffer.byteLength ? Buffer.from(piece) : piece);
        this.have += n;
        at += n;
      }
      if (this.pieces !== undefined && this.have === this.length) {
        out.push(Buffer.concat([this.prefix, ...this.pieces], PREFIX + this.length));
        this.pieces = undefined;
      }
    }
    return out;
  }
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
