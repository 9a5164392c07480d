/**
 * Writes already-framed gRPC messages to a server stream without copying them (ADR 0022).
 *
 * grpc-js's `call.write(message)` serializes into a fresh buffer of message length + 5 and copies
 * the message into it, once per stream: a 1.6 MB CDS response sent to 2,000 sidecars becomes
 * 3.2 GB of short-lived copies, which is most of the daemon's memory peak in a connect storm. The
 * daemon frames each shared response once (`GrpcFrame`, prefix included) and, where the pinned
 * grpc-js exposes the call's HTTP/2 stream, writes that same buffer to every stream. Ordering with
 * grpc-js's own output (headers before the first message, trailers after the last) holds because
 * everything goes through the one HTTP/2 stream: headers are sent through grpc-js before the first
 * frame, and grpc-js ends the stream after the writes queued on it.
 *
 * Where the internals are not as expected (another grpc-js version), `frameWriter` falls back to
 * `call.write` with the message part of the frame (a view), which is correct and copies as before.
 *
 * A direct write hands the frame over in chunks of `WRITE_CHUNK_BYTES` (views, not copies), each
 * settling when HTTP/2 flow control let it go: `progress` is called per chunk, which tells a client
 * that reads slowly from one that reads nothing (write-guard.ts).
 */
import type { ServerDuplexStream } from '@grpc/grpc-js';
import { constants } from 'node:http2';
import { frameMessage, type GrpcFrame } from './wire.js';

export type WriteDone = (err?: Error | null) => void;

export interface FrameWriter {
  /** True when frames go to the HTTP/2 stream as they are (no copy). */
  readonly direct: boolean;
  /** The HTTP/2 session (connection) the stream belongs to, when known: its streams share one socket. */
  readonly session?: object;
  /** `done` once the transport took the whole frame (or failed); `progress` each time it took a part, with its bytes. */
  write(frame: GrpcFrame, done: WriteDone, progress?: (bytes: number) => void): void;
  /**
   * Ends the stream at once (HTTP/2 RST_STREAM): frames not taken yet are dropped and their writes
   * fail. For a client that takes nothing, whom a status behind its unread frames would never reach.
   */
  abort(): void;
}

/** Part of a frame handed to the HTTP/2 stream at once (a view into the shared frame). */
export const WRITE_CHUNK_BYTES = 256 * 1024;

/** What grpc-js 1.10–1.14's BaseServerInterceptingCall offers (not part of its typed API). */
interface BaseCall {
  stream: { write(chunk: Buffer, cb: (err?: Error | null) => void): boolean; respond: unknown; close(code?: number): void; session?: unknown };
  maybeSendMetadata(): void;
  checkCancelled(): boolean;
  callEventTracker?: { addMessageSent?: () => void } | null;
}

function baseCallOf(call: object): BaseCall | undefined {
  const inner = (call as { call?: unknown }).call as Partial<BaseCall> | undefined;
  if (!inner || typeof inner !== 'object') return undefined;
  if (typeof inner.maybeSendMetadata !== 'function' || typeof inner.checkCancelled !== 'function') return undefined;
  const stream = inner.stream;
  if (!stream || typeof stream.write !== 'function' || typeof stream.respond !== 'function' || typeof stream.close !== 'function') return undefined;
  return inner as BaseCall;
}

export function frameWriter(call: ServerDuplexStream<Buffer, Buffer>, opts: { allowDirect?: boolean } = {}): FrameWriter {
  const base = opts.allowDirect === false ? undefined : baseCallOf(call);
  if (!base) {
    return { direct: false, write: (frame, done) => void call.write(frameMessage(frame), done), abort: () => void call.destroy() };
  }
  const session = base.stream.session;
  return {
    direct: true,
    session: typeof session === 'object' && session !== null ? session : undefined,
    write: (frame, done, progress) => {
      if (base.checkCancelled()) {
        done(new Error('call cancelled'));
        return;
      }
      base.maybeSendMetadata();
      const chunks = Math.max(1, Math.ceil(frame.length / WRITE_CHUNK_BYTES));
      let left = chunks;
      let failed = false;
      for (let i = 0; i < chunks; i++) {
        const chunk = chunks === 1 ? frame : frame.subarray(i * WRITE_CHUNK_BYTES, Math.min(frame.length, (i + 1) * WRITE_CHUNK_BYTES));
        base.stream.write(chunk, (err) => {
          if (failed) return;
          if (err) {
            failed = true;
            done(err);
            return;
          }
          if (--left > 0) {
            progress?.(chunk.length);
            return;
          }
          base.callEventTracker?.addMessageSent?.();
          done();
        });
      }
    },
    abort: () => base.stream.close(constants.NGHTTP2_CANCEL),
  };
}
