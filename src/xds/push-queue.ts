import { mergePushRequests, type PushRequest } from '../model/push-request.js';
import type { Slot } from './limiter.js';

/**
 * Per-connection push queue: a connection waits at most once; repeated requests for it merge. At most
 * `concurrency` pushes hold a slot at a time (DISC_PUSH_THROTTLE). A push gives its slot back while it
 * waits on its client (`Slot.release`: a write not taken yet, an ACK under flow control) and takes one
 * again before more work, so a client that stops reading holds no slot; its connection stays "in
 * progress" meanwhile, and a request that arrives for it is queued again when that push ends.
 */
export class PushQueue<C> {
  private readonly waiting = new Map<C, { req: PushRequest; enqueuedAt: number }>();
  private readonly inProgress = new Map<C, PushRequest | undefined>();
  /** Pushes in progress that gave their slot back and wait for one again; served before new ones. */
  private readonly resuming: Array<() => void> = [];
  private running = 0;
  private closed = false;
  private idleWaiters: Array<() => void> = [];

  constructor(
    private readonly concurrency: number,
    private readonly worker: (conn: C, req: PushRequest, enqueuedAt: number, slot: Slot) => Promise<void>,
  ) {}

  enqueue(conn: C, req: PushRequest): void {
    if (this.closed) return;
    if (this.inProgress.has(conn)) {
      this.inProgress.set(conn, mergePushRequests(this.inProgress.get(conn), req));
      return;
    }
    const w = this.waiting.get(conn);
    if (w) w.req = mergePushRequests(w.req, req);
    else this.waiting.set(conn, { req, enqueuedAt: Date.now() });
    this.drain();
  }

  /** Forget a connection that went away. */
  remove(conn: C): void {
    this.waiting.delete(conn);
    // a push running for it must not be followed by another one
    if (this.inProgress.has(conn)) this.inProgress.set(conn, undefined);
  }

  get pendingCount(): number {
    return this.waiting.size;
  }

  /** Pushes holding a slot now. */
  get activeCount(): number {
    return this.running;
  }

  /** Pushes started and not finished, with or without a slot. */
  get inProgressCount(): number {
    return this.inProgress.size;
  }

  /** Resolves when nothing is waiting or in progress. */
  idle(): Promise<void> {
    if (this.waiting.size === 0 && this.inProgress.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  close(): void {
    this.closed = true;
    this.waiting.clear();
  }

  private drain(): void {
    while (this.running < this.concurrency && this.resuming.length > 0) {
      this.running++;
      this.resuming.shift()!();
    }
    while (this.running < this.concurrency && this.waiting.size > 0) {
      const [conn, { req, enqueuedAt }] = this.waiting.entries().next().value as [C, { req: PushRequest; enqueuedAt: number }];
      this.waiting.delete(conn);
      this.running++;
      this.inProgress.set(conn, undefined);
      let held = true;
      const slot: Slot = {
        release: () => {
          if (!held) return;
          held = false;
          this.running--;
          this.drain();
        },
        hold: async () => {
          if (held) return;
          await new Promise<void>((resolve) => {
            this.resuming.push(resolve);
            this.drain();
          });
          held = true;
        },
      };
      void this.worker(conn, req, enqueuedAt, slot)
        .catch(() => undefined)
        .finally(() => {
          if (held) {
            held = false;
            this.running--;
          }
          const again = this.inProgress.get(conn);
          this.inProgress.delete(conn);
          if (again && !this.closed) this.enqueue(conn, again);
          else this.drain();
          if (this.waiting.size === 0 && this.inProgress.size === 0) {
            const w = this.idleWaiters;
            this.idleWaiters = [];
            for (const f of w) f();
          }
        });
    }
  }
}
