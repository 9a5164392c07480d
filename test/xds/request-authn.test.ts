/**
 * RequestAuthentication → the jwt_authn filter of sidecar inbound HTTP chains (docs/adr/0100), and
 * AuthorizationPolicy request principals and `request.auth.*` on its verified payload. Every
 * resource here is decoded with the Envoy protos.
 */
import { modelFromYaml, router, sidecar, TypeUrl } from '../support/model.js';
import { hcmOf } from '../support/decode.js';
import { integrityProblems } from './integrity.js';
import { JwtAuthentication, type JwtProvider } from '../../src/gen/envoy/extensions/filters/http/jwt_authn/v3/config.js';
import { RBAC as HttpRbac } from '../../src/gen/envoy/extensions/filters/http/rbac/v3/rbac.js';
import { RBAC as NetworkRbac } from '../../src/gen/envoy/extensions/filters/network/rbac/v3/rbac.js';
import type { Listener } from '../../src/gen/envoy/config/listener/v3/listener.js';
import type { HttpConnectionManager } from '../../src/gen/envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.js';
import { UNVERIFIABLE_JWKS, type JwksEntry, type JwksSource, type JwksView } from '../../src/model/policy/jwks.js';
import type { Proxy } from '../../src/model/proxy.js';
import type { TestModel } from '../support/model.js';

const echo = sidecar('127.0.0.1', 'echo-v1-abc', 'default', { app: 'echo', version: 'v1' });
const KEYS = JSON.stringify({ keys: [{ kty: 'EC', crv: 'P-256', kid: 'k1', x: 'MezAum_tZTI8TbpDWrbopviqRjwWJ3uGM0Wlvbm68RQ', y: 'RZJCdANcuGi24hg9HJeFjQ7iJQ0eJFYFHhlrKVQiBy8' }] });

const ra = (ns: string, name: string, body: string): string => `
apiVersion: security.mesh.io/v1
kind: RequestAuthentication
metadata: { name: ${name}, namespace: ${ns} }
spec:
${body}
`;

function inbound(m: TestModel, p: Proxy = echo): Listener {
  return m.generate(p, TypeUrl.Listener).find((l) => l.name === 'virtualInbound')!;
}

function hcmOfPort(l: Listener, port: number): HttpConnectionManager {
  const chain = l.filterChains.find((c) => c.filterChainMatch?.destinationPort === port)!;
  return hcmOf({ ...l, filterChains: [chain], defaultFilterChain: undefined })[0];
}

function jwtOf(l: Listener, port = 19080): JwtAuthentication | undefined {
  const f = hcmOfPort(l, port).httpFilters.find((x) => x.name === 'envoy.filters.http.jwt_authn');
  return f ? JwtAuthentication.decode(f.typedConfig!.value) : undefined;
}

/** A key source that holds a fixed view, changed by the test: the seam the resolver implements. */
class StaticJwks implements JwksSource {
  private current: JwksView = new Map();
  private readonly listeners = new Set<() => void>();
  wanted: ReadonlySet<string> = new Set();
  view(): JwksView {
    return this.current;
  }
  want(uris: ReadonlySet<string>): void {
    this.wanted = uris;
  }
  onChange(l: () => void): () => void {
    this.listeners.add(l);
    return () => this.listeners.delete(l);
  }
  set(uri: string, entry: JwksEntry): void {
    this.current = new Map([...this.current, [uri, entry]]);
    for (const l of this.listeners) l();
  }
}

describe('RequestAuthentication on the sidecar inbound listener', () => {
  const rule = `  selector: { matchLabels: { app: echo } }
  jwtRules:
    - issuer: https://issuer.example.com
      audiences: [echo, api]
      jwks: '${KEYS}'
      fromHeaders: [{ name: x-jwt, prefix: "Token " }]
      fromParams: [tok]
      forwardOriginalToken: true
      outputPayloadToHeader: x-jwt-payload
      outputClaimToHeaders: [{ header: x-sub, claim: sub }]`;
  const m = modelFromYaml(ra('default', 'echo-jwt', rule));
  afterAll(() => m.stop());

  it('puts jwt_authn first on HTTP chains, before the authorization filters, with the rule as a provider', () => {
    m.apply('ap.yaml', `
apiVersion: security.mesh.io/v1
kind: AuthorizationPolicy
metadata: { name: need-jwt, namespace: default }
spec:
  selector: { matchLabels: { app: echo } }
  rules: [{ from: [{ source: { requestPrincipals: ["https://issuer.example.com/alice"] } }] }]
`);
    const l = inbound(m);
    for (const chain of l.filterChains.filter((c) => c.filterChainMatch?.destinationPort === 19080)) {
      const [hcm] = hcmOf({ ...l, filterChains: [chain], defaultFilterChain: undefined });
      expect(hcm.httpFilters.map((f) => f.name)).toEqual(['envoy.filters.http.jwt_authn', 'envoy.filters.http.rbac.allow', 'envoy.filters.http.cors', 'envoy.filters.http.fault', 'envoy.filters.http.router']);
    }
    const jwt = jwtOf(l)!;
    expect(Object.keys(jwt.providers)).toEqual(['default/echo-jwt/0']);
    const p: JwtProvider = jwt.providers['default/echo-jwt/0'];
    expect(p.issuer).toBe('https://issuer.example.com');
    expect(p.audiences).toEqual(['echo', 'api']);
    expect(p.localJwks?.inlineString).toBe(KEYS);
    expect(p.fromHeaders).toEqual([{ name: 'x-jwt', valuePrefix: 'Token ' }]);
    expect(p.fromParams).toEqual(['tok']);
    expect(p.forward).toBe(true);
    expect(p.forwardPayloadHeader).toBe('x-jwt-payload');
    expect(p.claimToHeaders).toEqual([{ headerName: 'x-sub', claimName: 'sub' }]);
    expect(p.payloadInMetadata).toBe('payload');
    // an invalid token is refused; no token at all passes to authorization
    expect(jwt.rules).toHaveLength(1);
    expect(jwt.rules[0].match?.prefix).toBe('/');
    const reqs = jwt.rules[0].requires!.requiresAny!.requirements;
    expect(reqs.map((r) => r.providerName ?? (r.allowMissing ? 'allow_missing' : '?'))).toEqual(['default/echo-jwt/0', 'allow_missing']);
    expect(jwt.bypassCorsPreflight).toBe(true);
    // the ALLOW rule reads the verified payload jwt_authn writes: iss and sub, under its metadata namespace
    const allow = HttpRbac.decode(hcmOfPort(l, 19080).httpFilters.find((f) => f.name === 'envoy.filters.http.rbac.allow')!.typedConfig!.value);
    const text = JSON.stringify(allow.rules!.policies['ns[default]-policy[need-jwt]-rule[0]'].principals);
    expect(text).toContain('"filter":"envoy.filters.http.jwt_authn"');
    expect(text).toContain('[{"key":"payload"},{"key":"iss"}]');
    expect(text).toContain('"exact":"https://issuer.example.com"');
    expect(text).toContain('"exact":"alice"');
    m.apply('ap.yaml', '');
  });

  it('leaves TCP chains and the catch-all without jwt_authn, and drops request principals there as the public API says', () => {
    m.apply('ap.yaml', `
apiVersion: security.mesh.io/v1
kind: AuthorizationPolicy
metadata: { name: need-jwt, namespace: default }
spec:
  selector: { matchLabels: { app: echo } }
  rules: [{ from: [{ source: { requestPrincipals: ["*"] } }] }]
`);
    const l = inbound(m);
    const tcp = l.filterChains.find((c) => c.filterChainMatch?.destinationPort === 15432)!;
    expect(tcp.filters.map((f) => f.name)).toEqual(['envoy.filters.network.rbac.allow', 'envoy.filters.network.tcp_proxy']);
    // the ALLOW rule needs a token: on TCP it is dropped, so the ALLOW filter admits nothing there
    expect(Object.keys(NetworkRbac.decode(tcp.filters[0].typedConfig!.value).rules!.policies)).toEqual([]);
    expect(JSON.stringify(l.defaultFilterChain)).not.toContain('jwt_authn');
    const texts = m.model.current().push.policies.diagnostics.map((d) => `${d.name}: ${d.message}`);
    expect(texts).toContainEqual(expect.stringMatching(/^need-jwt: rule 0 uses HTTP-only attributes \(from\.requestPrincipals\): on TCP ports the rule is dropped/));
    m.apply('ap.yaml', '');
  });

  it('turns request.auth conditions into payload matchers (claims by path, list claims, audiences, presenter)', () => {
    m.apply('ap.yaml', `
apiVersion: security.mesh.io/v1
kind: AuthorizationPolicy
metadata: { name: claims, namespace: default }
spec:
  selector: { matchLabels: { app: echo } }
  action: DENY
  rules:
    - when:
        - { key: "request.auth.claims[groups]", values: [admin] }
        - { key: "request.auth.claims[nested][role]", values: ["ops*"] }
        - { key: request.auth.audiences, values: [api] }
        - { key: request.auth.presenter, notValues: [cli] }
`);
    const deny = HttpRbac.decode(hcmOfPort(inbound(m), 19080).httpFilters.find((f) => f.name === 'envoy.filters.http.rbac.deny')!.typedConfig!.value);
    const text = JSON.stringify(deny.rules!.policies['ns[default]-policy[claims]-rule[0]'].principals);
    expect(text).toContain('[{"key":"payload"},{"key":"groups"}]');
    expect(text).toContain('"listMatch":{"oneOf":{"stringMatch":{"exact":"admin"');
    expect(text).toContain('[{"key":"payload"},{"key":"nested"},{"key":"role"}]');
    expect(text).toContain('"prefix":"ops"');
    expect(text).toContain('[{"key":"payload"},{"key":"aud"}]');
    expect(text).toContain('[{"key":"payload"},{"key":"azp"}]');
    m.apply('ap.yaml', '');
  });

  it('applies root-namespace, namespace and selected RequestAuthentications together, and no others', () => {
    const s = modelFromYaml(
      [
        ra('mesh-system', 'mesh', `  jwtRules: [{ issuer: mesh-issuer, jwks: '${KEYS}' }]`),
        ra('default', 'ns', `  jwtRules: [{ issuer: ns-issuer, jwks: '${KEYS}' }]`),
        ra('default', 'echo', `  selector: { matchLabels: { app: echo } }\n  jwtRules: [{ issuer: echo-issuer, jwks: '${KEYS}' }]`),
        ra('default', 'ratings', `  selector: { matchLabels: { app: ratings } }\n  jwtRules: [{ issuer: ratings-issuer, jwks: '${KEYS}' }]`),
        ra('other', 'other', `  jwtRules: [{ issuer: other-issuer, jwks: '${KEYS}' }]`),
      ].join('---'),
    );
    try {
      const issuers = (p: Proxy): string[] => Object.values(jwtOf(inbound(s, p))?.providers ?? {}).map((x) => x.issuer).sort();
      expect(issuers(echo)).toEqual(['echo-issuer', 'mesh-issuer', 'ns-issuer']);
      expect(issuers(sidecar('127.0.0.1', 'ratings-1', 'default', { app: 'ratings' }))).toEqual(['mesh-issuer', 'ns-issuer', 'ratings-issuer']);
      expect(issuers(sidecar('127.0.0.1', 'x-1', 'other', { app: 'x' }))).toEqual(['mesh-issuer', 'other-issuer']);
      expect(issuers(sidecar('127.0.0.1', 'y-1', 'data', { app: 'y' }))).toEqual(['mesh-issuer']);
    } finally {
      s.stop();
    }
  });

  it('generates no jwt_authn filter without --plugins authn', () => {
    const s = modelFromYaml(ra('default', 'ns', `  jwtRules: [{ issuer: ns-issuer, jwks: '${KEYS}' }]`), { settings: { authn: false } });
    try {
      expect(jwtOf(inbound(s))).toBeUndefined();
    } finally {
      s.stop();
    }
  });
});

describe('RequestAuthentication on gateways', () => {
  it('puts jwt_authn first on the HTTP chains of the gateway it selects, and on no other gateway', () => {
    const m = modelFromYaml(
      [
        `
apiVersion: networking.mesh.io/v1
kind: Gateway
metadata: { name: mesh-in, namespace: mesh-system }
spec:
  selector: { app: mesh-ingressgateway }
  servers: [{ port: { number: 8080, name: http, protocol: HTTP }, hosts: ["*/echo.example.com"] }]
`,
        ra('mesh-system', 'gw', `  selector: { matchLabels: { app: mesh-ingressgateway, tier: edge } }\n  jwtRules: [{ issuer: gw-issuer, jwks: '${KEYS}' }]`),
      ].join('---'),
    );
    try {
      const gwListener = (p: Proxy): Listener | undefined => m.generate(p, TypeUrl.Listener).find((l) => l.name === '0.0.0.0_8080');
      const [hcm] = hcmOf(gwListener(router('mesh-system', { app: 'mesh-ingressgateway', tier: 'edge' }))!);
      expect(hcm.httpFilters.map((f) => f.name)).toEqual(['envoy.filters.http.jwt_authn', 'envoy.filters.http.cors', 'envoy.filters.http.fault', 'envoy.filters.http.router']);
      expect(Object.values(JwtAuthentication.decode(hcm.httpFilters[0].typedConfig!.value).providers).map((p) => p.issuer)).toEqual(['gw-issuer']);
      // a replica set of the same Gateway without the RequestAuthentication's labels
      const [plain] = hcmOf(gwListener(router('mesh-system', { app: 'mesh-ingressgateway' }))!);
      expect(plain.httpFilters.map((f) => f.name)).toEqual(['envoy.filters.http.cors', 'envoy.filters.http.fault', 'envoy.filters.http.router']);
    } finally {
      m.stop();
    }
  });
});

describe('jwksUri key sets', () => {
  const uri = 'https://issuer.example.com/keys';
  const yaml = ra('default', 'uri', `  jwtRules: [{ issuer: https://issuer.example.com, jwksUri: "${uri}" }]`);

  it('inlines the key set the resolver fetched, fails closed until then and after a failed first fetch', () => {
    const jwks = new StaticJwks();
    const m = modelFromYaml(yaml, { jwks });
    try {
      expect([...jwks.wanted]).toEqual([uri]);
      const keys = (): string | undefined => jwtOf(inbound(m))!.providers['default/uri/0'].localJwks?.inlineString;
      // the first fetch runs: no token of this issuer verifies
      expect(keys()).toBe(UNVERIFIABLE_JWKS);
      jwks.set(uri, { state: 'failed', reason: 'connect ECONNREFUSED', version: 1 });
      m.model.flush();
      expect(keys()).toBe(UNVERIFIABLE_JWKS);
      jwks.set(uri, { state: 'keys', jwks: KEYS, version: 2 });
      m.model.flush();
      expect(keys()).toBe(KEYS);
    } finally {
      m.stop();
    }
  });

  it('rebuilds only the listeners that inlined the changed key set (the Dep.jwks key), through the model’s push', () => {
    const jwks = new StaticJwks();
    const other = 'https://other.example.com/keys';
    const m = modelFromYaml(
      [yaml, ra('default', 'ratings', `  selector: { matchLabels: { app: ratings } }\n  jwtRules: [{ issuer: other, jwksUri: "${other}" }]`)].join('---'),
      { jwks },
    );
    try {
      const ratings = sidecar('127.0.0.1', 'ratings-1', 'default', { app: 'ratings' });
      jwks.set(uri, { state: 'keys', jwks: KEYS, version: 1 });
      jwks.set(other, { state: 'keys', jwks: KEYS, version: 2 });
      m.model.flush();
      const before = { echo: m.generateRaw(echo, TypeUrl.Listener), ratings: m.generateRaw(ratings, TypeUrl.Listener) };
      let pushes = 0;
      m.model.onPush(() => pushes++);
      jwks.set(other, { state: 'keys', jwks: KEYS.replace('"k1"', '"k2"'), version: 3 });
      m.model.flush();
      expect(pushes).toBe(1);
      expect(m.model.current().push.changes.keys).toEqual(new Set(['version', `jwks:${other}`]));
      // echo read only `uri`: its listeners are the same objects; ratings' inbound listener is new
      expect(m.generateRaw(echo, TypeUrl.Listener)).toBe(before.echo);
      const after = m.generateRaw(ratings, TypeUrl.Listener);
      expect(after).not.toBe(before.ratings);
      expect(jwtOf(inbound(m, ratings))!.providers['default/ratings/0'].localJwks?.inlineString).toContain('"k2"');
    } finally {
      m.stop();
    }
  });

  it('with DISC_JWT_ENABLE_REMOTE_JWKS leaves an in-mesh URI to the proxy, through a cluster it has', () => {
    const jwks = new StaticJwks();
    const inMesh = 'http://ratings.default.svc.cluster.local:9080/keys';
    const m = modelFromYaml(ra('default', 'mesh', `  jwtRules: [{ issuer: in-mesh, jwksUri: "${inMesh}", timeout: 2s }, { issuer: outside, jwksUri: "${uri}" }]`), {
      jwks,
      remoteJwks: true,
      settings: { remoteJwks: true },
    });
    try {
      // meshd fetches only the URI outside the mesh
      expect([...jwks.wanted]).toEqual([uri]);
      const jwt = jwtOf(inbound(m))!;
      const remote = jwt.providers['default/mesh/0'].remoteJwks!;
      expect(remote.httpUri).toEqual(expect.objectContaining({ uri: inMesh, cluster: 'outbound|9080||ratings.default.svc.cluster.local', timeout: { seconds: 2, nanos: 0 } }));
      expect(jwt.providers['default/mesh/1'].localJwks?.inlineString).toBe(UNVERIFIABLE_JWKS);
      const clusters = m.generate(echo, TypeUrl.Cluster).map((c) => c.name);
      expect(clusters).toContain(remote.httpUri!.cluster);
      const listeners = m.generate(echo, TypeUrl.Listener);
      // the referential check sees the filter's cluster; a URI whose service is gone would be reported
      expect(integrityProblems({ clusters: m.generate(echo, TypeUrl.Cluster), endpoints: [], listeners, routes: [] }).filter((p) => p.includes('jwt_authn'))).toEqual([]);
      expect([...new Set(integrityProblems({ clusters: [], endpoints: [], listeners, routes: [] }).filter((p) => p.includes('jwt_authn')))]).toEqual([
        'listener virtualInbound: envoy.filters.http.jwt_authn names missing cluster outbound|9080||ratings.default.svc.cluster.local',
      ]);
    } finally {
      m.stop();
    }
  });
});

describe('bad input is said, and fails closed for that issuer only', () => {
  it('logs rules without keys, unusable inline keys and malformed request principals', () => {
    const m = modelFromYaml(
      [
        ra('default', 'bad', `  jwtRules:\n    - { issuer: no-keys }\n    - { issuer: bad-keys, jwks: '{"keys":[]}' }\n    - { issuer: good, jwks: '${KEYS}' }`),
        `
apiVersion: security.mesh.io/v1
kind: AuthorizationPolicy
metadata: { name: typo, namespace: default }
spec:
  rules: [{ from: [{ source: { requestPrincipals: ["alice"] } }], when: [{ key: request.auth.principal, values: ["bob"] }] }]
`,
      ].join('---'),
    );
    try {
      const texts = m.model.current().push.policies.diagnostics.map((d) => `${d.kind} ${d.name}: ${d.message}`);
      expect(texts).toEqual(
        expect.arrayContaining([
          expect.stringMatching(/^RequestAuthentication bad: jwtRules\[0\] \(issuer no-keys\) has neither jwks nor jwksUri.*tokens of this issuer are rejected \(fail closed\)/),
          expect.stringMatching(/^RequestAuthentication bad: jwtRules\[1\] \(issuer bad-keys\): the inline jwks is not a usable key set \(the "keys" array is empty\)/),
          expect.stringMatching(/^AuthorizationPolicy typo: rule 0: request principals "alice", "bob" are not <issuer>\/<subject>: they match no request/),
        ]),
      );
      const providers = jwtOf(inbound(m))!.providers;
      expect(providers['default/bad/0'].localJwks?.inlineString).toBe(UNVERIFIABLE_JWKS);
      expect(providers['default/bad/1'].localJwks?.inlineString).toBe(UNVERIFIABLE_JWKS);
      expect(providers['default/bad/2'].localJwks?.inlineString).toBe(KEYS);
    } finally {
      m.stop();
    }
  });
});
