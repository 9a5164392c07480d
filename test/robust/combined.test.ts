/**
 * The combined proof of issue 15 (a real daemon with its default settings, file config, loopback
 * only): well-behaved sidecars measure how long an edit takes to reach them, first alone, then while
 * at the same time 500 stuck streams, departing proxies with 50,000 names each, a NACK storm with
 * distinct messages, 50 MB bodies to the HTTP routes and half-open connections go on
 * (bench/xds/hostile.ts). The edit latency under that load stays within a stated factor of the
 * baseline, the daemon's RSS under a stated bound, and no configuration is lost. Bounded in time
 * (about 40 s) and stopping by itself.
 */
import { jest } from '@jest/globals';
import { HostileLoad, issue15Load } from '../../bench/xds/hostile.js';
import { TypeUrl } from '../../src/xds/types.js';
import { namesOf, SotwStream } from '../support/ads-client.js';
import { makeConfigDir, startDaemon, type Daemon } from '../support/daemon.js';
import { eventually } from '../support/eventually.js';
import { WellBehavedSidecar, meshObjects, sampleRss, sidecarNode, virtualService } from './support.js';

jest.setTimeout(120_000);

const SERVICES = 50;
const GOOD = 5;
const EDITS = 5;
/** How long the hostile clients run while edits are measured (past the 10 s first-bytes deadline). */
const LOADED_MS = 25_000;
/**
 * The median edit under hostile load may take at most this many times the baseline's worst … or
 * FLOOR_MS, whichever is larger (a baseline of a few ms on loopback is mostly scheduling noise); the
 * 90th percentile at most twice that. Measured quiet: baseline 156 ms, under load p50 262 ms, p90
 * 401 ms; in a full CI run (other test files on the same two cores) p50 299 ms, p90 1.73 s.
 */
const FACTOR = 10;
const FLOOR_MS = 1500;
/**
 * No single edit under load may take longer than this. The hostile clients run in this test's own
 * process, on the same two cores as the daemon and (in CI) other test files, so a lone slow sample
 * says as much about them as about the daemon; the percentile above carries the claim.
 */
const WORST_MS = 5000;
/** Peak resident memory of the daemon during the whole run. */
const RSS_BOUND = 900 * 1024 * 1024;

describe('well-behaved proxies beside every hostile client at once', () => {
  let dir: Awaited<ReturnType<typeof makeConfigDir>>;
  let d: Daemon;
  const good: WellBehavedSidecar[] = [];
  let weight = 50;

  /** Writes a new weight for service 1's VirtualService; resolves with the ms until every good sidecar got an RDS push. */
  async function edit(): Promise<number> {
    const from = good.map((g) => g.stream.responses.length);
    const started = performance.now();
    await dir.write('edit.yaml', virtualService(1, ++weight));
    await Promise.all(good.map((g, i) => g.stream.nextMatching((r) => r.typeUrl === TypeUrl.Route, 20_000, from[i])));
    return performance.now() - started;
  }

  async function edits(): Promise<number> {
    let worst = 0;
    for (let i = 0; i < EDITS; i++) worst = Math.max(worst, await edit());
    return worst;
  }

  /** The clusters a new sidecar gets. */
  async function clusters(n: number): Promise<string[]> {
    const s = new SotwStream(d.grpcAddr, sidecarNode(n));
    try {
      s.send({ typeUrl: TypeUrl.Cluster });
      return namesOf(await s.nextMatching((r) => r.typeUrl === TypeUrl.Cluster, 20_000));
    } finally {
      s.close();
    }
  }

  beforeAll(async () => {
    dir = await makeConfigDir();
    await dir.write('mesh.yaml', meshObjects(SERVICES));
    await dir.write('edit.yaml', virtualService(1, weight));
    d = await startDaemon({ configDir: dir.path });
  });

  afterAll(async () => {
    for (const g of good) g.close();
    await d?.stop();
    await dir?.cleanup();
  });

  it('keeps their edit latency within a factor of the baseline, its memory bounded, and every configuration', async () => {
    const rss = sampleRss(d.pid, 200);
    for (let n = 1; n <= GOOD; n++) good.push(new WellBehavedSidecar(d.grpcAddr, n, 20_000));
    await Promise.all(good.map((g) => g.complete));
    const expected = (await clusters(100)).sort();
    expect(expected.length).toBeGreaterThan(SERVICES * 3); // the services' clusters and their subsets

    const baseline = await edits();

    const load = new HostileLoad(issue15Load(d.grpcAddr, [d.httpAddr, d.monitoringAddr]));
    let loaded: number[];
    let stats: ReturnType<HostileLoad['stats']>;
    try {
      await load.start();
      // every hostile kind under way before measuring
      await eventually('the hostile clients to be under way', () => {
        const s = load.stats();
        return s.departed >= 2 && s.nacks >= 10 && s.oversizedSent >= 2;
      }, { timeoutMs: 30_000, intervalMs: 200, diagnostics: () => JSON.stringify(load.stats()) });
      // edits one after the other while the load goes on
      loaded = [];
      const until = performance.now() + LOADED_MS;
      while (performance.now() < until || loaded.length < EDITS) {
        loaded.push(await edit());
        await new Promise((r) => setTimeout(r, 500));
      }
      // a proxy connecting now gets all of its configuration
      expect((await clusters(101)).sort()).toEqual(expected);
      stats = load.stats();
    } finally {
      await load.stop();
    }
    const { peak } = rss.stop();
    const sorted = [...loaded].sort((x, y) => x - y);
    const p90 = sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * 0.9) - 1)];
    const worst = sorted[sorted.length - 1];
    const p50 = sorted[Math.floor(sorted.length / 2)];
    process.stdout.write(
      `combined: edit latency (worst) ${baseline.toFixed(0)} ms alone (${EDITS} edits); under hostile load (${loaded.length} edits in ${LOADED_MS / 1000} s) p50 ${p50.toFixed(0)} ms, p90 ${p90.toFixed(0)} ms, worst ${worst.toFixed(0)} ms; daemon RSS peak ${Math.round(peak / 2 ** 20)} MB; hostile: ${JSON.stringify(stats)}\n`,
    );
    expect(d.running()).toBe(true);
    expect(stats.stuckOpen + stats.stuckClosed).toBe(500);
    expect(stats.halfOpenClosed).toBe(200); // 50 per listener and 50 HTTP/2 streams, closed by their deadlines
    expect(stats.departed).toBeGreaterThanOrEqual(4);
    const bound = Math.max(FACTOR * baseline, FLOOR_MS);
    expect(p50).toBeLessThan(bound);
    expect(p90).toBeLessThan(2 * bound);
    expect(worst).toBeLessThan(WORST_MS);
    expect(peak).toBeLessThan(RSS_BOUND);
    // no configuration lost: the good sidecars still hold every cluster, and a new one gets them all
    for (const g of good) {
      const cds = g.stream.responses.filter((r) => r.typeUrl === TypeUrl.Cluster).at(-1)!;
      expect(namesOf(cds).sort()).toEqual(expected);
    }
    expect((await clusters(102)).sort()).toEqual(expected);
  });
});
