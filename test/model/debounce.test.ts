/**
 * Debouncing as an operator sees it through DISC_DEBOUNCE_AFTER / DISC_DEBOUNCE_MAX: one push after
 * a quiet period, never later than the maximum, carrying the union of what changed.
 */
import { jest } from '@jest/globals';
import pino from 'pino';
import { parseConfigDocuments } from '../../src/config/parse.js';
import { MemoryConfigStore } from '../../src/config/store.js';
import { createMetrics } from '../../src/metrics/metrics.js';
import { MeshModel } from '../../src/model/mesh-model.js';
import { DEFAULT_MESH_SETTINGS } from '../../src/model/mesh-settings.js';
import { DEFAULT_FEATURES } from '../../src/model/push-context.js';
import { AggregateRegistry } from '../../src/registry/aggregate.js';
import { ServiceEntryRegistry } from '../../src/registry/service-entry.js';
import { Debouncer } from '../../src/model/debounce.js';
import { PushActivity } from '../../src/model/push-activity.js';
import { serviceEntryObject } from '../support/service-entries.js';
import { mergePushRequests, pushRequest, type PushRequest } from '../../src/model/push-request.js';

function recorder(): { fired: PushRequest[]; firedAt: number[]; fire: (r: PushRequest) => void } {
  const fired: PushRequest[] = [];
  const firedAt: number[] = [];
  return {
    fired,
    firedAt,
    fire: (r) => {
      fired.push(r);
      firedAt.push(Date.now());
    },
  };
}

describe('Debouncer', () => {
  beforeEach(() => {
    jest.useFakeTimers({ now: 1_000_000 });
  });
  afterEach(() => {
    jest.useRealTimers();
  });

  it('tells its observer each change, each timer reset and why a burst fired (the cfg_runtime_strategy_* metrics)', () => {
    const seen: string[] = [];
    const r = recorder();
    const d = new Debouncer(100, 250, r.fire, Date.now, {
      onChange: (since) => seen.push(`change ${since ?? '-'}`),
      timerReset: () => seen.push('reset'),
      fired: (reason, requests) => seen.push(`fired ${reason} ${requests}`),
    });
    d.push(pushRequest({ full: true, reason: 'config' }));
    jest.advanceTimersByTime(50);
    d.push(pushRequest({ full: true, reason: 'config' }));
    jest.advanceTimersByTime(100);
    // quiet for 100 ms after the second: fired on the quiesce timer, carrying both requests
    d.push(pushRequest({ full: true, reason: 'config' }));
    for (let i = 0; i < 4; i++) {
      jest.advanceTimersByTime(80);
      d.push(pushRequest({ full: true, reason: 'config' }));
    }
    jest.advanceTimersByTime(300);
    expect(seen).toEqual([
      'change -',
      'change 50',
      'reset',
      'fired quiesce 2',
      'change 100',
      'change 80',
      'reset',
      'change 80',
      'reset',
      'change 80',
      'reset',
      // 240 ms after the burst's first request: the 250 ms maximum cuts the quiet period short
      'fired max 4',
      'change 80',
      'fired quiesce 1',
    ]);
    expect(r.fired).toHaveLength(3);
  });

  it('fires DISC_DEBOUNCE_AFTER after a single event, not before', () => {
    const r = recorder();
    const d = new Debouncer(100, 10_000, r.fire, () => Date.now());
    const t0 = Date.now();
    d.push(pushRequest({ full: true, reason: 'config' }));
    jest.advanceTimersByTime(99);
    expect(r.fired).toHaveLength(0);
    jest.advanceTimersByTime(1);
    expect(r.fired).toHaveLength(1);
    expect(r.firedAt[0] - t0).toBe(100);
    jest.advanceTimersByTime(10_000);
    expect(r.fired).toHaveLength(1);
  });

  it('waits DISC_DEBOUNCE_AFTER after the last of several events', () => {
    const r = recorder();
    const d = new Debouncer(100, 10_000, r.fire, () => Date.now());
    const t0 = Date.now();
    d.push(pushRequest({ full: true, reason: 'a' }));
    jest.advanceTimersByTime(60);
    d.push(pushRequest({ full: true, reason: 'b' }));
    jest.advanceTimersByTime(60); // 120: 60 since the last event
    d.push(pushRequest({ full: true, reason: 'c' }));
    jest.advanceTimersByTime(99); // 219
    expect(r.fired).toHaveLength(0);
    jest.advanceTimersByTime(1); // 220 = last event (120) + 100
    expect(r.fired).toHaveLength(1);
    expect(r.firedAt[0] - t0).toBe(220);
    expect([...r.fired[0].reasons.keys()].sort()).toEqual(['a', 'b', 'c']);
  });

  it('counts DISC_DEBOUNCE_AFTER from when a change was seen (a file\'s watch event), not from when its request arrives', () => {
    const r = recorder();
    const d = new Debouncer(100, 10_000, r.fire, () => Date.now());
    const t0 = Date.now();
    // the file source saw the write 40 ms ago and has just read, parsed and stored it
    d.push(pushRequest({ full: true, reason: 'config', start: t0 - 40 }));
    jest.advanceTimersByTime(59);
    expect(r.fired).toHaveLength(0);
    jest.advanceTimersByTime(1);
    expect(r.fired).toHaveLength(1);
    expect(r.firedAt[0] - (t0 - 40)).toBe(100);
    // a later event seen 10 ms before its request extends the wait to 100 ms after it, not after the request
    const t1 = Date.now();
    d.push(pushRequest({ full: true, reason: 'a', start: t1 - 30 }));
    jest.advanceTimersByTime(20);
    d.push(pushRequest({ full: true, reason: 'b', start: t1 + 10 }));
    jest.advanceTimersByTime(89); // t1 + 109
    expect(r.fired).toHaveLength(1);
    jest.advanceTimersByTime(1); // t1 + 110 = the later event + 100
    expect(r.fired).toHaveLength(2);
    expect([...r.fired[1].reasons.keys()].sort()).toEqual(['a', 'b']);
    // a time in the future counts from now: never later than DISC_DEBOUNCE_AFTER after the request
    const t2 = Date.now();
    d.push(pushRequest({ full: true, reason: 'c', start: t2 + 5000 }));
    jest.advanceTimersByTime(100);
    expect(r.fired).toHaveLength(3);
    expect(r.firedAt[2] - t2).toBe(100);
  });

  it('still fires by DISC_DEBOUNCE_MAX under a steady stream of events', () => {
    const r = recorder();
    const d = new Debouncer(100, 500, r.fire, () => Date.now());
    const t0 = Date.now();
    // an event every 70 ms, forever: the 100 ms quiet period never comes
    const tick = setInterval(() => d.push(pushRequest({ full: false, reason: 'endpoint', edsHosts: [`h${Date.now() - t0}`] })), 70);
    d.push(pushRequest({ full: false, reason: 'endpoint', edsHosts: ['h0'] }));
    jest.advanceTimersByTime(499);
    expect(r.fired).toHaveLength(0);
    jest.advanceTimersByTime(1);
    expect(r.fired).toHaveLength(1);
    expect(r.firedAt[0] - t0).toBe(500);
    // every event of the burst is in the push
    const first = r.fired[0];
    expect([...first.edsHosts]).toEqual(['h0', 'h70', 'h140', 'h210', 'h280', 'h350', 'h420', 'h490']);
    expect(first.reasons.get('endpoint')).toBe(8);
    // the stream continues: the next burst starts with the event at 560 and is bounded again
    jest.advanceTimersByTime(559);
    expect(r.fired).toHaveLength(1);
    jest.advanceTimersByTime(1);
    expect(r.fired).toHaveLength(2);
    expect(r.firedAt[1] - t0).toBe(560 + 500);
    clearInterval(tick);
    d.stop();
  });

  it('merges requests of a burst: full wins, EDS hosts union, reason counts add, earliest start kept', () => {
    const r = recorder();
    const d = new Debouncer(100, 1000, r.fire, () => Date.now());
    d.push(pushRequest({ full: false, reason: 'endpoint', edsHosts: ['a.ns.svc.cluster.local'], start: 5000 }));
    d.push(pushRequest({ full: true, reason: 'config', kinds: ['VirtualService'], start: 3000 }));
    d.push(pushRequest({ full: false, reason: 'endpoint', edsHosts: ['b.ns.svc.cluster.local', 'a.ns.svc.cluster.local'], start: 4000 }));
    d.push(pushRequest({ full: false, reason: 'config', kinds: ['DestinationRule'], start: 9000 }));
    jest.advanceTimersByTime(100);
    expect(r.fired).toHaveLength(1);
    const req = r.fired[0];
    expect(req.full).toBe(true);
    expect([...req.edsHosts].sort()).toEqual(['a.ns.svc.cluster.local', 'b.ns.svc.cluster.local']);
    expect(Object.fromEntries(req.reasons)).toEqual({ endpoint: 2, config: 2 });
    expect(req.start).toBe(3000);
    expect([...req.configKinds].sort()).toEqual(['DestinationRule', 'VirtualService']);
  });

  it('fires at once, unmerged, when DISC_DEBOUNCE_AFTER is 0', () => {
    const r = recorder();
    const d = new Debouncer(0, 1000, r.fire, () => Date.now());
    d.push(pushRequest({ full: false, reason: 'endpoint', edsHosts: ['a'] }));
    expect(r.fired).toHaveLength(1);
    d.push(pushRequest({ full: true, reason: 'config' }));
    expect(r.fired).toHaveLength(2);
    expect(r.fired[1].full).toBe(true);
    expect([...r.fired[0].edsHosts]).toEqual(['a']);
    expect(jest.getTimerCount()).toBe(0);
  });

  it('flush() fires what is pending now, and nothing fires later', () => {
    const r = recorder();
    const d = new Debouncer(100, 1000, r.fire, () => Date.now());
    d.push(pushRequest({ full: true, reason: 'config' }));
    d.flush();
    expect(r.fired).toHaveLength(1);
    jest.advanceTimersByTime(2000);
    expect(r.fired).toHaveLength(1);
    d.flush();
    expect(r.fired).toHaveLength(1);
  });

  it('stop() drops pending work and ignores later events', () => {
    const r = recorder();
    const d = new Debouncer(100, 1000, r.fire, () => Date.now());
    d.push(pushRequest({ full: true, reason: 'config' }));
    d.stop();
    jest.advanceTimersByTime(2000);
    d.push(pushRequest({ full: true, reason: 'config' }));
    jest.advanceTimersByTime(2000);
    expect(r.fired).toHaveLength(0);
  });

  it('starts a new DISC_DEBOUNCE_MAX window after each push', () => {
    const r = recorder();
    const d = new Debouncer(100, 300, r.fire, () => Date.now());
    d.push(pushRequest({ full: true, reason: 'x' }));
    jest.advanceTimersByTime(100);
    expect(r.fired).toHaveLength(1);
    // a later single event waits the full quiet period again, not the remainder of an old window
    jest.advanceTimersByTime(1000);
    const t1 = Date.now();
    d.push(pushRequest({ full: true, reason: 'y' }));
    jest.advanceTimersByTime(99);
    expect(r.fired).toHaveLength(1);
    jest.advanceTimersByTime(1);
    expect(r.fired).toHaveLength(2);
    expect(r.firedAt[1] - t1).toBe(100);
  });

  it('uses the injected clock for the DISC_DEBOUNCE_MAX bound', () => {
    let clock = 0;
    const r = recorder();
    const d = new Debouncer(100, 500, r.fire, () => clock);
    d.push(pushRequest({ full: true, reason: 'a' }));
    clock = 450; // the clock says the burst is 450 ms old
    d.push(pushRequest({ full: true, reason: 'b' }));
    jest.advanceTimersByTime(50); // only 50 ms left of the maximum
    expect(r.fired).toHaveLength(1);
  });
});

describe('mergePushRequests', () => {
  it('returns the request itself when nothing is pending', () => {
    const b = pushRequest({ full: false, reason: 'endpoint' });
    expect(mergePushRequests(undefined, b)).toBe(b);
  });

  it('does not mutate its inputs', () => {
    const a = pushRequest({ full: false, reason: 'endpoint', edsHosts: ['a'], start: 1 });
    const b = pushRequest({ full: true, reason: 'endpoint', edsHosts: ['b'], start: 2 });
    const m = mergePushRequests(a, b);
    expect(Object.fromEntries(m.reasons)).toEqual({ endpoint: 2 });
    expect([...a.edsHosts]).toEqual(['a']);
    expect(Object.fromEntries(a.reasons)).toEqual({ endpoint: 1 });
    expect(a.full).toBe(false);
  });
});

describe('MeshModel debouncing (DISC_DEBOUNCE_AFTER, DISC_DEBOUNCE_MAX, DISC_ENABLE_EDS_DEBOUNCE)', () => {
  const SE = (addr: string, port = 80): string => `
apiVersion: networking.mesh.io/v1
kind: ServiceEntry
metadata: { name: ext, namespace: default }
spec:
  hosts: [ext.example.com]
  location: MESH_EXTERNAL
  resolution: STATIC
  ports: [{ number: ${port}, name: http, protocol: HTTP }]
  endpoints: [{ address: ${addr} }]
`;
  const VS = (timeout: string): string => `
apiVersion: networking.mesh.io/v1
kind: VirtualService
metadata: { name: ext, namespace: default }
spec:
  hosts: [ext.example.com]
  http: [{ timeout: ${timeout}, route: [{ destination: { host: ext.example.com } }] }]
`;

  function setup(opts: { after: number; max: number; edsDebounce: boolean; activity?: PushActivity }) {
    const store = new MemoryConfigStore();
    const load = (origin: string, text: string): void => {
      const parsed = parseConfigDocuments(text, origin, 'default');
      if (parsed.rejections.length > 0) throw new Error(JSON.stringify(parsed.rejections));
      store.applySource(origin, parsed.objects);
    };
    load('se.yaml', SE('10.0.0.1'));
    store.markSynced();
    const se = new ServiceEntryRegistry(store, 'cluster.local', 'Cluster');
    const registry = new AggregateRegistry([se]);
    void registry.start();
    const model = new MeshModel(
      store,
      registry,
      DEFAULT_MESH_SETTINGS,
      { debounceAfterMs: opts.after, debounceMaxMs: opts.max, edsDebounce: opts.edsDebounce, features: DEFAULT_FEATURES, activity: opts.activity },
      createMetrics({ defaultMetrics: false }),
      pino({ level: 'silent' }),
    );
    model.start();
    const r = recorder();
    model.onPush(r.fire);
    return {
      model,
      load,
      r,
      stop: () => {
        model.stop();
        registry.stop();
      },
    };
  }

  beforeEach(() => {
    jest.useFakeTimers({ now: 2_000_000 });
  });
  afterEach(() => {
    jest.useRealTimers();
  });

  it('pushes once, DISC_DEBOUNCE_AFTER after the last config change, with a new snapshot', () => {
    const m = setup({ after: 100, max: 10_000, edsDebounce: true });
    const before = m.model.current().push;
    m.load('vs.yaml', VS('1s'));
    jest.advanceTimersByTime(50);
    m.load('vs.yaml', VS('2s'));
    jest.advanceTimersByTime(99);
    expect(m.r.fired).toHaveLength(0);
    // the snapshot is not rebuilt while debouncing
    expect(m.model.current().push).toBe(before);
    jest.advanceTimersByTime(1);
    expect(m.r.fired).toHaveLength(1);
    expect(m.r.fired[0].full).toBe(true);
    expect(m.r.fired[0].reasons.get('config')).toBe(2);
    expect([...m.r.fired[0].configKinds]).toEqual(['VirtualService']);
    expect(m.model.current().push).not.toBe(before);
    expect(m.model.current().push.virtualServiceCount).toBe(1);
    m.stop();
  });

  it('a push counts as in flight from its first pending change until the listeners have it (docs/adr/0140)', () => {
    const activity = new PushActivity();
    const m = setup({ after: 100, max: 10_000, edsDebounce: false, activity });
    let busyWhenPushed: boolean | undefined;
    m.model.onPush(() => (busyWhenPushed = activity.busy));
    let idle = 0;
    activity.onIdle(() => idle++);
    expect(activity.busy).toBe(false);
    m.load('vs.yaml', VS('1s'));
    expect(activity.busy).toBe(true);
    jest.advanceTimersByTime(99);
    expect(activity.busy).toBe(true);
    jest.advanceTimersByTime(1);
    expect(m.r.fired).toHaveLength(1);
    expect(busyWhenPushed).toBe(true);
    expect(activity.busy).toBe(false);
    expect(idle).toBe(1);
    // an endpoint-only change pushed at once: open and closed around its push
    m.load('se.yaml', SE('10.0.0.4'));
    expect(m.r.fired).toHaveLength(2);
    expect(activity.busy).toBe(false);
    // a stopped model leaves nothing open
    m.load('vs.yaml', VS('3s'));
    expect(activity.busy).toBe(true);
    m.stop();
    expect(activity.busy).toBe(false);
  });

  it('pushes an endpoint-only change at once when EDS debouncing is off, keeping the snapshot', () => {
    const m = setup({ after: 100, max: 10_000, edsDebounce: false });
    const before = m.model.current();
    m.load('se.yaml', SE('10.0.0.2'));
    expect(m.r.fired).toHaveLength(1);
    expect(m.r.fired[0].full).toBe(false);
    expect([...m.r.fired[0].edsHosts]).toEqual(['ext.example.com']);
    const after = m.model.current();
    expect(after.push).toBe(before.push);
    expect(after.endpoints.get('ext.example.com').endpoints.map((e) => e.address)).toEqual(['10.0.0.2']);
    m.stop();
  });

  it('debounces an endpoint-only change with config changes when EDS debouncing is on', () => {
    const m = setup({ after: 100, max: 10_000, edsDebounce: true });
    m.load('se.yaml', SE('10.0.0.3'));
    m.load('vs.yaml', VS('1s'));
    expect(m.r.fired).toHaveLength(0);
    jest.advanceTimersByTime(100);
    expect(m.r.fired).toHaveLength(1);
    expect(m.r.fired[0].full).toBe(true);
    expect(Object.fromEntries(m.r.fired[0].reasons)).toEqual({ endpoint: 1, config: 1 });
    expect(m.model.current().endpoints.get('ext.example.com').endpoints.map((e) => e.address)).toEqual(['10.0.0.3']);
    m.stop();
  });

  it('bounds a stream of config changes by DISC_DEBOUNCE_MAX', () => {
    const m = setup({ after: 100, max: 300, edsDebounce: true });
    const t0 = Date.now();
    for (let i = 0; i < 10; i++) {
      m.load('vs.yaml', VS(`${i + 1}s`));
      jest.advanceTimersByTime(60);
      if (m.r.fired.length > 0) break;
    }
    expect(m.r.fired).toHaveLength(1);
    expect(m.r.firedAt[0] - t0).toBe(300);
    m.stop();
  });
});

describe('a large ServiceEntry change computed over turns (docs/adr/0204)', () => {
  it('is pushed in one snapshot with the other kinds of the same file', async () => {
    const store = new MemoryConfigStore();
    store.markSynced();
    const registry = new AggregateRegistry([new ServiceEntryRegistry(store, 'cluster.local', 'Cluster')]);
    await registry.start();
    const model = new MeshModel(
      store,
      registry,
      DEFAULT_MESH_SETTINGS,
      { debounceAfterMs: 10, debounceMaxMs: 1_000, edsDebounce: true, features: DEFAULT_FEATURES },
      createMetrics({ defaultMetrics: false }),
      pino({ level: 'silent' }),
    );
    model.start();
    const r = recorder();
    model.onPush(r.fire);
    try {
      // 5,000 ServiceEntries of 3 endpoints: the registry computes them over many turns, longer than the debounce
      const entries = Array.from({ length: 5_000 }, (_, i) => serviceEntryObject(`s-${i}`, `s-${i}.example.com`, [1, 2, 3].map((k) => `10.${k}.${i >> 8}.${i & 255}`)));
      const dr = parseConfigDocuments('apiVersion: networking.mesh.io/v1\nkind: DestinationRule\nmetadata: { name: s-0 }\nspec: { host: s-0.example.com }\n', 'big.yaml', 'default').objects;
      store.applySource('big.yaml', [...entries, ...dr]);
      for (let k = 0; k < 300 && model.current().push.services.length < 5_000; k++) await new Promise((res) => setTimeout(res, 20));
      await new Promise((res) => setTimeout(res, 100));
      expect(model.current().push.services).toHaveLength(5_000);
      // one snapshot for both: the DestinationRule's push waited for the registry's
      const full = r.fired.filter((q) => q.full);
      expect(full).toHaveLength(1);
      expect([...full[0].configKinds]).toEqual(['DestinationRule']);
    } finally {
      model.stop();
      registry.stop();
    }
  }, 30_000);
});
