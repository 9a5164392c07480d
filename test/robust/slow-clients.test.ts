/**
 * Slow and stuck clients against the ADS server (in process, real gRPC on loopback): clients that
 * stop reading hold no push or answer slot, other proxies get their configuration and changes in
 * their usual time, and a client that takes none of its bytes loses its stream past a bound,
 * counted in disc_xds_write_timeout.
 */
import { HostileLoad } from '../../bench/xds/hostile.js';
import { TypeUrl } from '../../src/xds/types.js';
import { toYamlDocuments } from '../support/daemon.js';
import { eventually } from '../support/eventually.js';
import { startAds, type Harness } from '../xds/ads-harness.js';
import { WellBehavedSidecar, meshObjects, virtualService } from './support.js';

const STUCK = 60;

describe('clients that stop reading', () => {
  let h: Harness;
  let load: HostileLoad;

  beforeAll(async () => {
    // two slots: before, two stuck clients were enough to stall every other proxy
    h = await startAds(toYamlDocuments(meshObjects(60)), { options: { pushThrottle: 2, sendTimeoutMs: 0, delivery: { stallMs: 100, abandonMs: 4000 } } });
    load = new HostileLoad({ grpc: `127.0.0.1:${h.port}`, http: [], stuck: STUCK });
    await load.start();
    await eventually('the stuck clients to be connected', () => h.ads.connections.size >= STUCK, { timeoutMs: 10_000 });
  });

  afterAll(async () => {
    await load?.stop();
    await h?.close();
  });

  it('hold no slot, and do not delay another proxy\'s configuration or a change', async () => {
    const good = new WellBehavedSidecar(`127.0.0.1:${h.port}`, 1, 10_000);
    try {
      expect(await good.complete).toBeLessThan(3000);
      // the stuck clients' writes wait without a slot
      await eventually('no slot to be held', () => h.ads.loadStats().pushSlots + h.ads.loadStats().answerSlots === 0, { timeoutMs: 2000 });
      expect(h.ads.loadStats().writes.pending).toBeGreaterThanOrEqual(STUCK / 2);
      const from = good.stream.responses.length;
      const started = performance.now();
      await h.change(toYamlDocuments([virtualService(1, 50)]), { wait: false });
      await good.stream.nextMatching((r) => r.typeUrl === TypeUrl.Route, 5000, from);
      expect(performance.now() - started).toBeLessThan(2000);
    } finally {
      good.close();
    }
  });

  it('lose their streams once they took nothing for the bound, counted in disc_xds_write_timeout', async () => {
    // a paused client whose responses all fit in its window before it stopped is not stuck
    await eventually('the stuck streams to be closed', () => load.stats().stuckClosed >= STUCK * 0.75 && h.ads.loadStats().writes.pending === 0, {
      timeoutMs: 15_000,
      diagnostics: () => JSON.stringify(load.stats()),
    });
    await eventually('every closed stream to be counted', async () => (await h.metric('disc_xds_write_timeout')) === load.stats().stuckClosed, {
      timeoutMs: 3000,
      diagnostics: () => JSON.stringify(load.stats()),
    });
    expect(h.ads.loadStats().writes).toMatchObject({ pending: 0, liveBytes: 0, stalledBytes: 0 });
  });
});
