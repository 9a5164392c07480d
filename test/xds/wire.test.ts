/**
 * The hand-framed responses must be exactly what the generated decoders (and so every xDS client)
 * read back: same versions, type URLs, nonces, resources, removed names and control plane id.
 */
import { ControlPlane } from '../../src/gen/envoy/config/core/v3/base.js';
import { Cluster } from '../../src/gen/envoy/config/cluster/v3/cluster.js';
import { DeltaDiscoveryResponse, DiscoveryResponse, Resource } from '../../src/gen/envoy/service/discovery/v3/discovery.js';
import { Any } from '../../src/gen/google/protobuf/any.js';
import { TypeUrl } from '../../src/xds/types.js';
import { encodeAny, encodeControlPlane, encodeDeltaResource, frameDeltaDiscoveryResponse, frameDiscoveryResponse, frameMessage } from '../../src/xds/wire.js';

const encodeDiscoveryResponse = (...a: Parameters<typeof frameDiscoveryResponse>): Buffer => frameMessage(frameDiscoveryResponse(...a));
const encodeDeltaDiscoveryResponse = (...a: Parameters<typeof frameDeltaDiscoveryResponse>): Buffer => frameMessage(frameDeltaDiscoveryResponse(...a));

/** Deterministic, non-trivial bytes of a given length (every byte value occurs). */
function bytes(n: number, seed = 7): Buffer {
  const out = Buffer.alloc(n);
  let x = seed;
  for (let i = 0; i < n; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    out[i] = x >>> 24;
  }
  return out;
}

const KiB = 1024;
const MiB = 1024 * KiB;

describe('encodeAny', () => {
  it('decodes to the given type URL and value', () => {
    const value = Cluster.encode(Cluster.fromPartial({ name: 'outbound|80||a.default.svc.cluster.local' })).finish();
    const any = Any.decode(encodeAny(TypeUrl.Cluster, value));
    expect(any.typeUrl).toBe(TypeUrl.Cluster);
    expect(Buffer.from(any.value).equals(Buffer.from(value))).toBe(true);
    expect(Cluster.decode(any.value).name).toBe('outbound|80||a.default.svc.cluster.local');
  });

  it('is byte-identical to the generated encoder', () => {
    const value = bytes(300);
    expect(Buffer.from(encodeAny(TypeUrl.Route, value)).equals(Buffer.from(Any.encode({ typeUrl: TypeUrl.Route, value }).finish()))).toBe(true);
  });

  it.each([
    ['0 bytes', 0],
    ['127 bytes (1-byte length)', 127],
    ['128 bytes (2-byte length)', 128],
    ['16 KiB + 1 (3-byte length)', 16 * KiB + 1],
    ['2 MiB + 3 (4-byte length)', 2 * MiB + 3],
    ['3 MiB', 3 * MiB],
  ])('keeps a value of %s intact', (_label, n) => {
    const value = bytes(n, n + 1);
    const any = Any.decode(encodeAny(TypeUrl.Endpoint, value));
    expect(any.typeUrl).toBe(TypeUrl.Endpoint);
    expect(any.value.length).toBe(n);
    expect(Buffer.from(any.value).equals(Buffer.from(value))).toBe(true);
  });

  it('keeps multi-byte UTF-8 in the type URL', () => {
    const url = 'type.googleapis.com/ünïcødé.Ω';
    expect(Any.decode(encodeAny(url, new Uint8Array([1, 2, 3]))).typeUrl).toBe(url);
  });
});

describe('encodeControlPlane', () => {
  it('decodes to the identifier', () => {
    expect(ControlPlane.decode(encodeControlPlane('meshd-7f9c-xyz')).identifier).toBe('meshd-7f9c-xyz');
  });
});

describe('encodeDiscoveryResponse', () => {
  it('decodes to exactly the given version, type URL, nonce, resources and control plane', () => {
    const r1 = encodeAny(TypeUrl.Cluster, Cluster.encode(Cluster.fromPartial({ name: 'c1' })).finish());
    const r2 = encodeAny(TypeUrl.Cluster, Cluster.encode(Cluster.fromPartial({ name: 'c2' })).finish());
    const frame = encodeDiscoveryResponse('2026-11-01T00:00:00Z/3', TypeUrl.Cluster, 'n-42', [r1, r2], encodeControlPlane('meshd-1'));
    const msg = DiscoveryResponse.decode(frame);
    expect(msg.versionInfo).toBe('2026-11-01T00:00:00Z/3');
    expect(msg.typeUrl).toBe(TypeUrl.Cluster);
    expect(msg.nonce).toBe('n-42');
    expect(msg.canary).toBe(false);
    expect(msg.controlPlane).toEqual({ identifier: 'meshd-1' });
    expect(msg.resources.map((a) => a.typeUrl)).toEqual([TypeUrl.Cluster, TypeUrl.Cluster]);
    expect(msg.resources.map((a) => Cluster.decode(a.value).name)).toEqual(['c1', 'c2']);
  });

  it('equals the generated encoder byte for byte', () => {
    const value = bytes(1000);
    const any = { typeUrl: TypeUrl.Listener, value };
    const ours = encodeDiscoveryResponse('v1', TypeUrl.Listener, 'abc', [encodeAny(any.typeUrl, any.value)], encodeControlPlane('cp'));
    const theirs = DiscoveryResponse.encode(
      DiscoveryResponse.fromPartial({ versionInfo: 'v1', typeUrl: TypeUrl.Listener, nonce: 'abc', resources: [any], controlPlane: { identifier: 'cp' } }),
    ).finish();
    expect(Buffer.from(ours).equals(Buffer.from(theirs))).toBe(true);
  });

  it('carries an empty resource list (a SotW "nothing left") and no control plane when none is given', () => {
    const msg = DiscoveryResponse.decode(encodeDiscoveryResponse('v2', TypeUrl.Endpoint, 'n', []));
    expect(msg.resources).toEqual([]);
    expect(msg.versionInfo).toBe('v2');
    expect(msg.typeUrl).toBe(TypeUrl.Endpoint);
    expect(msg.nonce).toBe('n');
    expect(msg.controlPlane).toBeUndefined();
  });

  it('keeps empty strings empty', () => {
    const msg = DiscoveryResponse.decode(encodeDiscoveryResponse('', TypeUrl.Route, '', [encodeAny(TypeUrl.Route, new Uint8Array())]));
    expect(msg.versionInfo).toBe('');
    expect(msg.nonce).toBe('');
    expect(msg.resources).toHaveLength(1);
    expect(msg.resources[0]).toEqual({ typeUrl: TypeUrl.Route, value: new Uint8Array() });
  });

  it('keeps large resources (> 16 KiB and > 2 MiB, multi-byte varint lengths) intact and in order', () => {
    const small = bytes(10, 1);
    const mid = bytes(16 * KiB + 5, 2);
    const big = bytes(2 * MiB + 17, 3);
    const frame = encodeDiscoveryResponse('v', TypeUrl.Cluster, 'n', [encodeAny(TypeUrl.Cluster, small), encodeAny(TypeUrl.Cluster, mid), encodeAny(TypeUrl.Cluster, big)], encodeControlPlane('id'));
    const msg = DiscoveryResponse.decode(frame);
    expect(msg.resources.map((r) => r.value.length)).toEqual([small.length, mid.length, big.length]);
    expect(Buffer.from(msg.resources[1].value).equals(Buffer.from(mid))).toBe(true);
    expect(Buffer.from(msg.resources[2].value).equals(Buffer.from(big))).toBe(true);
    // fields after the big resources still decode
    expect(msg.typeUrl).toBe(TypeUrl.Cluster);
    expect(msg.nonce).toBe('n');
    expect(msg.controlPlane?.identifier).toBe('id');
  });

  it('frames many resources', () => {
    const many = Array.from({ length: 5000 }, (_, i) => encodeAny(TypeUrl.Cluster, Cluster.encode(Cluster.fromPartial({ name: `c${i}` })).finish()));
    const msg = DiscoveryResponse.decode(encodeDiscoveryResponse('v', TypeUrl.Cluster, 'n', many));
    expect(msg.resources).toHaveLength(5000);
    expect(Cluster.decode(msg.resources[4999].value).name).toBe('c4999');
  });
});

describe('encodeDeltaResource', () => {
  it('decodes to name, version and Any', () => {
    const anyBytes = encodeAny(TypeUrl.Cluster, Cluster.encode(Cluster.fromPartial({ name: 'c1' })).finish());
    const r = Resource.decode(encodeDeltaResource('c1', 'ver-1', anyBytes));
    expect(r.name).toBe('c1');
    expect(r.version).toBe('ver-1');
    expect(r.aliases).toEqual([]);
    expect(r.resource?.typeUrl).toBe(TypeUrl.Cluster);
    expect(Cluster.decode(r.resource!.value).name).toBe('c1');
  });
});

describe('encodeDeltaDiscoveryResponse', () => {
  it('decodes to exactly the given system version, type URL, nonce, resources, removed names and control plane', () => {
    const res = ['a', 'b'].map((n) => encodeDeltaResource(n, `v-${n}`, encodeAny(TypeUrl.Cluster, Cluster.encode(Cluster.fromPartial({ name: n })).finish())));
    const frame = encodeDeltaDiscoveryResponse('sys-9', TypeUrl.Cluster, 'nonce-9', res, ['gone-1', 'gone-2'], encodeControlPlane('meshd-2'));
    const msg = DeltaDiscoveryResponse.decode(frame);
    expect(msg.systemVersionInfo).toBe('sys-9');
    expect(msg.typeUrl).toBe(TypeUrl.Cluster);
    expect(msg.nonce).toBe('nonce-9');
    expect(msg.removedResources).toEqual(['gone-1', 'gone-2']);
    expect(msg.removedResourceNames).toEqual([]);
    expect(msg.controlPlane).toEqual({ identifier: 'meshd-2' });
    expect(msg.resources.map((r) => [r.name, r.version, r.resource?.typeUrl])).toEqual([
      ['a', 'v-a', TypeUrl.Cluster],
      ['b', 'v-b', TypeUrl.Cluster],
    ]);
    expect(msg.resources.map((r) => Cluster.decode(r.resource!.value).name)).toEqual(['a', 'b']);
  });

  it('reads back the same as the generated encoder’s output, at the same size', () => {
    const any = { typeUrl: TypeUrl.Endpoint, value: bytes(200) };
    const ours = encodeDeltaDiscoveryResponse('s', TypeUrl.Endpoint, 'n1', [encodeDeltaResource('x', 'vx', encodeAny(any.typeUrl, any.value))], ['y', 'z'], encodeControlPlane('cp'));
    const theirs = DeltaDiscoveryResponse.encode(
      DeltaDiscoveryResponse.fromPartial({
        systemVersionInfo: 's',
        typeUrl: TypeUrl.Endpoint,
        nonce: 'n1',
        resources: [{ name: 'x', version: 'vx', resource: any }],
        removedResources: ['y', 'z'],
        controlPlane: { identifier: 'cp' },
      }),
    ).finish();
    // the generated encoder writes nonce (5) after removed_resources (6); the decoded messages must agree
    expect(DeltaDiscoveryResponse.decode(ours)).toEqual(DeltaDiscoveryResponse.decode(theirs));
    expect(ours.length).toBe(theirs.length);
  });

  it('carries empty resource and removal lists', () => {
    const msg = DeltaDiscoveryResponse.decode(encodeDeltaDiscoveryResponse('s', TypeUrl.Listener, 'n', [], []));
    expect(msg.resources).toEqual([]);
    expect(msg.removedResources).toEqual([]);
    expect(msg.typeUrl).toBe(TypeUrl.Listener);
    expect(msg.nonce).toBe('n');
    expect(msg.controlPlane).toBeUndefined();
  });

  it('carries removals only', () => {
    const msg = DeltaDiscoveryResponse.decode(encodeDeltaDiscoveryResponse('s', TypeUrl.Route, 'n', [], ['80', 'ünïcødé:443']));
    expect(msg.resources).toEqual([]);
    expect(msg.removedResources).toEqual(['80', 'ünïcødé:443']);
  });

  it('keeps large resources (> 16 KiB and > 2 MiB) intact', () => {
    const mid = bytes(16 * KiB + 1, 4);
    const big = bytes(2 * MiB + 1, 5);
    const frame = encodeDeltaDiscoveryResponse(
      's',
      TypeUrl.Endpoint,
      'n',
      [encodeDeltaResource('mid', 'v1', encodeAny(TypeUrl.Endpoint, mid)), encodeDeltaResource('big', 'v2', encodeAny(TypeUrl.Endpoint, big))],
      ['old'],
      encodeControlPlane('cp'),
    );
    const msg = DeltaDiscoveryResponse.decode(frame);
    expect(msg.resources.map((r) => [r.name, r.version, r.resource?.value.length])).toEqual([
      ['mid', 'v1', mid.length],
      ['big', 'v2', big.length],
    ]);
    expect(Buffer.from(msg.resources[0].resource!.value).equals(Buffer.from(mid))).toBe(true);
    expect(Buffer.from(msg.resources[1].resource!.value).equals(Buffer.from(big))).toBe(true);
    expect(msg.removedResources).toEqual(['old']);
    expect(msg.controlPlane?.identifier).toBe('cp');
  });
});
