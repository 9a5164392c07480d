import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { DEBUG_BASE_URL, MONITORING_BASE_URL, requestUrl, runRequest } from '../../src/cli/request.js';
import { main } from '../../src/cli/mesh-discovery.js';
import { CliError } from '../../src/cli/runner.js';
import { captureIO } from './capture.js';

describe('requestUrl', () => {
  it('sends /metrics to the monitoring port and the rest to the debug port', () => {
    expect(MONITORING_BASE_URL).toBe('http://127.0.0.1:15014');
    expect(DEBUG_BASE_URL).toBe('http://127.0.0.1:8080');
    expect(requestUrl('/metrics').href).toBe('http://127.0.0.1:15014/metrics');
    expect(requestUrl('/metrics?x=1').href).toBe('http://127.0.0.1:15014/metrics?x=1');
    expect(requestUrl('/debug/syncz').href).toBe('http://127.0.0.1:8080/debug/syncz');
    expect(requestUrl('/metricsfoo').href).toBe('http://127.0.0.1:8080/metricsfoo');
    expect(() => requestUrl('debug')).toThrow('path must start with "/": "debug"');
  });
});

describe('runRequest against a live server', () => {
  let server: http.Server;
  let base: string;
  const seen: Array<{ method?: string; url?: string; type?: string; body: string }> = [];

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        seen.push({ method: req.method, url: req.url, type: req.headers['content-type'], body });
        if (req.url === '/missing') {
          res.writeHead(404, 'Not Found').end('no such page');
        } else {
          res.end(`${req.method} ${req.url}${body ? ` ${body}` : ''}`);
        }
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('prints the body of a successful request', async () => {
    const targets = { monitoring: base, debug: base };
    expect(await runRequest({ method: 'get', path: '/debug/configz' }, targets)).toEqual({ stdout: 'GET /debug/configz\n' });
    expect(await runRequest({ method: 'POST', path: '/debug/x', body: '{"a":1}' }, targets)).toEqual({ stdout: 'POST /debug/x {"a":1}\n' });
    expect(seen[1]).toMatchObject({ method: 'POST', type: 'application/json', body: '{"a":1}' });
  });

  it('fails on an HTTP error status, still printing the body', async () => {
    const outcome = await runRequest({ method: 'GET', path: '/missing' }, { monitoring: base, debug: base });
    expect(outcome).toEqual({ stdout: 'no such page\n', stderr: `error: GET ${base}/missing: 404 Not Found\n`, exitCode: 1 });
  });

  it('fails clearly when nothing listens', async () => {
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const dead = `http://127.0.0.1:${port}`;
    await expect(runRequest({ method: 'GET', path: '/metrics' }, { monitoring: dead, debug: dead })).rejects.toThrow(
      new CliError(`GET ${dead}/metrics: connect ECONNREFUSED 127.0.0.1:${port} (is the daemon running on this host?)`),
    );
  });

  it('times out', async () => {
    const silent = http.createServer(() => {});
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
    await expect(runRequest({ method: 'GET', path: '/debug/x' }, { monitoring: url, debug: url }, 100)).rejects.toThrow('no response within 0.1s');
    silent.closeAllConnections();
    await new Promise<void>((resolve) => silent.close(() => resolve()));
  });
});

describe('mesh-discovery request', () => {
  it.each([
    [['request', 'GET', 'debug'], 'error: path must start with "/": "debug"\n'],
    [['request', 'G E T', '/x'], 'error: invalid method "G E T"\n'],
    [['request'], "error: missing required argument 'method'\n"],
  ])('%j fails with exit code 1', async (argv, message) => {
    const c = captureIO();
    expect(await main(argv, c.io)).toBe(1);
    expect(c.stderr()).toBe(message);
  });
});
