/**
 * Distribution tracking (src/controllers/config-status/distribution.ts): which proxies hold the current generation of
 * each config object, learned from the snapshot versions proxies acknowledge, and combined across
 * daemons from their reports.
 */
import { parseConfigObject } from '../../../src/config/parse.js';
import { MemoryConfigStore } from '../../../src/config/store.js';
import type { ConfigObject } from '../../../src/config/types.js';
import pino from 'pino';
import { createMetrics } from '../../../src/metrics/metrics.js';
import { MeshModel } from '../../../src/model/mesh-model.js';
import { DEFAULT_MESH_SETTINGS } from '../../../src/model/mesh-settings.js';
import { DEFAULT_FEATURES } from '../../../src/model/push-context.js';
import { AggregateRegistry } from '../../../src/registry/aggregate.js';
import { ServiceEntryRegistry } from '../../../src/registry/service-entry.js';
import { combineViews, DistributionTracker } from '../../../src/controllers/config-status/distribution.js';

const LDS = 'type.googleapis.com/envoy.config.listener.v3.Listener';
const CDS = 'type.googleapis.com/envoy.config.cluster.v3.Cluster';
const REF = 'VirtualService/shop/reviews';

function vsObject(hostsSuffix: string): ConfigObject {
  const parsed = parseConfigObject(
    { apiVersion: 'networking.mesh.io/v1', kind: 'VirtualService', metadata: { name: 'reviews', namespace: 'shop' }, spec: { hosts: [`reviews${hostsSuffix}`], http: [{ route: [{ destination: { host: 'reviews' } }] }] } },
    'k8s',
    'shop',
  );
  if ('issues' in parsed) throw new Error(JSON.stringify(parsed.issues));
  return parsed;
}

/** The daemon's model over `store`, rebuilding at once on every change (no debounce). */
function modelOf(store: MemoryConfigStore): MeshModel {
  const registry = new AggregateRegistry([new ServiceEntryRegistry(store, DEFAULT_MESH_SETTINGS.domain, DEFAULT_MESH_SETTINGS.clusterId)]);
  void registry.start();
  return new MeshModel(
    store,
    registry,
    DEFAULT_MESH_SETTINGS,
    { debounceAfterMs: 0, debounceMaxMs: 0, edsDebounce: true, features: DEFAULT_FEATURES },
    createMetrics({ defaultMetrics: false }),
    pino({ level: 'silent' }),
  );
}

describe('DistributionTracker', () => {
  let store: MemoryConfigStore;
  let clock: number;
  let tracker: DistributionTracker;
  let model: MeshModel;
  /** The snapshot version the model serves now. */
  const version = (): string => model.current().push.version;
  /** Makes the model build a new snapshot (as a mesh config change would) and returns its version. */
  const rebuild = (): string => {
    model.setMeshSettings({ ...DEFAULT_MESH_SETTINGS });
    return version();
  };

  beforeEach(() => {
    store = new MemoryConfigStore();
    store.upsert(vsObject(''), 'src');
    store.markSynced();
    clock = 1_000_000;
    tracker = new DistributionTracker({ store, identity: 'meshd-a', retentionMs: 60_000, now: () => clock });
    tracker.start();
    model = modelOf(store);
    model.start();
    tracker.followModel(model);
  });

  afterEach(() => {
    tracker.stop();
    model.stop();
  });

  test('a proxy is up to date once every type it acknowledged comes from a snapshot built after the change', () => {
    const v0 = version();
    tracker.onAck('p1', LDS, v0);
    tracker.onAck('p1', CDS, v0);
    tracker.onAck('p2', LDS, v0);
    expect(tracker.view().proxies).toBe(2);
    expect(tracker.view().upToDate(REF, 1)).toBe(2);

    store.upsert(vsObject('.shop.svc.cluster.local'), 'src'); // generation 2; the model rebuilds
    expect(store.get('VirtualService', 'shop', 'reviews')?.meta.generation).toBe(2);
    const v1 = version();
    expect(v1).not.toBe(v0);
    expect(tracker.view().upToDate(REF, 2)).toBe(0);

    tracker.onAck('p1', LDS, v1);
    expect(tracker.view().upToDate(REF, 2)).toBe(0); // p1 still has the old clusters
    tracker.onAck('p1', CDS, v1);
    tracker.onAck('p2', LDS, v1);
    expect(tracker.view().upToDate(REF, 2)).toBe(2);
    expect(tracker.report().configs[REF]).toEqual([2, 2]);
  });

  test('a disconnected proxy no longer counts; acknowledging an unknown or expired version changes nothing', () => {
    tracker.onAck('p1', LDS, version());
    tracker.onAck('p2', LDS, version());
    tracker.onDisconnect('p2');
    expect(tracker.view().proxies).toBe(1);

    const before = tracker.changeCount();
    tracker.onAck('p3', LDS, 'never-built');
    expect(tracker.view().proxies).toBe(1);
    expect(tracker.changeCount()).toBe(before);

    store.upsert(vsObject('.shop.svc.cluster.local'), 'src');
    const v1 = version();
    clock += 61_000; // every snapshot so far is older than the retention now
    const v2 = rebuild(); // recording it forgets the expired ones
    expect(v2).not.toBe(v1);
    tracker.onAck('p1', LDS, v1);
    expect(tracker.view().upToDate(REF, 2)).toBe(0);
    tracker.onAck('p1', LDS, v2);
    expect(tracker.view().upToDate(REF, 2)).toBe(1);
  });

  test('deleting an object drops it from the report', () => {
    tracker.onAck('p1', LDS, version());
    expect(Object.keys(tracker.report().configs)).toEqual([REF]);
    store.delete('VirtualService', 'shop', 'reviews');
    expect(tracker.report().configs).toEqual({});
  });

  test('the mesh-wide view adds other daemons\' reports, counting only those at the leader\'s generation or newer', () => {
    tracker.onAck('p1', LDS, version());
    const view = combineViews(tracker.view(), [
      { identity: 'meshd-b', time: new Date().toISOString(), proxies: 3, configs: { [REF]: [1, 2] } },
      { identity: 'meshd-c', time: new Date().toISOString(), proxies: 2, configs: { [REF]: [0, 2] } },
    ]);
    expect(view.proxies).toBe(6);
    expect(view.upToDate(REF, 1)).toBe(3);
    expect(view.upToDate('VirtualService/shop/unknown', 1)).toBe(0);
  });
});
