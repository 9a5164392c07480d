/**
 * Requests are read on arrival into a compact form that shares its names with every other request
 * listing them alike, and keeps nothing of the request's own buffer.
 */
import { DiscoveryRequest } from '../../src/gen/envoy/service/discovery/v3/discovery.js';
import { MalformedRequestError, clearRequestIntake, readSotwRequest } from '../../src/xds/request-intake.js';
import { TypeUrl } from '../../src/xds/types.js';

const clusters = Array.from({ length: 3000 }, (_, i) => `outbound|8080|v${i % 3}|svc-${i}.ns-${i % 10}.svc.cluster.local`);

interface RequestFields {
  typeUrl?: string;
  resourceNames?: string[];
  responseNonce?: string;
  versionInfo?: string;
  node?: { id: string };
  errorDetail?: { code: number; message: string };
}

const encode = (p: RequestFields): Buffer => Buffer.from(DiscoveryRequest.encode(DiscoveryRequest.fromPartial({ typeUrl: TypeUrl.Endpoint, ...p })).finish());

beforeEach(() => clearRequestIntake());

describe('readSotwRequest', () => {
  it('reads type, nonce and names of an ACK', () => {
    const req = readSotwRequest(encode({ resourceNames: clusters, responseNonce: 'n-1', versionInfo: 'v-1' }));
    expect(req.typeUrl).toBe(TypeUrl.Endpoint);
    expect(req.nonce).toBe('n-1');
    expect(req.node).toBeUndefined();
    expect(req.error).toBeUndefined();
    expect([...req.names]).toEqual(clusters);
    expect(req.star).toBe(false);
    expect(req.empty).toBe(false);
  });

  it('gives requests with the same names, from different streams, one names Set and one names buffer, not their own', () => {
    const raw1 = encode({ resourceNames: clusters, node: { id: 'sidecar~10.0.0.1~a.ns~ns.svc.cluster.local' } });
    const raw2 = encode({ resourceNames: clusters, responseNonce: 'x' });
    const a = readSotwRequest(raw1);
    const b = readSotwRequest(raw2);
    expect(b.names).toBe(a.names);
    expect(b.namesBytes).toBe(a.namesBytes);
    expect(a.namesBytes!.buffer).not.toBe(raw1.buffer);
    expect(b.namesBytes!.buffer).not.toBe(raw2.buffer);
    expect(a.node?.id).toBe('sidecar~10.0.0.1~a.ns~ns.svc.cluster.local');
    expect(b.nonce).toBe('x');
  });

  it("keeps a stream's list and buffer for its ACKs after the shared table was cleared", () => {
    const first = readSotwRequest(encode({ resourceNames: clusters }));
    clearRequestIntake();
    const ack = readSotwRequest(encode({ resourceNames: clusters, responseNonce: 'n' }), [first.namesBytes!]);
    expect(ack.namesBytes).toBe(first.namesBytes);
    expect(ack.names).toBe(first.names);
  });

  it('tells different lists apart, also of the same length', () => {
    const other = clusters.map((c) => c.replace('svc-1.', 'svc-X.'));
    const a = readSotwRequest(encode({ resourceNames: clusters }));
    const b = readSotwRequest(encode({ resourceNames: other }));
    expect(b.namesBytes!.length).toBe(a.namesBytes!.length);
    expect(b.names).not.toBe(a.names);
    expect(b.names.has('outbound|8080|v1|svc-X.ns-1.svc.cluster.local')).toBe(true);
    expect(a.names.has('outbound|8080|v1|svc-X.ns-1.svc.cluster.local')).toBe(false);
  });

  it('reads the node and the error detail of a NACK around known names', () => {
    readSotwRequest(encode({ resourceNames: clusters }));
    const req = readSotwRequest(
      encode({ resourceNames: clusters, responseNonce: 'n-2', node: { id: 'sidecar~1~p.ns~ns.svc.cluster.local' }, errorDetail: { code: 3, message: 'bad cluster' } }),
    );
    expect(req.error).toEqual({ code: 3, message: 'bad cluster' });
    expect(req.node?.id).toBe('sidecar~1~p.ns~ns.svc.cluster.local');
    expect(req.names.size).toBe(3000);
  });

  it('marks a wildcard and an empty request', () => {
    const star = readSotwRequest(encode({ typeUrl: TypeUrl.Cluster, resourceNames: ['*', 'extra'] }));
    expect(star.star).toBe(true);
    expect([...star.names]).toEqual(['extra']);
    const empty = readSotwRequest(encode({ typeUrl: TypeUrl.Listener }));
    expect(empty.empty).toBe(true);
    expect(empty.names.size).toBe(0);
  });

  it('decodes names that are not in one run (fields in another order) without sharing a buffer', () => {
    // resource_names, then response_nonce, then another resource_names: valid protobuf, names split
    const first = encode({ typeUrl: '', resourceNames: ['a'], responseNonce: 'z' });
    const rest = encode({ typeUrl: TypeUrl.Endpoint, resourceNames: ['b'] });
    const req = readSotwRequest(Buffer.concat([first, rest]));
    expect(req.typeUrl).toBe(TypeUrl.Endpoint);
    expect(req.nonce).toBe('z');
    expect([...req.names].sort()).toEqual(['a', 'b']);
    expect(req.namesBytes).toBeUndefined();
  });

  it('refuses bytes that are not a DiscoveryRequest, saying so', () => {
    expect(() => readSotwRequest(Buffer.from([0x0a, 0xff, 0xff, 0xff, 0x0f]))).toThrow(MalformedRequestError);
    expect(() => readSotwRequest(Buffer.from([0x0a, 0xff, 0xff, 0xff, 0x0f]))).toThrow(/malformed DiscoveryRequest/);
  });
});
