/**
 * Big synchronous work does not hold the daemon's event loop (issue 15): rendering /debug/syncz for
 * connections with large subscriptions (tens of MB of JSON) leaves the loop free often enough that
 * a well-behaved `GET /ready` is still answered promptly. (The ~12 MB config file case is not here
 * yet: see docs/adr/0113.) The longest `/ready` round trip, polled back to back from this process, is an
 * upper bound of the daemon's longest stall plus loopback latency (docs/adr/0113).
 */
import { jest } from '@jest/globals';
import { request } from 'node:http';
import { TypeUrl } from '../../src/xds/types.js';
import { queryDebug } from '../../src/cli/meshctl/diag/xds-client.js';
import { SotwStream } from '../support/ads-client.js';
import { makeConfigDir, startDaemon, type Daemon } from '../support/daemon.js';
import { eventually } from '../support/eventually.js';
import { meshObjects, sidecarNode } from './support.js';

jest.setTimeout(120_000);


function get(addr: string, path: string): Promise<{ status: number; bytes: number }> {
  return new Promise((resolve, reject) => {
    const [host, port] = addr.split(':');
    const req = request({ host, port: Number(port), path, agent: false }, (res) => {
      let bytes = 0;
      res.on('data', (c: Buffer) => (bytes += c.length));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, bytes }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/** Polls `/ready` back to back until stopped; the longest round trip and how many answered. */
function probeReady(addr: string): { stop(): Promise<{ longestMs: number; answered: number }> } {
  let running = true;
  let longestMs = 0;
  let answered = 0;
  const loop = (async () => {
    while (running) {
      const t0 = performance.now();
      const { status } = await get(addr, '/ready').catch(() => ({ status: 0 }));
      longestMs = Math.max(longestMs, performance.now() - t0);
      if (status === 200) answered++;
      await new Promise((r) => setTimeout(r, 5));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return { longestMs, answered };
    },
  };
}

describe('event-loop stalls', () => {
  let dir: Awaited<ReturnType<typeof makeConfigDir>>;
  let d: Daemon;
  const streams: SotwStream[] = [];

  beforeAll(async () => {
    dir = await makeConfigDir();
    await dir.write('mesh.yaml', meshObjects(5));
    d = await startDaemon({ configDir: dir.path });
  });

  afterAll(async () => {
    for (const s of streams) s.close();
    await d?.stop();
    await dir?.cleanup();
  });

  it('serving /debug/syncz for connections with large subscriptions', async () => {
    const names = (k: number): string[] => Array.from({ length: 20_000 }, (_, i) => `outbound|8080||service-${k}-${i}.some-namespace.svc.cluster.local`);
    for (let k = 0; k < 60; k++) {
      const s = new SotwStream(d.grpcAddr, sidecarNode(1000 + k));
      s.send({ typeUrl: TypeUrl.Endpoint, names: names(k) });
      streams.push(s);
    }
    await eventually('every stream to be watched', async () => {
      const status = (await d.debug('push_status').catch(() => ({ connections: 0 }))) as { connections: number };
      return status.connections >= streams.length;
    }, { timeoutMs: 30_000 });
    const probe = probeReady(d.monitoringAddr);
    await new Promise((r) => setTimeout(r, 100));
    const t0 = performance.now();
    const syncz = await get(d.httpAddr, '/debug/syncz');
    const tookMs = performance.now() - t0;
    const { longestMs, answered } = await probe.stop();
    process.stdout.write(`syncz ${(syncz.bytes / 1e6).toFixed(1)} MB in ${tookMs.toFixed(0)} ms: longest /ready round trip ${longestMs.toFixed(0)} ms (${answered} answered)\n`);
    expect(syncz.status).toBe(200);
    expect(syncz.bytes).toBeGreaterThan(60_000_000);
    expect(answered).toBeGreaterThan(5);
    // rendered and written in one piece, the whole render was one stall (429 of 600 ms); streamed,
    // the longest is a small part of it (253 of 1,500 ms), also on a loaded machine
    expect(longestMs).toBeLessThan(tookMs / 3);
  });

  it('answering syncz over the xDS debug channel (meshctl proxy-status) for the same connections', async () => {
    // the streams of the case above are still connected
    const probe = probeReady(d.monitoringAddr);
    await new Promise((r) => setTimeout(r, 100));
    const t0 = performance.now();
    const flags = { xdsAddress: '', xdsPort: 0, xdsLabel: '', plaintext: true, insecure: false, certDir: '', authority: '', revision: '', timeoutMs: 60_000, meshNamespace: 'mesh-system' };
    const [result] = await queryDebug<unknown[]>(flags, [{ name: 'meshd', address: d.grpcAddr }], 'syncz');
    const tookMs = performance.now() - t0;
    const { longestMs, answered } = await probe.stop();
    process.stdout.write(`xDS syncz: ${result.body?.length ?? 0} entries in ${tookMs.toFixed(0)} ms: longest /ready round trip ${longestMs.toFixed(0)} ms (${answered} answered)\n`);
    expect(result.error).toBeUndefined();
    expect(result.body!.length).toBeGreaterThanOrEqual(streams.length);
    expect(answered).toBeGreaterThan(5);
    // rendered in one piece (JSON.stringify of the whole view), the render was one stall
    expect(longestMs).toBeLessThan(tookMs / 3);
  });
});
