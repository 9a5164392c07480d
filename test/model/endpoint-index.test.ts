/**
 * The endpoint index is what lets an endpoint change reach proxies without rebuilding everything:
 * old views stay intact for pushes in flight, and only hosts that really changed get a new version
 * (which is what makes their EDS resources, and only theirs, be rebuilt and re-sent).
 */
import { EndpointIndex } from '../../src/model/endpoint-index.js';
import { NO_LOCALITY, type Endpoint } from '../../src/model/service.js';

function ep(address: string, over: Partial<Endpoint> = {}): Endpoint {
  return {
    address,
    port: 8080,
    servicePortName: 'http',
    labels: { app: 'a' },
    serviceAccount: 'sa',
    locality: NO_LOCALITY,
    network: '',
    clusterId: 'Cluster',
    weight: 1,
    healthy: true,
    tlsMode: 'mesh',
    workload: `w-${address}`,
    ...over,
  };
}

const A = 'a.default.svc.cluster.local';
const B = 'b.default.svc.cluster.local';
const C = 'c.default.svc.cluster.local';

function seed(): EndpointIndex {
  return EndpointIndex.empty().update(
    new Map([
      [A, [ep('10.0.0.1'), ep('10.0.0.2')]],
      [B, [ep('10.0.1.1')]],
    ]),
  ).index;
}

const addrs = (idx: EndpointIndex, host: string): string[] => idx.get(host).endpoints.map((e) => e.address);

describe('EndpointIndex', () => {
  it('starts empty: unknown hosts have no endpoints and version 0', () => {
    const idx = EndpointIndex.empty();
    expect(idx.size).toBe(0);
    expect(idx.get(A)).toEqual({ version: 0, endpoints: [] });
    expect(idx.count()).toBe(0);
  });

  it('adds hosts, each with its own non-zero version', () => {
    const { index, changed } = EndpointIndex.empty().update(new Map([[A, [ep('10.0.0.1')]], [B, [ep('10.0.1.1')]]]));
    expect(changed.sort()).toEqual([A, B]);
    expect(index.size).toBe(2);
    expect(index.count()).toBe(2);
    expect(index.get(A).version).toBeGreaterThan(0);
    expect(index.get(B).version).toBeGreaterThan(0);
    expect(index.get(A).version).not.toBe(index.get(B).version);
    expect([...index.hostnames()].sort()).toEqual([A, B]);
  });

  it('is copy-on-write: the old index is unchanged after an update', () => {
    const old = seed();
    const oldA = old.get(A);
    const oldAVersion = oldA.version;
    const { index } = old.update(new Map([[A, [ep('10.0.0.9')]], [C, [ep('10.0.2.1')]], [B, []]]));
    expect(index).not.toBe(old);
    // the old view, as a push in flight sees it
    expect(addrs(old, A)).toEqual(['10.0.0.1', '10.0.0.2']);
    expect(old.get(A)).toBe(oldA);
    expect(old.get(A).version).toBe(oldAVersion);
    expect(addrs(old, B)).toEqual(['10.0.1.1']);
    expect(old.get(C).endpoints).toEqual([]);
    expect(old.size).toBe(2);
    expect(old.count()).toBe(3);
    // the new view
    expect(addrs(index, A)).toEqual(['10.0.0.9']);
    expect(addrs(index, C)).toEqual(['10.0.2.1']);
    expect(index.get(B).endpoints).toEqual([]);
    expect(index.size).toBe(2);
  });

  it('entries cannot be changed in place', () => {
    const idx = seed();
    expect(Object.isFrozen(idx.get(A))).toBe(true);
    expect(Object.isFrozen(idx.get(C))).toBe(true);
  });

  it('bumps the version of a host only when its endpoints really change', () => {
    const old = seed();
    const v = old.get(A).version;
    // equal content in new objects is not a change
    const same = old.update(new Map([[A, [ep('10.0.0.1'), ep('10.0.0.2')]]]));
    expect(same.changed).toEqual([]);
    expect(same.index).toBe(old);
    expect(same.index.get(A).version).toBe(v);
    // each field that reaches EDS is a change
    const variants: Array<Partial<Endpoint>> = [
      { port: 9090 },
      { servicePortName: 'grpc' },
      { healthy: false },
      { weight: 3 },
      { tlsMode: 'disabled' },
      { network: 'net-2' },
      { serviceAccount: 'other' },
      { locality: { region: 'r', zone: '', subzone: '' } },
      { locality: { region: '', zone: 'z', subzone: '' } },
      { locality: { region: '', zone: '', subzone: 's' } },
      { labels: { app: 'a', version: 'v2' } },
    ];
    for (const over of variants) {
      const r = old.update(new Map([[A, [ep('10.0.0.1'), ep('10.0.0.2', over)]]]));
      expect({ over, changed: r.changed }).toEqual({ over, changed: [A] });
      expect(r.index.get(A).version).not.toBe(v);
    }
    // a new address, one fewer endpoint
    expect(old.update(new Map([[A, [ep('10.0.0.1'), ep('10.0.0.3')]]])).changed).toEqual([A]);
    expect(old.update(new Map([[A, [ep('10.0.0.1')]]])).changed).toEqual([A]);
  });

  it('keeps the version (and the entry) of unchanged hosts when others change', () => {
    const old = seed();
    const b = old.get(B);
    const { index, changed } = old.update(new Map([[A, [ep('10.0.0.7')]], [B, [ep('10.0.1.1')]]]));
    expect(changed).toEqual([A]);
    expect(index.get(B)).toBe(b);
    expect(index.get(B).version).toBe(b.version);
    expect(index.get(A).version).not.toBe(old.get(A).version);
  });

  it('never reuses a version, so a changed host never looks like an earlier state', () => {
    let idx = seed();
    const seen = new Set<number>([idx.get(A).version, idx.get(B).version]);
    for (let i = 0; i < 20; i++) {
      idx = idx.update(new Map([[A, [ep(`10.0.9.${i}`)]]])).index;
      const v = idx.get(A).version;
      expect(seen.has(v)).toBe(false);
      seen.add(v);
    }
    // back to the original endpoints: still a new version
    const back = idx.update(new Map([[A, [ep('10.0.0.1'), ep('10.0.0.2')]]])).index;
    expect(seen.has(back.get(A).version)).toBe(false);
  });

  it('deletes a host whose endpoints become empty, and re-adds it later with a fresh version', () => {
    const old = seed();
    const vA = old.get(A).version;
    const del = old.update(new Map([[A, []]]));
    expect(del.changed).toEqual([A]);
    expect(del.index.size).toBe(1);
    expect([...del.index.hostnames()]).toEqual([B]);
    expect(del.index.get(A)).toEqual({ version: 0, endpoints: [] });
    expect(del.index.count()).toBe(1);
    // deleting again, or "deleting" an unknown host, is no change
    expect(del.index.update(new Map([[A, []]])).changed).toEqual([]);
    expect(del.index.update(new Map([[C, []]])).index).toBe(del.index);
    const back = del.index.update(new Map([[A, [ep('10.0.0.1'), ep('10.0.0.2')]]]));
    expect(back.changed).toEqual([A]);
    expect(back.index.get(A).version).toBeGreaterThan(0);
    expect(back.index.get(A).version).not.toBe(vA);
  });

  it('applies several changes at once and reports exactly the hosts that changed', () => {
    const old = seed();
    const { index, changed } = old.update(
      new Map([
        [A, [ep('10.0.0.1'), ep('10.0.0.2')]], // same
        [B, []], // deleted
        [C, [ep('10.0.2.1')]], // new
      ]),
    );
    expect(changed.sort()).toEqual([B, C]);
    expect([...index.hostnames()].sort()).toEqual([A, C]);
    expect(index.get(A)).toBe(old.get(A));
  });
});
