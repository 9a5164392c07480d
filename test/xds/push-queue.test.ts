/**
 * The per-connection push queue behind DISC_PUSH_THROTTLE: a connection waits at most once, at most N
 * pushes run, and nothing a proxy should receive is lost or pushed twice at the same time.
 */
import { PushQueue } from '../../src/xds/push-queue.js';
import { pushRequest, type PushRequest } from '../../src/model/push-request.js';
import { withTimeout } from '../support/eventually.js';

interface Call {
  conn: string;
  req: PushRequest;
  enqueuedAt: number;
  done: () => void;
  fail: (e: Error) => void;
}

/** A queue whose worker blocks until the test releases each call. */
function harness(concurrency: number) {
  const calls: Call[] = [];
  const running = new Map<string, number>();
  let active = 0;
  let maxActive = 0;
  const overlaps: string[] = [];
  const queue = new PushQueue<string>(concurrency, (conn, req, enqueuedAt) => {
    active++;
    maxActive = Math.max(maxActive, active);
    running.set(conn, (running.get(conn) ?? 0) + 1);
    if (running.get(conn)! > 1) overlaps.push(conn);
    return new Promise<void>((resolve, reject) => {
      const end = (): void => {
        active--;
        running.set(conn, running.get(conn)! - 1);
      };
      calls.push({
        conn,
        req,
        enqueuedAt,
        done: () => {
          end();
          resolve();
        },
        fail: (e) => {
          end();
          reject(e);
        },
      });
    });
  });
  return {
    queue,
    calls,
    get active() {
      return active;
    },
    get maxActive() {
      return maxActive;
    },
    overlaps,
    /** Calls for one connection, in order. */
    of: (conn: string) => calls.filter((c) => c.conn === conn),
  };
}

/** Lets promise callbacks (the queue's `finally`) run. */
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

const full = (reason = 'config', start?: number): PushRequest => pushRequest({ full: true, reason, start });
const eds = (hosts: string[], start?: number): PushRequest => pushRequest({ full: false, reason: 'endpoint', edsHosts: hosts, start });

describe('PushQueue', () => {
  it('merges requests for a connection while it waits, and pushes it once', async () => {
    const h = harness(1);
    h.queue.enqueue('busy', full());
    h.queue.enqueue('a', eds(['x'], 300));
    h.queue.enqueue('a', eds(['y'], 100));
    h.queue.enqueue('a', full('service', 200));
    expect(h.queue.pendingCount).toBe(1);
    expect(h.calls.map((c) => c.conn)).toEqual(['busy']);
    h.calls[0].done();
    await settle();
    const a = h.of('a');
    expect(a).toHaveLength(1);
    expect(a[0].req.full).toBe(true);
    expect([...a[0].req.edsHosts].sort()).toEqual(['x', 'y']);
    expect(Object.fromEntries(a[0].req.reasons)).toEqual({ endpoint: 2, service: 1 });
    expect(a[0].req.start).toBe(100);
    a[0].done();
    await withTimeout(h.queue.idle(), 2000, 'the queue to be idle');
    expect(h.calls).toHaveLength(2);
  });

  it('never runs more than DISC_PUSH_THROTTLE pushes at once, and uses the whole allowance', async () => {
    const h = harness(3);
    const conns = Array.from({ length: 20 }, (_, i) => `c${i}`);
    for (const c of conns) h.queue.enqueue(c, full());
    expect(h.active).toBe(3);
    expect(h.queue.activeCount).toBe(3);
    expect(h.queue.pendingCount).toBe(17);
    // release in an irregular order (newest first), adding more work on the way
    const finished = new Set<Call>();
    for (let step = 0; ; step++) {
      const open = h.calls.filter((c) => !finished.has(c));
      if (open.length === 0) break;
      const next = open[open.length - 1];
      finished.add(next);
      next.done();
      if (step === 4) for (const c of ['late1', 'late2']) h.queue.enqueue(c, full());
      await settle();
      expect(h.active).toBeLessThanOrEqual(3);
      expect(h.queue.activeCount).toBeLessThanOrEqual(3);
    }
    await withTimeout(h.queue.idle(), 2000, 'the queue to be idle');
    expect(h.maxActive).toBe(3);
    expect(new Set(h.calls.map((c) => c.conn))).toEqual(new Set([...conns, 'late1', 'late2']));
    expect(h.calls).toHaveLength(22);
  });

  it('pushes a connection again after its running push when a request arrives meanwhile — never concurrently', async () => {
    const h = harness(4);
    h.queue.enqueue('a', full('config', 10));
    expect(h.of('a')).toHaveLength(1);
    h.queue.enqueue('a', eds(['h1'], 20));
    h.queue.enqueue('a', eds(['h2'], 30));
    await settle();
    // not started concurrently, even though the throttle has room
    expect(h.of('a')).toHaveLength(1);
    expect(h.queue.pendingCount).toBe(0);
    h.of('a')[0].done();
    await settle();
    const a = h.of('a');
    expect(a).toHaveLength(2);
    // the follow-up carries everything that arrived during the first push
    expect(a[1].req.full).toBe(false);
    expect([...a[1].req.edsHosts].sort()).toEqual(['h1', 'h2']);
    expect(a[1].req.start).toBe(20);
    a[1].done();
    await withTimeout(h.queue.idle(), 2000, 'the queue to be idle');
    expect(h.of('a')).toHaveLength(2);
    expect(h.overlaps).toEqual([]);
  });

  it('keeps other connections moving while one connection has a follow-up', async () => {
    const h = harness(1);
    h.queue.enqueue('a', full());
    h.queue.enqueue('b', full());
    h.queue.enqueue('a', full('again'));
    h.of('a')[0].done();
    await settle();
    // b waited first; a's follow-up goes behind it
    expect(h.calls.map((c) => c.conn)).toEqual(['a', 'b']);
    h.of('b')[0].done();
    await settle();
    expect(h.calls.map((c) => c.conn)).toEqual(['a', 'b', 'a']);
    h.calls[2].done();
    await withTimeout(h.queue.idle(), 2000, 'the queue to be idle');
  });

  it('remove() drops a waiting connection', async () => {
    const h = harness(1);
    h.queue.enqueue('busy', full());
    h.queue.enqueue('gone', full());
    h.queue.enqueue('stays', full());
    h.queue.remove('gone');
    expect(h.queue.pendingCount).toBe(1);
    h.calls[0].done();
    await settle();
    h.of('stays')[0].done();
    await withTimeout(h.queue.idle(), 2000, 'the queue to be idle');
    expect(h.calls.map((c) => c.conn)).toEqual(['busy', 'stays']);
  });

  it('remove() of a running connection drops its follow-up push', async () => {
    const h = harness(2);
    h.queue.enqueue('gone', full());
    h.queue.enqueue('gone', full('again')); // arrives while running
    h.queue.remove('gone'); // the connection went away
    h.of('gone')[0].done();
    await withTimeout(h.queue.idle(), 2000, 'the queue to be idle');
    expect(h.of('gone')).toHaveLength(1);
  });

  it('idle() resolves at once when nothing is queued, and after all work (follow-ups included) otherwise', async () => {
    const h = harness(2);
    await withTimeout(h.queue.idle(), 100, 'the queue to be idle');
    h.queue.enqueue('a', full());
    h.queue.enqueue('b', full());
    h.queue.enqueue('c', full());
    h.queue.enqueue('a', full('again'));
    let idle = false;
    const p = h.queue.idle().then(() => (idle = true));
    const finishOpen = async (): Promise<void> => {
      for (const c of [...h.calls]) c.done();
      await settle();
    };
    await finishOpen(); // a, b done; c and a's follow-up start
    expect(idle).toBe(false);
    expect(h.calls.map((c) => c.conn).sort()).toEqual(['a', 'a', 'b', 'c']);
    await finishOpen();
    await withTimeout(p, 2000, 'the push');
    expect(idle).toBe(true);
    expect(h.queue.activeCount).toBe(0);
    expect(h.queue.pendingCount).toBe(0);
  });

  it('keeps going when a push fails', async () => {
    const h = harness(1);
    h.queue.enqueue('a', full());
    h.queue.enqueue('b', full());
    h.calls[0].fail(new Error('boom'));
    await settle();
    expect(h.of('b')).toHaveLength(1);
    h.of('b')[0].done();
    await withTimeout(h.queue.idle(), 2000, 'the queue to be idle');
  });

  it('passes the time the connection started waiting, kept across merges', async () => {
    const h = harness(1);
    h.queue.enqueue('busy', full());
    const before = Date.now();
    h.queue.enqueue('a', full());
    await new Promise((r) => setTimeout(r, 20));
    h.queue.enqueue('a', full());
    h.calls[0].done();
    await settle();
    const [a] = h.of('a');
    expect(a.enqueuedAt).toBeGreaterThanOrEqual(before);
    expect(a.enqueuedAt).toBeLessThan(before + 15);
    a.done();
    await withTimeout(h.queue.idle(), 2000, 'the queue to be idle');
  });

  it('close() drops waiting work and refuses new work', async () => {
    const h = harness(1);
    h.queue.enqueue('a', full());
    h.queue.enqueue('b', full());
    h.queue.enqueue('a', full('again'));
    h.queue.close();
    h.queue.enqueue('c', full());
    h.calls[0].done();
    await withTimeout(h.queue.idle(), 2000, 'the queue to be idle');
    expect(h.calls.map((c) => c.conn)).toEqual(['a']);
  });

  it('lets other connections be pushed while a push waits on its client without its slot, and merges what comes meanwhile', async () => {
    const order: string[] = [];
    const client = { resolve: (): void => undefined };
    const queue = new PushQueue<string>(1, async (conn, req, _at, slot) => {
      order.push(`${conn}:${[...req.reasons.keys()].join('+')}`);
      if (conn !== 'stuck' || !req.reasons.has('first')) return;
      slot.release(); // the write waits for a client that does not read
      await new Promise<void>((resolve) => (client.resolve = resolve));
      await slot.hold();
      order.push('stuck:resumed');
    });
    queue.enqueue('stuck', full('first'));
    queue.enqueue('a', full());
    queue.enqueue('b', full());
    await settle();
    // a and b got the one slot although the stuck push has not finished
    expect(order).toEqual(['stuck:first', 'a:config', 'b:config']);
    expect(queue.activeCount).toBe(0);
    expect(queue.inProgressCount).toBe(1);
    // a push for the stuck connection meanwhile waits behind its push in progress, merged
    queue.enqueue('stuck', full('second'));
    queue.enqueue('stuck', full('third'));
    let idle = false;
    void queue.idle().then(() => (idle = true));
    await settle();
    expect(idle).toBe(false);
    client.resolve();
    await withTimeout(queue.idle(), 2000, 'the queue to be idle');
    expect(order).toEqual(['stuck:first', 'a:config', 'b:config', 'stuck:resumed', 'stuck:second+third']);
  });
});
