/**
 * What clients put in the daemon is bounded and goes with them (in-process ADS, real gRPC and HTTP/2
 * clients on loopback): a stream that never sends its first request is closed, an oversized node id
 * is refused, and a NACK storm with a distinct message per NACK adds no lasting metric series and
 * only a few log lines.
 */
import * as grpc from '@grpc/grpc-js';
import { connect, constants as h2 } from 'node:http2';
import { Writable } from 'node:stream';
import pino from 'pino';
import { MAX_NODE_ID_BYTES } from '../../src/xds/ads-server.js';
import { TypeUrl } from '../../src/xds/types.js';
import { toYamlDocuments } from '../support/daemon.js';
import { eventually } from '../support/eventually.js';
import { startAds, type Harness } from '../xds/ads-harness.js';
import { meshObjects, sidecarNode } from './support.js';

/** Number of series of a metric in the registry's text. */
async function series(h: Harness, name: string): Promise<number> {
  const text = await h.metrics.registry.getSingleMetricAsString(name);
  return text.split('\n').filter((l) => l.startsWith(`${name}{`)).length;
}

describe('client input', () => {
  let h: Harness;
  const lines: string[] = [];

  beforeAll(async () => {
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(...chunk.toString().split('\n').filter(Boolean));
        done();
      },
    });
    h = await startAds(toYamlDocuments(meshObjects(5)), { options: { firstRequestMs: 300 }, log: pino({ level: 'info' }, sink) });
  });

  afterAll(async () => {
    await h?.close();
  });

  it('closes a stream that sends no request, and keeps one that does', async () => {
    const session = connect(`http://127.0.0.1:${h.port}`);
    try {
      const open = (): { closed: Promise<string | undefined> } => {
        const stream = session.request({
          [h2.HTTP2_HEADER_METHOD]: 'POST',
          [h2.HTTP2_HEADER_PATH]: '/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources',
          [h2.HTTP2_HEADER_CONTENT_TYPE]: 'application/grpc',
          te: 'trailers',
        });
        stream.on('error', () => undefined);
        stream.on('data', () => undefined);
        // the server ends its side with a status (trailers); the client's side stays open
        return {
          closed: new Promise((resolve) => {
            stream.on('trailers', (t) => resolve(String(t['grpc-status'])));
            // a status before any message comes as trailers-only headers
            stream.on('response', (hd) => hd['grpc-status'] !== undefined && resolve(String(hd['grpc-status'])));
            stream.on('close', () => resolve(undefined));
          }),
        };
      };
      const silent = Array.from({ length: 20 }, open);
      const statuses = await Promise.race([
        Promise.all(silent.map((s) => s.closed)),
        new Promise<'open'>((r) => setTimeout(() => r('open'), 10_000).unref()),
      ]);
      expect(statuses).toEqual(Array(20).fill(String(grpc.status.DEADLINE_EXCEEDED)));
    } finally {
      session.destroy();
    }
    // a client that asks in time keeps its stream past the deadline
    const s = h.sotw(sidecarNode(1));
    s.send({ typeUrl: TypeUrl.Cluster });
    await s.next();
    await new Promise((r) => setTimeout(r, 600));
    expect(s.status()).toBeUndefined();
    s.cancel();
  });

  it('refuses a node id longer than the bound, naming it, and keeps nothing of it', async () => {
    const s = h.sotw({ id: `sidecar~10.0.0.1~${'p'.repeat(1024 * 1024)}.default~default.svc.cluster.local`, metadata: { NAMESPACE: 'default' } });
    s.send({ typeUrl: TypeUrl.Cluster });
    const end = await s.ended(10_000);
    expect(end.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(end.details).toContain(`more than the ${MAX_NODE_ID_BYTES} allowed`);
    expect([...h.ads.connections.values()].some((c) => c.proxy.id.length > MAX_NODE_ID_BYTES)).toBe(false);
  });

  it('keeps one NACK series per connected proxy and type, labelled from a bounded set, gone with the proxy; NACK lines are rate-limited', async () => {
    const logged = (): number => lines.filter((l) => l.includes('"msg":"ADS: NACK"')).length;
    const linesBefore = logged();
    const started = performance.now();
    const proxies = 40;
    const nacksEach = 10;
    const streams = Array.from({ length: proxies }, (_, i) => h.sotw(sidecarNode(100 + i)));
    await Promise.all(
      streams.map(async (s, i) => {
        s.send({ typeUrl: TypeUrl.Cluster });
        const res = await s.next(10_000);
        for (let n = 0; n < nacksEach; n++) {
          s.nack(res, `proxy ${i} rejects version ${res.versionInfo}, attempt ${n}: ${'x'.repeat(i)}`);
          // the same nonce NACKed again is still a NACK (a proxy that keeps rejecting)
          await new Promise((r) => setImmediate(r));
        }
      }),
    );
    await eventually('every NACK to be counted', async () => (await h.metric('disc_total_xds_rejects', { type: 'cds' })) >= proxies * nacksEach, { timeoutMs: 10_000 });
    // one series per proxy, whatever the messages
    expect(await series(h, 'disc_xds_cds_reject')).toBe(proxies);
    const text = await h.metrics.registry.getSingleMetricAsString('disc_xds_cds_reject');
    expect(text).toContain('err="INVALID_ARGUMENT"');
    expect(text).not.toContain('rejects version');
    // a storm of NACKs logs a bounded number of lines, and says how many it held back
    // (a burst of 50, then 10 a second: nackLog in ads-server.ts)
    const seconds = (performance.now() - started) / 1000;
    expect(logged() - linesBefore).toBeLessThanOrEqual(50 + Math.ceil(10 * seconds) + 1);
    expect(logged() - linesBefore).toBeLessThan(proxies * nacksEach);
    // the next line let through says how many were held back
    await new Promise((r) => setTimeout(r, 300));
    const last = streams[0];
    last.nack(last.responses[last.responses.length - 1], 'one more');
    await eventually('a line counting the lines held back', () => lines.some((l) => l.includes('"suppressed":')), { timeoutMs: 5000 });
    for (const s of streams) s.cancel();
    await eventually('the proxies to be gone', () => h.ads.connections.size === 0, { timeoutMs: 10_000 });
    expect(await series(h, 'disc_xds_cds_reject')).toBe(0);
  });

  it('keeps at most 4,096 characters of a NACK text (a NACK may carry up to 4 MiB)', async () => {
    const s = h.sotw(sidecarNode(7));
    s.send({ typeUrl: TypeUrl.Cluster });
    const res = await s.next(5000);
    s.nack(res, `rejected: ${'y'.repeat(1024 * 1024)}`);
    const conn = await eventually('the NACK to be recorded', () => [...h.ads.connections.values()].find((c) => c.watches.get(TypeUrl.Cluster)?.lastError));
    const kept = conn.watches.get(TypeUrl.Cluster)!.lastError!;
    expect(kept.length).toBeLessThan(4200);
    expect(kept).toMatch(/^rejected: y+… \(\d+ more characters\)$/);
    s.cancel();
  });
});
