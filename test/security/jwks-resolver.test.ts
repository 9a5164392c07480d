/**
 * The JWKS resolver against a real loopback HTTP server (docs/adr/0100): fetches what the model
 * wants, bounds each fetch in time and size, refuses what is not a key set, keeps the last good key
 * set when a refresh fails, retries a failed first fetch, forgets URIs no longer wanted, and counts
 * every network fetch.
 */
import { createServer, type Server, type ServerResponse } from 'node:http';
import pino from 'pino';
import { JwksResolver } from '../../src/security/jwks-resolver.js';
import { eventually } from '../support/eventually.js';

const KEYS = (kid: string): string => JSON.stringify({ keys: [{ kty: 'oct', kid, k: 'c2VjcmV0' }] });

describe('JwksResolver', () => {
  let server: Server;
  let base: string;
  let handler: (path: string, res: ServerResponse) => void;
  const resolvers: JwksResolver[] = [];

  beforeAll(async () => {
    server = createServer((req, res) => handler(req.url ?? '', res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  });
  afterEach(() => {
    for (const r of resolvers.splice(0)) r.stop();
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  function resolver(opts: { refreshMs?: number; timeoutMs?: number; maxBytes?: number; retryMs?: number } = {}) {
    const counts = { success: 0, fail: 0, changes: 0 };
    const r = new JwksResolver({
      refreshMs: opts.refreshMs ?? 60_000,
      timeoutMs: opts.timeoutMs,
      maxBytes: opts.maxBytes,
      retryMs: opts.retryMs ?? 50,
      counters: { success: () => counts.success++, fail: () => counts.fail++ },
      log: pino({ level: 'silent' }),
    });
    r.onChange(() => counts.changes++);
    resolvers.push(r);
    return { r, counts };
  }

  it('fetches a wanted URI once, publishes a new view, and counts the fetch', async () => {
    handler = (_p, res) => res.end(KEYS('a'));
    const { r, counts } = resolver();
    const before = r.view();
    r.want(new Set([`${base}/keys`]));
    const entry = await eventually('the key set', () => r.view().get(`${base}/keys`));
    expect(entry).toEqual(expect.objectContaining({ state: 'keys', jwks: KEYS('a') }));
    expect(r.view()).not.toBe(before);
    expect(counts).toEqual({ success: 1, fail: 0, changes: 1 });
    // wanting it again fetches nothing new
    r.want(new Set([`${base}/keys`]));
    expect(counts.success).toBe(1);
    // no longer wanted: forgotten
    r.want(new Set());
    expect(r.view().size).toBe(0);
  });

  it.each([
    ['a body over the byte bound', (res: ServerResponse) => res.end(JSON.stringify({ keys: [{ kty: 'oct', k: 'x'.repeat(5000) }] })), /larger than 1000 bytes/],
    ['an error status', (res: ServerResponse) => res.writeHead(503).end('busy'), /HTTP status 503/],
    ['something that is not a key set', (res: ServerResponse) => res.end('{"keys": []}'), /not a key set \(the "keys" array is empty\)/],
    ['no answer within the deadline', (res: ServerResponse) => setTimeout(() => res.end(KEYS('late')), 2_000), /no complete response within 300 ms/],
  ])('fails a fetch with %s, names the reason and counts it', async (_what, answer, reason) => {
    handler = (_p, res) => answer(res);
    const { r, counts } = resolver({ maxBytes: 1000, timeoutMs: 300, retryMs: 60_000 });
    r.want(new Set([`${base}/keys`]));
    const entry = await eventually('the failure', () => r.view().get(`${base}/keys`), { timeoutMs: 5_000 });
    expect(entry.state).toBe('failed');
    expect(entry.state === 'failed' && entry.reason).toMatch(reason);
    expect(counts.fail).toBe(1);
  });

  it('retries a failed first fetch and then publishes the key set', async () => {
    let n = 0;
    handler = (_p, res) => (++n < 3 ? res.writeHead(500).end() : res.end(KEYS('b')));
    const { r, counts } = resolver({ retryMs: 20 });
    r.want(new Set([`${base}/keys`]));
    await eventually('the key set after retries', () => r.view().get(`${base}/keys`)?.state === 'keys', { timeoutMs: 5_000 });
    expect(counts.fail).toBe(2);
    expect(counts.success).toBe(1);
  });

  it('refreshes on its interval: a changed key set is published, a failed refresh keeps the last good one', async () => {
    let body = KEYS('one');
    let fail = false;
    handler = (_p, res) => (fail ? res.writeHead(500).end() : res.end(body));
    const { r, counts } = resolver({ refreshMs: 100 });
    r.want(new Set([`${base}/keys`]));
    await eventually('first', () => r.view().get(`${base}/keys`)?.state === 'keys');
    const changes = counts.changes;
    // same body: refreshes count but publish nothing
    await eventually('two refreshes', () => counts.success >= 3, { timeoutMs: 5_000 });
    expect(counts.changes).toBe(changes);
    body = KEYS('two');
    await eventually('the new key set', () => {
      const e = r.view().get(`${base}/keys`);
      return e?.state === 'keys' && e.jwks === KEYS('two');
    }, { timeoutMs: 5_000 });
    fail = true;
    await eventually('a failed refresh', () => counts.fail >= 1, { timeoutMs: 5_000 });
    const e = r.view().get(`${base}/keys`);
    expect(e?.state === 'keys' && e.jwks).toBe(KEYS('two'));
  });

  it('refuses URIs past its bound instead of holding them', () => {
    handler = (_p, res) => res.end(KEYS('c'));
    const bounded = new JwksResolver({ refreshMs: 60_000, maxUris: 2, counters: { success: () => undefined, fail: () => undefined }, log: pino({ level: 'silent' }) });
    resolvers.push(bounded);
    bounded.want(new Set([`${base}/1`, `${base}/2`, `${base}/3`]));
    expect(bounded.view().get(`${base}/3`)).toEqual(expect.objectContaining({ state: 'failed', reason: 'more than 2 jwksUris in use' }));
  });
});
