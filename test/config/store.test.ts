import { MemoryConfigStore } from '../../src/config/store.js';
import type { ConfigEvent, ConfigObject } from '../../src/config/types.js';

const gvk = { group: 'networking.mesh.io', version: 'v1', kind: 'DestinationRule' };

function obj(name: string, host: string, opts: { namespace?: string; labels?: Record<string, string>; origin?: string; resourceVersion?: string } = {}): ConfigObject {
  return {
    meta: {
      gvk,
      name,
      namespace: opts.namespace ?? 'default',
      labels: opts.labels ?? {},
      annotations: {},
      generation: 1,
      resourceVersion: opts.resourceVersion ?? '',
      origin: opts.origin,
    },
    spec: { host },
  };
}

function recorder(store: MemoryConfigStore): string[] {
  const log: string[] = [];
  store.onEvent((e: ConfigEvent) => {
    // The store is already updated when a handler runs.
    const current = store.get(e.kind, e.object.meta.namespace, e.object.meta.name);
    expect(current).toBe(e.type === 'delete' ? undefined : e.object);
    log.push(`${e.type} ${e.object.meta.namespace}/${e.object.meta.name} gen=${e.object.meta.generation}`);
  });
  return log;
}

describe('MemoryConfigStore', () => {
  it('emits add, update and delete only for real changes', () => {
    const store = new MemoryConfigStore({ now: () => new Date('2026-01-01T00:00:00Z') });
    const log = recorder(store);
    store.applySource('a.yaml', [obj('x', 'h1'), obj('y', 'h2')]);
    expect(log).toEqual(['add default/x gen=1', 'add default/y gen=1']);
    const rvBefore = store.get('DestinationRule', 'default', 'y')!.meta.resourceVersion;

    log.length = 0;
    const result = store.applySource('a.yaml', [obj('x', 'h1'), obj('y', 'h2-changed')]);
    expect(log).toEqual(['update default/y gen=2']);
    expect(result).toMatchObject({ added: 0, updated: 1, deleted: 0 });
    const y = store.get('DestinationRule', 'default', 'y')!;
    expect(y.meta.resourceVersion).not.toBe(rvBefore);
    expect(y.meta.creationTimestamp).toBe('2026-01-01T00:00:00.000Z');

    log.length = 0;
    store.applySource('a.yaml', [obj('x', 'h1', { labels: { v: '1' } })]);
    expect(log).toEqual(['update default/x gen=2', 'delete default/y gen=2']);

    log.length = 0;
    store.applySource('a.yaml', [obj('x', 'h1', { labels: { v: '1' } })]);
    expect(log).toEqual([]);
  });

  it('delivers a whole applySource to onChange handlers as one change, after the per-event handlers', () => {
    const store = new MemoryConfigStore();
    const order: string[] = [];
    store.onEvent((e) => order.push(`event ${e.object.meta.name}`));
    store.onChange((events) => order.push(`change of ${events.length}: ${events.map((e) => `${e.type} ${e.object.meta.name}`).join(', ')}`));
    store.applySource('f.yaml', [obj('a', 'a'), obj('b', 'b'), obj('c', 'c')]);
    store.applySource('f.yaml', [obj('a', 'a'), obj('b', 'b2')]);
    store.applySource('f.yaml', [obj('a', 'a'), obj('b', 'b2')]); // no change, no call
    expect(order).toEqual([
      'event a', 'event b', 'event c', 'change of 3: add a, add b, add c',
      'event b', 'event c', 'change of 2: update b, delete c',
    ]);
  });

  it('treats key order as no change', () => {
    const store = new MemoryConfigStore();
    const log = recorder(store);
    store.applySource('a', [{ ...obj('x', 'h'), spec: { host: 'h', subsets: [{ name: 'v1', labels: { a: '1', b: '2' } }] } }]);
    store.applySource('a', [{ ...obj('x', 'h'), spec: { subsets: [{ labels: { b: '2', a: '1' }, name: 'v1' }], host: 'h' } }]);
    expect(log).toHaveLength(1);
  });

  it('lists in a stable order by namespace and name', () => {
    const store = new MemoryConfigStore();
    store.applySource('a', [obj('b', 'h', { namespace: 'ns2' }), obj('z', 'h', { namespace: 'ns1' })]);
    store.applySource('b', [obj('a', 'h', { namespace: 'ns2' }), obj('a', 'h', { namespace: 'ns1' })]);
    expect(store.list('DestinationRule').map((o) => `${o.meta.namespace}/${o.meta.name}`)).toEqual(['ns1/a', 'ns1/z', 'ns2/a', 'ns2/b']);
    expect(store.list('DestinationRule')).toBe(store.list('DestinationRule'));
    expect(store.list('Gateway')).toEqual([]);
  });

  it('removes what an origin held', () => {
    const store = new MemoryConfigStore();
    const log = recorder(store);
    store.applySource('a', [obj('x', 'h')]);
    store.applySource('b', [obj('y', 'h')]);
    store.removeSource('a');
    expect(log.slice(2)).toEqual(['delete default/x gen=1']);
    expect(store.list('DestinationRule').map((o) => o.meta.name)).toEqual(['y']);
  });

  it('keeps the first definition of a duplicate, rejects the other and lets it take over later', () => {
    const store = new MemoryConfigStore();
    const log = recorder(store);
    store.applySource('a.yaml', [obj('x', 'from-a', { origin: 'a.yaml#0' })]);
    const result = store.applySource('b.yaml', [obj('x', 'from-b', { origin: 'b.yaml#3' })]);
    expect(result.rejections).toEqual([
      {
        origin: 'b.yaml#3',
        kind: 'DestinationRule',
        name: 'x',
        namespace: 'default',
        issues: [{ path: 'metadata.name', message: 'DestinationRule default/x already defined by a.yaml#0: the first one loaded wins' }],
      },
    ]);
    expect((store.get('DestinationRule', 'default', 'x')!.spec as { host: string }).host).toBe('from-a');
    // Editing the first file does not hand the object over...
    store.applySource('a.yaml', [obj('x', 'from-a2', { origin: 'a.yaml#0' })]);
    expect(store.originOf('DestinationRule', 'default', 'x')).toBe('a.yaml');
    // ...dropping it does.
    store.removeSource('a.yaml');
    expect((store.get('DestinationRule', 'default', 'x')!.spec as { host: string }).host).toBe('from-b');
    expect(store.originOf('DestinationRule', 'default', 'x')).toBe('b.yaml');
    expect(log).toEqual(['add default/x gen=1', 'update default/x gen=2', 'update default/x gen=3']);
    store.removeSource('b.yaml');
    expect(log[3]).toBe('delete default/x gen=3');
  });

  it('supports single-object upsert and delete, keeping external versions', () => {
    const store = new MemoryConfigStore();
    const log = recorder(store);
    store.upsert(obj('x', 'h', { resourceVersion: '41' }), 'k8s');
    expect(store.get('DestinationRule', 'default', 'x')!.meta.resourceVersion).toBe('41');
    store.upsert(obj('x', 'h2', { resourceVersion: '42' }), 'k8s');
    expect(store.get('DestinationRule', 'default', 'x')!.meta.resourceVersion).toBe('42');
    expect(store.delete('DestinationRule', 'default', 'x').deleted).toBe(1);
    expect(store.delete('DestinationRule', 'default', 'x').deleted).toBe(0);
    expect(log).toEqual(['add default/x gen=1', 'update default/x gen=1', 'delete default/x gen=1']);
  });

  it('reports sync state, unsubscribes handlers and still delivers to others when one throws', () => {
    const store = new MemoryConfigStore();
    expect(store.hasSynced()).toBe(false);
    store.markSynced();
    expect(store.hasSynced()).toBe(true);
    const seen: string[] = [];
    const off = store.onEvent(() => seen.push('first'));
    store.onEvent(() => {
      throw new Error('boom');
    });
    store.onEvent(() => seen.push('third'));
    expect(() => store.applySource('a', [obj('x', 'h')])).toThrow('boom');
    expect(seen).toEqual(['first', 'third']);
    expect(store.get('DestinationRule', 'default', 'x')).toBeDefined();
    off();
    expect(() => store.applySource('a', [])).toThrow('boom');
    expect(seen).toEqual(['first', 'third', 'third']);
  });
});
