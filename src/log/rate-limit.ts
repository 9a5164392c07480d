/**
 * A token bucket for log lines that clients can cause (NACKs, refused streams): at most `burst`
 * lines at once, `perSecond` on average; a line that is let through says how many were held back
 * since the previous one, so nothing goes unaccounted and a storm costs a few lines a second.
 */
export class LogRateLimit {
  private tokens: number;
  private last: number;
  private held = 0;

  constructor(
    private readonly perSecond: number,
    private readonly burst: number,
    private readonly now: () => number = Date.now,
  ) {
    this.tokens = burst;
    this.last = now();
  }

  /** Undefined: drop the line. A number: log it, mentioning that many lines held back before it. */
  take(): number | undefined {
    const now = this.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.perSecond);
    this.last = now;
    if (this.tokens < 1) {
      this.held++;
      return undefined;
    }
    this.tokens -= 1;
    const held = this.held;
    this.held = 0;
    return held;
  }
}
