/**
 * Request bodies against the daemon's HTTP listeners (a real daemon on file config, loopback):
 * every route takes a bounded body and refuses more with 413 without reading it, so 200 MB bodies
 * sent to every route do not raise the daemon's memory; the routes keep answering meanwhile.
 */
import { jest } from '@jest/globals';
import { request } from 'node:http';
import { HostileLoad } from '../../bench/xds/hostile.js';
import { makeConfigDir, startDaemon, type Daemon } from '../support/daemon.js';
import { eventually } from '../support/eventually.js';
import { meshObjects, sampleRss } from './support.js';

jest.setTimeout(120_000);

function get(addr: string, path: string): Promise<number> {
  return new Promise((resolve) => {
    const req = request(`http://${addr}${path}`, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', () => resolve(0));
    req.setTimeout(10_000, () => req.destroy());
    req.end();
  });
}

describe('HTTP request bodies', () => {
  let dir: Awaited<ReturnType<typeof makeConfigDir>>;
  let d: Daemon;

  beforeAll(async () => {
    dir = await makeConfigDir();
    await dir.write('mesh.yaml', meshObjects(20));
    d = await startDaemon({ configDir: dir.path });
  });

  afterAll(async () => {
    await d?.stop();
    await dir?.cleanup();
  });

  it('refuses bodies past the bound with 413 without reading them, and keeps memory and answers', async () => {
    const rss = sampleRss(d.pid, 100);
    const before = rss.stop().last;
    const sampler = sampleRss(d.pid, 100);
    const load = new HostileLoad({ grpc: d.grpcAddr, http: [d.monitoringAddr, d.httpAddr], oversized: { concurrency: 4, bytes: 200 * 1024 * 1024 } });
    await load.start();
    try {
      await eventually('24 oversized requests to be answered', () => load.stats().oversizedSent >= 24, { timeoutMs: 60_000, diagnostics: () => JSON.stringify(load.stats()) });
      // the routes answer meanwhile
      expect(await get(d.monitoringAddr, '/ready')).toBe(200);
      expect(await get(d.monitoringAddr, '/metrics')).toBe(200);
    } finally {
      await load.stop();
    }
    const { peak } = sampler.stop();
    const statuses = load.stats().oversizedStatus;
    // every route answered 413, a path a listener does not serve 404, neither reading the body
    // (0: the connection closed before the client read the answer)
    expect(Object.keys(statuses).filter((s) => !['413', '404', '0'].includes(s))).toEqual([]);
    expect(statuses['413'] ?? 0).toBeGreaterThan(0);
    // before, each 200 MB body was held whole (RSS +600 MB)
    expect(peak - before).toBeLessThan(100 * 1024 * 1024);
  });
});
