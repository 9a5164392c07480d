/**
 * A light event-loop lag probe: a timer every `intervalMs` measures how late it fires. `lagging` is
 * true while the last measured lag is above `thresholdMs`; listeners are told when it falls back
 * under. The timer is unref'd (it never keeps the process alive).
 */
export class LoopLag {
  private last = 0;
  private expected = 0;
  private timer?: NodeJS.Timeout;
  private readonly listeners = new Set<() => void>();

  constructor(
    private readonly thresholdMs: number,
    private readonly intervalMs = 20,
  ) {}

  /** Lag of the last sample, ms. */
  get lagMs(): number {
    return this.last;
  }

  get lagging(): boolean {
    return this.last > this.thresholdMs;
  }

  start(): void {
    if (this.timer) return;
    this.expected = performance.now() + this.intervalMs;
    this.timer = setInterval(() => {
      const now = performance.now();
      const was = this.lagging;
      this.last = Math.max(0, now - this.expected);
      this.expected = now + this.intervalMs;
      if (was && !this.lagging) for (const l of [...this.listeners]) l();
    }, this.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Told when the lag falls back under the threshold; returns the unsubscribe function. */
  onRecovered(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
