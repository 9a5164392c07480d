/**
 * Request messages are assembled in buffers of their own (src/xds/frame-reader.ts): whatever way a
 * stream's bytes are cut into chunks, the reader returns the same messages as grpc-js's framing, and
 * it keeps no chunk it was given (a chunk is a view of a socket read shared with other streams).
 */
import * as grpc from '@grpc/grpc-js';
import { jest } from '@jest/globals';
import { MessageReader, compactReads } from '../../src/xds/frame-reader.js';
import { TypeUrl } from '../../src/xds/types.js';
import { Cluster } from '../../src/gen/envoy/config/cluster/v3/cluster.js';
import { serviceEntry, sidecarNode, startAds, type Harness } from './ads-harness.js';

function framed(payload: Buffer, flag = 0): Buffer {
  const prefix = Buffer.alloc(5);
  prefix[0] = flag;
  prefix.writeUInt32BE(payload.length, 1);
  return Buffer.concat([prefix, payload]);
}

function pattern(n: number, seed: number): Buffer {
  const b = Buffer.alloc(n);
  for (let i = 0; i < n; i++) b[i] = (i * 31 + seed) & 0xff;
  return b;
}

describe('MessageReader', () => {
  const messages = [pattern(0, 1), pattern(3, 2), pattern(200_000, 3), pattern(70_000, 4), pattern(1, 5)];
  const stream = Buffer.concat(messages.map((m, i) => framed(m, i === 1 ? 1 : 0)));

  for (const size of [1, 4, 5, 7, 1000, 65_536, stream.length]) {
    it(`returns every message whole, prefix included, from chunks of ${size} bytes`, () => {
      const r = new MessageReader(-1);
      const out: Buffer[] = [];
      for (let at = 0; at < stream.length; at += size) out.push(...r.write(stream.subarray(at, at + size)));
      expect(out.map((m) => m.length)).toEqual(messages.map((m) => m.length + 5));
      out.forEach((m, i) => {
        expect(m[0]).toBe(i === 1 ? 1 : 0);
        expect(m.readUInt32BE(1)).toBe(messages[i].length);
        expect(m.subarray(5).equals(messages[i])).toBe(true);
      });
      expect(r.heldBytes).toBe(0);
    });
  }

  it('keeps none of the chunks it was given once a message is complete', () => {
    const r = new MessageReader(-1);
    const big = framed(pattern(100_000, 9));
    const first = Buffer.from(big.subarray(0, 60_000));
    expect(r.write(first)).toEqual([]);
    const out = r.write(Buffer.from(big.subarray(60_000)));
    first.fill(0xee); // the socket's buffer is reused for later reads
    expect(out).toHaveLength(1);
    expect(out[0].equals(big)).toBe(true);
    expect(r.heldBytes).toBe(0);
  });

  it('copies a small piece of a large shared buffer instead of holding the buffer', () => {
    const r = new MessageReader(-1);
    const read = Buffer.alloc(64 * 1024); // one socket read, shared by many streams' frames
    framed(pattern(1000, 1)).copy(read, 100);
    expect(r.write(read.subarray(100, 600))).toEqual([]);
    read.fill(0xee, 0, 100); // the rest of the read belongs to other streams
    read.fill(0xee, 600);
    const rest = framed(pattern(1000, 1)).subarray(500);
    const out = r.write(rest);
    expect(out).toHaveLength(1);
    expect(out[0].equals(framed(pattern(1000, 1)))).toBe(true);
  });

  it('holds about what a client sent of a large announced message, not what it announced', () => {
    const r = new MessageReader(-1);
    const prefix = Buffer.alloc(5);
    prefix.writeUInt32BE(4_000_000, 1);
    r.write(Buffer.concat([prefix, Buffer.alloc(100)]));
    expect(r.heldBytes).toBe(100);
    r.write(Buffer.alloc(200_000));
    expect(r.heldBytes).toBe(200_100);
  });

  it('refuses a message longer than the limit, naming the sizes and the setting', () => {
    const r = new MessageReader(1000);
    const prefix = Buffer.alloc(5);
    prefix.writeUInt32BE(1001, 1);
    expect(() => r.write(prefix)).toThrow('a request message of 1001 bytes is larger than the limit of 1000 bytes (MESH_GPRC_MAXRECVMSGSIZE)');
  });
});

describe('compactReads on ADS streams', () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  it('takes the place of the pinned grpc-js decoder, and the stream still serves requests', async () => {
    h = await startAds(Array.from({ length: 300 }, (_, i) => serviceEntry(`svc-${i}`, [`10.1.${i >> 8}.${i & 255}`])).join(''));
    const reads = jest.spyOn(MessageReader.prototype, 'write');
    const s = h.sotw(sidecarNode());
    // an EDS request of several HTTP/2 frames (past 16 KiB), then CDS
    const names = Array.from({ length: 300 }, (_, i) => `outbound|8080||svc-${i}.default.svc.cluster.local`);
    s.send({ typeUrl: TypeUrl.Endpoint, names });
    const eds = await s.next(5000);
    expect(eds.typeUrl).toBe(TypeUrl.Endpoint);
    s.send({ typeUrl: TypeUrl.Cluster });
    const cds = await s.next(5000);
    expect(cds.resources.map((a) => Cluster.decode(a.value).name)).toContain('outbound|8080||svc-299.default.svc.cluster.local');
    // every byte of the requests went through the reader, none through grpc-js's decoder
    expect(reads.mock.calls.reduce((n, [d]) => n + d.length, 0)).toBeGreaterThan(names.join('').length);
    reads.mockRestore();
    // a decoder of another shape is left in place
    expect(compactReads({ call: { decoder: new MessageReader(-1) } })).toBe(false);
  });

  it('finishes a message grpc-js had started before handing over', () => {
    // a stand-in with grpc-js's fields: mid-message until its next write completes it
    const written: Buffer[] = [];
    const theirs = {
      readState: 2,
      maxReadMessageLength: -1,
      write(d: Buffer): Buffer[] {
        written.push(d);
        this.readState = 0;
        return [Buffer.from('done')];
      },
    };
    const inner = { decoder: theirs as unknown };
    expect(compactReads({ call: inner })).toBe(true);
    const first = (inner.decoder as { write(d: Buffer): Buffer[] }).write(Buffer.from('rest'));
    expect(first.map(String)).toEqual(['done']);
    expect(inner.decoder).toBeInstanceOf(MessageReader);
    const next = (inner.decoder as MessageReader).write(framed(Buffer.from('x')));
    expect(next).toHaveLength(1);
    expect(written).toHaveLength(1);
  });

  it('ends a stream whose request passes the receive limit with RESOURCE_EXHAUSTED', async () => {
    h = await startAds('', { grpcOptions: { 'grpc.max_receive_message_length': 2000 } });
    const s = h.sotw(sidecarNode());
    s.send({ typeUrl: TypeUrl.Endpoint, names: Array.from({ length: 100 }, (_, i) => `outbound|8080||svc-${i}.default.svc.cluster.local`) });
    const end = await s.ended(5000);
    expect(end.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(end.details).toContain('larger than the limit of 2000 bytes');
  });
});
