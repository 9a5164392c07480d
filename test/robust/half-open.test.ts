/**
 * Half-open connections against every listener of a real daemon (file config, loopback): TCP
 * connections that never send a byte are closed within the first-bytes deadline and counted in
 * disc_half_open_closed by listener, while a well-behaved proxy is served. The daemon runs with
 * ENABLE_DEBUG_ON_HTTP=false, as production should: --httpAddr still answers /ready (the rendered
 * readiness probe points there) but no debug view.
 */
import { jest } from '@jest/globals';
import { request } from 'node:http';
import { HostileLoad } from '../../bench/xds/hostile.js';
import { FIRST_BYTES_MS } from '../../src/server/first-bytes.js';
import { freePort, makeConfigDir, startDaemon, type Daemon } from '../support/daemon.js';
import { eventually } from '../support/eventually.js';
import { WellBehavedSidecar, meshObjects } from './support.js';

jest.setTimeout(90_000);

const PER_LISTENER = 20;

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

describe('half-open connections and the debug switch', () => {
  let dir: Awaited<ReturnType<typeof makeConfigDir>>;
  let d: Daemon;

  beforeAll(async () => {
    dir = await makeConfigDir();
    await dir.write('mesh.yaml', meshObjects(20));
    d = await startDaemon({ configDir: dir.path, env: { ENABLE_DEBUG_ON_HTTP: 'false' } });
  });

  afterAll(async () => {
    await d?.stop();
    await dir?.cleanup();
  });

  it('--httpAddr answers /ready and /healthz without the debug switch, and serves no debug view', async () => {
    expect(await get(d.httpAddr, '/ready')).toBe(200);
    expect(await get(d.httpAddr, '/healthz')).toBe(200);
    expect(await get(d.httpAddr, '/debug/syncz')).toBe(404);
    expect(await get(d.httpAddr, '/debug/configz')).toBe(404);
  });

  it('closes connections that send nothing on every listener, counted, and keeps serving', async () => {
    const load = new HostileLoad({ grpc: d.grpcAddr, http: [d.httpAddr, d.monitoringAddr], halfOpen: PER_LISTENER });
    const started = Date.now();
    await load.start();
    try {
      const good = new WellBehavedSidecar(d.grpcAddr, 1, 20_000);
      try {
        expect(await good.complete).toBeLessThan(5_000);
      } finally {
        good.close();
      }
      // 3 listeners' TCP connections and the HTTP/2 streams without a request
      await eventually('every half-open connection to be closed', () => load.stats().halfOpenOpen === 0, {
        timeoutMs: FIRST_BYTES_MS + 20_000,
        intervalMs: 200,
        diagnostics: () => JSON.stringify(load.stats()),
      });
    } finally {
      await load.stop();
    }
    expect(load.stats().halfOpenClosed).toBe(PER_LISTENER * 4);
    expect(Date.now() - started).toBeGreaterThanOrEqual(FIRST_BYTES_MS - 500);
    for (const listener of ['grpc', 'http', 'monitoring']) {
      expect({ listener, closed: await d.metric('disc_half_open_closed', { listener }) }).toEqual({ listener, closed: PER_LISTENER });
    }
    expect(await d.ready()).toBe(true);
  });
});

describe('half-open connections on the TLS listeners and ControlZ', () => {
  let dir: Awaited<ReturnType<typeof makeConfigDir>>;
  let d: Daemon;
  let secureAddr: string;

  beforeAll(async () => {
    dir = await makeConfigDir();
    await dir.write('mesh.yaml', meshObjects(5));
    secureAddr = `127.0.0.1:${await freePort()}`;
    // the built-in CA (kept under --configDir) gives the secured xDS port and the webhook port their certificates
    d = await startDaemon({ configDir: dir.path, args: ['--secureGRPCAddr', secureAddr], env: { ENABLE_CA_SERVER: 'true' } });
  });

  afterAll(async () => {
    await d?.stop();
    await dir?.cleanup();
  });

  it('closes connections that send nothing (not even a TLS hello) within the deadline, counted per listener', async () => {
    const load = new HostileLoad({ grpc: d.grpcAddr, secureGrpc: secureAddr, http: [d.ctrlzAddr, d.httpsAddr], halfOpen: 10 });
    await load.start();
    try {
      await eventually('every half-open connection to be closed', () => load.stats().halfOpenOpen === 0, {
        timeoutMs: FIRST_BYTES_MS + 20_000,
        intervalMs: 200,
        diagnostics: () => JSON.stringify(load.stats()),
      });
    } finally {
      await load.stop();
    }
    // before: the webhook port kept them for Node's 120 s, and ControlZ closed them without counting
    expect(load.stats().halfOpenMaxMs).toBeLessThan(FIRST_BYTES_MS + 5_000);
    for (const listener of ['secure-grpc', 'ctrlz', 'https']) {
      expect({ listener, closed: await d.metric('disc_half_open_closed', { listener }) }).toEqual({ listener, closed: 10 });
    }
  });
});
