/** Limits on concurrent push and answer work: task slots (bytes being written: write-guard.ts). */

/**
 * A task's claim on one of a limiter's slots. A task gives its slot back while it waits on a client
 * (a write the transport has not taken, an ACK under flow control), so that no client, however
 * slow, holds a slot another connection could use; it takes one again before more work.
 */
export interface Slot {
  /** Gives the slot back; does nothing when it is not held. */
  release(): void;
  /** Takes a slot again, waiting for one when all are taken; does nothing when it is held. */
  hold(): Promise<void>;
}

/** Runs at most `limit` tasks at a time; the rest wait in arrival order. */
export class Limiter {
  private running = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(private readonly limit: number) {}

  /** Slots taken now. */
  get active(): number {
    return this.running;
  }

  async run<T>(task: (slot: Slot) => Promise<T>): Promise<T> {
    await this.acquire();
    let held = true;
    const slot: Slot = {
      release: () => {
        if (!held) return;
        held = false;
        this.releaseOne();
      },
      hold: async () => {
        if (held) return;
        await this.acquire();
        held = true;
      },
    };
    try {
      return await task(slot);
    } finally {
      slot.release();
    }
  }

  private async acquire(): Promise<void> {
    if (this.running >= this.limit) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.running++;
  }

  private releaseOne(): void {
    const next = this.waiting.shift();
    // the slot passes straight to the next waiter, so a newcomer cannot take it in between
    if (next) next();
    else this.running--;
  }
}
