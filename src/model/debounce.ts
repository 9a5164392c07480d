import { PendingPush, type PushRequest } from './push-request.js';

/** What the debounce strategy reports (the cfg_runtime_strategy_* and processor metrics). */
export interface DebounceObserver {
  /** A request arrived (the strategy's onChange); `sinceLastMs` since the one before, if any. */
  onChange(sinceLastMs: number | undefined): void;
  /** A pending timer was replaced by a later request. */
  timerReset(): void;
  /** A burst fired: the quiet period passed (`quiesce`) or the max time since its first request (`max`). */
  fired(reason: 'quiesce' | 'max', requests: number): void;
}

/**
 * Debounces push requests: a push fires `after` ms after the latest request, but never later than
 * `max` ms after the first one of a burst. Requests within a burst merge.
 */
export class Debouncer {
  private pending?: PendingPush;
  private firstAt = 0;
  private timer?: NodeJS.Timeout;
  private stopped = false;
  private lastAt: number | undefined;
  private requests = 0;
  /** Whether the pending timer was cut short by the max time. */
  private capped = false;

  constructor(
    private readonly afterMs: number,
    private readonly maxMs: number,
    private readonly fire: (req: PushRequest) => void,
    private readonly now: () => number = Date.now,
    private readonly observer?: DebounceObserver,
  ) {}

  push(req: PushRequest): void {
    if (this.stopped) return;
    const now = this.now();
    this.observer?.onChange(this.lastAt === undefined ? undefined : now - this.lastAt);
    this.lastAt = now;
    if (this.afterMs <= 0) {
      this.observer?.fired('quiesce', 1);
      this.fire(req);
      return;
    }
    if (!this.pending) {
      this.firstAt = now;
      this.pending = new PendingPush();
    }
    this.pending.add(req);
    this.requests++;
    this.schedule(now);
  }

  private schedule(now: number): void {
    if (this.timer) {
      clearTimeout(this.timer);
      this.observer?.timerReset();
    }
    const sinceFirst = now - this.firstAt;
    this.capped = this.maxMs - sinceFirst < this.afterMs;
    const wait = Math.max(0, Math.min(this.afterMs, this.maxMs - sinceFirst));
    this.timer = setTimeout(() => this.release(this.capped ? 'max' : 'quiesce'), wait);
  }

  private release(reason: 'quiesce' | 'max'): void {
    this.timer = undefined;
    if (this.pending) this.observer?.fired(reason, this.requests);
    this.flush();
  }

  /** Fires what is pending now. */
  flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const req = this.pending?.request();
    this.pending = undefined;
    this.requests = 0;
    if (req) this.fire(req);
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
  }
}
