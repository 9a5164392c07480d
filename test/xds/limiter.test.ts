/** The byte budget that bounds response bytes being written at once. */
import { ByteBudget } from '../../src/xds/limiter.js';

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

describe('ByteBudget', () => {
  it('holds a write that would pass the limit until earlier ones finish, in arrival order', async () => {
    const budget = new ByteBudget(100);
    const started: string[] = [];
    const gates = { a: deferred(), b: deferred(), c: deferred(), d: deferred() };
    const run = (name: keyof typeof gates, bytes: number): Promise<void> =>
      budget.run(bytes, async () => {
        started.push(name);
        await gates[name].promise;
      });
    const all = [run('a', 60), run('b', 30), run('c', 50), run('d', 5)];
    await tick();
    // c does not fit next to a and b; d fits but waits behind c
    expect(started).toEqual(['a', 'b']);
    expect(budget.bytesInFlight).toBe(90);
    gates.a.resolve();
    await tick();
    expect(started).toEqual(['a', 'b', 'c', 'd']);
    expect(budget.bytesInFlight).toBe(85);
    gates.b.resolve();
    gates.c.resolve();
    gates.d.resolve();
    await Promise.all(all);
    expect(budget.bytesInFlight).toBe(0);
  });

  it('lets one write larger than the budget go alone, and releases bytes of a failed write', async () => {
    const budget = new ByteBudget(10);
    await expect(budget.run(50, async () => Promise.reject(new Error('stream closed')))).rejects.toThrow('stream closed');
    expect(budget.bytesInFlight).toBe(0);
    await expect(budget.run(50, async () => 'sent')).resolves.toBe('sent');
  });
});
