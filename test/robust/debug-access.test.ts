/**
 * The debug views on --httpAddr (ENABLE_DEBUG_ON_HTTP, on by default) answer loopback clients
 * only, unless UNSAFE_ENABLE_ADMIN_ENDPOINTS=true: a client on another address gets 403 with a message
 * saying how to allow it, while /ready and /healthz answer everyone. The daemon listens on all
 * addresses and is called through the machine's own non-loopback address.
 */
import { jest } from '@jest/globals';
import { request } from 'node:http';
import { networkInterfaces } from 'node:os';
import { freePort, makeConfigDir, startDaemon, type Daemon } from '../support/daemon.js';

jest.setTimeout(60_000);

/** The machine's first non-loopback IPv4 address (a container's eth0), if it has one. */
const external = Object.values(networkInterfaces())
  .flat()
  .find((a) => a && a.family === 'IPv4' && !a.internal)?.address;

function get(host: string, port: number, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host, port, path, timeout: 10_000 }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error(`GET ${path}: no answer`)));
    req.end();
  });
}

async function daemonOnAllAddresses(env: Record<string, string>): Promise<{ d: Daemon; port: number; cleanup: () => Promise<void> }> {
  const dir = await makeConfigDir();
  const port = await freePort();
  const d = await startDaemon({ configDir: dir.path, env, args: ['--httpAddr', `0.0.0.0:${port}`] });
  return {
    d,
    port,
    cleanup: async () => {
      await d.stop();
      await dir.cleanup();
    },
  };
}

// Without a non-loopback address no remote client can be made on this machine.
const describeRemote = external ? describe : describe.skip;
if (!external) console.warn('debug-access: skipped, this machine has no non-loopback IPv4 address');

describeRemote('debug views over --httpAddr by client address', () => {
  it('serves loopback clients, refuses others with 403 and how to enable; /ready and /healthz stay open', async () => {
    const { port, cleanup } = await daemonOnAllAddresses({});
    try {
      for (const path of ['/debug/configz', '/debug/syncz', '/debug/config_dump', '/debug']) {
        // config_dump without ?proxyID= is a 400 of the view itself: the view answered.
        expect((await get('127.0.0.1', port, path)).status).toBe(path === '/debug/config_dump' ? 400 : 200);
        const remote = await get(external!, port, path);
        expect(remote.status).toBe(403);
        expect(remote.body).toContain('UNSAFE_ENABLE_ADMIN_ENDPOINTS=true');
      }
      expect((await get(external!, port, '/ready')).status).toBe(200);
      expect((await get(external!, port, '/healthz')).status).toBe(200);
    } finally {
      await cleanup();
    }
  });

  it('UNSAFE_ENABLE_ADMIN_ENDPOINTS=true serves them to every address', async () => {
    const { port, cleanup } = await daemonOnAllAddresses({ UNSAFE_ENABLE_ADMIN_ENDPOINTS: 'true' });
    try {
      expect((await get(external!, port, '/debug/configz')).status).toBe(200);
      expect((await get(external!, port, '/debug/syncz')).status).toBe(200);
    } finally {
      await cleanup();
    }
  });
});
