import { allocateAddresses, needsAutoAddress } from '../../src/model/address-allocation.js';
import type { Service } from '../../src/model/service.js';

function se(hostname: string, over: Partial<Service> = {}): Service {
  return {
    hostname,
    namespace: 'default',
    name: hostname.split('.')[0],
    ports: [{ name: 'http', port: 8080, protocol: 'HTTP' }],
    addresses: [],
    resolution: 'ClientSideLB',
    meshExternal: false,
    labels: {},
    serviceAccounts: [],
    clusterId: 'c',
    registry: 'ServiceEntry',
    creationTime: 0,
    ...over,
  };
}

describe('automatic addresses', () => {
  it('gives each ServiceEntry host without addresses one distinct class E address', () => {
    const services = Array.from({ length: 3000 }, (_, i) => se(`svc-${i}.ns.svc.cluster.local`));
    const a = allocateAddresses(services, new Map());
    expect(a.size).toBe(3000);
    const values = [...a.values()];
    expect(new Set(values).size).toBe(3000);
    for (const v of values) expect(v).toMatch(/^240\.240\.\d{1,3}\.\d{1,3}$/);
    expect(values).not.toContain('240.240.0.0');
  });

  it('leaves out hosts that have addresses, wildcard hosts, resolution NONE and other registries', () => {
    expect(needsAutoAddress(se('a.example.com', { addresses: ['10.0.0.1'] }))).toBe(false);
    expect(needsAutoAddress(se('*.example.com'))).toBe(false);
    expect(needsAutoAddress(se('a.example.com', { resolution: 'Passthrough' }))).toBe(false);
    expect(needsAutoAddress(se('a.default.svc.cluster.local', { registry: 'Cluster' }))).toBe(false);
    expect(needsAutoAddress(se('a.example.com', { resolution: 'DNS', meshExternal: true }))).toBe(true);
  });

  it('keeps every host’s address when hosts come and go, and returns the same map when nothing changed', () => {
    const first = allocateAddresses([se('a.example.com'), se('b.example.com')], new Map());
    expect(allocateAddresses([se('a.example.com'), se('b.example.com')], first)).toBe(first);
    const grown = allocateAddresses([se('a.example.com'), se('b.example.com'), ...Array.from({ length: 500 }, (_, i) => se(`n${i}.example.com`))], first);
    expect(grown.get('a.example.com')).toBe(first.get('a.example.com'));
    expect(grown.get('b.example.com')).toBe(first.get('b.example.com'));
    const shrunk = allocateAddresses([se('b.example.com')], grown);
    expect([...shrunk]).toEqual([['b.example.com', first.get('b.example.com')]]);
  });

  it('never hands out an address a service declares', () => {
    const first = allocateAddresses([se('a.example.com')], new Map());
    const taken = first.get('a.example.com')!;
    const next = allocateAddresses([se('a.example.com'), se('b.example.com', { addresses: [taken] })], first);
    expect(next.get('a.example.com')).not.toBe(taken);
    expect(next.get('a.example.com')).toMatch(/^240\.240\./);
  });
});
