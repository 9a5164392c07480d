/**
 * Cooperative yielding for long stretches of synchronous work spread over many concurrent tasks (the
 * ADS server generating config for hundreds of proxies at once).
 *
 * Each task calls `yieldPoint()` between units of work. While the event loop has been held less than
 * YIELD_AFTER_MS since the last turn, it returns at once. Otherwise the task queues for a turn: a turn
 * is one `setImmediate` that hands the loop to the waiting tasks one at a time (first come, first
 * served) until YIELD_AFTER_MS have passed; the others wait for the next turn. Turns are scheduled
 * from inside the previous turn, and Node runs such immediates in the next loop iteration, so timers,
 * sockets and health checks get the loop between any two turns.
 *
 * (One `setImmediate` per task instead lets the loop run all of them back to back in one check phase:
 * with 100 concurrent pushes of 20 ms each, 2 s without reading a socket. Waking every waiter on one
 * shared turn does the same, since they all resume before any of them has worked.)
 */

export const YIELD_AFTER_MS = 20;

let lastTurn = performance.now();
const waiting: Array<() => void> = [];
let scheduled = false;

function scheduleTurn(): void {
  if (scheduled) return;
  scheduled = true;
  setImmediate(() => {
    scheduled = false;
    lastTurn = performance.now();
    wakeNext();
  });
}

/**
 * Hands the loop to the first waiting task; once its synchronous work is done (the microtask queued
 * after its continuation), the next one gets it if the turn has time left, else the rest wait for the
 * next turn. Cheap tasks (a cached answer) thus share one turn; costly ones get a turn each.
 */
function wakeNext(): void {
  const next = waiting.shift();
  if (!next) return;
  next();
  queueMicrotask(() => {
    if (waiting.length === 0) return;
    if (performance.now() - lastTurn < YIELD_AFTER_MS) wakeNext();
    else scheduleTurn();
  });
}

/**
 * Undefined while the loop has been held less than YIELD_AFTER_MS since the last turn: the caller goes
 * on with its unit of work right away, in the same synchronous run (an `await` here would let every
 * other task pass the same check before any of them had worked). Otherwise a promise that resolves
 * on this task's turn. Use: `const turn = yieldPoint(); if (turn) await turn;`
 */
export function yieldPoint(): Promise<void> | undefined {
  if (performance.now() - lastTurn < YIELD_AFTER_MS) return undefined;
  return new Promise<void>((resolve) => {
    waiting.push(resolve);
    scheduleTurn();
  });
}

/**
 * When the current turn's share of the loop ends (a `performance.now()` value): work that can be
 * cut (model/derived.ts `withDeadline`) stops there and waits for `nextTurn()`.
 */
export function turnDeadline(): number {
  return lastTurn + YIELD_AFTER_MS;
}

/** A promise that resolves on this task's next turn, whatever time is left in the current one. */
export function nextTurn(): Promise<void> {
  return new Promise<void>((resolve) => {
    waiting.push(resolve);
    scheduleTurn();
  });
}
