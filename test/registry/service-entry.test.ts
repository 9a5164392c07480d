/**
 * The ServiceEntry registry works once per change of the store, in proportion to what changed
 * (docs/adr/0163): a file of many ServiceEntries is one registry event, and an edit of one
 * of them reports that host only and keeps every other service and endpoint object.
 */
import { parseConfigDocuments } from '../../src/config/parse.js';
import type { ConfigObject } from '../../src/config/types.js';
import { MemoryConfigStore } from '../../src/config/store.js';
import type { RegistryEvent } from '../../src/model/registry.js';
import { ServiceEntryRegistry } from '../../src/registry/service-entry.js';
import { serviceEntryObject } from '../support/service-entries.js';

const SE = (i: number, addr = `10.0.${i >> 8}.${i & 255}`): string => `apiVersion: networking.mesh.io/v1
kind: ServiceEntry
metadata: { name: svc-${i}, namespace: default }
spec:
  hosts: [svc-${i}.example.com]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{ number: 80, name: http, protocol: HTTP }]
  endpoints: [{ address: ${addr} }, { address: 10.9.${i >> 8}.${i & 255} }]
`;

function setup(): { store: MemoryConfigStore; registry: ServiceEntryRegistry; events: RegistryEvent[]; load(text: string): void } {
  const store = new MemoryConfigStore();
  const registry = new ServiceEntryRegistry(store, 'cluster.local', 'Cluster');
  void registry.start();
  const events: RegistryEvent[] = [];
  registry.onEvent((e) => events.push(e));
  const load = (text: string): void => {
    const parsed = parseConfigDocuments(text, 'se.yaml', 'default');
    expect(parsed.rejections).toEqual([]);
    store.applySource('se.yaml', parsed.objects);
  };
  return { store, registry, events, load };
}

describe('ServiceEntryRegistry', () => {
  const N = 500;
  const file = (edit?: number): string => Array.from({ length: N }, (_, i) => SE(i, i === edit ? '10.200.0.1' : undefined)).join('---\n');

  it('turns a file of many ServiceEntries into one event', () => {
    const { registry, events, load } = setup();
    load(file());
    expect(events).toHaveLength(1);
    expect(events[0].servicesChanged).toBe(true);
    expect(events[0].endpointHosts).toHaveLength(N);
    expect(registry.services()).toHaveLength(N);
  });

  it('reports only the edited host, keeping every other service and endpoint object', () => {
    const { registry, events, load } = setup();
    load(file());
    const services = registry.services();
    const endpoints = services.map((s) => registry.endpoints(s));
    load(file(7));
    expect(events).toHaveLength(2);
    expect(events[1]).toEqual({ registry: 'ServiceEntry', servicesChanged: false, endpointHosts: ['svc-7.example.com'] });
    const after = registry.services();
    expect(after.every((s, i) => s === services[i])).toBe(true);
    after.forEach((s, i) => {
      const eps = registry.endpoints(s);
      if (s.hostname === 'svc-7.example.com') {
        expect(eps.map((e) => e.address)).toEqual(['10.200.0.1', '10.9.0.7']);
        expect(eps[1]).toBe(endpoints[i][1]); // the unchanged endpoint of the edited entry too
      } else expect(eps).toBe(endpoints[i]);
    });
  });

  it('reports nothing when a file is written again with the same content, and removed hosts when entries go', () => {
    const { registry, events, load, store } = setup();
    load(file());
    load(file());
    expect(events).toHaveLength(1);
    store.removeSource('se.yaml');
    expect(events).toHaveLength(2);
    expect(events[1].servicesChanged).toBe(true);
    expect(events[1].endpointHosts).toHaveLength(N);
    expect(registry.services()).toEqual([]);
  });

  describe('a ServiceEntry of 100,000 endpoints (computed over turns, docs/adr/0204)', () => {
    const huge = (name: string, n: number): ConfigObject =>
      serviceEntryObject(name, 'huge.example.com', Array.from({ length: n }, (_, k) => `10.${k >> 16}.${(k >> 8) & 255}.${k & 255}`));

    it('serves the previous view until the new one is complete, then reports it once', async () => {
      const { store, registry, events, load } = setup();
      load(file());
      store.applySource('huge.yaml', [huge('huge', 100_000)]);
      // the store has it; the registry still serves what it had
      expect(registry.services()).toHaveLength(N);
      expect(events).toHaveLength(1);
      await registry.computed();
      expect(events).toHaveLength(2);
      expect(events[1]).toEqual({ registry: 'ServiceEntry', servicesChanged: true, endpointHosts: ['huge.example.com'] });
      const svc = registry.services().find((s) => s.hostname === 'huge.example.com');
      expect(registry.endpoints(svc!)).toHaveLength(100_000);
    });

    it('computes many small ServiceEntries over turns too (5,000 of 3 endpoints)', async () => {
      const { store, registry, events } = setup();
      const many = Array.from({ length: 5_000 }, (_, i) => serviceEntryObject(`many-${i}`, `many-${i}.example.com`, [1, 2, 3].map((k) => `10.${k}.${i >> 8}.${i & 255}`)));
      store.applySource('many.yaml', many);
      expect(registry.services()).toHaveLength(0);
      await registry.computed();
      expect(events).toHaveLength(1);
      expect(registry.services()).toHaveLength(5_000);
    });

    it('lets a later change overtake one still being computed', async () => {
      const { store, registry, events } = setup();
      store.applySource('huge.yaml', [huge('huge', 100_000)]);
      store.applySource('huge.yaml', [huge('huge', 99_999)]);
      await registry.computed();
      expect(events).toHaveLength(1);
      expect(registry.endpoints(registry.services()[0])).toHaveLength(99_999);
    });
  });
});
