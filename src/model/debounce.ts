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
 * Debounces push requests: a push fires `after` ms after the latest event, but never later than
 * `max` ms after the first one of a burst. Requests within a burst merge.
 *
 * An event's time is when its change was seen (`PushRequest.start`: a config file's watch event,
 * before the file was read, parsed and stored), not when the request got here; a request saying a
 * time later than now counts from now. So the wait overlaps the work that brought the change in,
 * and still ends no sooner than `after` ms after the latest event (docs/adr/0206).
 */
export class Debouncer {
  private pending?: PendingPush;
  private firstAt = 0;
  /** The latest event of the pending burst. */
  private latestAt = 0;
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
    const at = Math.min(now, req.start);
    this.observer?.onChange(this.lastAt === undefined ? undefined : Math.max(0, at - this.lastAt));
    this.lastAt = Math.max(at, this.lastAt ?? at);
    if (this.afterMs <= 0) {
      this.observer?.fired('quiesce', 1);
      this.fire(req);
      return;
    }
    if (!this.pending) {
      this.firstAt = at;
      this.latestAt = at;
      this.pending = new PendingPush();
    }
    this.firstAt = Math.min(this.firstAt, at);
    this.latestAt = Math.max(this.latestAt, at);
    this.pending.add(req);
    this.requests++;
    this.schedule(now);
  }

  private schedule(now: number): void {
    if (this.timer) {
      clearTimeout(this.timer);
      this.observer?.timerReset();
    }
    const quietAt = this.latestAt + this.afterMs;
    const capAt = this.firstAt + this.maxMs;
    this.capped = capAt < quietAt;
    const wait = Math.max(0, Math.min(quietAt, capAt) - now);
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
