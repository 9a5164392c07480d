import { DNS_AUTO_ALLOCATE, modelFromYaml, sidecar, grpcClient, router, TypeUrl } from '../support/model.js';
import { hcmOf, tcpProxiesOf } from '../support/decode.js';
import { integrityProblems } from './integrity.js';
import type { Proxy } from '../../src/model/proxy.js';
import type { TestModel } from '../support/model.js';

const ROUTING = `
apiVersion: networking.mesh.io/v1
kind: VirtualService
metadata: { name: echo, namespace: default }
spec:
  hosts: [echo]
  http:
    - name: canary
      match: [{ headers: { x-canary: { exact: "true" } } }]
      route: [{ destination: { host: echo, subset: v2 } }]
    - name: split
      route:
        - { destination: { host: echo, subset: v1 }, weight: 80 }
        - { destination: { host: echo, subset: v2 }, weight: 20 }
      timeout: 3s
      retries: { attempts: 4, retryOn: "unavailable,503" }
---
apiVersion: networking.mesh.io/v1
kind: DestinationRule
metadata: { name: echo, namespace: default }
spec:
  host: echo.default.svc.cluster.local
  trafficPolicy:
    loadBalancer: { consistentHash: { httpHeaderName: x-user } }
    outlierDetection: { consecutive5xxErrors: 5, interval: 10s, baseEjectionTime: 30s }
  subsets:
    - { name: v1, labels: { version: v1 } }
    - { name: v2, labels: { version: v2 } }
`;

function fullConfig(m: TestModel, p: Proxy) {
  const clusters = m.generate(p, TypeUrl.Cluster);
  const eds = clusters.filter((c) => c.edsClusterConfig).map((c) => c.name);
  const listeners = m.generate(p, TypeUrl.Listener, p.type === 'grpc' ? ['echo.default.svc.cluster.local:7070'] : undefined);
  const rds = [...new Set(listeners.flatMap((l) => hcmOf(l).map((h) => h.rds?.routeConfigName).filter((n): n is string => !!n)))];
  return { clusters, endpoints: m.generate(p, TypeUrl.Endpoint, eds), listeners, routes: m.generate(p, TypeUrl.Route, rds) };
}

describe('proxyless gRPC generators', () => {
  const m = modelFromYaml(ROUTING);
  afterAll(() => m.stop());
  const client = grpcClient();

  it('serves an API listener named as the client dials it, pointing at RDS of the same name', () => {
    const [l] = m.generate(client, TypeUrl.Listener, ['echo.default.svc.cluster.local:7070']);
    expect(l.name).toBe('echo.default.svc.cluster.local:7070');
    const [hcm] = hcmOf(l);
    expect(hcm.rds?.routeConfigName).toBe('echo.default.svc.cluster.local:7070');
    expect(hcm.httpFilters.map((f) => f.name)).toEqual(['envoy.filters.http.fault', 'envoy.filters.http.router']);
  });

  it('omits listeners for unknown services and ports', () => {
    expect(m.generate(client, TypeUrl.Listener, ['nope.default.svc.cluster.local:7070', 'echo.default.svc.cluster.local:1'])).toEqual([]);
  });

  it('turns the VirtualService into header-matched and weighted routes with subsets, timeout and retries', () => {
    const [rc] = m.generate(client, TypeUrl.Route, ['echo.default.svc.cluster.local:7070']);
    const [vh] = rc.virtualHosts;
    expect(vh.domains).toContain('echo.default.svc.cluster.local:7070');
    const [canary, split] = vh.routes;
    expect(canary.match?.headers[0]).toMatchObject({ name: 'x-canary', stringMatch: { exact: 'true' } });
    expect(canary.route?.cluster).toBe('outbound|7070|v2|echo.default.svc.cluster.local');
    expect(split.route?.weightedClusters?.clusters.map((c) => [c.name, c.weight])).toEqual([
      ['outbound|7070|v1|echo.default.svc.cluster.local', 80],
      ['outbound|7070|v2|echo.default.svc.cluster.local', 20],
    ]);
    expect(split.route?.maxStreamDuration?.maxStreamDuration).toEqual({ seconds: 3, nanos: 0 });
    expect(split.route?.retryPolicy).toMatchObject({ numRetries: 4, retryOn: 'unavailable,retriable-status-codes', retriableStatusCodes: [503] });
    expect(split.route?.hashPolicy[0].header?.headerName).toBe('x-user');
  });

  it('assigns subset endpoints by label', () => {
    const [v1] = m.generate(client, TypeUrl.Endpoint, ['outbound|7070|v1|echo.default.svc.cluster.local']);
    const ports = v1.endpoints.flatMap((l) => l.lbEndpoints.map((e) => e.endpoint?.address?.socketAddress?.portValue));
    expect(ports).toEqual([17070]);
    const [all] = m.generate(client, TypeUrl.Endpoint, ['outbound|7070||echo.default.svc.cluster.local']);
    expect(all.endpoints.flatMap((l) => l.lbEndpoints)).toHaveLength(2);
  });

  it('builds clusters with the rule’s load balancer and outlier detection', () => {
    const clusters = m.generate(client, TypeUrl.Cluster, ['outbound|7070|v1|echo.default.svc.cluster.local']);
    expect(clusters).toHaveLength(1);
    expect(clusters[0].lbPolicy).toBe(2 /* RING_HASH */);
    expect(clusters[0].outlierDetection?.consecutive5xx).toBe(5);
    expect(clusters[0].transportSocket).toBeUndefined();
  });

  it('is referentially complete', () => {
    expect(integrityProblems(fullConfig(m, client))).toEqual([]);
  });

  it('renames a route whose content changes, so clients that compare only known keys see the change', () => {
    const vs = (fault: string) => `
apiVersion: networking.mesh.io/v1
kind: VirtualService
metadata: { name: echo, namespace: default }
spec:
  hosts: [echo]
  http: [{ ${fault} route: [{ destination: { host: echo } }] }]
`;
    const m2 = modelFromYaml(vs(''));
    const name = () => m2.generate(client, TypeUrl.Route, ['echo.default.svc.cluster.local:7070'])[0].virtualHosts[0].routes[0].name;
    const before = name();
    m2.apply('test.yaml', vs('fault: { abort: { percentage: { value: 100 }, grpcStatus: UNAVAILABLE } },'));
    m2.model.flush();
    expect(name()).not.toBe(before);
    expect(name().startsWith('default.echo.0@')).toBe(true);
    m2.stop();
  });
});

describe('sidecar generators', () => {
  const m = modelFromYaml(ROUTING);
  afterAll(() => m.stop());
  const proxy = sidecar('127.0.0.1', 'echo-v1-abc', 'default', { app: 'echo', version: 'v1' });

  it('has capture listeners, per-port outbound listeners and inbound chains for its own ports', () => {
    const listeners = m.generate(proxy, TypeUrl.Listener);
    const names = listeners.map((l) => l.name);
    expect(names).toEqual(expect.arrayContaining(['virtualOutbound', 'virtualInbound', '0.0.0.0_7070', '0.0.0.0_9080', '10.96.0.12_5432']));
    const inbound = listeners.find((l) => l.name === 'virtualInbound')!;
    // 127.0.0.1 hosts every Mock endpoint: chains per target port (PERMISSIVE by default: mesh TLS,
    // other TLS, plaintext), then the mesh TLS and other TLS chains of undeclared ports
    expect(inbound.filterChains.map((c) => c.filterChainMatch?.destinationPort)).toEqual([15432, 15432, 15432, 17070, 17070, 17070, 17071, 17071, 17071, 19080, 19080, 19080, undefined, undefined]);
    const db = listeners.find((l) => l.name === '10.96.0.12_5432')!;
    expect(tcpProxiesOf(db)[0].cluster).toBe('outbound|5432||db.data.svc.cluster.local');
  });

  it('routes a service with a VIP by the VirtualService in its own route configuration, with unique domains', () => {
    const [rc] = m.generate(proxy, TypeUrl.Route, ['echo.default.svc.cluster.local:7070']);
    expect(rc.name).toBe('echo.default.svc.cluster.local:7070');
    expect(rc.virtualHosts.map((v) => v.name)).toEqual(['echo.default.svc.cluster.local:7070', 'allow_any']);
    const vh = rc.virtualHosts[0];
    expect(vh.domains).toEqual(expect.arrayContaining(['echo', 'echo:7070', 'echo.default', '10.96.0.10:7070']));
    expect(new Set(vh.domains).size).toBe(vh.domains.length);
    expect(vh.routes.map((r) => r.name)).toEqual(['canary', 'split']);
    expect(vh.routes[1].route?.weightedClusters?.clusters.map((c) => [c.name, c.weight])).toEqual([
      ['outbound|7070|v1|echo.default.svc.cluster.local', 80],
      ['outbound|7070|v2|echo.default.svc.cluster.local', 20],
    ]);
  });

  it('sends traffic to a VIP through a filter chain matched on that address, everything else on the port through the shared table', () => {
    const l = m.generate(proxy, TypeUrl.Listener).find((x) => x.name === '0.0.0.0_7070')!;
    const byMatch = l.filterChains.map((c) => [
      c.filterChainMatch?.prefixRanges.map((r) => `${r.addressPrefix}/${r.prefixLen}`).join(',') ?? '',
      hcmOf({ ...l, filterChains: [c], defaultFilterChain: undefined })[0].rds?.routeConfigName,
    ]);
    expect(byMatch).toEqual([
      ['10.96.0.10/32', 'echo.default.svc.cluster.local:7070'],
      ['', '7070'],
    ]);
    // one stat prefix for the whole port
    expect(new Set(hcmOf(l).map((h) => h.statPrefix))).toEqual(new Set(['outbound_0.0.0.0_7070']));
    // the shared table of a port whose services all have VIPs holds only the catch-all
    const [shared] = m.generate(proxy, TypeUrl.Route, ['7070']);
    expect(shared.virtualHosts.map((v) => v.name)).toEqual(['allow_any']);
  });

  it('keeps services without a VIP in the port’s shared table, routed by Host', () => {
    const m2 = modelFromYaml(
      ROUTING +
        `---
apiVersion: networking.mesh.io/v1
kind: ServiceEntry
metadata: { name: novip, namespace: default }
spec:
  hosts: [novip.default.svc.cluster.local]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{ number: 7070, name: http, protocol: HTTP }]
  endpoints: [{ address: 10.1.0.1 }]
`,
    );
    const [shared] = m2.generate(proxy, TypeUrl.Route, ['7070']);
    expect(shared.virtualHosts.map((v) => v.name)).toEqual(['novip.default.svc.cluster.local:7070', 'allow_any']);
    expect(shared.virtualHosts[0].domains).toEqual(expect.arrayContaining(['novip', 'novip:7070', 'novip.default.svc.cluster.local:7070']));
    expect(m2.generate(proxy, TypeUrl.Route, ['novip.default.svc.cluster.local:7070'])).toEqual([]);
    const l = m2.generate(proxy, TypeUrl.Listener).find((x) => x.name === '0.0.0.0_7070')!;
    expect(hcmOf(l).map((h) => h.rds?.routeConfigName)).toEqual(['echo.default.svc.cluster.local:7070', '7070']);
    expect(integrityProblems(fullConfig(m2, proxy))).toEqual([]);
    m2.stop();
  });

  it('changes only the edited service’s route configuration when its VirtualService changes', () => {
    const m2 = modelFromYaml(ROUTING);
    const names = ['echo.default.svc.cluster.local:7070', 'ratings.default.svc.cluster.local:9080', '7070', '9080'];
    const before = m2.generate(proxy, TypeUrl.Route, names);
    m2.apply('test.yaml', ROUTING.replace('weight: 80', 'weight: 50').replace('weight: 20', 'weight: 50'));
    m2.model.flush();
    const after = m2.generate(proxy, TypeUrl.Route, names);
    const changed = names.filter((_, i) => JSON.stringify(before[i]) !== JSON.stringify(after[i]));
    expect(changed).toEqual(['echo.default.svc.cluster.local:7070']);
    expect(after[0].virtualHosts[0].routes[1].route?.weightedClusters?.clusters.map((c) => c.weight)).toEqual([50, 50]);
    m2.stop();
  });

  it('has subset, inbound, passthrough and blackhole clusters with auto mTLS matches', () => {
    const clusters = m.generate(proxy, TypeUrl.Cluster);
    const names = clusters.map((c) => c.name);
    expect(names).toEqual(expect.arrayContaining(['outbound|7070|v1|echo.default.svc.cluster.local', 'inbound|17070||', 'PassthroughCluster', 'BlackHoleCluster', 'InboundPassthroughClusterIpv4']));
    const echo = clusters.find((c) => c.name === 'outbound|7070||echo.default.svc.cluster.local')!;
    expect(echo.transportSocketMatches.map((t) => t.name)).toEqual(['tlsMode-mesh']);
    // endpoints without the label: the cluster's own socket, unset (plaintext)
    expect(echo.transportSocket).toBeUndefined();
    // EDS asks for the cluster's own name (no service_name spelled out)
    expect(echo.edsClusterConfig?.serviceName).toBe('');
  });

  it('is referentially complete', () => {
    expect(integrityProblems(fullConfig(m, proxy))).toEqual([]);
  });

  it('hides services and rules not exported to the proxy namespace', () => {
    const m2 = modelFromYaml(`
apiVersion: networking.mesh.io/v1
kind: ServiceEntry
metadata: { name: private, namespace: team-a }
spec:
  hosts: [private.team-a.svc.cluster.local]
  exportTo: ["."]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{ number: 8080, name: http, protocol: HTTP }]
  endpoints: [{ address: 10.1.0.1 }]
`);
    const inA = m2.generate(sidecar('10.1.0.9', 'a', 'team-a'), TypeUrl.Cluster).map((c) => c.name);
    const inB = m2.generate(sidecar('10.1.0.8', 'b', 'team-b'), TypeUrl.Cluster).map((c) => c.name);
    expect(inA).toContain('outbound|8080||private.team-a.svc.cluster.local');
    expect(inB).not.toContain('outbound|8080||private.team-a.svc.cluster.local');
    m2.stop();
  });

  it('routes TLS by SNI through VirtualService tls routes', () => {
    const m2 = modelFromYaml(`
apiVersion: networking.mesh.io/v1
kind: ServiceEntry
metadata: { name: secure, namespace: default }
spec:
  hosts: [secure.example.com, secure-v2.example.com]
  addresses: [240.0.0.5]
  location: MESH_EXTERNAL
  resolution: DNS
  ports: [{ number: 443, name: tls, protocol: TLS }]
---
apiVersion: networking.mesh.io/v1
kind: VirtualService
metadata: { name: secure, namespace: default }
spec:
  hosts: [secure.example.com]
  tls:
    - match: [{ port: 443, sniHosts: [secure.example.com] }]
      route: [{ destination: { host: secure-v2.example.com } }]
`);
    const listeners = m2.generate(proxy, TypeUrl.Listener);
    const l = listeners.find((x) => x.name === '240.0.0.5_443')!;
    const sniChain = l.filterChains.find((c) => c.filterChainMatch?.serverNames.includes('secure.example.com'))!;
    expect(tcpProxiesOf({ ...l, filterChains: [sniChain], defaultFilterChain: undefined })[0].cluster).toBe('outbound|443||secure-v2.example.com');
    expect(l.listenerFilters.map((f) => f.name)).toEqual(['envoy.filters.listener.tls_inspector']);
    expect(integrityProblems(fullConfig(m2, proxy))).toEqual([]);
    m2.stop();
  });

  it('scopes egress by the namespace Sidecar resource', () => {
    const m2 = modelFromYaml(`
apiVersion: networking.mesh.io/v1
kind: Sidecar
metadata: { name: default, namespace: default }
spec:
  egress: [{ hosts: ["./*"] }]
`);
    const names = m2.generate(proxy, TypeUrl.Cluster).map((c) => c.name);
    expect(names).toContain('outbound|7070||echo.default.svc.cluster.local');
    expect(names).not.toContain('outbound|5432||db.data.svc.cluster.local');
    m2.stop();
  });
});

describe('sidecar clusters shared between namespaces', () => {
  // a rule in the proxy's own namespace wins over the service's: proxies there must not get the
  // clusters other namespaces share (ADR 0197)
  const OWN_RULE = `
apiVersion: networking.mesh.io/v1
kind: DestinationRule
metadata: { name: echo-here, namespace: other }
spec:
  host: echo.default.svc.cluster.local
  trafficPolicy:
    loadBalancer: { simple: LEAST_REQUEST }
`;
  const CLUSTER = 'outbound|7070||echo.default.svc.cluster.local';

  it('gives proxies of namespaces under the same rule the same encoded clusters, and a namespace with its own rule its own', () => {
    const m = modelFromYaml(`${ROUTING}---${OWN_RULE}`);
    const inOther = sidecar('10.0.0.3', 'c', 'other');
    const inA = sidecar('10.0.0.1', 'a', 'team-a');
    const inB = sidecar('10.0.0.2', 'b', 'team-b');
    // the namespace with its own rule first: what it builds must not leak to the others, nor theirs to it
    const other = m.generateRaw(inOther, TypeUrl.Cluster).find((c) => c.name === CLUSTER)!;
    const a = m.generateRaw(inA, TypeUrl.Cluster).find((c) => c.name === CLUSTER)!;
    const b = m.generateRaw(inB, TypeUrl.Cluster).find((c) => c.name === CLUSTER)!;
    expect(b).toBe(a);
    expect(other.version).not.toBe(a.version);
    const decoded = (p: Proxy) => m.generate(p, TypeUrl.Cluster).find((c) => c.name === CLUSTER)!;
    // the service's rule: consistent hashing with outlier detection; the namespace's own: least request
    expect(decoded(inA).ringHashLbConfig ?? decoded(inA).lbPolicy).toEqual(decoded(inB).ringHashLbConfig ?? decoded(inB).lbPolicy);
    expect(decoded(inA).outlierDetection).toBeDefined();
    expect(decoded(inOther).outlierDetection).toBeUndefined();
    expect(decoded(inOther).lbPolicy).not.toBe(decoded(inA).lbPolicy);
    // subsets come from the service's rule only where it applies
    const subsets = (p: Proxy) => m.generate(p, TypeUrl.Cluster).filter((c) => c.name.startsWith('outbound|7070|v')).map((c) => c.name);
    expect(subsets(inA)).toEqual(['outbound|7070|v1|echo.default.svc.cluster.local', 'outbound|7070|v2|echo.default.svc.cluster.local']);
    expect(subsets(inOther)).toEqual([]);
    m.stop();
  });

  it('gives every namespace a DestinationRule edit, after lookups answered from what an earlier namespace asked', () => {
    const m = modelFromYaml(ROUTING);
    const proxies = [sidecar('10.0.0.1', 'a', 'team-a'), sidecar('10.0.0.2', 'b', 'team-b')];
    const subsets = (p: Proxy) => m.generate(p, TypeUrl.Cluster).filter((c) => c.name.startsWith('outbound|7070|v')).map((c) => c.name.split('|')[2]);
    for (const p of proxies) expect(subsets(p)).toEqual(['v1', 'v2']);
    m.apply('test.yaml', ROUTING.replace('    - { name: v2, labels: { version: v2 } }\n', '    - { name: v2, labels: { version: v2 } }\n    - { name: v3, labels: { version: v3 } }\n'));
    for (const p of [...proxies].reverse()) expect(subsets(p)).toEqual(['v1', 'v2', 'v3']);
    m.stop();
  });
});

describe('sidecar generators, hosts without addresses', () => {
  // Two ServiceEntries without addresses: an HTTP one with a VirtualService, a TCP one.
  const NO_ADDRESSES = `
apiVersion: networking.mesh.io/v1
kind: ServiceEntry
metadata: { name: shop, namespace: default }
spec:
  hosts: [shop.default.svc.cluster.local]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{ number: 8080, name: http, protocol: HTTP }]
  endpoints: [{ address: 10.1.0.1, labels: { version: v1 } }, { address: 10.1.0.2, labels: { version: v2 } }]
---
apiVersion: networking.mesh.io/v1
kind: ServiceEntry
metadata: { name: cache, namespace: default }
spec:
  hosts: [cache.default.svc.cluster.local]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{ number: 6379, name: tcp, protocol: TCP }]
  endpoints: [{ address: 10.1.0.3 }]
---
apiVersion: networking.mesh.io/v1
kind: DestinationRule
metadata: { name: shop, namespace: default }
spec:
  host: shop.default.svc.cluster.local
  subsets: [{ name: v1, labels: { version: v1 } }, { name: v2, labels: { version: v2 } }]
---
apiVersion: networking.mesh.io/v1
kind: VirtualService
metadata: { name: shop, namespace: default }
spec:
  hosts: [shop]
  http:
    - route:
        - { destination: { host: shop, subset: v1 }, weight: 90 }
        - { destination: { host: shop, subset: v2 }, weight: 10 }
`;
  const SHOP = 'shop.default.svc.cluster.local:8080';
  const m = modelFromYaml(NO_ADDRESSES, { mock: false });
  afterAll(() => m.stop());
  const plain = sidecar('10.2.0.1', 'client-a', 'default');
  const dns = sidecar('10.2.0.2', 'client-b', 'default', {}, DNS_AUTO_ALLOCATE);

  const chainsOf8080 = (p: Proxy): string[][] => chainsOf8080For(m, p);

  it('routes a host without addresses by Host in the shared table for a sidecar that does not resolve names itself', () => {
    expect(chainsOf8080(plain)).toEqual([['', '8080']]);
    const [shared] = m.generate(plain, TypeUrl.Route, ['8080']);
    expect(shared.virtualHosts.map((v) => v.name)).toEqual([SHOP, 'allow_any']);
    expect(m.generate(plain, TypeUrl.Route, [SHOP])).toEqual([]);
    expect(integrityProblems(fullConfig(m, plain))).toEqual([]);
  });

  it('routes a sidecar that asks for automatic addresses without capturing DNS by Host like any other', () => {
    const halfway = sidecar('10.2.0.3', 'client-c', 'default', {}, { DNS_AUTO_ALLOCATE: 'true' });
    expect(chainsOf8080(halfway)).toEqual([['', '8080']]);
    const [shared] = m.generate(halfway, TypeUrl.Route, ['8080']);
    expect(shared.virtualHosts.map((v) => v.name)).toEqual([SHOP, 'allow_any']);
    expect(m.generate(halfway, TypeUrl.Listener).map((l) => l.name)).toContain('0.0.0.0_6379');
    expect(integrityProblems(fullConfig(m, halfway))).toEqual([]);
  });

  it('gives a sidecar that resolves names to automatic addresses a filter chain and a route configuration of the host’s own', () => {
    const chains = chainsOf8080(dns);
    expect(chains).toHaveLength(2);
    const [vip, route] = chains[0];
    expect(vip).toMatch(/^240\.240\.\d+\.\d+\/32$/);
    expect(route).toBe(SHOP);
    expect(chains[1]).toEqual(['', '8080']);
    const [rc] = m.generate(dns, TypeUrl.Route, [SHOP]);
    const vh = rc.virtualHosts[0];
    expect(vh.name).toBe(SHOP);
    expect(vh.domains).toEqual(expect.arrayContaining(['shop', 'shop:8080', SHOP, vip.replace('/32', ''), `${vip.replace('/32', '')}:8080`]));
    expect(vh.routes[0].route?.weightedClusters?.clusters.map((c) => [c.name, c.weight])).toEqual([
      ['outbound|8080|v1|shop.default.svc.cluster.local', 90],
      ['outbound|8080|v2|shop.default.svc.cluster.local', 10],
    ]);
    // the shared table keeps only the catch-all
    const [shared] = m.generate(dns, TypeUrl.Route, ['8080']);
    expect(shared.virtualHosts.map((v) => v.name)).toEqual(['allow_any']);
    expect(integrityProblems(fullConfig(m, dns))).toEqual([]);
  });

  it('gives a TCP host without addresses a listener on its automatic address instead of the port’s wildcard one', () => {
    const names = m.generate(dns, TypeUrl.Listener).map((l) => l.name);
    const tcp = names.find((n) => n.endsWith('_6379'));
    expect(tcp).toMatch(/^240\.240\.\d+\.\d+_6379$/);
    expect(m.generate(plain, TypeUrl.Listener).map((l) => l.name)).toContain('0.0.0.0_6379');
  });

  it('after a VirtualService edit rebuilds the edited host’s route configuration only and keeps every other derived list', () => {
    const many = Array.from({ length: 40 }, (_, i) => `
---
apiVersion: networking.mesh.io/v1
kind: ServiceEntry
metadata: { name: s${i}, namespace: default }
spec:
  hosts: [s${i}.default.svc.cluster.local]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{ number: 8080, name: http, protocol: HTTP }]
  endpoints: [{ address: 10.3.0.${i + 1} }]
`).join('');
    const m2 = modelFromYaml(NO_ADDRESSES + many, { mock: false });
    const lds = m2.generate(dns, TypeUrl.Listener);
    const routeNames = [...new Set(lds.flatMap((l) => hcmOf(l).map((h) => h.rds?.routeConfigName ?? '')))].filter(Boolean).sort();
    expect(routeNames).toHaveLength(42); // 41 hosts on 8080 and the shared table
    const cds = m2.generateRaw(dns, TypeUrl.Cluster);
    const edsNames = cds.map((c) => c.name).filter((n) => n.startsWith('outbound|'));
    const eds = m2.generateRaw(dns, TypeUrl.Endpoint, edsNames);
    const rds = m2.generateRaw(dns, TypeUrl.Route, routeNames);
    const ldsRaw = m2.generateRaw(dns, TypeUrl.Listener);
    m2.apply('test.yaml', NO_ADDRESSES.replace('weight: 90', 'weight: 50').replace('weight: 10', 'weight: 50') + many);
    m2.model.flush();
    const push = m2.model.current().push;
    expect([...push.changes.keys].sort()).toEqual([`vs:${SHOP.replace(':8080', '')}`, 'version', 'vsgw:mesh'].sort());
    expect(m2.generateRaw(dns, TypeUrl.Cluster)).toBe(cds);
    expect(m2.generateRaw(dns, TypeUrl.Endpoint, edsNames)).toBe(eds);
    expect(m2.generateRaw(dns, TypeUrl.Listener)).toBe(ldsRaw);
    const built = push.derived.stats.listItemsBuilt;
    const rdsAfter = m2.generateRaw(dns, TypeUrl.Route, routeNames);
    expect(push.derived.stats.listItemsBuilt - built).toBe(1);
    const changed = rdsAfter.filter((r, i) => r !== rds[i]).map((r) => r.name);
    expect(changed).toEqual([SHOP]);
    m2.stop();
  });

  it('keeps a host’s automatic address while it exists, whatever else is added', () => {
    const m2 = modelFromYaml(NO_ADDRESSES, { mock: false });
    const address = () => chainsOf8080For(m2, dns).find(([, route]) => route === SHOP)![0];
    const before = address();
    m2.apply('more.yaml', `
apiVersion: networking.mesh.io/v1
kind: ServiceEntry
metadata: { name: more, namespace: default }
spec:
  hosts: [a.example.com, b.example.com, c.example.com]
  location: MESH_EXTERNAL
  resolution: DNS
  ports: [{ number: 8080, name: http, protocol: HTTP }]
`);
    m2.model.flush();
    expect(address()).toBe(before);
    expect(chainsOf8080For(m2, dns)).toHaveLength(5);
    m2.stop();
  });
});

function chainsOf8080For(m: TestModel, p: Proxy): string[][] {
  const l = m.generate(p, TypeUrl.Listener).find((x) => x.name === '0.0.0.0_8080')!;
  return l.filterChains.map((c) => [c.filterChainMatch?.prefixRanges.map((r) => `${r.addressPrefix}/${r.prefixLen}`).join(',') ?? '', hcmOf({ ...l, filterChains: [c], defaultFilterChain: undefined })[0].rds?.routeConfigName ?? '']);
}

describe('gateway generators', () => {
  const m = modelFromYaml(`
apiVersion: networking.mesh.io/v1
kind: Gateway
metadata: { name: public, namespace: mesh-system }
spec:
  selector: { app: mesh-ingressgateway }
  servers:
    - port: { number: 8080, name: http, protocol: HTTP }
      hosts: ["*/echo.example.com"]
---
apiVersion: networking.mesh.io/v1
kind: VirtualService
metadata: { name: echo-public, namespace: default }
spec:
  hosts: [echo.example.com]
  gateways: [mesh-system/public]
  http:
    - match: [{ uri: { prefix: /api } }]
      rewrite: { uri: / }
      route: [{ destination: { host: echo.default.svc.cluster.local, port: { number: 7070 } } }]
`);
  afterAll(() => m.stop());
  const gw = router();

  it('binds a listener per server port and routes bound VirtualServices by host', () => {
    const [l] = m.generate(gw, TypeUrl.Listener);
    expect(l.name).toBe('0.0.0.0_8080');
    expect(hcmOf(l)[0].rds?.routeConfigName).toBe('http.8080');
    const [rc] = m.generate(gw, TypeUrl.Route, ['http.8080']);
    expect(rc.virtualHosts.map((v) => v.domains)).toEqual([['echo.example.com', 'echo.example.com:*']]);
    const r = rc.virtualHosts[0].routes[0];
    expect(r.match?.prefix).toBe('/api');
    expect(r.route?.prefixRewrite).toBe('/');
    expect(r.route?.cluster).toBe('outbound|7070||echo.default.svc.cluster.local');
  });

  it('gives nothing to a router no Gateway selects', () => {
    expect(m.generate(router('mesh-system', { app: 'other' }), TypeUrl.Listener)).toEqual([]);
  });
});

describe('gateway generators: fields of the current public API', () => {
  const m = modelFromYaml(`
apiVersion: networking.mesh.io/v1
kind: Gateway
metadata: { name: secure, namespace: mesh-system }
spec:
  selector: { app: mesh-ingressgateway }
  servers:
    - port: { number: 8443, name: https, protocol: HTTPS }
      hosts: ["*/echo.example.com"]
      tls:
        mode: MUTUAL
        tlsCertificates:
          - { serverCertificate: /etc/certs/rsa.pem, privateKey: /etc/certs/rsa.key, caCertificates: /etc/certs/ca.pem }
          - { serverCertificate: /etc/certs/ec.pem, privateKey: /etc/certs/ec.key }
---
apiVersion: networking.mesh.io/v1
kind: VirtualService
metadata: { name: moved, namespace: default }
spec:
  hosts: [echo.example.com]
  gateways: [mesh-system/secure]
  http:
    - match: [{ uri: { prefix: /old/ } }]
      redirect: { authority: new.example.com, prefixRewrite: /, redirectCode: 0 }
`);
  afterAll(() => m.stop());

  it('serves every certificate of tls.tlsCertificates and verifies clients with their CA', async () => {
    const [l] = m.generate(router(), TypeUrl.Listener);
    const { DownstreamTlsContext } = await import('../../src/gen/envoy/extensions/transport_sockets/tls/v3/tls.js');
    const socket = l.filterChains[0].transportSocket;
    const ctx = DownstreamTlsContext.decode(socket?.typedConfig?.value ?? new Uint8Array());
    expect(ctx.commonTlsContext?.tlsCertificates.map((c) => c.certificateChain?.filename)).toEqual(['/etc/certs/rsa.pem', '/etc/certs/ec.pem']);
    expect(ctx.commonTlsContext?.validationContext?.trustedCa?.filename).toBe('/etc/certs/ca.pem');
  });

  it('redirects with the matched prefix rewritten, with the default code for redirectCode 0', () => {
    const [l] = m.generate(router(), TypeUrl.Listener);
    const name = hcmOf(l)[0].rds?.routeConfigName ?? '';
    const [rc] = m.generate(router(), TypeUrl.Route, [name]);
    const r = rc.virtualHosts[0].routes[0];
    expect(r?.redirect?.prefixRewrite).toBe('/');
    expect(r?.redirect?.hostRedirect).toBe('new.example.com');
    expect(r?.redirect?.responseCode).toBe(0); // MOVED_PERMANENTLY
  });
});
