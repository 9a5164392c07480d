import { ChangeSet, Dep, DerivedMemo, NEED_TURN, listPatch, recordDep, withDeadline } from '../../src/model/derived.js';
import { EndpointIndex } from '../../src/model/endpoint-index.js';
import type { Endpoint } from '../../src/model/service.js';

const endpoint = (address: string): Endpoint => ({
  address,
  port: 80,
  servicePortName: 'http',
  labels: {},
  serviceAccount: '',
  locality: { region: '', zone: '', subzone: '' },
  network: '',
  clusterId: 'c',
  weight: 1,
  healthy: true,
  tlsMode: 'disabled',
  workload: address,
});

describe('derived values', () => {
  it('carries a value to the next snapshot when its changes touch nothing it read, and recomputes it otherwise', () => {
    let runs = 0;
    const compute = () => {
      runs++;
      recordDep(Dep.virtualService('a'));
      return { v: runs };
    };
    const first = new DerivedMemo();
    const value = first.get('k', compute);
    const carried = new DerivedMemo({ memo: first, changes: ChangeSet.of([Dep.virtualService('b')]) });
    expect(carried.get('k', compute)).toBe(value);
    const touched = new DerivedMemo({ memo: carried, changes: ChangeSet.of([Dep.virtualService('a')]) });
    expect(touched.get('k', compute)).not.toBe(value);
    expect(runs).toBe(2);
  });

  it('counts what inner values read for the values that used them', () => {
    const first = new DerivedMemo();
    const inner = () => first.get('inner', () => (recordDep(Dep.destinationRule('x')), 1));
    first.get('outer', () => inner() + 1);
    const next = new DerivedMemo({ memo: first, changes: ChangeSet.of([Dep.destinationRule('x')]) });
    let recomputed = false;
    next.get('outer', () => ((recomputed = true), 0));
    expect(recomputed).toBe(true);
  });

  it('takes one service change as a change of the whole list for values that read every service', () => {
    const first = new DerivedMemo();
    first.get('all', () => {
      recordDep(Dep.allServices);
      recordDep(Dep.service('a'));
      return 1;
    });
    // a change set that touches one service always holds the whole list too (push-context.ts)
    const next = new DerivedMemo({ memo: first, changes: ChangeSet.of([Dep.service('b'), Dep.allServices]) });
    let again = 0;
    next.get('all', () => ++again);
    expect(again).toBe(1);
  });

  it('rebuilds only the list items whose inputs changed, in place', () => {
    const built: string[] = [];
    const build = (memo: DerivedMemo) =>
      memo.list(
        'l',
        {},
        () => ['a', 'b', 'c'],
        (x) => x,
        (x) => {
          built.push(x);
          recordDep(Dep.virtualService(x));
          return [`${x}${built.length}`];
        },
      );
    const first = new DerivedMemo();
    expect(build(first)).toEqual(['a1', 'b2', 'c3']);
    const next = new DerivedMemo({ memo: first, changes: ChangeSet.of([Dep.virtualService('b')]) });
    expect(build(next)).toEqual(['a1', 'b4', 'c3']);
    expect(built).toEqual(['a', 'b', 'c', 'b']);
  });

  it('starts a list under a new key from the latest list of the same reuse key', () => {
    const built: string[] = [];
    const memo = new DerivedMemo();
    const build = (key: string, items: string[]) => memo.list(key, { reuseKey: 'scope' }, () => items, (x) => x, (x) => (built.push(x), [x.toUpperCase()]));
    build('one', ['a', 'b']);
    expect(build('two', ['a', 'b', 'c'])).toEqual(['A', 'B', 'C']);
    expect(built).toEqual(['a', 'b', 'c']);
  });

  it('under a deadline, builds a long list over several calls without redoing items', () => {
    const memo = new DerivedMemo();
    let builds = 0;
    const items = Array.from({ length: 50 }, (_, i) => i);
    const slow = (i: number) => {
      builds++;
      const until = performance.now() + 2;
      while (performance.now() < until) {
        // work
      }
      return [i * 2];
    };
    let calls = 0;
    let result: ReadonlyArray<number> | undefined;
    while (!result) {
      calls++;
      try {
        result = withDeadline(performance.now() + 10, () => memo.list('slow', {}, () => items, String, slow));
      } catch (e) {
        if (e !== NEED_TURN) throw e;
      }
    }
    expect(result).toEqual(items.map((i) => i * 2));
    expect(builds).toBe(50);
    expect(calls).toBeGreaterThan(3);
    // without a deadline the same list is there at once
    expect(memo.list('slow', {}, () => items, String, slow)).toBe(result);
  });

  it('keeps values that read endpoints while the hosts they read keep theirs', () => {
    const e0 = EndpointIndex.empty().update(new Map([['a', [endpoint('10.0.0.1')]], ['b', [endpoint('10.0.0.2')]]])).index;
    const memo = new DerivedMemo();
    let runs = 0;
    const readA = (index: EndpointIndex) => memo.get('a', () => (runs++, index.get('a').endpoints.length), index);
    readA(e0);
    const e1 = e0.update(new Map([['b', [endpoint('10.0.0.3')]]])).index;
    readA(e1);
    expect(runs).toBe(1);
    const e2 = e1.update(new Map([['a', []]])).index;
    expect(readA(e2)).toBe(0);
    expect(runs).toBe(2);
    expect(e2.changedSince(e0)).toEqual(new Set(['a', 'b']));
  });

  it('patches a list for an endpoint change: only the items of the changed host are built again, the rest are the same objects', () => {
    const hosts = Array.from({ length: 40 }, (_, i) => `h${i}`);
    let e = EndpointIndex.empty().update(new Map(hosts.map((h, i) => [h, [endpoint(`10.0.0.${i}`)]]))).index;
    const memo = new DerivedMemo();
    const built: string[] = [];
    // two elements per host (like a service's subsets), one host with none
    const build = (index: EndpointIndex) =>
      memo.list(
        'eds',
        { endpoints: index },
        () => hosts,
        (h) => h,
        (h) => {
          built.push(h);
          const address = index.get(h).endpoints[0]?.address;
          if (h === 'h7' || address === undefined) return [];
          return [{ name: `${h}|v1`, address }, { name: `${h}|v2`, address }];
        },
      );
    const first = build(e);
    expect(first).toHaveLength(78);
    expect(listPatch(first)).toBeUndefined();
    built.length = 0;

    e = e.update(new Map([['h20', [endpoint('10.9.9.9')]]])).index;
    const second = build(e);
    expect(built).toEqual(['h20']);
    expect(second).toHaveLength(78);
    expect(second.filter((x, k) => x !== first[k]).map((x) => `${x.name}=${x.address}`)).toEqual(['h20|v1=10.9.9.9', 'h20|v2=10.9.9.9']);
    // h7 has no elements: h20's are at 38 and 39
    expect(listPatch(second)).toEqual({ base: first, positions: [38, 39] });
    // the same list again for the same index
    expect(build(e)).toBe(second);

    // a host that loses its endpoints (and its elements): the list is flattened again, two shorter
    built.length = 0;
    e = e.update(new Map([['h3', []]])).index;
    const third = build(e);
    expect(built).toEqual(['h3']);
    expect(third).toEqual(second.filter((x) => !x.name.startsWith('h3|')));
    expect(listPatch(third)).toBeUndefined();

    // a change of a host no item read: the very same list
    built.length = 0;
    e = e.update(new Map([['elsewhere', [endpoint('10.1.1.1')]]])).index;
    expect(build(e)).toBe(third);
    expect(built).toEqual([]);

    // the next snapshot, after a config change the list did not read, then an endpoint change
    const later = new DerivedMemo({ memo, changes: ChangeSet.of([Dep.virtualService('h11')]) });
    built.length = 0;
    e = e.update(new Map([['h11', [endpoint('10.8.8.8')]]])).index;
    const fourth = later.list('eds', { endpoints: e }, () => hosts, (h) => h, (h) => (built.push(h), [{ name: `${h}|v1`, address: '' }, { name: `${h}|v2`, address: e.get(h).endpoints[0].address }]));
    expect(built).toEqual(['h11']);
    expect(fourth.filter((x, k) => x !== third[k]).map((x) => `${x.name}=${x.address}`)).toEqual(['h11|v1=', 'h11|v2=10.8.8.8']);
    expect(listPatch(fourth)?.base).toBe(third);

    // a config change (a key the items read) walks the items as before
    const next = new DerivedMemo({ memo: later, changes: ChangeSet.of([Dep.endpoints('h5')]) });
    built.length = 0;
    next.list('eds', { endpoints: e }, () => hosts, (h) => h, (h) => (built.push(h), [{ name: h, address: e.get(h).endpoints[0]?.address ?? '' }]));
    expect(built).toEqual(['h5']);
  });

  it('a list started from a patch still in progress builds again what the patch had not built yet', () => {
    const hosts = Array.from({ length: 40 }, (_, i) => `h${i}`);
    let e = EndpointIndex.empty().update(new Map(hosts.map((h, i) => [h, [endpoint(`10.0.0.${i}`)]]))).index;
    const memo = new DerivedMemo();
    const build = (index: EndpointIndex) => memo.list('eds', { endpoints: index }, () => hosts, (h) => h, (h) => [`${h}=${index.get(h).endpoints[0].address}`]);
    build(e);
    // two hosts change; the patch builds one of them and runs out of its turn
    e = e.update(new Map([['h1', [endpoint('10.1.1.1')]], ['h2', [endpoint('10.2.2.2')]]])).index;
    const e1 = e;
    let thrown: unknown;
    try {
      withDeadline(performance.now() - 1, () => build(e1));
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBe(NEED_TURN);
    // another host changes before the patch is done: the new build must not keep h2's old element
    e = e.update(new Map([['h5', [endpoint('10.5.5.5')]]])).index;
    const done = build(e);
    expect(done.slice(0, 6)).toEqual(['h0=10.0.0.0', 'h1=10.1.1.1', 'h2=10.2.2.2', 'h3=10.0.0.3', 'h4=10.0.0.4', 'h5=10.5.5.5']);
  });
});

