/** The quick read of DiscoveryRequests that lets repeated ACKs skip decoding. */
import { DiscoveryRequest } from '../../src/gen/envoy/service/discovery/v3/discovery.js';
import { scanDiscoveryRequest } from '../../src/xds/request-scan.js';
import { TypeUrl } from '../../src/xds/types.js';

interface RequestShape {
  typeUrl?: string;
  versionInfo?: string;
  responseNonce?: string;
  resourceNames?: string[];
  node?: { id: string };
  errorDetail?: { code: number; message: string };
}

const encode = (p: RequestShape): Buffer =>
  Buffer.from(
    DiscoveryRequest.encode(
      DiscoveryRequest.fromPartial({
        typeUrl: p.typeUrl ?? '',
        versionInfo: p.versionInfo ?? '',
        responseNonce: p.responseNonce ?? '',
        resourceNames: p.resourceNames ?? [],
        node: p.node ? { id: p.node.id } : undefined,
        errorDetail: p.errorDetail ? { code: p.errorDetail.code, message: p.errorDetail.message } : undefined,
      }),
    ).finish(),
  );

describe('scanDiscoveryRequest', () => {
  const names = ['outbound|8080||a.default.svc.cluster.local', 'outbound|8080||b.default.svc.cluster.local'];

  it('reads type URL and nonce, and finds the names as one span, as the full decoder does', () => {
    const raw = encode({ typeUrl: TypeUrl.Endpoint, versionInfo: 'v1', responseNonce: 'n-1', resourceNames: names });
    const scan = scanDiscoveryRequest(raw)!;
    expect(scan.typeUrl).toBe(TypeUrl.Endpoint);
    expect(scan.nonce).toBe('n-1');
    expect(scan.needsDecode).toBe(false);
    // the span holds exactly the names: decoding it alone gives them back
    expect(DiscoveryRequest.decode(scan.names).resourceNames).toEqual(names);
  });

  it('gives equal spans for the same names in the same order, whatever the nonce and version', () => {
    const a = scanDiscoveryRequest(encode({ typeUrl: TypeUrl.Endpoint, versionInfo: 'v1', responseNonce: 'n-1', resourceNames: names }))!;
    const b = scanDiscoveryRequest(encode({ typeUrl: TypeUrl.Endpoint, versionInfo: 'v2', responseNonce: 'n-2', resourceNames: names }))!;
    const c = scanDiscoveryRequest(encode({ typeUrl: TypeUrl.Endpoint, versionInfo: 'v2', responseNonce: 'n-2', resourceNames: [...names].reverse() }))!;
    const d = scanDiscoveryRequest(encode({ typeUrl: TypeUrl.Endpoint, resourceNames: names.slice(1) }))!;
    expect(a.names.equals(b.names)).toBe(true);
    expect(a.names.equals(c.names)).toBe(false);
    expect(a.names.equals(d.names)).toBe(false);
    expect(scanDiscoveryRequest(encode({ typeUrl: TypeUrl.Cluster }))!.names.length).toBe(0);
  });

  it('skips a run of names equal to an expected one, and sees names beyond it', () => {
    const raw = (n: string[]): Buffer => encode({ typeUrl: TypeUrl.Endpoint, versionInfo: 'v1', responseNonce: 'n-1', resourceNames: n });
    const known = scanDiscoveryRequest(raw(names))!.names;
    const same = scanDiscoveryRequest(raw(names), [Buffer.from('unrelated'), known])!;
    expect(same.names.equals(known)).toBe(true);
    expect(same.nonce).toBe('n-1');
    expect(same.known).toBe(known);
    const more = scanDiscoveryRequest(raw([...names, 'outbound|8080||c.default.svc.cluster.local']), [known])!;
    expect(DiscoveryRequest.decode(more.names).resourceNames).toHaveLength(3);
    expect(more.names.equals(known)).toBe(false);
    expect(more.known).toBeUndefined();
    const fewer = scanDiscoveryRequest(raw(names.slice(0, 1)), [known])!;
    expect(DiscoveryRequest.decode(fewer.names).resourceNames).toEqual(names.slice(0, 1));
    expect(fewer.known).toBeUndefined();
  });

  it('asks for a full decode when the request carries a node or an error', () => {
    expect(scanDiscoveryRequest(encode({ typeUrl: TypeUrl.Cluster, node: { id: 'sidecar~1.1.1.1~a.b~b.svc.cluster.local' } }))!.needsDecode).toBe(true);
    expect(scanDiscoveryRequest(encode({ typeUrl: TypeUrl.Cluster, responseNonce: 'n', errorDetail: { code: 3, message: 'bad' } }))!.needsDecode).toBe(true);
  });

  it('refuses truncated bytes and names split by other fields', () => {
    const raw = encode({ typeUrl: TypeUrl.Endpoint, responseNonce: 'n-1', resourceNames: names });
    expect(scanDiscoveryRequest(raw.subarray(0, raw.length - 3))).toBeUndefined();
    // field 3, field 4, field 3: valid protobuf, but the names are not one run
    const first = encode({ resourceNames: [names[0]] });
    const type = encode({ typeUrl: TypeUrl.Endpoint });
    const second = encode({ resourceNames: [names[1]] });
    const split = Buffer.concat([first, type, second]);
    expect(DiscoveryRequest.decode(split).resourceNames).toEqual(names);
    expect(scanDiscoveryRequest(split)).toBeUndefined();
  });
});
