import { PendingPush, type PushRequest } from './push-request.js';

/**
 * Debounces push requests: a push fires `after` ms after the latest request, but never later than
 * `max` ms after the first one of a burst. Requests within a burst merge.
 */
export class Debouncer {
  private pending?: PendingPush;
  private firstAt = 0;
  private timer?: NodeJS.Timeout;
  private stopped = false;

  constructor(
    private readonly afterMs: number,
    private readonly maxMs: number,
    private readonly fire: (req: PushRequest) => void,
    private readonly now: () => number = Date.now,
  ) {}

  push(req: PushRequest): void {
    if (this.stopped) return;
    if (this.afterMs <= 0) {
      this.fire(req);
      return;
    }
    if (!this.pending) {
      this.firstAt = this.now();
      this.pending = new PendingPush();
    }
    this.pending.add(req);
    this.schedule();
  }

  private schedule(): void {
    if (this.timer) clearTimeout(this.timer);
    const sinceFirst = this.now() - this.firstAt;
    const wait = Math.max(0, Math.min(this.afterMs, this.maxMs - sinceFirst));
    this.timer = setTimeout(() => this.flush(), wait);
  }

  /** Fires what is pending now. */
  flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const req = this.pending?.request();
    this.pending = undefined;
    if (req) this.fire(req);
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
  }
}
