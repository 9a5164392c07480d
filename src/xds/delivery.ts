/**
 * Delivery of response frames to connections (docs/adr/0055): no client, however slow, holds back
 * another one.
 *
 * A frame is admitted against the budget of bytes being written (write-guard.ts) while the caller
 * still holds its push or answer slot — so at most DISC_PUSH_THROTTLE built frames wait for the
 * budget — then the slot is given back and the write proceeds without one. A client that stops
 * taking its bytes therefore costs no slot; once stalled its frame no longer counts against the
 * budget either; and past a bound it loses its stream, counted in disc_xds_write_timeout. With
 * DISC_XDS_SEND_TIMEOUT set, a write not done within it loses the stream too, as before.
 *
 * A second budget counts what streams have been handed and their clients have not taken, per write
 * (docs/adr/0200): a connect storm writes to a bounded number of streams at a time, each of which
 * finishes quickly, instead of to all of them at once.
 */
import * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { LogRateLimit } from '../log/rate-limit.js';
import type { Metrics } from '../metrics/metrics.js';
import type { Connection } from './connection.js';
import type { Slot } from './limiter.js';
import { WriteGuard, type AbandonReason, type WriteGuardOptions, type WriteGuardStats } from './write-guard.js';
import { GRPC_PREFIX_BYTES, type GrpcFrame } from './wire.js';

/** Defaults of the bounds (AdsOptions.delivery overrides them, for tests). */
export const DELIVERY_DEFAULTS: Omit<WriteGuardOptions, 'sendTimeoutMs'> = {
  // response bytes being written at once, each frame counted once however many streams it goes to
  maxLiveBytes: 64 * 1024 * 1024,
  // response bytes handed to streams and not taken yet, each stream's write counted on its own
  // (docs/adr/0200): about 28 first responses of a 5,000-service sidecar (9 MB of clusters) at once,
  // instead of 2,000 interleaved by HTTP/2 until all of them finish together
  maxUnsentBytes: 256 * 1024 * 1024,
  // streams of one connection share its socket: a few at a time each finish quickly, where 100
  // interleaved ones each wait so long between chunks that they look stalled (a proxy has a
  // connection of its own and never meets this; a client multiplexing many proxies does)
  maxWritesPerSession: 4,
  // an edit's push (a route configuration of a few KB to each of 100 streams of one connection)
  // goes at once: waves of 4 added 0.1-0.3 s to a 1,000-service edit's p99 (docs/adr/0200)
  sessionWriteMinBytes: 64 * 1024,
  // a client on loopback or a LAN takes a chunk within milliseconds; one that took nothing for half
  // a second no longer counts against the budget
  stallMs: 500,
  // a client that takes nothing for 30 s loses its stream (it reconnects and starts afresh)
  abandonMs: 30_000,
  // frames only stalled clients still hold; beyond it, the longest-stalled lose their streams
  maxStalledBytes: 128 * 1024 * 1024,
};

export interface DeliveryOptions {
  /** DISC_XDS_SEND_TIMEOUT in ms (0: none). */
  readonly sendTimeoutMs: number;
  readonly bounds?: Partial<Omit<WriteGuardOptions, 'sendTimeoutMs'>>;
}

const REASONS: Record<AbandonReason, (idleMs: number, sendTimeoutMs: number) => string> = {
  'send-timeout': (_i, t) => `xDS send timed out (DISC_XDS_SEND_TIMEOUT=${t}ms)`,
  stalled: (i) => `the client took none of its response for ${Math.round(i / 1000)} s`,
  'stalled-bytes': (i) => `too many response bytes wait for clients that stopped reading; this one took nothing for ${Math.round(i / 1000)} s`,
};

export class Delivery {
  private readonly guard: WriteGuard<Connection>;
  private readonly abandonLog = new LogRateLimit(5, 20);

  constructor(
    private readonly metrics: Metrics,
    private readonly log: Logger,
    private readonly options: DeliveryOptions,
  ) {
    this.guard = new WriteGuard<Connection>({ ...DELIVERY_DEFAULTS, ...options.bounds, sendTimeoutMs: options.sendTimeoutMs }, (conn, reason, idleMs) =>
      this.abandon(conn, reason, idleMs),
    );
  }

  stats(): WriteGuardStats {
    return this.guard.stats();
  }

  close(): void {
    this.guard.close();
  }

  /**
   * Writes `frame` to `conn`. Call with `slot` held: the slot is given back once the frame is
   * admitted, before the client takes the bytes. `rank` is its place in line (limiter.ts nextRank).
   * Resolves true when the transport took the frame.
   */
  async send(conn: Connection, frame: GrpcFrame, type: string, slot: Slot, rank: number): Promise<boolean> {
    // a shared frame written as it is costs its bytes once; a copying write costs its own
    const pending = await this.guard.admit(conn, conn.writer.direct ? frame : {}, frame.length, rank, conn.writer.session);
    slot.release();
    const started = process.hrtime.bigint();
    try {
      await conn.writer.write(frame, (bytes) => pending.progress(bytes));
    } catch {
      this.metrics.xdsPushes.inc({ type: `${type}_senderr` });
      return false;
    } finally {
      pending.end();
    }
    this.metrics.sendTime.observe(Number(process.hrtime.bigint() - started) / 1e9);
    this.metrics.configSize.observe({ type }, frame.length - GRPC_PREFIX_BYTES);
    this.metrics.xdsPushes.inc({ type });
    return true;
  }

  private abandon(conn: Connection, reason: AbandonReason, idleMs: number): void {
    this.metrics.writeTimeouts.inc();
    const message = REASONS[reason](idleMs, this.options.sendTimeoutMs);
    const held = this.abandonLog.take();
    if (held !== undefined) this.log.warn({ conn: conn.id, reason, ...(held > 0 ? { suppressed: held } : {}) }, `ADS: closing a stream: ${message}`);
    // the status goes after the frames the client does not take: it would never arrive, so the
    // stream is reset, which also drops those frames
    conn.writer.close(reason === 'stalled-bytes' ? grpc.status.RESOURCE_EXHAUSTED : grpc.status.DEADLINE_EXCEEDED, message);
    conn.writer.abort();
  }
}
