/**
 * Responses are framed once and written to every stream as they are (src/xds/frame-writer.ts). These
 * tests run a real grpc-js server and client on loopback: the pinned grpc-js must take the direct
 * path (else an upgrade silently brings back a copy per stream), and what a client receives — large
 * responses past the HTTP/2 flow-control window, the final status after the last frame — must be
 * the same as through grpc-js's own `call.write`.
 */
import { Cluster } from '../../src/gen/envoy/config/cluster/v3/cluster.js';
import { TypeUrl } from '../../src/xds/types.js';
import { DiscoveryResponse } from '../../src/gen/envoy/service/discovery/v3/discovery.js';
import { encodeAny, frameDiscoveryResponse, frameMessage, GRPC_PREFIX_BYTES } from '../../src/xds/wire.js';
import { serviceEntry, sidecarNode, startAds, type Harness } from './ads-harness.js';
import type { SotwStream } from '../support/ads-client.js';
import { eventually } from '../support/eventually.js';

/** Enough services that one sidecar's CDS response is several times the 64 KiB HTTP/2 window. */
const MANY = Array.from({ length: 800 }, (_, i) => serviceEntry(`svc-${i}`, [`10.1.${i >> 8}.${i & 255}`])).join('');

const harnesses: Harness[] = [];
afterEach(async () => {
  for (const h of harnesses.splice(0)) await h.close();
});

async function start(directWrites: boolean): Promise<Harness> {
  const h = await startAds(MANY, { options: { directWrites } });
  harnesses.push(h);
  return h;
}

async function cds(s: SotwStream): Promise<DiscoveryResponse> {
  s.send({ typeUrl: TypeUrl.Cluster });
  const res = await s.next(5000);
  expect(res.typeUrl).toBe(TypeUrl.Cluster);
  return res;
}

const clusterNames = (res: DiscoveryResponse): string[] => res.resources.map((a) => Cluster.decode(a.value).name);

describe('framed responses', () => {
  it('carry the gRPC prefix (flag 0, message length) in front of exactly the encoded response', () => {
    const anys = [encodeAny(TypeUrl.Cluster, Buffer.from('a')), encodeAny(TypeUrl.Cluster, Buffer.alloc(70_000, 7))];
    const frame = frameDiscoveryResponse('v1', TypeUrl.Cluster, 'n1', anys);
    const message = frameMessage(frame);
    expect(frame[0]).toBe(0);
    expect(frame.readUInt32BE(1)).toBe(message.length);
    expect(frame.length).toBe(message.length + GRPC_PREFIX_BYTES);
    const decoded = DiscoveryResponse.decode(message);
    expect(decoded.versionInfo).toBe('v1');
    expect(decoded.nonce).toBe('n1');
    expect(decoded.resources.map((r) => r.value.length)).toEqual([1, 70_000]);
  });
});

describe('writing frames to ADS streams', () => {
  it('uses the direct path with the pinned grpc-js', async () => {
    const h = await start(true);
    const s = h.sotw(sidecarNode());
    await cds(s);
    const conns = [...h.ads.connections.values()];
    expect(conns).toHaveLength(1);
    expect(conns[0].writer.direct).toBe(true);
  });

  it('delivers the same responses directly as through grpc-js, past the flow-control window, to several streams at once', async () => {
    const direct = await start(true);
    const copied = await start(false);
    const [d1, d2, c1] = [direct.sotw(sidecarNode()), direct.sotw(sidecarNode('other')), copied.sotw(sidecarNode())];
    const [rd1, rd2, rc1] = await Promise.all([cds(d1), cds(d2), cds(c1)]);
    expect([...copied.ads.connections.values()][0].writer.direct).toBe(false);
    const bytes = rd1.resources.reduce((n, a) => n + a.value.length, 0);
    expect(bytes).toBeGreaterThan(3 * 64 * 1024);
    expect(clusterNames(rd1)).toHaveLength(clusterNames(rc1).length);
    expect(clusterNames(rd1).sort()).toEqual(clusterNames(rc1).sort());
    expect(rd1.resources.map((a) => Buffer.from(a.value).toString('base64'))).toEqual(rc1.resources.map((a) => Buffer.from(a.value).toString('base64')));
    expect(clusterNames(rd2).sort()).toEqual(clusterNames(rd1).sort());
    // the ACK is accepted and nothing more is sent: the stream is in sync after a direct write
    d1.ack(rd1);
    expect(await d1.quietTypes()).toEqual([]);
  });

  it('ends a stream written directly with the status after its last frame', async () => {
    const h = await start(true);
    const s = h.sotw(sidecarNode());
    const res = await cds(s);
    expect(res.resources.length).toBeGreaterThan(400);
    h.ads.close();
    const status = await s.ended(3000);
    expect(status.code).toBe(14); // UNAVAILABLE
    expect(status.details).toBe('server shutting down');
  });

  it('sends a change to a client that has ACKed a direct write', async () => {
    const h = await start(true);
    const s = h.sotw(sidecarNode());
    const first = await cds(s);
    s.ack(first);
    await h.change(serviceEntry('added', ['10.9.9.9']));
    const next = await s.next(5000);
    expect(clusterNames(next)).toContain('outbound|8080||added.default.svc.cluster.local');
  });
});

describe('the frame cache', () => {
  it('shares one frame during a fan-out, drops it once idle, and builds it again for a later client', async () => {
    const h = await startAds(MANY, { options: { frameIdleMs: 200 } });
    harnesses.push(h);
    const [a, b] = [h.sotw(sidecarNode()), h.sotw(sidecarNode())];
    const [ra, rb] = await Promise.all([cds(a), cds(b)]);
    expect(rb.nonce).toBe(ra.nonce);
    expect(h.ads.cachedFrames).toBeGreaterThan(0);
    await eventually('idle frames dropped', () => h.ads.cachedFrames === 0, { timeoutMs: 3000 });
    const later = await cds(h.sotw(sidecarNode()));
    expect(clusterNames(later).sort()).toEqual(clusterNames(ra).sort());
    expect(h.ads.cachedFrames).toBe(1);
  });
});
