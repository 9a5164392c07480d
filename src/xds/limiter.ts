/** Limits on concurrent push and answer work: task slots (bytes being written: write-guard.ts). */

let ranks = 0;

/**
 * A place in line (docs/adr/0200): smaller goes first. Ranks come from one counter, so a rank taken
 * when a connection opened sorts before every rank taken later: the initial configuration of a
 * connection (answers ranked by its connection's rank) goes before that of connections that opened
 * after it, and before work asked for later (answers and pushes ranked when they were asked for).
 */
export function nextRank(): number {
  return ++ranks;
}

/** Inserts `item` into `queue`, kept in rank order; after every item of the same rank (arrival order). */
export function insertByRank<T extends { readonly rank: number }>(queue: T[], item: T): void {
  let lo = 0;
  let hi = queue.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (queue[mid].rank <= item.rank) lo = mid + 1;
    else hi = mid;
  }
  queue.splice(lo, 0, item);
}

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

/** Runs at most `limit` tasks at a time; the rest wait in rank order (arrival order by default). */
export class Limiter {
  private running = 0;
  private readonly waiting: Array<{ readonly rank: number; readonly go: () => void }> = [];

  constructor(private readonly limit: number) {}

  /** Slots taken now. */
  get active(): number {
    return this.running;
  }

  /** Runs `task` with a slot; `rank` orders it among waiting tasks (nextRank()). */
  async run<T>(task: (slot: Slot) => Promise<T>, rank = nextRank()): Promise<T> {
    await this.acquire(rank);
    let held = true;
    const slot: Slot = {
      release: () => {
        if (!held) return;
        held = false;
        this.releaseOne();
      },
      hold: async () => {
        if (held) return;
        await this.acquire(rank);
        held = true;
      },
    };
    try {
      return await task(slot);
    } finally {
      slot.release();
    }
  }

  private async acquire(rank: number): Promise<void> {
    if (this.running >= this.limit) await new Promise<void>((go) => insertByRank(this.waiting, { rank, go }));
    else this.running++;
  }

  private releaseOne(): void {
    const next = this.waiting.shift();
    // the slot passes straight to the next waiter, so a newcomer cannot take it in between
    if (next) next.go();
    else this.running--;
  }
}
