/**
 * The budget of response bytes handed to streams and not taken yet (docs/adr/0200), against the ADS
 * server in process over real gRPC on loopback: with a budget smaller than one response, the
 * server writes to one stream at a time and still configures every proxy that connects at once,
 * the proxies that connected first first (each one's configuration is not interleaved with all the
 * others'); clients that stop reading do not keep the budget, and lose their streams past the usual
 * bound.
 */
import { HostileLoad } from '../../bench/xds/hostile.js';
import { toYamlDocuments } from '../support/daemon.js';
import { eventually } from '../support/eventually.js';
import { startAds, type Harness } from '../xds/ads-harness.js';
import { WellBehavedSidecar, meshObjects } from './support.js';

const PROXIES = 40;

/** Polls the server's write counters every turn of the event loop it shares; the largest seen. */
function watchWrites(h: Harness): { stop(): { maxWriting: number; maxWaiting: number } } {
  let maxWriting = 0;
  let maxWaiting = 0;
  let on = true;
  const poll = (): void => {
    if (!on) return;
    const w = h.ads.loadStats().writes;
    maxWriting = Math.max(maxWriting, w.pending - w.stalled);
    maxWaiting = Math.max(maxWaiting, w.waiting);
    setImmediate(poll);
  };
  poll();
  return {
    stop: () => {
      on = false;
      return { maxWriting, maxWaiting };
    },
  };
}

describe('a budget of unsent response bytes', () => {
  let h: Harness | undefined;

  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  it('writes to one stream at a time when a response is larger than the budget, and configures every proxy', async () => {
    h = await startAds(toYamlDocuments(meshObjects(60)), { options: { delivery: { maxUnsentBytes: 1 } } });
    const watch = watchWrites(h);
    const proxies = Array.from({ length: PROXIES }, (_, i) => new WellBehavedSidecar(`127.0.0.1:${h!.port}`, i, 30_000));
    try {
      const times = await Promise.all(proxies.map((p) => p.complete));
      expect(times).toHaveLength(PROXIES);
      const seen = watch.stop();
      // the budget was in force: writes waited, and never more than one was being written
      expect(seen.maxWaiting).toBeGreaterThan(0);
      expect(seen.maxWriting).toBe(1);
      expect(h.ads.loadStats().writes).toMatchObject({ pending: 0, unsentBytes: 0, waiting: 0 });
    } finally {
      watch.stop();
      for (const p of proxies) p.close();
    }
  });

  it('configures the proxies that connected first before the others get their first response', async () => {
    h = await startAds(toYamlDocuments(meshObjects(60)), { options: { pushThrottle: 100, delivery: { maxUnsentBytes: 1, stallMs: 4000 } } });
    // a client that takes nothing holds the budget until its write counts as stalled, so that every
    // proxy below has asked before the first answer goes
    const load = new HostileLoad({ grpc: `127.0.0.1:${h.port}`, http: [], stuck: 1 });
    await load.start();
    await eventually('the stuck client to hold the budget', () => h!.ads.loadStats().writes.pending === 1, { timeoutMs: 5000 });
    const proxies = Array.from({ length: PROXIES }, (_, i) => new WellBehavedSidecar(`127.0.0.1:${h!.port}`, i, 30_000));
    try {
      await eventually('every proxy to wait for its first answer', () => h!.ads.loadStats().writes.waiting === PROXIES, { timeoutMs: 3500, diagnostics: () => JSON.stringify(h!.ads.loadStats().writes) });
      let firstComplete = Infinity;
      const completes = proxies.map((p) => p.complete.then(() => (firstComplete = Math.min(firstComplete, performance.now()))));
      const firstResponses = await Promise.all(proxies.map((p) => p.stream.nextMatching(() => true, 30_000).then(() => performance.now())));
      const allHadOne = Math.max(...firstResponses);
      await Promise.all(completes);
      // answered in arrival order instead, every proxy's clusters would go before anyone's endpoints
      expect(firstComplete).toBeLessThan(allHadOne);
    } finally {
      for (const p of proxies) p.close();
      await load.stop();
    }
  });

  it('is not kept by clients that stop reading: others are configured, and the stuck ones lose their streams', async () => {
    h = await startAds(toYamlDocuments(meshObjects(60)), {
      options: { pushThrottle: 4, sendTimeoutMs: 0, delivery: { maxUnsentBytes: 1, stallMs: 100, abandonMs: 3000 } },
    });
    // window-zero connections: their clients take no byte of any response
    const load = new HostileLoad({ grpc: `127.0.0.1:${h.port}`, http: [], stuck: 50 });
    try {
      await load.start();
      await eventually('the stuck clients to be connected', () => h!.ads.connections.size >= 50, { timeoutMs: 10_000 });
      const good = Array.from({ length: 5 }, (_, i) => new WellBehavedSidecar(`127.0.0.1:${h!.port}`, i, 20_000));
      try {
        expect(await Promise.all(good.map((p) => p.complete))).toHaveLength(5);
      } finally {
        for (const p of good) p.close();
      }
      await eventually('the stuck streams to be closed', () => load.stats().stuckClosed >= 50 && h!.ads.loadStats().writes.pending === 0, {
        timeoutMs: 15_000,
        diagnostics: () => JSON.stringify({ load: load.stats(), writes: h!.ads.loadStats().writes }),
      });
      expect(h.ads.loadStats().writes).toMatchObject({ unsentBytes: 0, liveBytes: 0, stalledBytes: 0, waiting: 0 });
    } finally {
      await load.stop();
    }
  });
});
