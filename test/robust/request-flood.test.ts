/**
 * Clients that keep sending requests and never read (a real daemon on file config, loopback). A
 * stream's requests are handled in order and an answer waits for its write, which a client that does
 * not read holds for up to the delivery's abandon bound (30 s); before, everything such a client sent
 * meanwhile was queued without bound (decoded name lists for state-of-the-world, raw buffers for
 * delta). Now a state-of-the-world request supersedes a waiting one of its type, and a stream with
 * 16 requests or 8 MiB waiting is paused, so HTTP/2 flow control holds the client back.
 */
import { jest } from '@jest/globals';
import { HostileLoad } from '../../bench/xds/hostile.js';
import { makeConfigDir, startDaemon, type Daemon } from '../support/daemon.js';
import { eventually } from '../support/eventually.js';
import { WellBehavedSidecar, meshObjects, sampleRss } from './support.js';

jest.setTimeout(120_000);

const NAMES = 10_000; // ~0.55 MB per request
const OFFERED = 40 * 1024 * 1024; // per stream
/** What the two state-of-the-world floods must have had taken at least (kept, it would abort the daemon). */
const SOTW_TAKEN_MIN = 32 * 1024 * 1024;
/** Resident memory the flooding streams may add to the idle daemon (it runs with a 128 MB old space). */
const RSS_BOUND = 200 * 1024 * 1024;
/** What a paused delta stream may have had taken: the backlog's 8 MiB, a request being read and HTTP/2's window. */
const DELTA_TAKEN_BOUND = 16 * 1024 * 1024;

describe('streams that flood requests without reading', () => {
  let dir: Awaited<ReturnType<typeof makeConfigDir>>;
  let d: Daemon;

  beforeAll(async () => {
    dir = await makeConfigDir();
    await dir.write('mesh.yaml', meshObjects(20));
    // a bounded old space: requests kept per stream show as an out-of-memory abort
    d = await startDaemon({ configDir: dir.path, env: { MESH_DELTA_XDS: 'true', NODE_OPTIONS: '--max-old-space-size=128' } });
  });

  afterAll(async () => {
    await d?.stop();
    await dir?.cleanup();
  });

  it('cost the daemon a bounded backlog, while other proxies are served', async () => {
    const idle = sampleRss(d.pid).stop().last;
    const rss = sampleRss(d.pid, 100);
    const load = new HostileLoad({ grpc: d.grpcAddr, http: [], flood: { sotw: 2, delta: 2, names: NAMES, bytes: OFFERED } });
    await load.start();
    const started = Date.now();
    try {
      // the state-of-the-world floods are read (each request supersedes the waiting one); the delta
      // floods are paused: let the former go on for a while
      // (within 20 s: the stuck first answer costs the stream at 30 s)
      await eventually('the state-of-the-world floods to be taken', () => load.stats().floodTakenBytes.sotw >= 2 * OFFERED || !d.running() || Date.now() - started > 20_000, {
        timeoutMs: 25_000,
        intervalMs: 250,
      });
      const good = new WellBehavedSidecar(d.grpcAddr, 1, 15_000);
      try {
        expect(await good.complete).toBeLessThan(5_000);
      } finally {
        good.close();
      }
    } finally {
      await load.stop();
    }
    const { peak } = rss.stop();
    const stats = load.stats();
    const seconds = (Date.now() - started) / 1000;
    process.stdout.write(
      `flood: ${stats.floodTaken} requests (SotW ${Math.round(stats.floodTakenBytes.sotw / 2 ** 20)} MiB, delta ${Math.round(stats.floodTakenBytes.delta / 2 ** 20)} MiB) taken in ${seconds.toFixed(1)} s; daemon RSS idle ${Math.round(idle / 2 ** 20)} MB, peak ${Math.round(peak / 2 ** 20)} MB\n`,
    );
    expect({ running: d.running(), log: d.running() ? '' : d.logs().slice(-2000) }).toEqual({ running: true, log: '' });
    // the delta streams were paused: HTTP/2 flow control kept the rest of their requests at the client
    expect(stats.floodTakenBytes.delta).toBeLessThan(2 * DELTA_TAKEN_BOUND);
    expect(stats.floodTakenBytes.sotw).toBeGreaterThanOrEqual(SOTW_TAKEN_MIN);
    expect(stats.floodEnded).toEqual({}); // nothing ended: the streams were held back, not cut
    expect(peak - idle).toBeLessThan(RSS_BOUND);
  });
});
