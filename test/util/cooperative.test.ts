/**
 * Many concurrent tasks doing synchronous work between `yieldPoint()` calls must still let timers
 * and I/O in regularly: the loop is held about YIELD_AFTER_MS (plus one unit) at a time, not the sum
 * of every task's unit.
 */
import { YIELD_AFTER_MS, yieldPoint } from '../../src/util/cooperative.js';

function busy(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    // hold the event loop
  }
}

describe('yieldPoint', () => {
  it('lets a timer in after a few units of work while 50 tasks work concurrently, not after all of them', async () => {
    const UNIT_MS = 10;
    // counted in units of work rather than milliseconds, so a busy machine cannot fail the test
    let unitsSinceTick = 0;
    let mostUnitsBetweenTicks = 0;
    let ticks = 0;
    const ticker = setInterval(() => {
      ticks++;
      unitsSinceTick = 0;
    }, 1);
    const done: number[] = [];
    const task = async (id: number): Promise<void> => {
      for (let unit = 0; unit < 4; unit++) {
        const turn = yieldPoint();
        if (turn) await turn;
        busy(UNIT_MS);
        mostUnitsBetweenTicks = Math.max(mostUnitsBetweenTicks, ++unitsSinceTick);
      }
      done.push(id);
    };
    await Promise.all(Array.from({ length: 50 }, (_, i) => task(i)));
    clearInterval(ticker);
    expect(done).toHaveLength(50);
    // a turn ends once YIELD_AFTER_MS are used: two or three 10 ms units (the old scheme ran all 50)
    expect(mostUnitsBetweenTicks).toBeLessThanOrEqual(Math.ceil(YIELD_AFTER_MS / UNIT_MS) + 2);
    expect(ticks).toBeGreaterThanOrEqual(200 / (Math.ceil(YIELD_AFTER_MS / UNIT_MS) + 2));
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
