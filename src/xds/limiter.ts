/** Limits on concurrent push work: task slots (Limiter) and bytes being written (ByteBudget). */

/** Runs at most `limit` tasks at a time; the rest wait in arrival order. */
export class Limiter {
  private running = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(private readonly limit: number) {}

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.running >= this.limit) await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.running++;
    try {
      return await task();
    } finally {
      this.running--;
      this.waiting.shift()?.();
    }
  }
}

/**
 * Bounds the bytes of responses being written at once (all connections together): a write waits
 * until earlier ones have been taken by the transport. One write larger than the budget goes alone.
 */
export class ByteBudget {
  private inFlight = 0;
  private readonly waiting: Array<{ bytes: number; go: () => void }> = [];

  constructor(private readonly limit: number) {}

  get bytesInFlight(): number {
    return this.inFlight;
  }

  async run<T>(bytes: number, task: () => Promise<T>): Promise<T> {
    if (this.waiting.length > 0 || (this.inFlight > 0 && this.inFlight + bytes > this.limit)) {
      // wake() counts the bytes in when it lets this one go
      await new Promise<void>((go) => this.waiting.push({ bytes, go }));
    } else {
      this.inFlight += bytes;
    }
    try {
      return await task();
    } finally {
      this.inFlight -= bytes;
      this.wake();
    }
  }

  private wake(): void {
    // in arrival order, as many as fit (the first one always, when nothing is in flight)
    while (this.waiting.length > 0) {
      const next = this.waiting[0];
      if (this.inFlight > 0 && this.inFlight + next.bytes > this.limit) return;
      this.waiting.shift();
      this.inFlight += next.bytes;
      next.go();
    }
  }
}
