/**
 * The snapshot's lookups, as a user of the config API notices them: which host a short name means,
 * which DestinationRule, VirtualService and Sidecar applies to whom, and what exportTo hides. Built
 * from YAML through the same store, registries and model the daemon runs (test/support/model.ts).
 * Where cheap, the effect is also checked in generated config.
 */
import { resolveHost } from '../../src/model/host.js';
import type { Proxy } from '../../src/model/proxy.js';
import type { PushContext } from '../../src/model/push-context.js';
import type { Service } from '../../src/model/service.js';
import { hcmOf } from '../support/decode.js';
import { modelFromYaml, sidecar, TypeUrl, type TestModel } from '../support/model.js';

const ECHO = 'echo.default.svc.cluster.local';
const RATINGS = 'ratings.default.svc.cluster.local';
const DB = 'db.data.svc.cluster.local';

const models: TestModel[] = [];
function model(yaml: string, opts?: Parameters<typeof modelFromYaml>[1]): TestModel {
  const m = modelFromYaml(yaml, opts);
  models.push(m);
  return m;
}
afterAll(() => {
  for (const m of models) m.stop();
});

const pc = (m: TestModel): PushContext => m.model.current().push;
function svc(m: TestModel, host: string): Service {
  const s = pc(m).servicesForHost(host)[0];
  if (!s) throw new Error(`no service ${host}`);
  return s;
}
const client = (ns: string, labels: Record<string, string> = {}): Proxy => sidecar('10.9.9.9', `client-${ns}`, ns, labels);
const drName = (m: TestModel, proxy: Proxy, host: string): string | undefined => {
  const dr = pc(m).destinationRule(proxy, svc(m, host));
  return dr && `${dr.source.meta.namespace}/${dr.source.meta.name}`;
};
const clusterNames = (m: TestModel, proxy: Proxy): string[] => m.generate(proxy, TypeUrl.Cluster).map((c) => c.name);

describe('short host resolution', () => {
  const m = model(`
apiVersion: networking.mesh.io/v1
kind: VirtualService
metadata: { name: echo-short, namespace: default }
spec:
  hosts: [echo]
  http: [{ route: [{ destination: { host: echo } }] }]
---
apiVersion: networking.mesh.io/v1
kind: VirtualService
metadata: { name: echo-elsewhere, namespace: team-a }
spec:
  hosts: [echo]
  http: [{ route: [{ destination: { host: echo } }] }]
---
apiVersion: networking.mesh.io/v1
kind: VirtualService
metadata: { name: wild, namespace: default }
spec:
  hosts: ["*.example.com", "ratings.default.svc.cluster.local"]
  http: [{ route: [{ destination: { host: ratings } }] }]
---
apiVersion: networking.mesh.io/v1
kind: DestinationRule
metadata: { name: echo, namespace: default }
spec:
  host: echo
  trafficPolicy: { loadBalancer: { simple: RANDOM } }
`);

  it('resolves a short host in the namespace of the rule that names it', () => {
    const vs = pc(m).virtualServiceForHost('default', ECHO);
    expect(vs?.source.meta.name).toBe('echo-short');
    expect(vs?.hosts).toEqual([ECHO]);
    const elsewhere = pc(m)
      .virtualServices('default', 'mesh')
      .find((v) => v.source.meta.name === 'echo-elsewhere');
    expect(elsewhere?.hosts).toEqual(['echo.team-a.svc.cluster.local']);
  });

  it('keeps FQDNs and wildcards as written', () => {
    const wild = pc(m)
      .virtualServices('default', 'mesh')
      .find((v) => v.source.meta.name === 'wild');
    expect(wild?.hosts).toEqual(['*.example.com', RATINGS]);
    expect(pc(m).virtualServiceForHost('default', 'api.example.com')?.source.meta.name).toBe('wild');
  });

  it('resolves a DestinationRule short host, so the rule shapes the cluster', () => {
    const dr = pc(m).destinationRule(client('default'), svc(m, ECHO));
    expect(dr?.host).toBe(ECHO);
    const cluster = m.generate(client('default'), TypeUrl.Cluster).find((c) => c.name === `outbound|7070||${ECHO}`);
    expect(cluster?.lbPolicy).toBe(3 /* RANDOM */);
  });

  it('uses the mesh domain', () => {
    expect(resolveHost('reviews', 'prod', 'example.internal')).toBe('reviews.prod.svc.example.internal');
    expect(resolveHost('reviews.prod.svc.example.internal', 'other', 'example.internal')).toBe('reviews.prod.svc.example.internal');
    expect(resolveHost('*', 'prod', 'example.internal')).toBe('*');
    expect(resolveHost('*.prod.svc.example.internal', 'other', 'example.internal')).toBe('*.prod.svc.example.internal');
    const m2 = model(
      `
apiVersion: networking.mesh.io/v1
kind: DestinationRule
metadata: { name: echo, namespace: default }
spec: { host: echo }
`,
      { mesh: { domain: 'example.internal' } },
    );
    expect(pc(m2).destinationRule(client('default'), svc(m2, 'echo.default.svc.example.internal'))?.host).toBe('echo.default.svc.example.internal');
  });
});

describe('DestinationRule lookup order: proxy namespace, then service namespace, then mesh-system', () => {
  const dr = (name: string, ns: string, host: string, extra = ''): string => `
apiVersion: networking.mesh.io/v1
kind: DestinationRule
metadata: { name: ${name}, namespace: ${ns} }
spec:
  host: "${host}"
${extra}---
`;
  const YAML =
    dr('client-side', 'team-a', ECHO, '  trafficPolicy: { loadBalancer: { simple: LEAST_REQUEST } }\n') +
    dr('owner', 'default', 'echo', '  trafficPolicy: { loadBalancer: { simple: RANDOM } }\n') +
    dr('mesh-wide', 'mesh-system', '*', '  trafficPolicy: { loadBalancer: { simple: ROUND_ROBIN } }\n') +
    dr('unrelated', 'team-c', ECHO, '  trafficPolicy: { loadBalancer: { simple: LEAST_REQUEST } }\n');
  const m = model(YAML);

  it("prefers a rule in the proxy's own namespace", () => {
    expect(drName(m, client('team-a'), ECHO)).toBe('team-a/client-side');
    const c = m.generate(client('team-a'), TypeUrl.Cluster).find((x) => x.name === `outbound|7070||${ECHO}`);
    expect(c?.lbPolicy).toBe(1 /* LEAST_REQUEST */);
  });

  it("falls back to the service's namespace", () => {
    expect(drName(m, client('team-b'), ECHO)).toBe('default/owner');
    expect(drName(m, client('default'), ECHO)).toBe('default/owner');
    const c = m.generate(client('team-b'), TypeUrl.Cluster).find((x) => x.name === `outbound|7070||${ECHO}`);
    expect(c?.lbPolicy).toBe(3 /* RANDOM */);
  });

  it('falls back to the root namespace (mesh-system)', () => {
    expect(drName(m, client('team-b'), DB)).toBe('mesh-system/mesh-wide');
    expect(drName(m, client('team-a'), RATINGS)).toBe('mesh-system/mesh-wide');
  });

  it('ignores rules in namespaces that are neither the proxy’s, the service’s nor the root', () => {
    // team-c's rule for echo applies to team-c clients only
    expect(drName(m, client('team-c'), ECHO)).toBe('team-c/unrelated');
    expect(drName(m, client('team-d'), ECHO)).toBe('default/owner');
  });

  it('has no rule without a root rule', () => {
    const m2 = model(dr('owner', 'default', 'echo'));
    expect(drName(m2, client('team-b'), DB)).toBeUndefined();
    expect(drName(m2, client('team-b'), ECHO)).toBe('default/owner');
  });

  it('prefers the more specific host within one namespace', () => {
    const m2 = model(dr('wild', 'default', '*.default.svc.cluster.local') + dr('exact', 'default', 'echo'));
    expect(drName(m2, client('default'), ECHO)).toBe('default/exact');
    expect(drName(m2, client('default'), RATINGS)).toBe('default/wild');
  });

  it('applies a workload-selecting rule only to the selected workloads of its namespace', () => {
    const m2 = model(
      dr('selected', 'default', 'echo', '  workloadSelector: { matchLabels: { app: special } }\n  trafficPolicy: { loadBalancer: { simple: RANDOM } }\n') +
        dr('plain', 'default', 'echo', '  trafficPolicy: { loadBalancer: { simple: LEAST_REQUEST } }\n'),
    );
    expect(drName(m2, client('default', { app: 'special' }), ECHO)).toBe('default/selected');
    expect(drName(m2, client('default', { app: 'other' }), ECHO)).toBe('default/plain');
    expect(drName(m2, client('team-a', { app: 'special' }), ECHO)).toBe('default/plain');
  });
});

describe('DestinationRule inheritance (DISC_ENABLE_DESTINATION_RULE_INHERITANCE)', () => {
  const YAML = `
apiVersion: networking.mesh.io/v1
kind: DestinationRule
metadata: { name: mesh-wide, namespace: mesh-system }
spec:
  host: "*"
  trafficPolicy:
    connectionPool: { tcp: { maxConnections: 77 } }
    outlierDetection: { consecutive5xxErrors: 9, interval: 10s }
  subsets: [{ name: all, labels: { app: echo } }]
---
apiVersion: networking.mesh.io/v1
kind: DestinationRule
metadata: { name: echo, namespace: default }
spec:
  host: echo
  trafficPolicy:
    loadBalancer: { simple: RANDOM }
    outlierDetection: { consecutive5xxErrors: 2, interval: 5s }
`;

  it('is off by default: the narrowest rule alone applies', () => {
    const m = model(YAML);
    const r = pc(m).destinationRule(client('default'), svc(m, ECHO));
    expect(r?.source.meta.name).toBe('echo');
    expect(r?.spec.trafficPolicy?.connectionPool).toBeUndefined();
    expect(r?.spec.subsets).toBeUndefined();
    const c = m.generate(client('default'), TypeUrl.Cluster).find((x) => x.name === `outbound|7070||${ECHO}`);
    expect(c?.circuitBreakers?.thresholds[0]?.maxConnections).toBeUndefined();
  });

  it('lays the narrower rule over the mesh-wide one field by field when on', () => {
    const m = model(YAML, { features: { destinationRuleInheritance: true } });
    const r = pc(m).destinationRule(client('default'), svc(m, ECHO));
    expect(r?.source.meta.name).toBe('echo');
    const tp = r?.spec.trafficPolicy;
    // inherited from the mesh-wide rule
    expect(tp?.connectionPool?.tcp?.maxConnections).toBe(77);
    expect(r?.spec.subsets?.map((s) => s.name)).toEqual(['all']);
    // own settings, and the narrower one wins where both set a field
    expect(tp?.loadBalancer?.simple).toBe('RANDOM');
    expect(tp?.outlierDetection?.consecutive5xxErrors).toBe(2);
    // visible in generated config
    const clusters = m.generate(client('default'), TypeUrl.Cluster);
    const c = clusters.find((x) => x.name === `outbound|7070||${ECHO}`);
    expect(c?.lbPolicy).toBe(3 /* RANDOM */);
    expect(c?.circuitBreakers?.thresholds[0]?.maxConnections).toBe(77);
    expect(c?.outlierDetection?.consecutive5xx).toBe(2);
    expect(clusters.map((x) => x.name)).toContain(`outbound|7070|all|${ECHO}`);
  });

  it('uses the mesh-wide rule unchanged where it is the only one', () => {
    const m = model(YAML, { features: { destinationRuleInheritance: true } });
    const r = pc(m).destinationRule(client('default'), svc(m, RATINGS));
    expect(r?.source.meta.name).toBe('mesh-wide');
    expect(r?.spec.trafficPolicy?.outlierDetection?.consecutive5xxErrors).toBe(9);
  });
});

describe('VirtualService delegation', () => {
  const YAML = `
apiVersion: networking.mesh.io/v1
kind: VirtualService
metadata: { name: ratings-root, namespace: default }
spec:
  hosts: [ratings]
  http:
    - name: to-api
      match: [{ uri: { prefix: /api } }]
      delegate: { name: ratings-api, namespace: team-r }
    - name: to-local
      match: [{ uri: { prefix: /local } }]
      delegate: { name: ratings-local }
    - name: rest
      route: [{ destination: { host: ratings } }]
---
apiVersion: networking.mesh.io/v1
kind: VirtualService
metadata: { name: ratings-api, namespace: team-r }
spec:
  http:
    - name: api-v2
      match: [{ headers: { x-version: { exact: "2" } } }]
      route: [{ destination: { host: ratings.default.svc.cluster.local }, weight: 100 }]
      timeout: 2s
    - name: api-any
      route: [{ destination: { host: ratings.default.svc.cluster.local } }]
---
apiVersion: networking.mesh.io/v1
kind: VirtualService
metadata: { name: ratings-local, namespace: default }
spec:
  http:
    - name: local
      route: [{ destination: { host: ratings } }]
`;

  it('replaces a delegating route by the delegate’s routes, each scoped by the root match', () => {
    const m = model(YAML);
    const vs = pc(m).virtualServiceForHost('default', RATINGS);
    expect(vs?.source.meta.name).toBe('ratings-root');
    expect(vs?.http.map((r) => r.name)).toEqual(['api-v2', 'api-any', 'local', 'rest']);
    const [v2, any, local] = vs!.http;
    expect(v2.match).toHaveLength(1);
    expect(v2.match?.[0].uri).toEqual({ prefix: '/api' });
    expect(v2.match?.[0].headers).toEqual({ 'x-version': { exact: '2' } });
    expect(v2.timeout).toBe('2s');
    expect(any.match?.[0].uri).toEqual({ prefix: '/api' });
    // the delegate's namespace defaults to the root's
    expect(local.match?.[0].uri).toEqual({ prefix: '/local' });
  });

  it('does not treat a delegate (no hosts) as a routing rule of its own', () => {
    const m = model(YAML);
    const names = pc(m)
      .virtualServices('team-r', 'mesh')
      .map((v) => v.source.meta.name);
    expect(names).toEqual(['ratings-root']);
  });

  it('shows up in the routes a sidecar receives', () => {
    const m = model(YAML);
    const [rc] = m.generate(client('default'), TypeUrl.Route, [`${RATINGS}:9080`]);
    const vh = rc.virtualHosts.find((v) => v.name === `${RATINGS}:9080`)!;
    expect(vh.routes.map((r) => r.name)).toEqual(['api-v2', 'api-any', 'local', 'rest']);
    const v2 = vh.routes[0];
    expect(v2.match?.prefix).toBe('/api');
    expect(v2.match?.headers.map((h) => [h.name, h.stringMatch?.exact])).toEqual([['x-version', '2']]);
    expect(vh.routes[1].match?.prefix).toBe('/api');
    expect(vh.routes[1].match?.headers).toEqual([]);
  });

  it('drops delegating routes when delegation is disabled', () => {
    const m = model(YAML, { features: { virtualServiceDelegate: false } });
    const vs = pc(m).virtualServiceForHost('default', RATINGS);
    expect(vs?.http.map((r) => r.name)).toEqual(['rest']);
    const [rc] = m.generate(client('default'), TypeUrl.Route, [`${RATINGS}:9080`]);
    const vh = rc.virtualHosts.find((v) => v.name === `${RATINGS}:9080`)!;
    expect(vh.routes.map((r) => r.name)).toEqual(['rest']);
  });

  it('resolves short destination hosts of a delegate in the delegate’s namespace', () => {
    const m = model(`
apiVersion: networking.mesh.io/v1
kind: ServiceEntry
metadata: { name: api, namespace: team-r }
spec:
  hosts: [api.team-r.svc.cluster.local]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{ number: 9080, name: http, protocol: HTTP }]
  endpoints: [{ address: 10.2.0.1 }]
---
apiVersion: networking.mesh.io/v1
kind: VirtualService
metadata: { name: ratings-root, namespace: default }
spec:
  hosts: [ratings]
  http:
    - match: [{ uri: { prefix: /api } }]
      delegate: { name: ratings-api, namespace: team-r }
    - name: rest
      route: [{ destination: { host: ratings } }]
---
apiVersion: networking.mesh.io/v1
kind: VirtualService
metadata: { name: ratings-api, namespace: team-r }
spec:
  http:
    - name: api
      route: [{ destination: { host: api } }]
      mirror: { host: api }
`);
    const vs = pc(m).virtualServiceForHost('default', RATINGS);
    const [api, rest] = vs!.http;
    expect(api.route?.[0].destination?.host).toBe('api.team-r.svc.cluster.local');
    expect(api.mirror?.host).toBe('api.team-r.svc.cluster.local');
    // the root's own short hosts stay the root's
    expect(rest.route?.[0].destination?.host).toBe('ratings');
    const [rc] = m.generate(client('default'), TypeUrl.Route, [`${RATINGS}:9080`]);
    const vh = rc.virtualHosts.find((v) => v.name === `${RATINGS}:9080`)!;
    expect(vh.routes.map((r) => [r.name, r.route?.cluster])).toEqual([
      ['api', 'outbound|9080||api.team-r.svc.cluster.local'],
      ['rest', `outbound|9080||${RATINGS}`],
    ]);
  });

  it('drops a route that delegates to a missing VirtualService', () => {
    const m = model(YAML.replace('delegate: { name: ratings-api, namespace: team-r }', 'delegate: { name: nope, namespace: team-r }'));
    expect(pc(m).virtualServiceForHost('default', RATINGS)?.http.map((r) => r.name)).toEqual(['local', 'rest']);
  });
});

describe('exportTo', () => {
  const se = (name: string, ns: string, exportTo: string): string => `
apiVersion: networking.mesh.io/v1
kind: ServiceEntry
metadata: { name: ${name}, namespace: ${ns} }
spec:
  hosts: [${name}.${ns}.svc.cluster.local]
  exportTo: ${exportTo}
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{ number: 8080, name: http, protocol: HTTP }]
  endpoints: [{ address: 10.1.0.1 }]
---
`;
  const m = model(se('dot', 'team-a', '["."]') + se('hidden', 'team-a', '["~"]') + se('listed', 'team-a', '[team-b, team-c]') + se('all', 'team-a', '["*"]'));
  const visible = (ns: string): string[] =>
    pc(m)
      .visibleServices(client(ns))
      .map((s) => s.name)
      .filter((n) => ['dot', 'hidden', 'listed', 'all'].includes(n))
      .sort();

  it('services: "." own namespace only, "~" nowhere, a list only those namespaces, "*" everywhere', () => {
    expect(visible('team-a')).toEqual(['all', 'dot']);
    expect(visible('team-b')).toEqual(['all', 'listed']);
    expect(visible('team-c')).toEqual(['all', 'listed']);
    expect(visible('team-d')).toEqual(['all']);
    expect(clusterNames(m, client('team-b'))).toContain('outbound|8080||listed.team-a.svc.cluster.local');
    expect(clusterNames(m, client('team-a'))).not.toContain('outbound|8080||listed.team-a.svc.cluster.local');
    expect(clusterNames(m, client('team-a'))).not.toContain('outbound|8080||hidden.team-a.svc.cluster.local');
  });

  it('services: the mesh default applies when exportTo is absent', () => {
    const m2 = model(
      `
apiVersion: networking.mesh.io/v1
kind: ServiceEntry
metadata: { name: plain, namespace: team-a }
spec:
  hosts: [plain.team-a.svc.cluster.local]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{ number: 8080, name: http, protocol: HTTP }]
  endpoints: [{ address: 10.1.0.1 }]
`,
      { mesh: { defaultServiceExportTo: ['.'] } },
    );
    expect(clusterNames(m2, client('team-a'))).toContain('outbound|8080||plain.team-a.svc.cluster.local');
    expect(clusterNames(m2, client('team-b'))).not.toContain('outbound|8080||plain.team-a.svc.cluster.local');
  });

  const vs = (name: string, ns: string, exportTo: string): string => `
apiVersion: networking.mesh.io/v1
kind: VirtualService
metadata: { name: ${name}, namespace: ${ns} }
spec:
  hosts: [${name}.example.com]
  exportTo: ${exportTo}
  http: [{ route: [{ destination: { host: ratings.default.svc.cluster.local } }] }]
---
`;
  const mv = model(vs('dot', 'team-a', '["."]') + vs('hidden', 'team-a', '["~"]') + vs('listed', 'team-a', '[team-b]') + vs('all', 'team-a', '["*"]'));
  const vsVisible = (ns: string): string[] =>
    pc(mv)
      .virtualServices(ns, 'mesh')
      .map((v) => v.source.meta.name)
      .sort();

  it('virtual services: ".", "~", lists and "*"', () => {
    expect(vsVisible('team-a')).toEqual(['all', 'dot']);
    expect(vsVisible('team-b')).toEqual(['all', 'listed']);
    expect(vsVisible('team-c')).toEqual(['all']);
    expect(pc(mv).virtualServiceForHost('team-c', 'listed.example.com')).toBeUndefined();
    expect(pc(mv).virtualServiceForHost('team-b', 'listed.example.com')?.source.meta.name).toBe('listed');
  });

  const dr = (name: string, ns: string, exportTo: string, lb: string): string => `
apiVersion: networking.mesh.io/v1
kind: DestinationRule
metadata: { name: ${name}, namespace: ${ns} }
spec:
  host: echo.default.svc.cluster.local
  exportTo: ${exportTo}
  trafficPolicy: { loadBalancer: { simple: ${lb} } }
---
`;

  it('destination rules: "." keeps a service-namespace rule from other namespaces', () => {
    const m2 = model(dr('own', 'default', '["."]', 'RANDOM') + dr('mesh', 'mesh-system', '["*"]', 'LEAST_REQUEST'));
    expect(drName(m2, client('default'), ECHO)).toBe('default/own');
    expect(drName(m2, client('team-a'), ECHO)).toBe('mesh-system/mesh');
  });

  it('destination rules: "~" hides a rule everywhere, even in its own namespace', () => {
    const m2 = model(dr('hidden', 'default', '["~"]', 'RANDOM'));
    expect(drName(m2, client('default'), ECHO)).toBeUndefined();
    expect(drName(m2, client('team-a'), ECHO)).toBeUndefined();
  });

  it('destination rules: a namespace list', () => {
    const m2 = model(dr('listed', 'default', '[team-b]', 'RANDOM'));
    expect(drName(m2, client('team-b'), ECHO)).toBe('default/listed');
    expect(drName(m2, client('team-a'), ECHO)).toBeUndefined();
    const c = m2.generate(client('team-b'), TypeUrl.Cluster).find((x) => x.name === `outbound|7070||${ECHO}`);
    expect(c?.lbPolicy).toBe(3 /* RANDOM */);
  });
});

describe('Sidecar scoping', () => {
  const YAML = `
apiVersion: networking.mesh.io/v1
kind: Sidecar
metadata: { name: default, namespace: default }
spec:
  egress: [{ hosts: ["./*"] }]
---
apiVersion: networking.mesh.io/v1
kind: Sidecar
metadata: { name: special, namespace: default }
spec:
  workloadSelector: { labels: { app: special } }
  egress: [{ hosts: ["data/*"] }]
---
apiVersion: networking.mesh.io/v1
kind: Sidecar
metadata: { name: default, namespace: mesh-system }
spec:
  egress: [{ hosts: ["default/ratings.default.svc.cluster.local"] }]
---
apiVersion: networking.mesh.io/v1
kind: Sidecar
metadata: { name: root-selecting, namespace: mesh-system }
spec:
  workloadSelector: { labels: { app: special } }
  egress: [{ hosts: ["*/*"] }]
`;
  const m = model(YAML);
  const hosts = (p: Proxy): string[] =>
    pc(m)
      .visibleServices(p)
      .map((s) => s.hostname)
      .sort();

  it('a workload-selecting Sidecar beats the namespace default', () => {
    const special = client('default', { app: 'special' });
    expect(pc(m).sidecarFor(special)?.meta.name).toBe('special');
    expect(hosts(special)).toEqual([DB]);
    expect(clusterNames(m, special)).toContain(`outbound|5432||${DB}`);
    expect(clusterNames(m, special)).not.toContain(`outbound|7070||${ECHO}`);
  });

  it('other workloads of the namespace get the namespace default', () => {
    const plain = client('default', { app: 'plain' });
    expect(pc(m).sidecarFor(plain)?.meta.name).toBe('default');
    expect(hosts(plain)).toEqual([ECHO, RATINGS]);
  });

  it('namespaces without a Sidecar get the root namespace default, not its workload-selecting ones', () => {
    const elsewhere = client('team-a', { app: 'special' });
    const sc = pc(m).sidecarFor(elsewhere);
    expect(`${sc?.meta.namespace}/${sc?.meta.name}`).toBe('mesh-system/default');
    expect(hosts(elsewhere)).toEqual([RATINGS]);
  });

  it('gives each scope its own key (so generated config is not shared across scopes)', () => {
    const keys = new Set([client('default', { app: 'special' }), client('default'), client('team-a')].map((p) => pc(m).scopeKey(p)));
    expect(keys.size).toBe(3);
  });

  it('listeners follow the scope', () => {
    const special = client('default', { app: 'special' });
    const names = m.generate(special, TypeUrl.Listener).map((l) => l.name);
    expect(names).toContain('10.96.0.12_5432');
    expect(names).not.toContain('0.0.0.0_7070');
    const plain = m.generate(client('default'), TypeUrl.Listener);
    expect(plain.map((l) => l.name)).toContain('0.0.0.0_7070');
    expect(plain.map((l) => l.name)).not.toContain('10.96.0.12_5432');
    expect(plain.flatMap((l) => hcmOf(l)).length).toBeGreaterThan(0);
  });
});
