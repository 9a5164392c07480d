/**
 * AuthorizationPolicy at gateways (docs/adr/0150): the policies that select a gateway — by workload
 * selector, or by targetRefs to its Gateway or GatewayClass — become the same RBAC (and CUSTOM
 * ext_authz) filters a sidecar gets: after jwt_authn on HTTP chains, before the destination on every
 * other chain. Decoded with the Envoy protos here; the daemon half runs a gateway's configuration
 * through xds-validate and edits a policy under a connected gateway.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { modelFromYaml, router, TypeUrl, type TestModel } from '../support/model.js';
import { hcmOf } from '../support/decode.js';
import { makeConfigDir, startDaemon, type ConfigDir, type Daemon } from '../support/daemon.js';
import { goToolPath, GO_TOOL_BUILD_TIMEOUT_MS, runXdsValidate, type XdsValidateReport } from '../support/go-tools.js';
import { SotwStream } from '../support/ads-client.js';
import { eventually } from '../support/eventually.js';
import { RBAC as HttpRbac } from '../../src/gen/envoy/extensions/filters/http/rbac/v3/rbac.js';
import { RBAC as NetworkRbac } from '../../src/gen/envoy/extensions/filters/network/rbac/v3/rbac.js';
import { RBAC_Action } from '../../src/gen/envoy/config/rbac/v3/rbac.js';
import { Listener } from '../../src/gen/envoy/config/listener/v3/listener.js';
import type { FilterChain } from '../../src/gen/envoy/config/listener/v3/listener_components.js';
import { parseMeshConfig, meshSettingsFrom } from '../../src/bootstrap/mesh-config.js';
import { GATEWAY_CLASS_LABEL, GATEWAY_NAME_LABEL } from '../../src/model/policy/index.js';

const GATEWAY = `
apiVersion: networking.mesh.io/v1
kind: Gateway
metadata: { name: public, namespace: mesh-system }
spec:
  selector: { app: mesh-ingressgateway }
  servers:
    - port: { number: 80, name: http, protocol: HTTP }
      hosts: ["*/echo.example.com"]
    - port: { number: 5432, name: tcp, protocol: TCP }
      hosts: ["*"]
    - port: { number: 8443, name: tls, protocol: TLS }
      hosts: ["db.example.com"]
      tls: { mode: SIMPLE, serverCertificate: /etc/gw/cert.pem, privateKey: /etc/gw/key.pem }
---
apiVersion: networking.mesh.io/v1
kind: VirtualService
metadata: { name: public, namespace: default }
spec:
  hosts: [echo.example.com]
  gateways: [mesh-system/public]
  http: [{ route: [{ destination: { host: echo.default.svc.cluster.local } }] }]
---
apiVersion: networking.mesh.io/v1
kind: VirtualService
metadata: { name: db, namespace: default }
spec:
  hosts: ["*"]
  gateways: [mesh-system/public]
  tcp: [{ route: [{ destination: { host: db.default.svc.cluster.local, port: { number: 5432 } } }] }]
`;

const policy = (name: string, target: string, body: string, ns = 'mesh-system'): string => `
---
apiVersion: security.mesh.io/v1
kind: AuthorizationPolicy
metadata: { name: ${name}, namespace: ${ns} }
spec:
${target}
${body}
`;

const ALLOW_WEB = '  rules: [{ from: [{ source: { namespaces: [web] } }] }]';
const DENY_ADMIN = '  action: DENY\n  rules: [{ to: [{ operation: { paths: ["/admin/*"] } }] }, { from: [{ source: { ipBlocks: [192.168.0.0/16] } }] }]';

const gatewayProxy = router('mesh-system', { app: 'mesh-ingressgateway', tier: 'edge', [GATEWAY_NAME_LABEL]: 'public', [GATEWAY_CLASS_LABEL]: 'mesh' });

function listener(m: TestModel, port: number, proxy = gatewayProxy): Listener {
  const l = m.generate(proxy, TypeUrl.Listener).find((x) => x.name === `0.0.0.0_${port}`);
  if (!l) throw new Error(`no listener for port ${port}`);
  return l;
}

const httpFilterNames = (l: Listener): string[] => hcmOf(l)[0].httpFilters.map((f) => f.name);
const networkFilterNames = (c: FilterChain): string[] => c.filters.map((f) => f.name);

function httpRbac(l: Listener, suffix: string): HttpRbac {
  const f = hcmOf(l)[0].httpFilters.find((x) => x.name === `envoy.filters.http.rbac.${suffix}`);
  if (!f) throw new Error(`no rbac.${suffix} filter`);
  return HttpRbac.decode(f.typedConfig!.value);
}

function networkRbac(c: FilterChain, suffix: string): NetworkRbac {
  const f = c.filters.find((x) => x.name === `envoy.filters.network.rbac.${suffix}`);
  if (!f) throw new Error(`no network rbac.${suffix} filter`);
  return NetworkRbac.decode(f.typedConfig!.value);
}

/** What every kind of gateway chain carries under one ALLOW and one DENY policy. */
function expectEnforced(m: TestModel, proxy = gatewayProxy): void {
  const http = listener(m, 80, proxy);
  expect(httpFilterNames(http)).toEqual(['envoy.filters.http.rbac.deny', 'envoy.filters.http.rbac.allow', 'envoy.filters.http.cors', 'envoy.filters.http.fault', 'envoy.filters.http.router']);
  expect(httpRbac(http, 'allow').rules?.action).toBe(RBAC_Action.ALLOW);
  expect(Object.keys(httpRbac(http, 'allow').rules!.policies)).toEqual(['ns[mesh-system]-policy[allow-web]-rule[0]']);
  expect(Object.keys(httpRbac(http, 'deny').rules!.policies)).toEqual(['ns[mesh-system]-policy[deny-admin]-rule[0]', 'ns[mesh-system]-policy[deny-admin]-rule[1]']);
  // plain TCP and terminated TLS: network RBAC before tcp_proxy
  for (const port of [5432, 8443]) {
    const [chain] = listener(m, port, proxy).filterChains;
    expect(networkFilterNames(chain)).toEqual(['envoy.filters.network.rbac.deny', 'envoy.filters.network.rbac.allow', 'envoy.filters.network.tcp_proxy']);
    expect(Object.keys(networkRbac(chain, 'deny').rules!.policies)).toContain('ns[mesh-system]-policy[deny-admin]-rule[1]');
    expect(networkRbac(chain, 'allow').statPrefix).toBe(`outbound_0.0.0.0_${port}`);
  }
  expect(listener(m, 8443, proxy).filterChains[0].transportSocket?.name).toBe('envoy.transport_sockets.tls');
}

describe('AuthorizationPolicy at a gateway', () => {
  it('a workload selector: RBAC HTTP filters on HTTP chains, network RBAC before tcp_proxy on TCP and terminated-TLS chains', () => {
    const sel = '  selector: { matchLabels: { tier: edge } }';
    const m = modelFromYaml(GATEWAY + policy('allow-web', sel, ALLOW_WEB) + policy('deny-admin', sel, DENY_ADMIN));
    try {
      expectEnforced(m);
      // a gateway the selector does not match gets none
      const other = router('mesh-system', { app: 'mesh-ingressgateway', tier: 'internal' });
      expect(httpFilterNames(listener(m, 80, other))).toEqual(expectedPlain());
      const otherGw = m.generate(router('mesh-system', { app: 'eastwest' }), TypeUrl.Listener);
      expect(otherGw).toEqual([]);
    } finally {
      m.stop();
    }
  });

  it('a targetRef to its Gateway, and one to its GatewayClass (root namespace)', () => {
    const toGateway = '  targetRefs: [{ group: gateway.networking.k8s.io, kind: Gateway, name: public }]';
    const toClass = '  targetRefs: [{ group: gateway.networking.k8s.io, kind: GatewayClass, name: mesh }]';
    const m = modelFromYaml(GATEWAY + policy('allow-web', toGateway, ALLOW_WEB) + policy('deny-admin', toClass, DENY_ADMIN));
    try {
      expectEnforced(m);
      // the same deployment labelled for another Gateway and class: neither policy
      const elsewhere = router('mesh-system', { app: 'mesh-ingressgateway', [GATEWAY_NAME_LABEL]: 'internal', [GATEWAY_CLASS_LABEL]: 'other' });
      expect(httpFilterNames(listener(m, 80, elsewhere))).toEqual(expectedPlain());
    } finally {
      m.stop();
    }
  });

  it('does nothing without --plugins authz', () => {
    const sel = '  selector: { matchLabels: { app: mesh-ingressgateway } }';
    const m = modelFromYaml(GATEWAY + policy('allow-web', sel, ALLOW_WEB), { settings: { authz: false } });
    try {
      expect(httpFilterNames(listener(m, 80))).toEqual(expectedPlain());
      expect(networkFilterNames(listener(m, 5432).filterChains[0])).toEqual(['envoy.filters.network.tcp_proxy']);
    } finally {
      m.stop();
    }
  });

  it('JWT at the ingress: jwt_authn first, then an ALLOW by requestPrincipals that reads the verified token', () => {
    const sel = '  selector: { matchLabels: { app: mesh-ingressgateway } }';
    const m = modelFromYaml(
      GATEWAY +
        policy(
          'jwt',
          sel,
          `  jwtRules: [{ issuer: https://issuer.test, jwks: '{"keys":[{"kty":"EC","crv":"P-256","x":"MezAum_tZTI8TbpDWrbopviqRjwWJ3uGM0Wlvbm68RQ","y":"RZJCdANcuGi24hg9HJeFjQ7iJQ0eJFYFHhlrKVQiBy8"}]}' }]`,
        ).replace('kind: AuthorizationPolicy', 'kind: RequestAuthentication') +
        policy('require-jwt', sel, '  rules: [{ from: [{ source: { requestPrincipals: ["https://issuer.test/alice"] } }] }]'),
    );
    try {
      const http = listener(m, 80);
      expect(httpFilterNames(http)).toEqual(['envoy.filters.http.jwt_authn', 'envoy.filters.http.rbac.allow', 'envoy.filters.http.cors', 'envoy.filters.http.fault', 'envoy.filters.http.router']);
      const allow = httpRbac(http, 'allow');
      const text = JSON.stringify(HttpRbac.toJSON(allow));
      // the principal is read from the metadata jwt_authn writes: issuer/subject of the verified token
      expect(text).toContain('envoy.filters.http.jwt_authn');
      expect(text).toContain('"exact":"https://issuer.test"}}}},{"metadata":{"filter":"envoy.filters.http.jwt_authn","path":[{"key":"payload"},{"key":"sub"}],"value":{"stringMatch":{"exact":"alice"}}');
      // a TCP chain cannot see a token: the rule is dropped and the ALLOW filter denies every connection
      const [tcp] = listener(m, 5432).filterChains;
      expect(networkRbac(tcp, 'allow').rules?.policies).toEqual({});
    } finally {
      m.stop();
    }
  });

  it('CUSTOM: the provider’s ext_authz filter before RBAC on HTTP chains; a listener key that follows the policy', () => {
    const mesh = meshSettingsFrom(parseMeshConfig('extensionProviders:\n  - name: http-authz\n    envoyExtAuthzHttp: { service: ratings.default.svc.cluster.local, port: 9080 }\n', 'mesh.yaml'), {
      domain: 'cluster.local',
      clusterId: 'Cluster',
    });
    const sel = '  selector: { matchLabels: { app: mesh-ingressgateway } }';
    const m = modelFromYaml(GATEWAY + policy('ext', sel, '  action: CUSTOM\n  provider: { name: http-authz }\n  rules: [{ to: [{ operation: { paths: ["/api/*"] } }] }]'), {
      mesh: { extensionProviders: mesh.extensionProviders },
    });
    try {
      const before = m.generateRaw(gatewayProxy, TypeUrl.Listener);
      expect(httpFilterNames(listener(m, 80)).slice(0, 2)).toEqual(['envoy.filters.http.rbac.custom.0', 'envoy.filters.http.ext_authz.0']);
      // an edit of the policy alone (same Gateways, same services) reaches the gateway's listeners
      m.apply('test.yaml', GATEWAY + policy('ext', sel, '  action: CUSTOM\n  provider: { name: http-authz }\n  rules: [{ to: [{ operation: { paths: ["/v2/*"] } }] }]'));
      m.model.flush();
      const after = m.generateRaw(gatewayProxy, TypeUrl.Listener);
      expect(after.find((r) => r.name === '0.0.0.0_80')!.version).not.toBe(before.find((r) => r.name === '0.0.0.0_80')!.version);
      expect(JSON.stringify(HttpRbac.toJSON(httpRbac(listener(m, 80), 'custom.0')))).toContain('/v2/');
    } finally {
      m.stop();
    }
  });
});

function expectedPlain(): string[] {
  return ['envoy.filters.http.cors', 'envoy.filters.http.fault', 'envoy.filters.http.router'];
}

describe('gateway authorization through a running daemon', () => {
  let bin: string;
  let config: ConfigDir;
  let daemon: Daemon;
  let work: string;
  const NODE = 'router~127.0.0.20~gw-1.mesh-system~mesh-system.svc.cluster.local';
  const META = { NAMESPACE: 'mesh-system', LABELS: { app: 'mesh-ingressgateway', [GATEWAY_NAME_LABEL]: 'public' } };
  const toGateway = '  targetRefs: [{ group: gateway.networking.k8s.io, kind: Gateway, name: public }]';

  beforeAll(async () => {
    bin = await goToolPath('xds-validate');
    work = await mkdtemp(join(tmpdir(), 'mesh-gateway-authz-'));
    config = await makeConfigDir();
    await config.write('gateway.yaml', GATEWAY);
    await config.write('policies.yaml', policy('allow-web', toGateway, ALLOW_WEB) + policy('deny-admin', toGateway, DENY_ADMIN));
    daemon = await startDaemon({ configDir: config.path });
  }, GO_TOOL_BUILD_TIMEOUT_MS);

  afterAll(async () => {
    await daemon?.stop();
    await config?.cleanup();
    if (work) await rm(work, { recursive: true, force: true });
  });

  it('serves the gateway RBAC filters that pass Envoy validation', async () => {
    const report = await runXdsValidate<XdsValidateReport>(bin, [
      ...['-addr', daemon.grpcAddr, '-node-id', NODE, '-metadata', JSON.stringify(META), '-timeout', '30s', '-dump'],
    ]);
    expect(report.errors).toEqual([]);
    expect(report.ok).toBe(true);
    const listeners = report.dump['type.googleapis.com/envoy.config.listener.v3.Listener'];
    expect(Object.keys(listeners).sort()).toEqual(['0.0.0.0_5432', '0.0.0.0_80', '0.0.0.0_8443']);
    const http = JSON.stringify(listeners['0.0.0.0_80']);
    expect(http.indexOf('envoy.filters.http.rbac.deny')).toBeGreaterThan(0);
    expect(http.indexOf('envoy.filters.http.rbac.deny')).toBeLessThan(http.indexOf('envoy.filters.http.rbac.allow'));
    for (const port of [5432, 8443]) {
      const tcp = JSON.stringify(listeners[`0.0.0.0_${port}`]);
      expect(tcp.indexOf('envoy.filters.network.rbac.allow')).toBeGreaterThan(0);
      expect(tcp.indexOf('envoy.filters.network.rbac.allow')).toBeLessThan(tcp.indexOf('envoy.filters.network.tcp_proxy'));
    }
  }, 120_000);

  it('a policy edit reaches a connected gateway', async () => {
    const stream = new SotwStream(daemon.grpcAddr, { id: NODE, metadata: META });
    try {
      stream.send({ typeUrl: TypeUrl.Listener });
      const first = await stream.nextMatching((r) => r.typeUrl === TypeUrl.Listener, 10_000);
      stream.ack(first);
      const ruleOf = (res: typeof first): string[] => {
        const l = res.resources.map((a) => Listener.decode(a.value)).find((x) => x.name === '0.0.0.0_80')!;
        return Object.keys(httpRbac(l, 'allow').rules!.policies);
      };
      expect(ruleOf(first)).toEqual(['ns[mesh-system]-policy[allow-web]-rule[0]']);
      const mark = stream.responses.length;
      await config.write('policies.yaml', policy('allow-ops', toGateway, '  rules: [{ from: [{ source: { namespaces: [ops] } }] }]'));
      const pushed = await eventually(
        'the gateway listener with the edited policy',
        () => stream.responses.slice(mark).find((r) => r.typeUrl === TypeUrl.Listener && ruleOf(r)[0] === 'ns[mesh-system]-policy[allow-ops]-rule[0]'),
        { timeoutMs: 20_000 },
      );
      const l = pushed.resources.map((a) => Listener.decode(a.value)).find((x) => x.name === '0.0.0.0_80')!;
      expect(httpFilterNames(l)).toEqual(['envoy.filters.http.rbac.allow', 'envoy.filters.http.cors', 'envoy.filters.http.fault', 'envoy.filters.http.router']);
    } finally {
      stream.close();
    }
  }, 60_000);
});
