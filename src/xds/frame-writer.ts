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
 */
import type { ServerDuplexStream } from '@grpc/grpc-js';
import { frameMessage, type GrpcFrame } from './wire.js';

export type WriteDone = (err?: Error | null) => void;

export interface FrameWriter {
  /** True when frames go to the HTTP/2 stream as they are (no copy). */
  readonly direct: boolean;
  write(frame: GrpcFrame, done: WriteDone): void;
}

/** What grpc-js 1.10–1.14's BaseServerInterceptingCall offers (not part of its typed API). */
interface BaseCall {
  stream: { write(chunk: Buffer, cb: (err?: Error | null) => void): boolean; respond: unknown };
  maybeSendMetadata(): void;
  checkCancelled(): boolean;
  callEventTracker?: { addMessageSent?: () => void } | null;
}

function baseCallOf(call: object): BaseCall | undefined {
  const inner = (call as { call?: unknown }).call as Partial<BaseCall> | undefined;
  if (!inner || typeof inner !== 'object') return undefined;
  if (typeof inner.maybeSendMetadata !== 'function' || typeof inner.checkCancelled !== 'function') return undefined;
  const stream = inner.stream;
  if (!stream || typeof stream.write !== 'function' || typeof stream.respond !== 'function') return undefined;
  return inner as BaseCall;
}

export function frameWriter(call: ServerDuplexStream<Buffer, Buffer>, opts: { allowDirect?: boolean } = {}): FrameWriter {
  const base = opts.allowDirect === false ? undefined : baseCallOf(call);
  if (!base) {
    return { direct: false, write: (frame, done) => void call.write(frameMessage(frame), done) };
  }
  return {
    direct: true,
    write: (frame, done) => {
      if (base.checkCancelled()) {
        done(new Error('call cancelled'));
        return;
      }
      base.maybeSendMetadata();
      base.stream.write(frame, (err) => {
        if (!err) base.callEventTracker?.addMessageSent?.();
        done(err);
      });
    },
  };
}
