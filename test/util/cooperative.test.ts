/**
 * Many concurrent tasks doing synchronous work between `yieldIfBusy()` calls must still let timers
 * and I/O in regularly: the loop is held about one unit of work plus YIELD_AFTER_MS at a time, not
 * the sum of every task's unit.
 */
import { YIELD_AFTER_MS, yieldPoint } from '../../src/util/cooperative.js';

function busy(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    // hold the event loop
  }
}

describe('yieldPoint', () => {
  it('keeps the longest gap between timer ticks near one unit of work while 50 tasks work concurrently', async () => {
    const UNIT_MS = 10;
    let last = performance.now();
    let maxGap = 0;
    const ticker = setInterval(() => {
      const now = performance.now();
      maxGap = Math.max(maxGap, now - last);
      last = now;
    }, 2);
    const done: number[] = [];
    const task = async (id: number): Promise<void> => {
      for (let unit = 0; unit < 4; unit++) {
        const turn = yieldPoint();
        if (turn) await turn;
        busy(UNIT_MS);
      }
      done.push(id);
    };
    const started = performance.now();
    await Promise.all(Array.from({ length: 50 }, (_, i) => task(i)));
    clearInterval(ticker);
    // 2 s of work in all; one task per turn would be 500 ms at a stretch without a timer tick
    expect(performance.now() - started).toBeGreaterThanOrEqual(50 * 4 * UNIT_MS);
    expect(done).toHaveLength(50);
    expect(maxGap).toBeLessThan(YIELD_AFTER_MS + 3 * UNIT_MS + 40);
  });

  it('lets work go on at once after a turn, and asks for a turn once the loop was held long enough', async () => {
    const first = yieldPoint();
    if (first) await first;
    expect(yieldPoint()).toBeUndefined();
    busy(YIELD_AFTER_MS + 1);
    const turn = yieldPoint();
    expect(turn).toBeInstanceOf(Promise);
    let timerRan = false;
    setTimeout(() => (timerRan = true), 0);
    await new Promise((resolve) => setTimeout(resolve, 1)); // a timer gets the loop before or with the turn
    await turn;
    expect(timerRan).toBe(true);
  });
});
