/**
 * Route collapse (DISC_ENABLE_ROUTE_COLLAPSE_OPTIMIZATION): sidecar virtual hosts with identical
 * routes are merged into one carrying the union of their domains; hosts whose routes differ, and
 * every host when the setting is off, stay apart.
 */
import { RouteConfiguration } from '../../src/gen/envoy/config/route/v3/route.js';
import { VirtualHost } from '../../src/gen/envoy/config/route/v3/route_components.js';
import { encode, msg } from '../../src/xds/envoy/pack.js';
import { collapseVirtualHosts, encodeRoutesField, encodeVirtualHost, type VirtualHostPart } from '../../src/xds/generators/route-collapse.js';
import { DEFAULT_GENERATOR_SETTINGS } from '../../src/xds/generators/types.js';
import { generatorsFor } from '../../src/bootstrap/generators.js';
import { ResourceCache } from '../../src/xds/cache.js';
import { modelFromYaml, sidecar, TypeUrl, type TestModel } from '../support/model.js';
import { serviceEntry } from './ads-harness.js';
import { integrityProblems } from './integrity.js';
import { hcmOf } from '../support/decode.js';
import { ClusterLoadAssignment } from '../../src/gen/envoy/config/endpoint/v3/endpoint.js';
import { Cluster } from '../../src/gen/envoy/config/cluster/v3/cluster.js';
import { Listener } from '../../src/gen/envoy/config/listener/v3/listener.js';

const route = (cluster: string, name = 'default'): VirtualHostPart['routes'] =>
  encodeRoutesField([{ name, match: { prefix: '/' }, route: { cluster, timeout: { seconds: 0, nanos: 0 } } }]);

const part = (name: string, domains: string[], routes: Uint8Array): VirtualHostPart => ({ key: name, name, domains, routes });

describe('collapseVirtualHosts', () => {
  it('merges hosts with identical routes into the first, with the union of their domains in order', () => {
    const a = part('a:80', ['a', 'a:80', 'shared'], route('outbound|80||backend'));
    const b = part('b:80', ['b', 'shared', 'b:80'], route('outbound|80||backend'));
    const c = part('c:80', ['c'], route('outbound|80||c'));
    const out = collapseVirtualHosts([a, c, b]);
    expect(out.map((p) => [p.name, p.domains])).toEqual([
      ['a:80', ['a', 'a:80', 'shared', 'b', 'b:80']],
      ['c:80', ['c']],
    ]);
    // the inputs are left as they were
    expect(a.domains).toEqual(['a', 'a:80', 'shared']);
  });

  it('keeps hosts apart when any route differs, even only in a name or a later route', () => {
    const one = encodeRoutesField([{ name: 'r1', match: { prefix: '/' }, route: { cluster: 'x' } }]);
    const renamed = encodeRoutesField([{ name: 'r2', match: { prefix: '/' }, route: { cluster: 'x' } }]);
    const longer = encodeRoutesField([
      { name: 'r1', match: { prefix: '/' }, route: { cluster: 'x' } },
      { name: 'r1', match: { prefix: '/b' }, route: { cluster: 'y' } },
    ]);
    const parts = [part('a', ['a'], one), part('b', ['b'], renamed), part('c', ['c'], longer)];
    expect(collapseVirtualHosts(parts)).toEqual(parts);
  });

  it('encodes a part as the generated encoder encodes the same virtual host', () => {
    const routes = [{ name: 'default', match: { prefix: '/' }, route: { cluster: 'outbound|80||a' } }];
    const p = part('a:80', ['a', 'a:80'], encodeRoutesField(routes));
    expect(Buffer.compare(encodeVirtualHost(p), Buffer.from(encode(VirtualHost, msg(VirtualHost, { name: 'a:80', domains: ['a', 'a:80'], routes }))))).toBe(0);
  });
});

/** Two services without VIPs that one VirtualService routes alike, and one routed on its own. */
const CONFIG = ['front', 'front-alias', 'other', 'backend'].map((name) => serviceEntry(name, [`10.3.0.${name.length}`], 8000)).join('') + `
apiVersion: networking.mesh.io/v1
kind: VirtualService
metadata: { name: to-backend, namespace: default }
spec:
  hosts: [front, front-alias]
  http: [{ route: [{ destination: { host: backend } }] }]
`;

function sharedTable(m: TestModel, routeCollapse: boolean): RouteConfiguration {
  const { push, endpoints } = m.model.current();
  const proxy = sidecar('10.9.9.9', 'client');
  const [res] = generatorsFor(proxy)[TypeUrl.Route]({
    proxy,
    push,
    endpoints,
    names: new Set(['8000']),
    cache: new ResourceCache(1000, true),
    settings: { ...DEFAULT_GENERATOR_SETTINGS, routeCollapse },
  });
  // an Any: type_url (field 1), then value (field 2) — decode the value
  return RouteConfiguration.decode(anyValue(res.any));
}

function anyValue(any: Buffer): Uint8Array {
  let pos = 0;
  while (pos < any.length) {
    const tag = any[pos++];
    let len = 0;
    let shift = 0;
    for (;;) {
      const b = any[pos++];
      len |= (b & 0x7f) << shift;
      if ((b & 0x80) === 0) break;
      shift += 7;
    }
    if (tag >> 3 === 2) return any.subarray(pos, pos + len);
    pos += len;
  }
  throw new Error('no value in Any');
}

describe('sidecar RDS with route collapse', () => {
  const m = modelFromYaml(CONFIG, { mock: false });
  afterAll(() => m.stop());
  const FRONT = 'front.default.svc.cluster.local:8000';
  const ALIAS = 'front-alias.default.svc.cluster.local:8000';

  it('serves one virtual host for the services a VirtualService routes alike, with both services’ domains', () => {
    const rc = sharedTable(m, true);
    expect(rc.virtualHosts.map((v) => v.name)).toEqual([
      'backend.default.svc.cluster.local:8000',
      ALIAS, // the first of the two (services in host order) carries both
      'other.default.svc.cluster.local:8000',
      'allow_any',
    ]);
    const front = rc.virtualHosts[1];
    expect(front.domains).toEqual(expect.arrayContaining(['front', 'front:8000', FRONT, 'front-alias', 'front-alias:8000', ALIAS]));
    expect(front.routes.map((r) => r.route?.cluster)).toEqual(['outbound|8000||backend.default.svc.cluster.local']);
    // every domain still appears once in the table
    const all = rc.virtualHosts.flatMap((v) => v.domains);
    expect(new Set(all).size).toBe(all.length);
  });

  it('keeps one virtual host per service when DISC_ENABLE_ROUTE_COLLAPSE_OPTIMIZATION is false', () => {
    const rc = sharedTable(m, false);
    expect(rc.virtualHosts.map((v) => v.name)).toEqual([
      'backend.default.svc.cluster.local:8000',
      ALIAS,
      FRONT,
      'other.default.svc.cluster.local:8000',
      'allow_any',
    ]);
    expect(rc.virtualHosts[1].routes).toEqual(rc.virtualHosts[2].routes);
    // collapsing changes only the grouping: the same domains route to the same routes
    const byDomain = (t: RouteConfiguration): Record<string, unknown> =>
      Object.fromEntries(t.virtualHosts.flatMap((v) => v.domains.map((d) => [d, v.routes])));
    expect(byDomain(sharedTable(m, true))).toEqual(byDomain(rc));
  });

  it('stops merging a host whose routes come to differ', () => {
    const m2 = modelFromYaml(CONFIG, { mock: false });
    m2.apply(
      'change.yaml',
      `
apiVersion: networking.mesh.io/v1
kind: VirtualService
metadata: { name: alias, namespace: default }
spec:
  hosts: [front-alias]
  http: [{ timeout: 2s, route: [{ destination: { host: backend } }] }]
`,
    );
    m2.apply('test.yaml', CONFIG.replace('hosts: [front, front-alias]', 'hosts: [front]'));
    m2.model.flush();
    const rc = sharedTable(m2, true);
    expect(rc.virtualHosts.map((v) => v.name)).toContain(FRONT);
    expect(rc.virtualHosts.find((v) => v.name === ALIAS)!.domains).not.toContain('front');
    m2.stop();
  });

  it('still gives a sidecar a consistent configuration (every referenced cluster and route exists)', () => {
    const proxy = sidecar('10.9.9.9', 'client');
    const clusters = m.generate(proxy, TypeUrl.Cluster) as Cluster[];
    const listeners = m.generate(proxy, TypeUrl.Listener) as Listener[];
    const rds = [...new Set(listeners.flatMap((l) => hcmOf(l).map((h) => h.rds?.routeConfigName).filter((n): n is string => !!n)))];
    const eds = clusters.filter((c) => c.edsClusterConfig).map((c) => c.name);
    const config = {
      clusters,
      listeners,
      routes: m.generate(proxy, TypeUrl.Route, rds) as RouteConfiguration[],
      endpoints: m.generate(proxy, TypeUrl.Endpoint, eds) as ClusterLoadAssignment[],
    };
    expect(config.routes.find((r) => r.name === '8000')!.virtualHosts).toHaveLength(4);
    expect(integrityProblems(config)).toEqual([]);
  });
});
