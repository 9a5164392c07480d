/**
 * Memory that clients choose (a real daemon on file config, loopback): proxies that come and go,
 * each asking for a list of 50,000 names of its own, leave nothing behind. Before, their decoded
 * name sets stayed in the request intake and their lists in the snapshot's memo, and ~70 MB of such
 * requests ended the daemon with an out-of-memory abort; now a list goes when its last watch goes.
 * The daemon runs with a 128 MB old space (an abort at 30 departures before), so anything kept per departed client shows as an abort.
 */
import { jest } from '@jest/globals';
import { HostileLoad } from '../../bench/xds/hostile.js';
import { makeConfigDir, startDaemon, type Daemon } from '../support/daemon.js';
import { eventually } from '../support/eventually.js';
import { WellBehavedSidecar, meshObjects, sampleRss } from './support.js';

jest.setTimeout(180_000);

const DEPARTED = 30;
/** Resident memory the departing clients may add to the idle daemon at most (they send ~70 MB). */
const RSS_BOUND = 300 * 1024 * 1024;

describe('proxies that leave, each with 50,000 names of its own', () => {
  let dir: Awaited<ReturnType<typeof makeConfigDir>>;
  let d: Daemon;

  beforeAll(async () => {
    dir = await makeConfigDir();
    await dir.write('mesh.yaml', meshObjects(20));
    d = await startDaemon({ configDir: dir.path, env: { NODE_OPTIONS: '--max-old-space-size=128' } });
  });

  afterAll(async () => {
    await d?.stop();
    await dir?.cleanup();
  });

  it('leave nothing behind: the daemon stays within its memory bound and keeps serving', async () => {
    const idle = sampleRss(d.pid).stop().last;
    const rss = sampleRss(d.pid, 100);
    const load = new HostileLoad({ grpc: d.grpcAddr, http: [], departing: { concurrency: 3, names: 50_000 } });
    await load.start();
    try {
      // a well-behaved proxy is served meanwhile
      const good = new WellBehavedSidecar(d.grpcAddr, 1, 20_000);
      try {
        expect(await good.complete).toBeLessThan(10_000);
      } finally {
        good.close();
      }
      await eventually(`${DEPARTED} proxies to have come and gone`, () => load.stats().departed >= DEPARTED || !d.running(), {
        timeoutMs: 150_000,
        intervalMs: 200,
        diagnostics: () => JSON.stringify(load.stats()),
      });
    } finally {
      await load.stop();
    }
    const { peak } = rss.stop();
    expect({ running: d.running(), log: d.running() ? '' : d.logs().slice(-2000) }).toEqual({ running: true, log: '' });
    expect(load.stats().departedNames).toBeGreaterThanOrEqual(DEPARTED * 50_000);
    expect(peak - idle).toBeLessThan(RSS_BOUND);
    // and it still serves a new proxy in its usual time
    const after = new WellBehavedSidecar(d.grpcAddr, 2, 20_000);
    try {
      expect(await after.complete).toBeLessThan(5_000);
    } finally {
      after.close();
    }
  });
});
