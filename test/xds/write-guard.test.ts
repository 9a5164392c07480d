/**
 * The write guard: bytes being written are counted once per frame, bytes not taken yet once per
 * write (docs/adr/0200), a client that takes nothing stops counting against either budget, and past
 * its bounds it is abandoned (its stream closed).
 */
import { nextRank } from '../../src/xds/limiter.js';
import { WriteGuard, type AbandonReason, type PendingWrite, type WriteGuardOptions } from '../../src/xds/write-guard.js';
import { eventually } from '../support/eventually.js';

const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

const BOUNDS: WriteGuardOptions = { maxLiveBytes: 100, stallMs: 40, abandonMs: 60_000, maxStalledBytes: 1000, sendTimeoutMs: 0 };

function guard(opts: Partial<WriteGuardOptions> = {}) {
  const abandoned: Array<{ conn: string; reason: AbandonReason }> = [];
  const g = new WriteGuard<string>({ ...BOUNDS, ...opts }, (conn, reason) => abandoned.push({ conn, reason }));
  return { g, abandoned };
}

describe('WriteGuard', () => {
  it('counts a frame written to many streams once, and holds a new frame that would pass the budget', async () => {
    const { g } = guard();
    const shared = Buffer.alloc(60);
    const writes = await Promise.all(['a', 'b', 'c'].map((c) => g.admit(c, shared, shared.length)));
    expect(g.stats()).toMatchObject({ liveBytes: 60, pending: 3 });
    let admitted = false;
    const other = Buffer.alloc(50);
    const waiting = g.admit('d', other, other.length).then((w) => ((admitted = true), w));
    await tick();
    expect(admitted).toBe(false);
    // the shared frame passes while the other waits: it costs nothing more
    const again = await g.admit('e', shared, shared.length);
    expect(g.stats()).toMatchObject({ liveBytes: 60, waiting: 1 });
    for (const w of [...writes, again]) w.end();
    const d = await waiting;
    expect(g.stats()).toMatchObject({ liveBytes: 50, pending: 1 });
    d.end();
    expect(g.stats()).toMatchObject({ liveBytes: 0, stalledBytes: 0, pending: 0 });
    g.close();
  });

  it('moves the bytes of a client that takes nothing out of the budget, so others are not held back', async () => {
    const { g, abandoned } = guard();
    const stuck = await g.admit('stuck', Buffer.alloc(90), 90);
    const frame = Buffer.alloc(90);
    const started = Date.now();
    const next = await g.admit('reader', frame, frame.length);
    expect(Date.now() - started).toBeGreaterThanOrEqual(BOUNDS.stallMs - 5);
    expect(g.stats()).toMatchObject({ liveBytes: 90, stalledBytes: 90, stalled: 1 });
    next.end();
    // reading again: counted as being written again
    stuck.progress();
    expect(g.stats()).toMatchObject({ liveBytes: 90, stalledBytes: 0, stalled: 0 });
    stuck.end();
    expect(abandoned).toEqual([]);
    g.close();
  });

  it('keeps a client that takes its bytes slowly, and abandons one that takes nothing for abandonMs', async () => {
    const { g, abandoned } = guard({ abandonMs: 300 });
    const slow = await g.admit('slow', Buffer.alloc(10), 10);
    const dead = await g.admit('dead', Buffer.alloc(10), 10);
    const progress = setInterval(() => slow.progress(), 50);
    await eventually('the dead client to be abandoned', () => abandoned.length > 0, { timeoutMs: 3000, intervalMs: 20 });
    clearInterval(progress);
    expect(abandoned).toEqual([{ conn: 'dead', reason: 'stalled' }]);
    slow.end();
    dead.end();
    g.close();
  });

  it('abandons a write older than the send timeout (DISC_XDS_SEND_TIMEOUT) even while it progresses', async () => {
    const { g, abandoned } = guard({ sendTimeoutMs: 200 });
    const w = await g.admit('c', Buffer.alloc(10), 10);
    const progress = setInterval(() => w.progress(), 20);
    await eventually('the write to time out', () => abandoned.length > 0, { timeoutMs: 3000, intervalMs: 20 });
    clearInterval(progress);
    expect(abandoned).toEqual([{ conn: 'c', reason: 'send-timeout' }]);
    w.end();
    g.close();
  });

  it('abandons the longest-stalled clients when stalled bytes pass their bound, counting a shared frame once', async () => {
    const writes = new Map<string, PendingWrite>();
    const abandoned: string[] = [];
    // the owner closes an abandoned client's stream, which ends its write
    const g = new WriteGuard<string>({ ...BOUNDS, maxLiveBytes: 10_000, maxStalledBytes: 250 }, (conn, reason) => {
      abandoned.push(`${conn}:${reason}`);
      setImmediate(() => writes.get(conn)!.end());
    });
    const shared = Buffer.alloc(100);
    // five clients stalled on one shared frame: 100 bytes, within the bound
    for (const c of ['s1', 's2', 's3', 's4', 's5']) writes.set(c, await g.admit(c, shared, 100));
    await eventually('the shared writes to stall', () => g.stats().stalled === 5, { timeoutMs: 3000, intervalMs: 10 });
    expect(g.stats().stalledBytes).toBe(100);
    // three clients stalled on frames of their own, one after the other: 400 bytes in all
    for (const c of ['o1', 'o2', 'o3']) {
      writes.set(c, await g.admit(c, Buffer.alloc(100), 100));
      await eventually(`${c} to stall`, () => g.stats().stalled === g.stats().pending, { timeoutMs: 3000, intervalMs: 5 });
    }
    await eventually('the stalled bytes to fit their bound', () => g.stats().stalledBytes <= 250, { timeoutMs: 3000, intervalMs: 10 });
    // those stalled longest go first: at o2, the shared frame's clients (its 100 bytes are freed once
    // all five are gone); at o3, o1
    expect(abandoned).toEqual(['s1', 's2', 's3', 's4', 's5', 'o1'].map((c) => `${c}:stalled-bytes`));
    expect(g.stats()).toMatchObject({ stalledBytes: 200, pending: 2 });
    for (const c of ['o2', 'o3']) writes.get(c)!.end();
    expect(g.stats()).toMatchObject({ liveBytes: 0, stalledBytes: 0, pending: 0 });
    g.close();
  });

  describe('with a budget of unsent bytes per write (maxUnsentBytes)', () => {
    it('counts a shared frame once per stream, and lets waiting writes go as clients take their bytes', async () => {
      const { g } = guard({ maxLiveBytes: 10_000, maxUnsentBytes: 100 });
      const shared = Buffer.alloc(60);
      const a = await g.admit('a', shared, 60);
      // the same frame to a second stream would pass memory's budget, but not this one: it waits
      let bAdmitted = false;
      const b = g.admit('b', shared, 60).then((w) => ((bAdmitted = true), w));
      let cAdmitted = false;
      const c = g.admit('c', Buffer.alloc(20), 20).then((w) => ((cAdmitted = true), w));
      await tick();
      expect([bAdmitted, cAdmitted]).toEqual([false, false]);
      expect(g.stats()).toMatchObject({ liveBytes: 60, unsentBytes: 60, waiting: 2 });
      // a's client takes 30 bytes: 30 + 60 fit, so b goes; c (20 more) waits its turn
      a.progress(30);
      await tick();
      expect([bAdmitted, cAdmitted]).toEqual([true, false]);
      expect(g.stats()).toMatchObject({ liveBytes: 60, unsentBytes: 90, waiting: 1 });
      a.end();
      await tick();
      expect(cAdmitted).toBe(true);
      expect(g.stats()).toMatchObject({ unsentBytes: 80, waiting: 0 });
      (await b).end();
      (await c).end();
      expect(g.stats()).toMatchObject({ liveBytes: 0, unsentBytes: 0, stalledBytes: 0, pending: 0 });
      g.close();
    });

    it('lets a write larger than the budget go alone rather than never', async () => {
      const { g } = guard({ maxLiveBytes: 10_000, maxUnsentBytes: 100 });
      const big = await g.admit('a', Buffer.alloc(500), 500);
      expect(g.stats()).toMatchObject({ unsentBytes: 500, pending: 1 });
      let next = false;
      const small = g.admit('b', Buffer.alloc(1), 1).then((w) => ((next = true), w));
      await tick();
      expect(next).toBe(false);
      big.end();
      (await small).end();
      g.close();
    });

    it('takes the unsent bytes of a client that takes nothing out of the budget, and counts them again when it reads', async () => {
      const { g, abandoned } = guard({ maxLiveBytes: 10_000, maxUnsentBytes: 100 });
      const stuck = await g.admit('stuck', Buffer.alloc(90), 90);
      stuck.progress(20);
      // the reader's write waits until the stuck client's 70 bytes left stop counting (stallMs)
      const started = Date.now();
      const reader = await g.admit('reader', Buffer.alloc(90), 90);
      expect(Date.now() - started).toBeGreaterThanOrEqual(BOUNDS.stallMs - 5);
      expect(g.stats()).toMatchObject({ unsentBytes: 90, stalled: 1 });
      reader.end();
      // it reads 10 more bytes: its remaining 60 count again
      stuck.progress(10);
      expect(g.stats()).toMatchObject({ unsentBytes: 60, stalled: 0 });
      stuck.end();
      expect(g.stats()).toMatchObject({ liveBytes: 0, unsentBytes: 0, stalledBytes: 0, pending: 0 });
      expect(abandoned).toEqual([]);
      g.close();
    });

    it('lets the waiting write of the smallest rank go first (an older connection\'s initial configuration)', async () => {
      const { g } = guard({ maxLiveBytes: 10_000, maxUnsentBytes: 100 });
      const old = nextRank();
      const a = await g.admit('a', Buffer.alloc(100), 100);
      const order: string[] = [];
      const later = g.admit('later', Buffer.alloc(50), 50).then((w) => (order.push('later'), w));
      const older = g.admit('older', Buffer.alloc(50), 50, old).then((w) => (order.push('older'), w));
      await tick();
      expect(order).toEqual([]);
      a.progress(50);
      await tick();
      expect(order).toEqual(['older']);
      a.end();
      await tick();
      expect(order).toEqual(['older', 'later']);
      (await later).end();
      (await older).end();
      g.close();
    });

    it('writes a few streams of one connection at a time, and passes over its waiting writes to other connections', async () => {
      const { g } = guard({ maxLiveBytes: 10_000, maxUnsentBytes: 1000, maxWritesPerSession: 2 });
      const one = {};
      const two = {};
      const frame = Buffer.alloc(10);
      const a1 = await g.admit('a1', frame, 10, undefined, one);
      const a2 = await g.admit('a2', frame, 10, undefined, one);
      const order: string[] = [];
      const a3 = g.admit('a3', frame, 10, undefined, one).then((w) => (order.push('a3'), w));
      const b1 = g.admit('b1', frame, 10, undefined, two).then((w) => (order.push('b1'), w));
      await tick();
      // a3 waits for its connection; b1, behind it in line, goes
      expect(order).toEqual(['b1']);
      expect(g.stats()).toMatchObject({ pending: 3, waiting: 1 });
      a1.end();
      await tick();
      expect(order).toEqual(['b1', 'a3']);
      for (const w of [a2, await a3, await b1]) w.end();
      expect(g.stats()).toMatchObject({ pending: 0, unsentBytes: 0, waiting: 0 });
      g.close();
    });

    it('lets a small write of a connection past its share (an edit\'s few KB to every stream of it go at once)', async () => {
      const { g } = guard({ maxLiveBytes: 10_000, maxUnsentBytes: 1000, maxWritesPerSession: 1, sessionWriteMinBytes: 100 });
      const one = {};
      const big = await g.admit('big', Buffer.alloc(200), 200, undefined, one);
      const order: string[] = [];
      const bigger = g.admit('bigger', Buffer.alloc(200), 200, undefined, one).then((w) => (order.push('bigger'), w));
      await tick();
      expect(order).toEqual([]);
      // the large write waits for the connection's share; small ones of the same connection do not
      const small = await Promise.all([g.admit('s1', Buffer.alloc(10), 10, undefined, one), g.admit('s2', Buffer.alloc(10), 10, undefined, one)]);
      expect(g.stats()).toMatchObject({ pending: 3, waiting: 1 });
      for (const w of small) w.end();
      await tick();
      expect(order).toEqual([]);
      big.end();
      await tick();
      expect(order).toEqual(['bigger']);
      (await bigger).end();
      expect(g.stats()).toMatchObject({ pending: 0, unsentBytes: 0, waiting: 0 });
      g.close();
    });

    it('does not count a stalled write against its connection\'s share', async () => {
      const { g } = guard({ maxLiveBytes: 10_000, maxUnsentBytes: 1000, maxWritesPerSession: 1 });
      const one = {};
      const stuck = await g.admit('stuck', Buffer.alloc(10), 10, undefined, one);
      const started = Date.now();
      const next = await g.admit('next', Buffer.alloc(10), 10, undefined, one);
      expect(Date.now() - started).toBeGreaterThanOrEqual(BOUNDS.stallMs - 5);
      next.end();
      stuck.end();
      g.close();
    });
  });
});
