/**
 * AuthorizationPolicy CUSTOM → ext_authz (docs/adr/0101): a shadow RBAC filter marks the requests a
 * CUSTOM rule matches and the provider's ext_authz filter runs only for those; CUSTOM goes before
 * DENY and ALLOW; a policy naming a provider that cannot be had fails closed for the workloads it
 * selects only. Decoded with the Envoy protos here; the daemon half runs the same configuration
 * through xds-validate (Envoy's validation rules and references).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { modelFromYaml, sidecar, TypeUrl } from '../support/model.js';
import { hcmOf } from '../support/decode.js';
import { integrityProblems } from './integrity.js';
import { makeConfigDir, startDaemon, type ConfigDir, type Daemon } from '../support/daemon.js';
import { goToolPath, GO_TOOL_BUILD_TIMEOUT_MS, runXdsValidate, type XdsValidateReport, echoSidecarValidateArgs } from '../support/go-tools.js';
import { ExtAuthz as HttpExtAuthz } from '../../src/gen/envoy/extensions/filters/http/ext_authz/v3/ext_authz.js';
import { ExtAuthz as NetworkExtAuthz } from '../../src/gen/envoy/extensions/filters/network/ext_authz/v3/ext_authz.js';
import { RBAC as HttpRbac } from '../../src/gen/envoy/extensions/filters/http/rbac/v3/rbac.js';
import type { Listener } from '../../src/gen/envoy/config/listener/v3/listener.js';
import type { HttpConnectionManager } from '../../src/gen/envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.js';
import type { MeshSettings } from '../../src/model/mesh-settings.js';
import { parseMeshConfig, meshSettingsFrom } from '../../src/bootstrap/mesh-config.js';
import type { TestModel } from '../support/model.js';

const echo = sidecar('127.0.0.1', 'echo-v1-abc', 'default', { app: 'echo', version: 'v1' });

const MESH_CONFIG = `
extensionProviders:
  - name: http-authz
    envoyExtAuthzHttp:
      service: ratings.default.svc.cluster.local
      port: 9080
      pathPrefix: /check
      timeout: 2s
      failOpen: false
      statusOnError: "503"
      includeRequestHeadersInCheck: [authorization, "x-ext-*"]
      includeAdditionalHeadersInCheck: { x-from: mesh }
      headersToUpstreamOnAllow: [x-user]
      headersToDownstreamOnDeny: [x-reason]
  - name: grpc-authz
    envoyExtAuthzGrpc:
      service: default/echo.default.svc.cluster.local
      port: 7070
      failOpen: true
  - name: nowhere
    envoyExtAuthzGrpc: { service: missing.default.svc.cluster.local, port: 9000 }
`;

const mesh = (): Partial<MeshSettings> => {
  const s = meshSettingsFrom(parseMeshConfig(MESH_CONFIG, 'mesh.yaml'), { domain: 'cluster.local', clusterId: 'Cluster' });
  return { extensionProviders: s.extensionProviders };
};

const ap = (name: string, body: string, selector = 'app: echo'): string => `
apiVersion: security.mesh.io/v1
kind: AuthorizationPolicy
metadata: { name: ${name}, namespace: default }
spec:
  selector: { matchLabels: { ${selector} } }
${body}
`;

const POLICIES = [
  ap('ext-http', '  action: CUSTOM\n  provider: { name: http-authz }\n  rules: [{ to: [{ operation: { paths: ["/api/*"] } }] }]'),
  ap('ext-grpc', '  action: CUSTOM\n  provider: { name: grpc-authz }\n  rules: [{ to: [{ operation: { ports: ["15432"] } }] }, { from: [{ source: { namespaces: [web] } }] }]'),
  ap('deny-admin', '  action: DENY\n  rules: [{ to: [{ operation: { paths: ["/admin"] } }] }]'),
  ap('allow-all', '  action: ALLOW\n  rules: [{}]'),
].join('---');

function inbound(m: TestModel, p = echo): Listener {
  return m.generate(p, TypeUrl.Listener).find((l) => l.name === 'virtualInbound')!;
}

function hcmOfPort(l: Listener, port: number): HttpConnectionManager {
  const chain = l.filterChains.find((c) => c.filterChainMatch?.destinationPort === port)!;
  return hcmOf({ ...l, filterChains: [chain], defaultFilterChain: undefined })[0];
}

describe('CUSTOM policies with the mesh config’s extension providers', () => {
  const m = modelFromYaml(POLICIES, { mesh: mesh() });
  afterAll(() => m.stop());

  it('puts a shadow RBAC + ext_authz pair per provider first, then DENY and ALLOW', () => {
    const hcm = hcmOfPort(inbound(m), 19080);
    expect(hcm.httpFilters.map((f) => f.name)).toEqual([
      'envoy.filters.http.rbac.custom.0',
      'envoy.filters.http.ext_authz.0',
      'envoy.filters.http.rbac.custom.1',
      'envoy.filters.http.ext_authz.1',
      'envoy.filters.http.rbac.deny',
      'envoy.filters.http.rbac.allow',
      'envoy.filters.http.cors',
      'envoy.filters.http.fault',
      'envoy.filters.http.router',
    ]);
    const config = (name: string): Uint8Array => hcm.httpFilters.find((f) => f.name === name)!.typedConfig!.value;
    // the shadow filter enforces nothing and marks what the CUSTOM rules match
    const grpcMark = HttpRbac.decode(config('envoy.filters.http.rbac.custom.0'));
    expect(grpcMark.rules).toBeUndefined();
    expect(grpcMark.shadowRulesStatPrefix).toBe('mesh_ext_authz_0_');
    expect(Object.keys(grpcMark.shadowRules!.policies)).toEqual(['mesh-ext-authz-ns[default]-policy[ext-grpc]-rule[0]', 'mesh-ext-authz-ns[default]-policy[ext-grpc]-rule[1]']);
    const grpc = HttpExtAuthz.decode(config('envoy.filters.http.ext_authz.0'));
    expect(grpc.grpcService?.envoyGrpc).toEqual(expect.objectContaining({ clusterName: 'outbound|7070||echo.default.svc.cluster.local', authority: 'echo.default.svc.cluster.local' }));
    expect(grpc.grpcService?.timeout).toEqual({ seconds: 600, nanos: 0 });
    expect(grpc.failureModeAllow).toBe(true);
    expect(grpc.filterEnabledMetadata).toEqual(
      expect.objectContaining({ filter: 'envoy.filters.http.rbac', path: [{ key: 'mesh_ext_authz_0_shadow_effective_policy_id' }], value: expect.objectContaining({ stringMatch: expect.objectContaining({ prefix: 'mesh-ext-authz-' }) }) }),
    );
    const httpMark = HttpRbac.decode(config('envoy.filters.http.rbac.custom.1'));
    expect(JSON.stringify(httpMark.shadowRules!.policies['mesh-ext-authz-ns[default]-policy[ext-http]-rule[0]'])).toContain('"prefix":"/api/"');
    const http = HttpExtAuthz.decode(config('envoy.filters.http.ext_authz.1'));
    expect(http.httpService?.serverUri).toEqual(expect.objectContaining({ uri: 'http://ratings.default.svc.cluster.local:9080', cluster: 'outbound|9080||ratings.default.svc.cluster.local', timeout: { seconds: 2, nanos: 0 } }));
    expect(http.httpService?.pathPrefix).toBe('/check');
    expect(http.httpService?.authorizationRequest?.headersToAdd).toEqual([expect.objectContaining({ key: 'x-from', value: 'mesh' })]);
    expect(http.allowedHeaders?.patterns).toEqual([expect.objectContaining({ exact: 'authorization', ignoreCase: true }), expect.objectContaining({ prefix: 'x-ext-', ignoreCase: true })]);
    expect(http.httpService?.authorizationResponse?.allowedUpstreamHeaders?.patterns).toEqual([expect.objectContaining({ exact: 'x-user' })]);
    expect(http.httpService?.authorizationResponse?.allowedClientHeaders?.patterns).toEqual([expect.objectContaining({ exact: 'x-reason' })]);
    expect(http.statusOnError?.code).toBe(503);
    expect(http.failureModeAllow).toBe(false);
    expect(http.filterEnabledMetadata?.path).toEqual([{ key: 'mesh_ext_authz_1_shadow_effective_policy_id' }]);
    // the CUSTOM policies are not in the DENY filter: they go to their providers
    const deny = HttpRbac.decode(config('envoy.filters.http.rbac.deny'));
    expect(Object.keys(deny.rules!.policies)).toEqual(['ns[default]-policy[deny-admin]-rule[0]']);
  });

  it('calls only gRPC providers on TCP chains, through the network filters', () => {
    const tcp = inbound(m).filterChains.find((c) => c.filterChainMatch?.destinationPort === 15432)!;
    expect(tcp.filters.map((f) => f.name)).toEqual([
      'envoy.filters.network.rbac.custom.0',
      'envoy.filters.network.ext_authz.0',
      // deny-admin's path cannot be seen on TCP: the DENY rule matches every connection there (public API)
      'envoy.filters.network.rbac.deny',
      'envoy.filters.network.rbac.allow',
      'envoy.filters.network.tcp_proxy',
    ]);
    const ext = NetworkExtAuthz.decode(tcp.filters[1].typedConfig!.value);
    expect(ext.grpcService?.envoyGrpc?.clusterName).toBe('outbound|7070||echo.default.svc.cluster.local');
    expect(ext.filterEnabledMetadata?.filter).toBe('envoy.filters.network.rbac');
    expect(ext.statPrefix).toBe('inbound|15432||');
    const texts = m.model.current().push.policies.diagnostics.map((d) => `${d.name}: ${d.message}`);
    expect(texts).toContain('ext-http: provider "http-authz" is an HTTP authorizer, which cannot check TCP connections: on TCP ports the policy does not apply');
  });

  it('names only clusters the proxy has', () => {
    const listeners = m.generate(echo, TypeUrl.Listener);
    const problems = integrityProblems({ clusters: m.generate(echo, TypeUrl.Cluster), endpoints: [], listeners, routes: [] }).filter((p) => p.includes('ext_authz'));
    expect(problems).toEqual([]);
  });
});

describe('a CUSTOM policy whose provider cannot be had fails closed for its workloads only', () => {
  it.each([
    ['a provider the mesh config does not declare', 'typo', /provider "typo" is not among the mesh config's extensionProviders: requests its rules match are denied \(fail closed\)/],
    ['a provider whose service is not in the mesh', 'nowhere', /provider "nowhere": service missing.default.svc.cluster.local port 9000 is not in the mesh: requests its rules match are denied \(fail closed\)/],
  ])('%s: its rules deny, it is logged, and other workloads keep their configuration', (_what, provider, said) => {
    const m = modelFromYaml(ap('ext', `  action: CUSTOM\n  provider: { name: ${provider} }\n  rules: [{ to: [{ operation: { paths: ["/x"] } }] }]`), { mesh: mesh() });
    try {
      const hcm = hcmOfPort(inbound(m), 19080);
      expect(hcm.httpFilters.map((f) => f.name)).toEqual(['envoy.filters.http.rbac.deny', 'envoy.filters.http.cors', 'envoy.filters.http.fault', 'envoy.filters.http.router']);
      const deny = HttpRbac.decode(hcm.httpFilters[0].typedConfig!.value);
      expect(Object.keys(deny.rules!.policies)).toEqual(['ns[default]-policy[ext]-rule[0]']);
      expect(m.model.current().push.policies.diagnostics.map((d) => d.message)).toContainEqual(expect.stringMatching(said));
      const other = inbound(m, sidecar('127.0.0.1', 'db-1', 'default', { app: 'db' }));
      expect(JSON.stringify(other)).not.toContain('rbac');
    } finally {
      m.stop();
    }
  });

  it('fails closed without --plugins ext_authz', () => {
    const m = modelFromYaml(POLICIES, { mesh: mesh(), settings: { extAuthz: false } });
    try {
      const hcm = hcmOfPort(inbound(m), 19080);
      expect(hcm.httpFilters.map((f) => f.name).filter((n) => n.includes('ext_authz'))).toEqual([]);
      const deny = HttpRbac.decode(hcm.httpFilters.find((f) => f.name === 'envoy.filters.http.rbac.deny')!.typedConfig!.value);
      expect(Object.keys(deny.rules!.policies).sort()).toEqual(['ns[default]-policy[deny-admin]-rule[0]', 'ns[default]-policy[ext-grpc]-rule[0]', 'ns[default]-policy[ext-grpc]-rule[1]', 'ns[default]-policy[ext-http]-rule[0]']);
    } finally {
      m.stop();
    }
  });

  it('refuses a mesh config whose providers are malformed, naming the field', () => {
    expect(() => parseMeshConfig('extensionProviders:\n  - name: a\n    envoyExtAuthzHttp: { service: s, port: 0 }\n  - name: a\n    envoyExtAuthzGrpc: { service: s, port: 80 }\n  - name: b\n', 'mesh.yaml')).toThrow(
      /mesh.yaml: extensionProviders\[0\]\.envoyExtAuthzHttp\.port: must be 1-65535.*mesh.yaml: extensionProviders\[1\]\.name: "a" is used by an earlier provider.*mesh.yaml: extensionProviders\[2\]: set envoyExtAuthzHttp or envoyExtAuthzGrpc/,
    );
  });
});

describe('CUSTOM, JWT and RBAC through a running daemon, validated as Envoy would', () => {
  let bin: string;
  let config: ConfigDir;
  let daemon: Daemon;
  let work: string;

  beforeAll(async () => {
    bin = await goToolPath('xds-validate');
    work = await mkdtemp(join(tmpdir(), 'mesh-ext-authz-'));
    await writeFile(join(work, 'mesh.yaml'), MESH_CONFIG);
    config = await makeConfigDir();
    await config.write(
      'policies.yaml',
      `${POLICIES}---${ap('typo', '  action: CUSTOM\n  provider: { name: typo }\n  rules: [{ to: [{ operation: { methods: [DELETE] } }] }]')}---
apiVersion: security.mesh.io/v1
kind: RequestAuthentication
metadata: { name: jwt, namespace: default }
spec:
  jwtRules: [{ issuer: https://issuer.test, jwks: '{"keys":[{"kty":"EC","crv":"P-256","x":"MezAum_tZTI8TbpDWrbopviqRjwWJ3uGM0Wlvbm68RQ","y":"RZJCdANcuGi24hg9HJeFjQ7iJQ0eJFYFHhlrKVQiBy8"}]}', outputClaimToHeaders: [{ header: x-sub, claim: sub }] }]
---
${ap('principals', '  action: DENY\n  rules: [{ from: [{ source: { notRequestPrincipals: ["https://issuer.test/*"] } }], when: [{ key: "request.auth.claims[groups]", values: [ops] }] }]')}
`,
    );
    daemon = await startDaemon({ configDir: config.path, meshConfig: join(work, 'mesh.yaml') });
  }, GO_TOOL_BUILD_TIMEOUT_MS);

  afterAll(async () => {
    await daemon?.stop();
    await config?.cleanup();
    if (work) await rm(work, { recursive: true, force: true });
  });

  it('serves ext_authz, jwt_authn and RBAC filters that pass Envoy validation, and logs the missing provider', async () => {
    const report = await runXdsValidate<XdsValidateReport>(bin, echoSidecarValidateArgs(daemon.grpcAddr));
    expect(report.errors).toEqual([]);
    expect(report.ok).toBe(true);
    const text = JSON.stringify(report.dump['type.googleapis.com/envoy.config.listener.v3.Listener'].virtualInbound);
    for (const name of ['envoy.filters.http.jwt_authn', 'envoy.filters.http.ext_authz.0', 'envoy.filters.network.ext_authz.0', 'envoy.filters.http.rbac.deny', 'envoy.filters.http.rbac.allow']) expect(text).toContain(name);
    expect(text.indexOf('envoy.filters.http.jwt_authn')).toBeLessThan(text.indexOf('envoy.filters.http.ext_authz.0'));
    expect(text.indexOf('envoy.filters.http.ext_authz.1')).toBeLessThan(text.indexOf('envoy.filters.http.rbac.deny'));
    expect(daemon.logs()).toContain(`policy: AuthorizationPolicy default/typo: provider "typo" is not among the mesh config's extensionProviders`);
  }, 120_000);
});
