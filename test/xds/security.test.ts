/**
 * Security policy in sidecar configuration (docs/adr/0080-0082): PeerAuthentication → inbound TLS
 * per port, AuthorizationPolicy → RBAC filters, DestinationRule TLS and auto mutual TLS → cluster
 * transport sockets. Every resource here is decoded with the Envoy protos; the daemon test beside
 * it runs the same kind of configuration through Envoy's validation rules.
 */
import { modelFromYaml, sidecar, grpcClient, router, TypeUrl } from '../support/model.js';
import { hcmOf } from '../support/decode.js';
import { integrityProblems } from './integrity.js';
import { DownstreamTlsContext, UpstreamTlsContext } from '../../src/gen/envoy/extensions/transport_sockets/tls/v3/tls.js';
import { RBAC as HttpRbac } from '../../src/gen/envoy/extensions/filters/http/rbac/v3/rbac.js';
import { RBAC as NetworkRbac } from '../../src/gen/envoy/extensions/filters/network/rbac/v3/rbac.js';
import { RBAC_Action } from '../../src/gen/envoy/config/rbac/v3/rbac.js';
import type { Listener } from '../../src/gen/envoy/config/listener/v3/listener.js';
import type { FilterChain } from '../../src/gen/envoy/config/listener/v3/listener_components.js';
import type { Cluster } from '../../src/gen/envoy/config/cluster/v3/cluster.js';
import type { TestModel } from '../support/model.js';

const proxy = sidecar('127.0.0.1', 'echo-v1-abc', 'default', { app: 'echo', version: 'v1' });

function inbound(m: TestModel): Listener {
  return m.generate(proxy, TypeUrl.Listener).find((l) => l.name === 'virtualInbound')!;
}

function serverTls(c: FilterChain): DownstreamTlsContext | undefined {
  const ts = c.transportSocket;
  return ts?.typedConfig ? DownstreamTlsContext.decode(ts.typedConfig.value) : undefined;
}

function upstreamTls(c: Cluster): UpstreamTlsContext | undefined {
  const ts = c.transportSocket;
  return ts?.typedConfig ? UpstreamTlsContext.decode(ts.typedConfig.value) : undefined;
}

/** Per inbound port: the chains (name, transport protocol, TLS or not). */
function chainsOfPort(l: Listener, port: number): Array<{ name: string; transport: string; alpn: string[]; tls: boolean }> {
  return l.filterChains
    .filter((c) => c.filterChainMatch?.destinationPort === port)
    .map((c) => ({ name: c.name, transport: c.filterChainMatch?.transportProtocol ?? '', alpn: c.filterChainMatch?.applicationProtocols ?? [], tls: c.transportSocket !== undefined }));
}

const modeOf = (l: Listener, port: number): string => {
  const chains = chainsOfPort(l, port);
  if (chains.length === 1 && chains[0].tls) return 'STRICT';
  if (chains.length === 1 && !chains[0].tls) return 'DISABLE';
  if (chains.length === 3 && chains[0].tls && chains[0].alpn.includes('mesh-mtls') && !chains[1].tls && !chains[2].tls) return 'PERMISSIVE';
  return `unexpected ${JSON.stringify(chains)}`;
};

const pa = (ns: string, name: string, body: string): string => `
apiVersion: security.mesh.io/v1
kind: PeerAuthentication
metadata: { name: ${name}, namespace: ${ns} }
spec:
${body}
`;

describe('PeerAuthentication on the sidecar inbound listener', () => {
  it('is PERMISSIVE without any policy: mesh TLS by ALPN marker, the rest in plaintext, tls_inspector on', () => {
    const m = modelFromYaml('');
    try {
      const l = inbound(m);
      for (const port of [15432, 17070, 17071, 19080]) expect(modeOf(l, port)).toBe('PERMISSIVE');
      expect(l.listenerFilters.map((f) => f.name)).toEqual(['envoy.filters.listener.original_dst', 'envoy.filters.listener.tls_inspector']);
      expect(l.defaultFilterChain?.transportSocket).toBeUndefined();
    } finally {
      m.stop();
    }
  });

  it('STRICT at mesh level: every port and the catch-all demand a client certificate of the mesh', () => {
    const m = modelFromYaml(pa('mesh-system', 'default', '  mtls: { mode: STRICT }'), { mesh: { trustDomainAliases: ['old.example'] } });
    try {
      const l = inbound(m);
      for (const port of [15432, 17070, 17071, 19080]) expect(modeOf(l, port)).toBe('STRICT');
      const ctx = serverTls(l.filterChains.find((c) => c.filterChainMatch?.destinationPort === 19080)!)!;
      expect(ctx.requireClientCertificate).toBe(true);
      const common = ctx.commonTlsContext!;
      expect(common.tlsCertificateSdsSecretConfigs.map((s) => [s.name, s.sdsConfig?.apiConfigSource?.grpcServices[0]?.envoyGrpc?.clusterName])).toEqual([['default', 'sds-grpc']]);
      expect(common.combinedValidationContext?.validationContextSdsSecretConfig?.name).toBe('ROOTCA');
      expect(common.combinedValidationContext?.defaultValidationContext?.matchTypedSubjectAltNames.map((s) => s.matcher?.prefix)).toEqual(['spiffe://cluster.local/', 'spiffe://old.example/']);
      // nothing in plaintext: the catch-all for undeclared ports is TLS too, and no chain takes raw bytes
      expect(serverTls(l.defaultFilterChain!)?.requireClientCertificate).toBe(true);
      expect(l.filterChains.every((c) => c.transportSocket !== undefined)).toBe(true);
      expect(l.listenerFilters.map((f) => f.name)).toEqual(['envoy.filters.listener.original_dst']);
    } finally {
      m.stop();
    }
  });

  it('inherits mesh → namespace → workload, UNSET taking the level above, and applies port-level modes', () => {
    const m = modelFromYaml(
      [
        pa('mesh-system', 'default', '  mtls: { mode: STRICT }'),
        pa('default', 'ns', '  mtls: { mode: UNSET }'),
        pa('default', 'echo', '  selector: { matchLabels: { app: echo } }\n  mtls: { mode: UNSET }\n  portLevelMtls:\n    17070: { mode: DISABLE }\n    19080: { mode: PERMISSIVE }'),
        pa('default', 'other', '  selector: { matchLabels: { app: other } }\n  mtls: { mode: DISABLE }'),
      ].join('---'),
    );
    try {
      const l = inbound(m);
      expect([15432, 17070, 17071, 19080].map((p) => modeOf(l, p))).toEqual(['STRICT', 'DISABLE', 'STRICT', 'PERMISSIVE']);
      expect(serverTls(l.defaultFilterChain!)).toBeDefined();
      // the namespace level overrides the mesh; a workload-level policy overrides both
      m.apply('data.yaml', pa('data', 'data-ns', '  mtls: { mode: PERMISSIVE }'));
      const at = (ns: string, app: string): Listener => m.generate(sidecar('127.0.0.1', `${app}-1`, ns, { app }), TypeUrl.Listener).find((x) => x.name === 'virtualInbound')!;
      expect(modeOf(at('data', 'db'), 15432)).toBe('PERMISSIVE');
      expect(modeOf(at('default', 'x'), 15432)).toBe('STRICT');
      expect(modeOf(at('default', 'other'), 15432)).toBe('DISABLE');
    } finally {
      m.stop();
    }
  });

  it('changes the listener when the policy of a running model changes', () => {
    const m = modelFromYaml('');
    try {
      expect(modeOf(inbound(m), 19080)).toBe('PERMISSIVE');
      m.apply('pa.yaml', pa('default', 'strict', '  mtls: { mode: STRICT }'));
      expect(modeOf(inbound(m), 19080)).toBe('STRICT');
      m.apply('pa.yaml', pa('default', 'strict', '  mtls: { mode: DISABLE }'));
      expect(modeOf(inbound(m), 19080)).toBe('DISABLE');
      expect(inbound(m).listenerFilters.map((f) => f.name)).toEqual(['envoy.filters.listener.original_dst']);
    } finally {
      m.stop();
    }
  });
});

const ap = (name: string, body: string, annotations = ''): string => `
apiVersion: security.mesh.io/v1
kind: AuthorizationPolicy
metadata: { name: ${name}, namespace: default${annotations ? `, annotations: { ${annotations} }` : ''} }
spec:
  selector: { matchLabels: { app: echo } }
${body}
`;

function httpRbacOf(l: Listener, port: number): Array<{ name: string; config: HttpRbac }> {
  const chain = l.filterChains.find((c) => c.filterChainMatch?.destinationPort === port)!;
  const [hcm] = hcmOf({ ...l, filterChains: [chain], defaultFilterChain: undefined });
  return hcm.httpFilters.filter((f) => f.name.startsWith('envoy.filters.http.rbac')).map((f) => ({ name: f.name, config: HttpRbac.decode(f.typedConfig!.value) }));
}

function networkRbacOf(c: FilterChain): Array<{ name: string; config: NetworkRbac }> {
  return c.filters.filter((f) => f.name.startsWith('envoy.filters.network.rbac')).map((f) => ({ name: f.name, config: NetworkRbac.decode(f.typedConfig!.value) }));
}

describe('AuthorizationPolicy on the sidecar inbound listener', () => {
  const m = modelFromYaml(
    [
      ap('allow-frontend', '  action: ALLOW\n  rules:\n    - from: [{ source: { principals: ["cluster.local/ns/web/sa/frontend"] } }]\n      to: [{ operation: { methods: [GET] } }]'),
      ap('deny-admin', '  action: DENY\n  rules:\n    - to: [{ operation: { paths: ["/admin/*"] } }]'),
      ap('custom', '  action: CUSTOM\n  provider: { name: ext }\n  rules:\n    - to: [{ operation: { paths: ["/ext"] } }]'),
      ap('dry', '  action: DENY\n  rules:\n    - from: [{ source: { namespaces: [test] } }]', '"mesh.io/dry-run": "true"'),
      `
apiVersion: security.mesh.io/v1
kind: AuthorizationPolicy
metadata: { name: elsewhere, namespace: default }
spec:
  selector: { matchLabels: { app: ratings } }
  action: DENY
  rules: [{ from: [{ source: { namespaces: [evil] } }] }]
`,
    ].join('---'),
  );
  afterAll(() => m.stop());

  it('puts DENY before ALLOW first in the HTTP filters, with the rules translated', () => {
    const l = inbound(m);
    for (const chain of l.filterChains.filter((c) => c.filterChainMatch?.destinationPort === 19080)) {
      const [hcm] = hcmOf({ ...l, filterChains: [chain], defaultFilterChain: undefined });
      expect(hcm.httpFilters.map((f) => f.name)).toEqual(['envoy.filters.http.rbac.deny', 'envoy.filters.http.rbac.allow', 'envoy.filters.http.cors', 'envoy.filters.http.fault', 'envoy.filters.http.router']);
    }
    const [deny, allow] = httpRbacOf(l, 19080);
    expect(deny.config.rules?.action).toBe(RBAC_Action.DENY);
    // CUSTOM naming a provider the mesh config does not declare: its rules deny (fail closed)
    expect(Object.keys(deny.config.rules!.policies).sort()).toEqual(['ns[default]-policy[custom]-rule[0]', 'ns[default]-policy[deny-admin]-rule[0]']);
    expect(JSON.stringify(deny.config.rules!.policies['ns[default]-policy[deny-admin]-rule[0]'].permissions)).toContain('"prefix":"/admin/"');
    // the dry-run policy is a shadow rule, never enforced
    expect(Object.keys(deny.config.shadowRules!.policies)).toEqual(['ns[default]-policy[dry]-rule[0]']);
    expect(allow.config.rules?.action).toBe(RBAC_Action.ALLOW);
    const allowed = allow.config.rules!.policies['ns[default]-policy[allow-frontend]-rule[0]'];
    expect(JSON.stringify(allowed.principals)).toContain('"exact":"spiffe://cluster.local/ns/web/sa/frontend"');
    expect(JSON.stringify(allowed.permissions)).toContain('":method"');
    // policies of other workloads do not apply
    expect(JSON.stringify(l)).not.toContain('policy[elsewhere]');
  });

  it('uses network filters on TCP ports: an ALLOW rule with HTTP attributes is dropped, a DENY rule loses them', () => {
    const l = inbound(m);
    const chain = l.filterChains.find((c) => c.filterChainMatch?.destinationPort === 15432)!;
    const rbac = networkRbacOf(chain);
    expect(rbac.map((r) => r.name)).toEqual(['envoy.filters.network.rbac.deny', 'envoy.filters.network.rbac.allow']);
    expect(chain.filters.at(-1)?.name).toBe('envoy.filters.network.tcp_proxy');
    const [deny, allow] = rbac;
    // deny-admin's only attribute is a path: on TCP the rule matches every connection
    expect(deny.config.rules!.policies['ns[default]-policy[deny-admin]-rule[0]'].permissions).toEqual([expect.objectContaining({ any: true })]);
    // allow-frontend needs methods: dropped, so the ALLOW filter has no policy and denies everything
    expect(allow.config.rules?.action).toBe(RBAC_Action.ALLOW);
    expect(Object.keys(allow.config.rules!.policies)).toEqual([]);
    expect(allow.config.statPrefix).toBe('inbound|15432||');
    // the catch-all for undeclared ports is authorized the same way
    expect(networkRbacOf(l.defaultFilterChain!).map((r) => r.name)).toEqual(['envoy.filters.network.rbac.deny', 'envoy.filters.network.rbac.allow']);
  });

  it('logs what it changes: CUSTOM and HTTP-only rules on TCP, once per diagnostic', () => {
    const texts = m.model.current().push.policies.diagnostics.map((d) => `${d.name}: ${d.message}`);
    expect(texts).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^custom: provider "ext" is not among the mesh config's extensionProviders: requests its rules match are denied \(fail closed\)/),
        expect.stringMatching(/^allow-frontend: rule 0 uses HTTP-only attributes \(to\.methods\): on TCP ports the rule is dropped/),
        expect.stringMatching(/^deny-admin: rule 0 uses HTTP-only attributes \(to\.paths\): on TCP ports they are ignored/),
      ]),
    );
  });

  it('leaves workloads without policies with no RBAC filter', () => {
    const other = sidecar('127.0.0.1', 'db-1', 'default', { app: 'db' });
    const l = m.generate(other, TypeUrl.Listener).find((x) => x.name === 'virtualInbound')!;
    expect(JSON.stringify(l.filterChains.map((c) => c.filters.map((f) => f.name)))).not.toContain('rbac');
  });
});

const dr = (name: string, host: string, tls: string): string => `
apiVersion: networking.mesh.io/v1
kind: DestinationRule
metadata: { name: ${name}, namespace: default }
spec:
  host: ${host}
  trafficPolicy:
    tls: ${tls}
`;

describe('client TLS on outbound clusters', () => {
  const m = modelFromYaml(
    [
      dr('echo', 'echo.default.svc.cluster.local', '{ mode: MESH_MUTUAL }'),
      dr('ratings', 'ratings.default.svc.cluster.local', '{ mode: SIMPLE, sni: ratings.example.com, caCertificates: /etc/ca.pem, subjectAltNames: [ratings.example.com, "spiffe://x/ns/a/sa/b"] }'),
      dr('db', 'db.data.svc.cluster.local', '{ mode: DISABLE }'),
    ].join('---'),
  );
  afterAll(() => m.stop());
  const clusters = (): Cluster[] => m.generate(proxy, TypeUrl.Cluster);
  const byName = (n: string): Cluster => clusters().find((c) => c.name === n)!;

  it('MESH_MUTUAL: the workload certificate, SNI of the cluster, the destination service accounts as SANs', () => {
    const c = byName('outbound|7070||echo.default.svc.cluster.local');
    const ctx = upstreamTls(c)!;
    expect(ctx.sni).toBe('outbound_.7070_._.echo.default.svc.cluster.local');
    expect(ctx.commonTlsContext?.tlsCertificateSdsSecretConfigs.map((s) => s.name)).toEqual(['default']);
    expect(ctx.commonTlsContext?.combinedValidationContext?.defaultValidationContext?.matchTypedSubjectAltNames.map((s) => s.matcher?.exact)).toEqual(['spiffe://cluster.local/ns/default/sa/echo']);
    expect(ctx.commonTlsContext?.alpnProtocols[0]).toBe('mesh-mtls');
    expect(c.transportSocketMatches).toEqual([]);
  });

  it('SIMPLE: the rule’s SNI, CA file and SANs (DNS and URI), no client certificate', () => {
    const ctx = upstreamTls(byName('outbound|9080||ratings.default.svc.cluster.local'))!;
    expect(ctx.sni).toBe('ratings.example.com');
    expect(ctx.commonTlsContext?.tlsCertificates).toEqual([]);
    expect(ctx.commonTlsContext?.tlsCertificateSdsSecretConfigs).toEqual([]);
    expect(ctx.commonTlsContext?.validationContext?.trustedCa?.filename).toBe('/etc/ca.pem');
    expect(ctx.commonTlsContext?.validationContext?.matchTypedSubjectAltNames.map((s) => [s.sanType, s.matcher?.exact])).toEqual([
      [2, 'ratings.example.com'],
      [3, 'spiffe://x/ns/a/sa/b'],
    ]);
  });

  it('DISABLE: plaintext, without auto mutual TLS', () => {
    const c = byName('outbound|5432||db.data.svc.cluster.local');
    expect(c.transportSocket).toBeUndefined();
    expect(c.transportSocketMatches).toEqual([]);
  });

  it('auto mutual TLS without a rule: mesh TLS toward endpoints labelled tlsMode mesh, plaintext otherwise', () => {
    const m2 = modelFromYaml('');
    try {
      const c = m2.generate(proxy, TypeUrl.Cluster).find((x) => x.name === 'outbound|9080||ratings.default.svc.cluster.local')!;
      expect(c.transportSocketMatches.map((t) => t.name)).toEqual(['tlsMode-mesh']);
      const ctx = UpstreamTlsContext.decode(c.transportSocketMatches[0].transportSocket!.typedConfig!.value);
      expect(ctx.sni).toBe('outbound_.9080_._.ratings.default.svc.cluster.local');
      expect(ctx.commonTlsContext?.combinedValidationContext?.defaultValidationContext?.matchTypedSubjectAltNames.map((s) => s.matcher?.exact)).toEqual(['spiffe://cluster.local/ns/default/sa/ratings']);
      // no match: the cluster's own transport socket, which unset is plaintext (raw_buffer)
      expect(c.transportSocket).toBeUndefined();
    } finally {
      m2.stop();
    }
  });

  it('proxyless gRPC clients get MESH_MUTUAL from their certificate provider instances', () => {
    const c = m.generate(grpcClient(), TypeUrl.Cluster).find((x) => x.name === 'outbound|7070||echo.default.svc.cluster.local')!;
    const ctx = upstreamTls(c)!;
    expect(ctx.commonTlsContext?.tlsCertificateProviderInstance).toEqual({ instanceName: 'default', certificateName: 'default' });
    expect(ctx.commonTlsContext?.validationContext?.caCertificateProviderInstance).toEqual({ instanceName: 'default', certificateName: 'ROOTCA' });
    expect(ctx.commonTlsContext?.validationContext?.matchSubjectAltNames.map((s) => s.exact)).toEqual(['spiffe://cluster.local/ns/default/sa/echo']);
  });

  it('is referentially complete', () => {
    const cl = clusters();
    const eds = cl.filter((c) => c.edsClusterConfig).map((c) => c.name);
    const listeners = m.generate(proxy, TypeUrl.Listener);
    const rds = [...new Set(listeners.flatMap((l) => hcmOf(l).map((h) => h.rds?.routeConfigName).filter((n): n is string => !!n)))];
    expect(integrityProblems({ clusters: cl, endpoints: m.generate(proxy, TypeUrl.Endpoint, eds), listeners, routes: m.generate(proxy, TypeUrl.Route, rds) })).toEqual([]);
  });
});

describe('what is not translated yet is said, not dropped', () => {
  it('names credentialNames that only gateways are served in the diagnostics the daemon logs (RequestAuthentications are translated: no diagnostic)', () => {
    const m = modelFromYaml(
      [
        `
apiVersion: security.mesh.io/v1
kind: RequestAuthentication
metadata: { name: jwt, namespace: default }
spec:
  jwtRules: [{ issuer: "https://issuer.example.com", jwksUri: "https://issuer.example.com/keys" }]
`,
        dr('ratings', 'ratings.default.svc.cluster.local', '{ mode: MUTUAL, credentialName: client-cert }'),
      ].join('---'),
    );
    try {
      // warnings (proxyless-only notes are info: test/xds/security-limits.test.ts)
      const texts = m.model.current().push.policies.diagnostics.filter((d) => d.level !== 'info').map((d) => `${d.kind} ${d.namespace}/${d.name}: ${d.message}`);
      expect(texts).toEqual([
        expect.stringMatching(/^DestinationRule default\/ratings: tls.credentialName "client-cert" applies at gateways only: the rule has no workloadSelector/),
      ]);
    } finally {
      m.stop();
    }
  });
});

describe('gateway MESH_MUTUAL', () => {
  it('terminates mesh mutual TLS with the gateway’s own identity from its agent, peers checked against the trust domain', () => {
    const m = modelFromYaml(`
apiVersion: networking.mesh.io/v1
kind: Gateway
metadata: { name: mesh-in, namespace: mesh-system }
spec:
  selector: { app: mesh-ingressgateway }
  servers:
    - port: { number: 15443, name: tls, protocol: HTTPS }
      hosts: ["*/echo.example.com"]
      tls: { mode: MESH_MUTUAL }
`);
    try {
      const [l] = m.generate(router(), TypeUrl.Listener);
      const ctx = serverTls(l.filterChains[0])!;
      expect(ctx.requireClientCertificate).toBe(true);
      expect(ctx.commonTlsContext?.tlsCertificateSdsSecretConfigs.map((s) => [s.name, s.sdsConfig?.apiConfigSource?.grpcServices[0]?.envoyGrpc?.clusterName])).toEqual([['default', 'sds-grpc']]);
      expect(ctx.commonTlsContext?.combinedValidationContext?.validationContextSdsSecretConfig?.name).toBe('ROOTCA');
      expect(ctx.commonTlsContext?.combinedValidationContext?.defaultValidationContext?.matchTypedSubjectAltNames.map((s) => s.matcher?.prefix)).toEqual(['spiffe://cluster.local/']);
    } finally {
      m.stop();
    }
  });
});
