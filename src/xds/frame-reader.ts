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
 * `MessageReader` assembles each message in a buffer of its own, copying the bytes as they arrive
 * (grpc-js copies them once too, when it joins the chunks), and keeps nothing of the input.
 * `compactReads` puts it in place of grpc-js's decoder of a server call; where the internals are
 * not as expected it leaves the call as it is, which is correct and keeps the views as before.
 */

/** Bytes of the gRPC message prefix: compression flag, message length (big-endian uint32). */
const PREFIX = 5;
/**
 * First capacity of a message's buffer. A message grows to its announced length as its bytes
 * arrive, doubling: a client that announces a large message and sends little makes the daemon
 * hold about what it sent, not what it announced.
 */
const FIRST_CAPACITY = 64 * 1024;

/** What grpc-js's server call decodes with: `write(chunk)` returns the complete messages, prefix included. */
export interface MessageDecoder {
  write(data: Buffer): Buffer[];
}

/**
 * gRPC length-prefixed messages from a byte stream. Each returned message is its own buffer,
 * prefix included (the form grpc-js's server call expects); the input chunks are not kept.
 */
export class MessageReader implements MessageDecoder {
  private readonly prefix = Buffer.alloc(PREFIX);
  private prefixHave = 0;
  /** The message being assembled (prefix included), undefined between messages. */
  private message: Buffer | undefined;
  private have = 0;
  private total = 0;

  /** `maxMessageBytes`: longest message accepted (grpc.max_receive_message_length; -1: no limit). */
  constructor(private readonly maxMessageBytes: number) {}

  /** Bytes the reader holds for an incomplete message (tests). */
  get heldBytes(): number {
    return this.message?.length ?? 0;
  }

  write(data: Buffer): Buffer[] {
    const out: Buffer[] = [];
    let at = 0;
    while (at < data.length) {
      if (this.message === undefined) {
        const n = Math.min(PREFIX - this.prefixHave, data.length - at);
        data.copy(this.prefix, this.prefixHave, at, at + n);
        this.prefixHave += n;
        at += n;
        if (this.prefixHave < PREFIX) break;
        const length = this.prefix.readUInt32BE(1);
        if (this.maxMessageBytes !== -1 && length > this.maxMessageBytes) {
          throw new Error(`a request message of ${length} bytes is larger than the limit of ${this.maxMessageBytes} bytes (MESH_GPRC_MAXRECVMSGSIZE)`);
        }
        this.prefixHave = 0;
        this.total = PREFIX + length;
        // its own memory, not a slice of a shared pool: the message may be kept (a request waiting its turn)
        this.message = Buffer.allocUnsafeSlow(Math.min(this.total, FIRST_CAPACITY));
        this.prefix.copy(this.message, 0);
        this.have = PREFIX;
      } else {
        const n = Math.min(this.total - this.have, data.length - at);
        this.reserve(this.have + n);
        data.copy(this.message, this.have, at, at + n);
        this.have += n;
        at += n;
      }
      if (this.message !== undefined && this.have === this.total) {
        out.push(this.message);
        this.message = undefined;
      }
    }
    return out;
  }

  private reserve(needed: number): void {
    const m = this.message!;
    if (needed <= m.length) return;
    const grown = Buffer.allocUnsafeSlow(Math.min(this.total, Math.max(needed, m.length * 2)));
    m.copy(grown, 0, 0, this.have);
    this.message = grown;
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
