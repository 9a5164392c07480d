/**
 * Request messages are assembled in buffers of their own (src/xds/frame-reader.ts): whatever way a
 * stream's bytes are cut into chunks, the reader returns the same messages as grpc-js's framing, and
 * it keeps no chunk it was given (a chunk is a view of a socket read shared with other streams).
 */
import * as grpc from '@grpc/grpc-js';
import { jest } from '@jest/globals';
import { MESSAGE_BLOCK_BYTES, MessageReader, compactReads, elidedNames, releaseMessage } from '../../src/xds/frame-reader.js';
import { DiscoveryRequest, type DeepPartial } from '../../src/gen/envoy/service/discovery/v3/discovery.js';
import { readSotwRequest } from '../../src/xds/request-intake.js';
import { TypeUrl } from '../../src/xds/types.js';
import { Cluster } from '../../src/gen/envoy/config/cluster/v3/cluster.js';
import { ClusterLoadAssignment } from '../../src/gen/envoy/config/endpoint/v3/endpoint.js';
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

  it('holds no chunk of an incomplete message: the socket read behind it can be reused at once', () => {
    const r = new MessageReader(-1);
    const big = framed(pattern(165_000, 7)); // an EDS request of 3,000 names arrives in three windows
    const read = Buffer.alloc(64 * 1024); // the buffer of one socket read, all of it this stream's
    const out: Buffer[] = [];
    for (let at = 0; at < big.length; at += read.length) {
      const n = big.copy(read, 0, at, at + read.length);
      out.push(...r.write(read.subarray(0, n)));
      read.fill(0xee); // freed after the data event; glibc hands it to the next read
    }
    expect(out).toHaveLength(1);
    expect(out[0].equals(big)).toBe(true);
  });

  it('reads a message longer than a block, announced but sent slowly, holding what arrived', () => {
    const r = new MessageReader(-1);
    const long = framed(pattern(MESSAGE_BLOCK_BYTES * 2 + 123, 5));
    const out: Buffer[] = [];
    for (let at = 0; at < long.length; at += 40_000) {
      out.push(...r.write(long.subarray(at, at + 40_000)));
      if (out.length === 0) expect(r.heldBytes).toBe(Math.min(at + 40_000, long.length) - 5);
    }
    expect(out).toHaveLength(1);
    expect(out[0].equals(long)).toBe(true);
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

  it('gives back a large message it returned once released, and leaves other buffers alone', () => {
    const r = new MessageReader(-1);
    const [big] = r.write(framed(pattern(40_000, 2)));
    const [small] = r.write(framed(pattern(100, 3)));
    const body = big.subarray(5); // what grpc-js hands on
    expect(body.equals(pattern(40_000, 2))).toBe(true);
    releaseMessage(body);
    expect(big.length).toBe(0); // its memory is gone: every view of it is empty
    expect(body.length).toBe(0);
    releaseMessage(small.subarray(5)); // small: Node's pool may share its memory with other buffers
    expect(small.subarray(5).equals(pattern(100, 3))).toBe(true);
    const foreign = framed(pattern(40_000, 4));
    releaseMessage(foreign.subarray(5)); // not the reader's
    expect(foreign.length).toBe(40_005);
  });

  it('refuses a message longer than the limit, naming the sizes and the setting', () => {
    const r = new MessageReader(1000);
    const prefix = Buffer.alloc(5);
    prefix.writeUInt32BE(1001, 1);
    expect(() => r.write(prefix)).toThrow('a request message of 1001 bytes is larger than the limit of 1000 bytes (MESH_GPRC_MAXRECVMSGSIZE)');
  });
});

describe('MessageReader with name runs (DiscoveryRequests whose names repeat a known list)', () => {
  const names = Array.from({ length: 400 }, (_, i) => `outbound|8080||svc-${i}.default.svc.cluster.local`);
  type Fields = DeepPartial<DiscoveryRequest>;
  const encoded = (n: string[], extra: Fields = {}): Buffer =>
    Buffer.from(DiscoveryRequest.encode(DiscoveryRequest.fromPartial({ versionInfo: 'v1', resourceNames: n, typeUrl: TypeUrl.Endpoint, responseNonce: 'n1', ...extra })).finish());
  // the run of resource_names fields as the request carries it (what the intake shares per list)
  const runOf = (n: string[]): Buffer => Buffer.from(DiscoveryRequest.encode(DiscoveryRequest.fromPartial({ resourceNames: n })).finish());
  const known = runOf(names);
  const runs = (first: Buffer): Buffer[] => (known.subarray(0, first.length).equals(first) ? [known] : []);

  function readAll(bytes: Buffer, size: number, r = new MessageReader(-1, runs)): Buffer[] {
    const out: Buffer[] = [];
    for (let at = 0; at < bytes.length; at += size) out.push(...r.write(bytes.subarray(at, at + size)));
    return out;
  }

  for (const size of [1, 3, 17, 1000, 16_384, 1_000_000]) {
    it(`keeps only the other fields of an ACK repeating the list, from chunks of ${size} bytes`, () => {
      const req = encoded(names);
      const r = new MessageReader(-1, runs);
      const out = readAll(Buffer.concat([framed(req), framed(encoded(names, { responseNonce: 'n2' }))]), size, r);
      expect(out).toHaveLength(2);
      for (const [i, m] of out.entries()) {
        expect(m.length).toBeLessThan(100); // not the 20 KB of names
        expect(elidedNames(m.subarray(5))).toBe(known);
        const read = readSotwRequest(m.subarray(5), undefined, elidedNames(m.subarray(5)));
        expect([...read.names]).toEqual(names);
        expect(read.nonce).toBe(i === 0 ? 'n1' : 'n2');
        expect(read.typeUrl).toBe(TypeUrl.Endpoint);
      }
      expect(r.heldBytes).toBe(0);
    });
  }

  it('holds the other fields, not the names, while a request arrives', () => {
    const r = new MessageReader(-1, runs);
    const req = framed(encoded(names));
    expect(r.write(req.subarray(0, req.length - 30))).toEqual([]);
    expect(r.heldBytes).toBeLessThan(200);
  });

  const whole: Array<[string, string[], Fields]> = [
    ['names of no known list', names.map((n) => `${n}x`), {}],
    ['one name less than the list', names.slice(0, -1), {}],
    ['one name more than the list', [...names, 'outbound|8080||extra.default.svc.cluster.local'], {}],
    ['a changed name in the middle', names.map((n, i) => (i === 200 ? 'outbound|8080||other.default.svc.cluster.local' : n)), {}],
    ['the list and a node', names, { node: { id: 'sidecar~10.0.0.1~a.default~default.svc.cluster.local' } }],
    ['the list and an error', names, { errorDetail: { code: 3, message: 'rejected' } }],
  ];
  for (const [what, n, extra] of whole) {
    for (const size of [7, 5000, 1_000_000]) {
      it(`returns a request with ${what} as sent (chunks of ${size} bytes)`, () => {
        const req = encoded(n, extra);
        const [m] = readAll(framed(req), size);
        const names = elidedNames(m.subarray(5));
        const back = names ? DiscoveryRequest.decode(Buffer.concat([m.subarray(5), names])) : DiscoveryRequest.decode(m.subarray(5));
        expect(back).toEqual(DiscoveryRequest.decode(req));
        if (!names) expect(m.subarray(5).equals(req)).toBe(true);
      });
    }
  }

  it('compares requests arriving at once with names no list has yet, holding their names once', () => {
    const fresh = names.map((n) => n.replace('svc-', 'new-'));
    const none = (): Buffer[] => [];
    const readers = [0, 1, 2, 3].map(() => new MessageReader(-1, none));
    const reqs = [encoded(fresh), encoded(fresh, { responseNonce: 'b' }), encoded(fresh.map((n, i) => (i === 300 ? `${n}x` : n))), encoded(fresh.slice(0, 100))].map((r) => framed(r));
    const out: Buffer[][] = readers.map(() => []);
    // interleaved, each stream at its own pace, as HTTP/2 delivers a storm's requests
    for (let step = 0; out.some((o, i) => o.length === 0 && step * 997 * (i + 1) < reqs[i].length + 997 * 4); step++) {
      readers.forEach((r, i) => {
        const size = 997 * (i + 1);
        if (step * size < reqs[i].length) out[i].push(...r.write(reqs[i].subarray(step * size, (step + 1) * size)));
      });
      if (step === 5) expect(readers[0].heldBytes + readers[1].heldBytes).toBeLessThan(200); // the names are held by the shared run, once
    }
    const back = out.map(([m]) => {
      const run = elidedNames(m.subarray(5));
      return { run, req: DiscoveryRequest.decode(run ? Buffer.concat([m.subarray(5), run]) : m.subarray(5)) };
    });
    back.forEach(({ req }, i) => expect(req).toEqual(DiscoveryRequest.decode(reqs[i].subarray(5))));
    expect(back[0].run).toBeDefined();
    expect(back[1].run?.equals(back[0].run!)).toBe(true);
    expect(back[2].run).toBeDefined(); // differs from name 300 on (another scope's list): a list of its own
    expect(back[2].run).not.toBe(back[0].run);
    expect(back[3].run?.length).toBeLessThan(back[0].run!.length); // a prefix of the others' names, ending on a name
  });

  it('follows several lists that start alike and part at the same name, each stream to its own', () => {
    const shared = names.slice(0, 100).map((n) => n.replace('svc-', 'part-'));
    const lists = [0, 1, 2, 0].map((k) => [...shared, ...names.slice(100).map((n) => `${n}-${k}`)]);
    const reqs = lists.map((l) => framed(encoded(l)));
    const readers = reqs.map(() => new MessageReader(-1, () => []));
    const out: Buffer[][] = reqs.map(() => []);
    // the slower streams reach the parting name after the faster ones each started a list there
    const sizes = [4001, 3001, 2001, 1001];
    for (let step = 0; reqs.some((r, i) => step * sizes[i] < r.length); step++) {
      readers.forEach((r, i) => {
        if (step * sizes[i] < reqs[i].length) out[i].push(...r.write(reqs[i].subarray(step * sizes[i], (step + 1) * sizes[i])));
      });
    }
    const runs = out.map(([m]) => elidedNames(m.subarray(5)));
    out.forEach(([m], i) => expect(DiscoveryRequest.decode(Buffer.concat([m.subarray(5), runs[i]!]))).toEqual(DiscoveryRequest.decode(reqs[i].subarray(5))));
    expect(runs[3]!.equals(runs[0]!)).toBe(true);
    expect(runs[1]!.equals(runs[0]!)).toBe(false);
  });

  it('keeps whole a compressed message, and one whose names come in two runs', () => {
    const req = encoded(names);
    const [compressed] = readAll(framed(req, 1), 100);
    expect(compressed.subarray(5).equals(req)).toBe(true);
    expect(elidedNames(compressed.subarray(5))).toBeUndefined();
    const split = Buffer.concat([req, runOf(['late-name'])]);
    const [m] = readAll(framed(split), 999);
    expect(m.subarray(5).equals(split)).toBe(true);
  });

  it('keeps whole bytes that are no DiscoveryRequest, for the intake to refuse', () => {
    const junk = pattern(10_000, 3);
    const [m] = readAll(framed(junk), 333);
    expect(m.subarray(5).equals(junk)).toBe(true);
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

  it('answers a large subscription, recognises its ACK and follows a changed one, with requests released after reading', async () => {
    h = await startAds(Array.from({ length: 601 }, (_, i) => serviceEntry(`svc-${i}`, [`10.2.${i >> 8}.${i & 255}`])).join(''));
    const s = h.sotw(sidecarNode());
    const names = Array.from({ length: 600 }, (_, i) => `outbound|8080||svc-${i}.default.svc.cluster.local`); // ~30 KB
    s.send({ typeUrl: TypeUrl.Endpoint, names });
    const eds = await s.next(5000);
    expect(eds.resources).toHaveLength(600);
    s.ack(eds, names);
    // a changed subscription (one name more) is answered; had the name tables kept the ACK's or the
    // first request's bytes, the released buffers would read as empty here
    const more = [...names, 'outbound|8080||svc-600.default.svc.cluster.local'];
    s.send({ typeUrl: TypeUrl.Endpoint, names: more, nonce: eds.nonce, version: eds.versionInfo });
    const again = await s.nextMatching((r) => r.nonce !== eds.nonce, 5000);
    expect(again.resources.map((a) => ClusterLoadAssignment.decode(a.value).clusterName)).toContain(more[600]);
    expect(s.status()).toBeUndefined();
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
