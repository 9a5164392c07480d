/** Slots of the answer limiter: a task gives its slot back while it waits on a client. */
import { Limiter, nextRank } from '../../src/xds/limiter.js';

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

describe('Limiter', () => {
  it('runs at most `limit` tasks, the rest in arrival order', async () => {
    const limiter = new Limiter(2);
    const started: string[] = [];
    const gates = { a: deferred(), b: deferred(), c: deferred() };
    const run = (name: keyof typeof gates): Promise<void> =>
      limiter.run(async () => {
        started.push(name);
        await gates[name].promise;
      });
    const all = [run('a'), run('b'), run('c')];
    await tick();
    expect(started).toEqual(['a', 'b']);
    expect(limiter.active).toBe(2);
    gates.b.resolve();
    await tick();
    expect(started).toEqual(['a', 'b', 'c']);
    gates.a.resolve();
    gates.c.resolve();
    await Promise.all(all);
    expect(limiter.active).toBe(0);
  });

  it('lets the next task run while one waits without its slot, and gives that one a slot again when it asks', async () => {
    const limiter = new Limiter(1);
    const events: string[] = [];
    const client = deferred();
    const next = deferred();
    const slow = limiter.run(async (slot) => {
      events.push('slow: generated');
      slot.release(); // waits on its client from here on
      await client.promise;
      await slot.hold();
      events.push('slow: generated again');
    });
    const other = limiter.run(async () => {
      events.push('other: ran');
      await next.promise;
    });
    await tick();
    expect(events).toEqual(['slow: generated', 'other: ran']);
    client.resolve();
    await tick();
    // the slot is the other task's until it is done
    expect(events).toEqual(['slow: generated', 'other: ran']);
    next.resolve();
    await Promise.all([slow, other]);
    expect(events).toEqual(['slow: generated', 'other: ran', 'slow: generated again']);
    expect(limiter.active).toBe(0);
  });

  it('gives the slot back when a task fails, also after a release', async () => {
    const limiter = new Limiter(1);
    await expect(
      limiter.run(async (slot) => {
        slot.release();
        slot.release();
        throw new Error('stream closed');
      }),
    ).rejects.toThrow('stream closed');
    expect(limiter.active).toBe(0);
    await expect(limiter.run(async () => 'sent')).resolves.toBe('sent');
  });

  it('gives a free slot to the waiting task of the smallest rank, equal ranks in arrival order (docs/adr/0200)', async () => {
    const limiter = new Limiter(1);
    const started: string[] = [];
    const gate = deferred();
    const early = nextRank(); // taken first, as a connection's rank is when it opens
    const first = limiter.run(async () => {
      started.push('running');
      await gate.promise;
    });
    await tick();
    const later = [nextRank(), nextRank()];
    const waiting = [
      limiter.run(async () => void started.push('later-1'), later[0]),
      limiter.run(async () => void started.push('later-0'), later[1]),
      limiter.run(async () => void started.push('early-a'), early),
      limiter.run(async () => void started.push('early-b'), early),
      limiter.run(async () => void started.push('fresh')),
    ];
    gate.resolve();
    await Promise.all([first, ...waiting]);
    expect(started).toEqual(['running', 'early-a', 'early-b', 'later-1', 'later-0', 'fresh']);
  });
});
