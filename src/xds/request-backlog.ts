/**
 * The requests of one ADS stream that wait for their turn (issue 15). A stream's requests are
 * handled one at a time, in order, and an answer waits for its write, which a client that does not
 * read can hold for up to the delivery's abandon bound. Meanwhile such a client may keep sending: what
 * waits is bounded here.
 *
 * - A state-of-the-world request supersedes a waiting request of its type (`key`): it carries the
 *   client's latest subscription and the latest nonce it saw, which is all the protocol needs (an
 *   intermediate ACK only says what the later request says again). The first request's node is kept.
 * - Past `maxRequests` waiting requests or `maxBytes` of them, the stream is paused: grpc-js reads no
 *   more of it, so HTTP/2 flow control holds the client's further requests at the client. It is
 *   resumed once the backlog is down to half of both bounds.
 */

export interface BacklogBounds {
  /** Requests waiting (after coalescing) before the stream is paused. */
  readonly maxRequests: number;
  /** Bytes of requests waiting (as received) before the stream is paused. */
  readonly maxBytes: number;
}

export const BACKLOG_DEFAULTS: BacklogBounds = { maxRequests: 16, maxBytes: 8 * 1024 * 1024 };

/** What the backlog pauses and resumes: the gRPC call's readable side. */
export interface Readable {
  pause(): void;
  resume(): void;
}

interface Entry<T> {
  item: T;
  bytes: number;
  readonly key?: string;
}

export interface BacklogStats {
  readonly waiting: number;
  readonly bytes: number;
  readonly paused: boolean;
  /** Requests superseded by a later one of their kind before their turn, since the stream opened. */
  readonly coalesced: number;
  /** Times the stream was paused. */
  readonly pauses: number;
}

export class RequestBacklog<T> {
  private readonly queue: Entry<T>[] = [];
  private readonly byKey = new Map<string, Entry<T>>();
  private bytes = 0;
  private running = false;
  private paused = false;
  private stopped = false;
  private coalesced = 0;
  private pauses = 0;
  private readonly bounds: BacklogBounds;

  /**
   * `handle` processes one request; a rejection stops the backlog (what waits is dropped) and goes
   * to `failed`. `merge(older, newer)` makes the request that supersedes `older`.
   */
  constructor(
    private readonly stream: Readable,
    private readonly handle: (item: T) => Promise<void>,
    private readonly failed: (err: unknown) => void,
    bounds: Partial<BacklogBounds> = {},
    private readonly merge: (older: T, newer: T) => T = (_o, n) => n,
  ) {
    this.bounds = { ...BACKLOG_DEFAULTS, ...bounds };
  }

  /** Queues a request of `bytes`; one with a `key` replaces a waiting one of the same key. */
  add(item: T, bytes: number, key?: string): void {
    if (this.stopped) return;
    const waiting = key === undefined ? undefined : this.byKey.get(key);
    if (waiting) {
      waiting.item = this.merge(waiting.item, item);
      this.bytes += bytes - waiting.bytes;
      waiting.bytes = bytes;
      this.coalesced++;
    } else {
      const entry: Entry<T> = { item, bytes, key };
      this.queue.push(entry);
      if (key !== undefined) this.byKey.set(key, entry);
      this.bytes += bytes;
    }
    if (!this.paused && (this.queue.length >= this.bounds.maxRequests || this.bytes >= this.bounds.maxBytes)) {
      this.paused = true;
      this.pauses++;
      this.stream.pause();
    }
    if (!this.running) void this.run();
  }

  /** Drops what waits and handles nothing more (the stream ended). */
  stop(): void {
    this.stopped = true;
    this.queue.length = 0;
    this.byKey.clear();
    this.bytes = 0;
  }

  stats(): BacklogStats {
    return { waiting: this.queue.length, bytes: this.bytes, paused: this.paused, coalesced: this.coalesced, pauses: this.pauses };
  }

  private async run(): Promise<void> {
    this.running = true;
    try {
      while (!this.stopped) {
        const entry = this.queue.shift();
        if (!entry) break;
        if (entry.key !== undefined) this.byKey.delete(entry.key);
        this.bytes -= entry.bytes;
        if (this.paused && this.queue.length <= this.bounds.maxRequests / 2 && this.bytes <= this.bounds.maxBytes / 2) {
          this.paused = false;
          this.stream.resume();
        }
        try {
          await this.handle(entry.item);
        } catch (err) {
          this.stop();
          this.failed(err);
        }
      }
    } finally {
      this.running = false;
    }
  }
}
