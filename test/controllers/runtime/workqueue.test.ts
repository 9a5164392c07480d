/**
 * Work queue semantics (dedup, one worker per key, re-processing of keys re-added during
 * processing, per-key backoff, idle, shutdown with drain). The runner on top of it is tested in
 * ./controller.test.ts.
 */
import { WorkQueue } from '../../../src/controllers/runtime/workqueue.js';
import { eventually } from '../../support/eventually.js';

const tick = (ms = 0) => new Promise((r) => setTimeout(r, ms));

/** Runs `workers` loops over the queue; `work` gets each key. Returns a promise of their end. */
function runWorkers(q: WorkQueue<string>, workers: number, work: (key: string) => Promise<void>): Promise<void[]> {
  return Promise.all(
    Array.from({ length: workers }, async () => {
      for (;;) {
        const key = await q.get();
        if (key === undefined) return;
        try {
          await work(key);
        } finally {
          q.done(key);
        }
      }
    }),
  );
}

describe('work queue', () => {
  it('stores a key added many times while it waits once', async () => {
    const q = new WorkQueue<string>();
    for (let i = 0; i < 5; i++) {
      q.add('a');
      q.add('b');
    }
    expect(q.length).toBe(2);
    const seen: string[] = [];
    const workers = runWorkers(q, 2, async (k) => {
      seen.push(k);
    });
    await eventually('both keys', () => seen.length === 2, { timeoutMs: 15_000 });
    await q.shutdown();
    await workers;
    expect(seen.sort()).toEqual(['a', 'b']);
  });

  it('never hands one key to two workers, and processes a key re-added during processing once more after', async () => {
    const q = new WorkQueue<string>();
    let active = 0;
    let maxActive = 0;
    const runs: string[] = [];
    const workers = runWorkers(q, 4, async (k) => {
      active++;
      maxActive = Math.max(maxActive, active);
      runs.push(`start ${k}`);
      await tick(50);
      runs.push(`end ${k}`);
      active--;
    });
    q.add('x');
    await tick(10); // x is being processed by one worker
    q.add('x');
    q.add('x');
    await eventually('two runs of x', () => runs.filter((r) => r === 'end x').length === 2, { timeoutMs: 2000 });
    await tick(100);
    expect(runs).toEqual(['start x', 'end x', 'start x', 'end x']);
    expect(maxActive).toBe(1);
    await q.shutdown();
    await workers;
  });

  it('processes different keys in parallel', async () => {
    const q = new WorkQueue<string>();
    let active = 0;
    let maxActive = 0;
    const workers = runWorkers(q, 3, async () => {
      active++;
      maxActive = Math.max(maxActive, active);
      await tick(40);
      active--;
    });
    ['a', 'b', 'c'].forEach((k) => q.add(k));
    await eventually('all done', () => q.stats().processing === 0 && q.length === 0 && maxActive > 0, { timeoutMs: 15_000 });
    await tick(60);
    expect(maxActive).toBe(3);
    await q.shutdown();
    await workers;
  });

  it('re-adds failed keys after a per-key exponential delay, and forget resets it', async () => {
    const q = new WorkQueue<string>({ baseDelayMs: 40, maxDelayMs: 10_000 });
    const times: number[] = [];
    const start = performance.now();
    const workers = runWorkers(q, 1, async (k) => {
      times.push(performance.now() - start);
      if (times.length < 4) q.addRateLimited(k);
      else q.forget(k);
    });
    q.add('flaky');
    await eventually('four tries', () => times.length === 4, { timeoutMs: 3000 });
    const gaps = times.slice(1).map((t, i) => t - times[i]);
    // 40, 80, 160 ms: lower bounds only (a loaded machine may add to any gap, so gaps are not
    // compared with each other); a constant or linear delay fails the second or third bound
    expect(gaps[0]).toBeGreaterThanOrEqual(38);
    expect(gaps[1]).toBeGreaterThanOrEqual(78);
    expect(gaps[2]).toBeGreaterThanOrEqual(158);
    expect(q.numRequeues('flaky')).toBe(0);
    // Another key starts from the base delay.
    expect(q.numRequeues('other')).toBe(0);
    await q.shutdown();
    await workers;
  });

  it('shutdown without drain stops handing out keys; with drain it finishes the queued keys first', async () => {
    const q1 = new WorkQueue<string>();
    const done1: string[] = [];
    ['a', 'b', 'c'].forEach((k) => q1.add(k));
    const w1 = runWorkers(q1, 1, async (k) => {
      await tick(30);
      done1.push(k);
    });
    await tick(5);
    await q1.shutdown();
    await w1;
    expect(done1).toEqual(['a']);
    q1.add('late');
    expect(q1.length).toBe(0);

    const q2 = new WorkQueue<string>();
    const done2: string[] = [];
    ['a', 'b', 'c'].forEach((k) => q2.add(k));
    const w2 = runWorkers(q2, 1, async (k) => {
      await tick(30);
      done2.push(k);
    });
    await tick(5);
    await q2.shutdown({ drain: true });
    expect(done2).toEqual(['a', 'b', 'c']);
    await w2;
  });
});
