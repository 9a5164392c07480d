import { mergePushRequests, type PushRequest } from '../model/push-request.js';

/**
 * Per-connection push queue: a connection waits at most once; repeated requests for it merge. At most
 * `concurrency` pushes run at a time (DISC_PUSH_THROTTLE). A request that arrives while the
 * connection's push runs is queued again when that push ends.
 */
export class PushQueue<C> {
  private readonly waiting = new Map<C, { req: PushRequest; enqueuedAt: number }>();
  private readonly inProgress = new Map<C, PushRequest | undefined>();
  private running = 0;
  private closed = false;
  private idleWaiters: Array<() => void> = [];

  constructor(
    private readonly concurrency: number,
    private readonly worker: (conn: C, req: PushRequest, enqueuedAt: number) => Promise<void>,
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

  get activeCount(): number {
    return this.running;
  }

  /** Resolves when nothing is waiting or running. */
  idle(): Promise<void> {
    if (this.waiting.size === 0 && this.running === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  close(): void {
    this.closed = true;
    this.waiting.clear();
  }

  private drain(): void {
    while (this.running < this.concurrency && this.waiting.size > 0) {
      const [conn, { req, enqueuedAt }] = this.waiting.entries().next().value as [C, { req: PushRequest; enqueuedAt: number }];
      this.waiting.delete(conn);
      this.running++;
      this.inProgress.set(conn, undefined);
      void this.worker(conn, req, enqueuedAt)
        .catch(() => undefined)
        .finally(() => {
          this.running--;
          const again = this.inProgress.get(conn);
          this.inProgress.delete(conn);
          if (again && !this.closed) this.enqueue(conn, again);
          else this.drain();
          if (this.waiting.size === 0 && this.running === 0) {
            const w = this.idleWaiters;
            this.idleWaiters = [];
            for (const f of w) f();
          }
        });
    }
  }
}
