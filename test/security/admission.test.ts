/**
 * The certificate service's admission gate steps aside while an xDS push is in flight
 * (docs/adr/0140): requests already admitted finish, new ones wait until the push is delivered, and
 * a hold never lasts longer than its bound.
 */
import { Admission, type AdmissionHold } from '../../src/security/admission.js';
import { PushActivity } from '../../src/model/push-activity.js';

function holdOf(pushes: PushActivity): AdmissionHold {
  return { held: () => pushes.busy, onRelease: (l) => pushes.onIdle(l) };
}

const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

describe('admission with a push hold', () => {
  it('admits nothing new while a push is in flight; the waiters go on, in order, when it is delivered', async () => {
    const pushes = new PushActivity();
    const gate = new Admission({ maxActive: 2, maxQueued: 100, maxQueuedBytes: 1 << 20, hold: holdOf(pushes), maxHoldMs: 60_000 });
    const first = await gate.enter(10);
    const end = pushes.begin();
    const order: number[] = [];
    const waiting = [1, 2, 3].map((n) => gate.enter(10).then((leave) => (order.push(n), leave)));
    await tick();
    expect(order).toEqual([]);
    expect(gate.stats()).toMatchObject({ active: 1, queued: 3, holds: 1 });
    first(); // a request admitted before the push finishes; its place is not given to a waiter
    await tick();
    expect(order).toEqual([]);
    end();
    const leaves = await Promise.all(waiting.slice(0, 2));
    expect(order).toEqual([1, 2]);
    leaves[0]();
    const third = await waiting[2];
    expect(order).toEqual([1, 2, 3]);
    leaves[1]();
    third();
    expect(gate.stats()).toMatchObject({ active: 0, queued: 0 });
    // no push: straight through
    (await gate.enter(10))();
    gate.close();
  });

  it('a push handed to the transport while the model still holds its own span stays held until the transport is idle', async () => {
    const pushes = new PushActivity();
    const gate = new Admission({ maxActive: 1, maxQueued: 100, maxQueuedBytes: 1 << 20, hold: holdOf(pushes), maxHoldMs: 60_000 });
    let delivered!: () => void;
    let asked = 0;
    const idle = (): Promise<void> => (asked++, new Promise<void>((r) => (delivered = r)));
    // as the model does: its span is open while its listeners get the push, and closes right after
    const modelSpan = pushes.begin();
    pushes.delivering(idle);
    modelSpan();
    expect(pushes.busy).toBe(true);
    let admitted = false;
    const w = gate.enter(10).then((l) => ((admitted = true), l));
    await tick();
    expect(admitted).toBe(false);
    // a second push queued before the first was delivered: the same span covers it
    pushes.delivering(idle);
    delivered();
    await tick();
    expect(asked).toBe(2);
    expect(admitted).toBe(false);
    delivered();
    (await w)();
    expect(pushes.busy).toBe(false);
    gate.close();
  });

  it('a hold lasts at most maxHoldMs: a daemon that pushes without pause still issues certificates', async () => {
    const pushes = new PushActivity();
    const gate = new Admission({ maxActive: 4, maxQueued: 100, maxQueuedBytes: 1 << 20, hold: holdOf(pushes), maxHoldMs: 150 });
    const end = pushes.begin();
    const t0 = performance.now();
    const leave = await gate.enter(10);
    const waited = performance.now() - t0;
    expect(waited).toBeGreaterThanOrEqual(140);
    expect(waited).toBeLessThan(1_000);
    // still the same push: no new hold until it ends
    (await gate.enter(10))();
    leave();
    end();
    // the next push holds again
    const again = pushes.begin();
    let admitted = false;
    const p = gate.enter(10).then((l) => ((admitted = true), l));
    await new Promise((r) => setTimeout(r, 50));
    expect(admitted).toBe(false);
    again();
    (await p)();
    expect(gate.stats().holds).toBe(2);
    gate.close();
  });

  it('a waiter whose caller goes away during a hold leaves the line', async () => {
    const pushes = new PushActivity();
    const gate = new Admission({ maxActive: 1, maxQueued: 100, maxQueuedBytes: 1 << 20, hold: holdOf(pushes), maxHoldMs: 60_000 });
    const end = pushes.begin();
    const gone = new AbortController();
    const w = gate.enter(10, gone.signal);
    await tick();
    gone.abort();
    await expect(w).rejects.toThrow(/went away/);
    expect(gate.stats()).toMatchObject({ active: 0, queued: 0, queuedBytes: 0 });
    end();
    gate.close();
  });
});
