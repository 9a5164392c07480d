/**
 * Gateway TLS with credentials (docs/adr/0105): the listener a gateway gets for each TLS mode, the
 * Secrets it gets over SDS on the ADS stream, who may ask for which, and what a Secret edit rebuilds.
 */
import pino from 'pino';
import type { FilterChain } from '../../src/gen/envoy/config/listener/v3/listener_components.js';
import { DownstreamTlsContext, UpstreamTlsContext } from '../../src/gen/envoy/extensions/transport_sockets/tls/v3/tls.js';
import { TlsParameters_TlsProtocol } from '../../src/gen/envoy/extensions/transport_sockets/tls/v3/common.js';
import { TcpProxy } from '../../src/gen/envoy/extensions/filters/network/tcp_proxy/v3/tcp_proxy.js';
import { TestCredentials } from '../support/credentials.js';
import { createMetrics } from '../../src/metrics/metrics.js';
import { credentialAccess, SECRET_TYPE_URL } from '../../src/security/credential-access.js';
import { anyToJson, envoyConfigDump } from '../../src/xds/envoy/config-dump.js';
import { grpcClient, modelFromYaml, router, sidecar, TypeUrl, type TestModel } from '../support/model.js';

const CERT = '-----BEGIN CERTIFICATE-----\nMIIBcertificate\n-----END CERTIFICATE-----\n';
const KEY = '-----BEGIN PRIVATE KEY-----\nMIIEvQprivatekeymaterial\n-----END PRIVATE KEY-----\n';
const CA = '-----BEGIN CERTIFICATE-----\nMIIBclientca\n-----END CERTIFICATE-----\n';
const b64 = (s: string): string => Buffer.from(s).toString('base64');

const gateway = (servers: string): string => `
apiVersion: networking.mesh.io/v1
kind: Gateway
metadata: { name: public, namespace: mesh-system }
spec:
  selector: { app: mesh-ingressgateway }
  servers:
${servers}
---
apiVersion: networking.mesh.io/v1
kind: VirtualService
metadata: { name: public, namespace: default }
spec:
  hosts: [echo.example.com]
  gateways: [mesh-system/public]
  http: [{ route: [{ destination: { host: echo.default.svc.cluster.local } }] }]
`;

function serverTls(c: FilterChain): DownstreamTlsContext {
  return DownstreamTlsContext.decode(c.transportSocket!.typedConfig!.value);
}

function setup(yaml: string, creds = new TestCredentials()): { m: TestModel; creds: TestCredentials } {
  return { m: modelFromYaml(yaml, { credentials: creds }), creds };
}

const flush = (m: TestModel): void => m.model.flush();

describe('gateway SIMPLE and MUTUAL with credentialName', () => {
  it('SIMPLE names the Secret over SDS on the ADS stream, and SDS serves its certificate and key to the gateway', () => {
    const { m, creds } = setup(gateway(`    - port: { number: 443, name: https, protocol: HTTPS }
      hosts: ["*/echo.example.com"]
      tls: { mode: SIMPLE, credentialName: echo-cert, minProtocolVersion: TLSV1_2, maxProtocolVersion: TLSV1_3, cipherSuites: [ECDHE-ECDSA-AES256-GCM-SHA384] }`));
    try {
      creds.secret('mesh-system', 'echo-cert', { 'tls.crt': CERT, 'tls.key': KEY });
      flush(m);
      const [l] = m.generate(router(), TypeUrl.Listener);
      expect(l.name).toBe('0.0.0.0_443');
      expect(l.listenerFilters.map((f) => f.name)).toEqual(['envoy.filters.listener.tls_inspector']);
      const ctx = serverTls(l.filterChains[0]);
      expect(l.filterChains[0].filterChainMatch?.serverNames).toEqual(['echo.example.com']);
      expect(ctx.requireClientCertificate).toBeUndefined();
      expect(ctx.commonTlsContext?.tlsCertificateSdsSecretConfigs.map((s) => [s.name, s.sdsConfig?.ads !== undefined])).toEqual([['kubernetes://echo-cert', true]]);
      expect(ctx.commonTlsContext?.tlsParams).toMatchObject({
        tlsMinimumProtocolVersion: TlsParameters_TlsProtocol.TLSv1_2,
        tlsMaximumProtocolVersion: TlsParameters_TlsProtocol.TLSv1_3,
        cipherSuites: ['ECDHE-ECDSA-AES256-GCM-SHA384'],
      });
      const [secret] = m.generate(router(), TypeUrl.Secret, ['kubernetes://echo-cert']);
      expect(secret.name).toBe('kubernetes://echo-cert');
      expect(Buffer.from(secret.tlsCertificate!.certificateChain!.inlineBytes!).toString()).toBe(CERT);
      expect(Buffer.from(secret.tlsCertificate!.privateKey!.inlineBytes!).toString()).toBe(KEY);
      // the generic form (cert/key) reads the same
      creds.secret('mesh-system', 'echo-cert', { cert: CERT, key: KEY }, '2');
      flush(m);
      expect(m.generate(router(), TypeUrl.Secret, ['kubernetes://echo-cert'])[0].tlsCertificate?.privateKey?.inlineBytes).toBeDefined();
    } finally {
      m.stop();
    }
  });

  it('MUTUAL verifies clients against the -cacert Secret (over the CA in the credential itself), with SANs, SPKI and hashes', () => {
    const { m, creds } = setup(gateway(`    - port: { number: 443, name: https, protocol: HTTPS }
      hosts: ["*/echo.example.com"]
      tls:
        mode: MUTUAL
        credentialName: echo-cert
        subjectAltNames: [client.example.com, "spiffe://example.com/ns/a/sa/b"]
        verifyCertificateSpki: [NvqYIYSbgK2vCJpQhObf77vv+bQWtc5ek5RIOwPiC9A=]
        verifyCertificateHash: ["df6ff72fe9116521268f6f2dd4966f51df479883fe7037b39f75916ac3049d1a"]`));
    try {
      creds.secret('mesh-system', 'echo-cert', { 'tls.crt': CERT, 'tls.key': KEY, 'ca.crt': 'own-ca' });
      creds.secret('mesh-system', 'echo-cert-cacert', { 'ca.crt': CA });
      flush(m);
      const [l] = m.generate(router(), TypeUrl.Listener);
      const ctx = serverTls(l.filterChains[0]);
      expect(ctx.requireClientCertificate).toBe(true);
      const cvc = ctx.commonTlsContext!.combinedValidationContext!;
      expect(cvc.validationContextSdsSecretConfig?.name).toBe('kubernetes://echo-cert-cacert');
      expect(cvc.validationContextSdsSecretConfig?.sdsConfig?.ads).toBeDefined();
      expect(cvc.defaultValidationContext?.matchTypedSubjectAltNames.map((s) => [s.sanType, s.matcher?.exact])).toEqual([
        [2, 'client.example.com'],
        [3, 'spiffe://example.com/ns/a/sa/b'],
      ]);
      expect(cvc.defaultValidationContext?.verifyCertificateSpki).toEqual(['NvqYIYSbgK2vCJpQhObf77vv+bQWtc5ek5RIOwPiC9A=']);
      expect(cvc.defaultValidationContext?.verifyCertificateHash).toEqual(['df6ff72fe9116521268f6f2dd4966f51df479883fe7037b39f75916ac3049d1a']);
      const [ca] = m.generate(router(), TypeUrl.Secret, ['kubernetes://echo-cert-cacert']);
      expect(Buffer.from(ca.validationContext!.trustedCa!.inlineBytes!).toString()).toBe(CA);
      expect(ca.tlsCertificate).toBeUndefined();
      // without the -cacert Secret, the credential's own ca.crt
      creds.secret('mesh-system', 'echo-cert-cacert', undefined);
      flush(m);
      const [own] = m.generate(router(), TypeUrl.Secret, ['kubernetes://echo-cert-cacert']);
      expect(Buffer.from(own.validationContext!.trustedCa!.inlineBytes!).toString()).toBe('own-ca');
      // and with no CA at all, a MUTUAL server cannot verify anyone: it has no chain
      creds.secret('mesh-system', 'echo-cert', { 'tls.crt': CERT, 'tls.key': KEY }, '3');
      flush(m);
      expect(m.generate(router(), TypeUrl.Listener)).toEqual([]);
    } finally {
      m.stop();
    }
  });

  it('a missing Secret removes its server chain (and a port left without chains), a loading one keeps it, and the Secret coming back restores it', () => {
    const { m, creds } = setup(gateway(`    - port: { number: 443, name: https, protocol: HTTPS }
      hosts: ["*/echo.example.com"]
      tls: { mode: SIMPLE, credentialName: echo-cert }
    - port: { number: 443, name: https-other, protocol: HTTPS }
      hosts: ["*/other.example.com"]
      tls: { mode: SIMPLE, credentialName: other-cert }`));
    try {
      creds.loading('mesh-system', 'echo-cert');
      creds.secret('mesh-system', 'other-cert', { 'tls.crt': CERT, 'tls.key': KEY });
      flush(m);
      const names = (): string[][] => m.generate(router(), TypeUrl.Listener).flatMap((l) => l.filterChains.map((c) => c.filterChainMatch?.serverNames ?? []));
      expect(names()).toEqual([['echo.example.com'], ['other.example.com']]);
      creds.secret('mesh-system', 'echo-cert', undefined);
      flush(m);
      expect(names()).toEqual([['other.example.com']]);
      expect(m.generate(router(), TypeUrl.Secret, ['kubernetes://echo-cert'])).toEqual([]);
      creds.secret('mesh-system', 'other-cert', { 'tls.crt': CERT }, '2'); // a certificate without its key is no credential
      flush(m);
      expect(m.generate(router(), TypeUrl.Listener)).toEqual([]);
      creds.secret('mesh-system', 'echo-cert', { 'tls.crt': CERT, 'tls.key': KEY });
      flush(m);
      expect(names()).toEqual([['echo.example.com']]);
    } finally {
      m.stop();
    }
  });

  it('names the Secrets a gateway uses in its own namespace only, with their -cacert companions', () => {
    const { m } = setup(gateway(`    - port: { number: 443, name: https, protocol: HTTPS }
      hosts: ["*/echo.example.com"]
      tls: { mode: SIMPLE, credentialName: echo-cert }
    - port: { number: 8443, name: https-2, protocol: HTTPS }
      hosts: ["*/two.example.com"]
      tls: { mode: SIMPLE, credentialName: other-ns/stolen }`));
    try {
      const push = m.model.current().push;
      expect(push.credentialReferences(router())).toEqual(['mesh-system/echo-cert', 'mesh-system/echo-cert-cacert']);
      // the same Gateway selecting a gateway of another namespace names that namespace's Secret; an
      // explicit `ns/name` is read only for a gateway of that namespace
      expect(push.credentialReferences(router('team-b'))).toEqual(['team-b/echo-cert', 'team-b/echo-cert-cacert']);
      expect(push.credentialReferences(router('other-ns'))).toEqual(['other-ns/echo-cert', 'other-ns/echo-cert-cacert', 'other-ns/stolen', 'other-ns/stolen-cacert']);
      expect(push.credentialReferences(sidecar('10.0.0.1', 'a'))).toEqual([]);
    } finally {
      m.stop();
    }
  });
});

describe('DestinationRule credentialName at a gateway (TLS origination)', () => {
  it('MUTUAL takes the client certificate and the CA over SDS, which the gateway is served and names as its references', () => {
    const creds = new TestCredentials();
    creds.secret('mesh-system', 'egress-cert', { 'tls.crt': CERT, 'tls.key': KEY, 'ca.crt': CA });
    const { m } = setup(
      `${gateway(`    - port: { number: 80, name: http, protocol: HTTP }
      hosts: ["*/echo.example.com"]`)}---
apiVersion: networking.mesh.io/v1
kind: DestinationRule
metadata: { name: ratings-origination, namespace: default }
spec:
  host: ratings.default.svc.cluster.local
  trafficPolicy: { tls: { mode: MUTUAL, credentialName: egress-cert, sni: ratings.example.com, subjectAltNames: [ratings.example.com] } }
`,
      creds,
    );
    try {
      flush(m);
      const c = m.generate(router(), TypeUrl.Cluster).find((x) => x.name === 'outbound|9080||ratings.default.svc.cluster.local')!;
      const ctx = UpstreamTlsContext.decode(c.transportSocket!.typedConfig!.value);
      expect(ctx.sni).toBe('ratings.example.com');
      expect(ctx.commonTlsContext?.tlsCertificateSdsSecretConfigs.map((x) => [x.name, x.sdsConfig?.ads !== undefined])).toEqual([['kubernetes://egress-cert', true]]);
      expect(ctx.commonTlsContext?.combinedValidationContext?.validationContextSdsSecretConfig?.name).toBe('kubernetes://egress-cert-cacert');
      expect(m.model.current().push.credentialReferences(router())).toEqual(['mesh-system/egress-cert', 'mesh-system/egress-cert-cacert']);
      const served = m.generate(router(), TypeUrl.Secret, ['kubernetes://egress-cert', 'kubernetes://egress-cert-cacert']);
      expect(served.map((x) => [x.name, x.tlsCertificate !== undefined, x.validationContext !== undefined])).toEqual([
        ['kubernetes://egress-cert', true, false],
        ['kubernetes://egress-cert-cacert', false, true],
      ]);
    } finally {
      m.stop();
    }
  });
});

describe('who may ask for a credential over SDS', () => {
  const metrics = createMetrics({ defaultMetrics: false });
  const access = credentialAccess(metrics.sdsCertificateErrors, pino({ level: 'silent' }));
  const count = async (): Promise<number> => (await metrics.sdsCertificateErrors.get()).values[0]?.value ?? 0;

  it('refuses other namespaces, non-credential names and proxyless clients, and counts each refusal', async () => {
    const before = await count();
    expect([...access(router('mesh-system'), SECRET_TYPE_URL, new Set(['kubernetes://echo-cert', 'kubernetes://mesh-system/echo-cert', 'kubernetes://echo-cert-cacert']))]).toEqual([]);
    expect([...access(router('team-b'), SECRET_TYPE_URL, new Set(['kubernetes://mesh-system/echo-cert', 'kubernetes://own']))]).toEqual(['kubernetes://mesh-system/echo-cert']);
    expect([...access(router('team-b'), SECRET_TYPE_URL, new Set(['file:///etc/key.pem']))]).toEqual(['file:///etc/key.pem']);
    // sidecars: their own namespace only (what the SDS generator then serves them: docs/adr/0152); gRPC clients nothing
    expect([...access(sidecar('10.0.0.1', 'a', 'team-b'), SECRET_TYPE_URL, new Set(['kubernetes://mesh-system/echo-cert']))]).toEqual(['kubernetes://mesh-system/echo-cert']);
    expect([...access(grpcClient('mesh-system'), SECRET_TYPE_URL, new Set(['kubernetes://echo-cert']))]).toEqual(['kubernetes://echo-cert']);
    expect([...access(sidecar('10.0.0.1', 'a'), TypeUrl.Cluster, new Set(['outbound|80||x']))]).toEqual([]);
    expect((await count()) - before).toBe(4);
  });

  it('the SDS generator itself serves a gateway nothing of another namespace, and sidecars nothing their rules do not name', () => {
    const creds = new TestCredentials();
    creds.secret('mesh-system', 'echo-cert', { 'tls.crt': CERT, 'tls.key': KEY });
    const { m } = setup(gateway(`    - port: { number: 80, name: http, protocol: HTTP }
      hosts: ["*/echo.example.com"]`), creds);
    try {
      flush(m);
      expect(m.generate(router('team-b'), TypeUrl.Secret, ['kubernetes://mesh-system/echo-cert', 'kubernetes://echo-cert'])).toEqual([]);
      expect(m.generate(sidecar('10.0.0.1', 'a', 'mesh-system'), TypeUrl.Secret, ['kubernetes://echo-cert'])).toEqual([]);
      expect(m.generate(router('mesh-system'), TypeUrl.Secret, ['kubernetes://mesh-system/echo-cert']).map((s) => s.name)).toEqual(['kubernetes://mesh-system/echo-cert']);
    } finally {
      m.stop();
    }
  });
});

describe('a Secret edit', () => {
  it('rebuilds what read that Secret and carries over what did not', () => {
    const creds = new TestCredentials();
    const { m } = setup(gateway(`    - port: { number: 443, name: https, protocol: HTTPS }
      hosts: ["*/echo.example.com"]
      tls: { mode: SIMPLE, credentialName: echo-cert }
    - port: { number: 8443, name: https-b, protocol: HTTPS }
      hosts: ["*/b.example.com"]
      tls: { mode: SIMPLE, credentialName: b-cert }`), creds);
    try {
      creds.secret('mesh-system', 'echo-cert', { 'tls.crt': CERT, 'tls.key': KEY });
      creds.secret('mesh-system', 'b-cert', { 'tls.crt': CERT, 'tls.key': KEY });
      flush(m);
      const names = ['kubernetes://echo-cert', 'kubernetes://b-cert'];
      const push0 = m.model.current().push;
      const memo = (key: string): string => push0.memoize(key, () => `${push0.credential('mesh-system', key).state}@${push0.credential('mesh-system', key).state === 'present' ? 'v' : ''}`);
      memo('echo-cert');
      memo('b-cert');
      const sds0 = m.generateRaw(router(), TypeUrl.Secret, names);
      const lds0 = m.generateRaw(router(), TypeUrl.Listener);
      creds.secret('mesh-system', 'echo-cert', { 'tls.crt': CERT.replace('MIIB', 'MIIC'), 'tls.key': KEY }, '2');
      flush(m);
      const push1 = m.model.current().push;
      expect(push1.changes.keys.has('secret:mesh-system/echo-cert')).toBe(true);
      expect(push1.changes.keys.has('secret:mesh-system/b-cert')).toBe(false);
      const computed = push1.derived.stats.computed;
      push1.memoize('b-cert', () => 'recomputed');
      expect(push1.derived.stats.computed).toBe(computed); // carried over
      expect(push1.memoize('echo-cert', () => 'recomputed')).toBe('recomputed');
      const sds1 = m.generateRaw(router(), TypeUrl.Secret, names);
      const byName = (l: ReadonlyArray<{ name: string; version: string }>): Record<string, string> => Object.fromEntries(l.map((r) => [r.name, r.version]));
      expect(byName(sds1)['kubernetes://echo-cert']).not.toBe(byName(sds0)['kubernetes://echo-cert']);
      expect(byName(sds1)['kubernetes://b-cert']).toBe(byName(sds0)['kubernetes://b-cert']);
      // the listeners name the Secrets, not their content: the same bytes
      expect(m.generateRaw(router(), TypeUrl.Listener).map((r) => r.version)).toEqual(lds0.map((r) => r.version));
    } finally {
      m.stop();
    }
  });
});

describe('PASSTHROUGH and AUTO_PASSTHROUGH', () => {
  it('PASSTHROUGH routes each TLS route’s SNI hosts to its destination; AUTO_PASSTHROUGH uses sni_cluster and SNI-DNAT clusters', () => {
    const { m } = setup(`
apiVersion: networking.mesh.io/v1
kind: Gateway
metadata: { name: public, namespace: mesh-system }
spec:
  selector: { app: mesh-ingressgateway }
  servers:
    - port: { number: 443, name: tls, protocol: TLS }
      hosts: ["*/echo.example.com"]
      tls: { mode: PASSTHROUGH }
    - port: { number: 15443, name: tls-auto, protocol: TLS }
      hosts: ["*.local"]
      tls: { mode: AUTO_PASSTHROUGH }
---
apiVersion: networking.mesh.io/v1
kind: VirtualService
metadata: { name: pass, namespace: default }
spec:
  hosts: [echo.example.com]
  gateways: [mesh-system/public]
  tls: [{ match: [{ sniHosts: [echo.example.com], port: 443 }], route: [{ destination: { host: echo.default.svc.cluster.local, port: { number: 7070 } } }] }]
`);
    try {
      const [pass, auto] = m.generate(router(), TypeUrl.Listener);
      expect(pass.listenerFilters.map((f) => f.name)).toEqual(['envoy.filters.listener.tls_inspector']);
      expect(pass.filterChains).toHaveLength(1);
      expect(pass.filterChains[0].filterChainMatch?.serverNames).toEqual(['echo.example.com']);
      expect(pass.filterChains[0].transportSocket).toBeUndefined();
      expect(TcpProxy.decode(pass.filterChains[0].filters[0].typedConfig!.value).cluster).toBe('outbound|7070||echo.default.svc.cluster.local');
      expect(auto.filterChains[0].filterChainMatch?.serverNames).toEqual(['*.local']);
      expect(auto.filterChains[0].filters.map((f) => f.name)).toEqual(['envoy.filters.network.sni_cluster', 'envoy.filters.network.tcp_proxy']);
      const clusters = m.generate(router(), TypeUrl.Cluster);
      const dnat = clusters.find((c) => c.name === 'outbound_.7070_._.echo.default.svc.cluster.local');
      expect(dnat).toBeDefined();
      expect(dnat!.edsClusterConfig?.serviceName).toBe('outbound|7070||echo.default.svc.cluster.local');
      expect(dnat!.transportSocket).toBeUndefined();
      expect(dnat!.transportSocketMatches).toEqual([]);
    } finally {
      m.stop();
    }
  });
});

describe('debug output', () => {
  it('config dumps show certificates and never a private key', () => {
    const creds = new TestCredentials();
    creds.secret('mesh-system', 'echo-cert', { 'tls.crt': CERT, 'tls.key': KEY });
    const { m } = setup(gateway(`    - port: { number: 80, name: http, protocol: HTTP }
      hosts: ["*/echo.example.com"]`), creds);
    try {
      flush(m);
      const raw = m.generateRaw(router(), TypeUrl.Secret, ['kubernetes://echo-cert']);
      const json = JSON.stringify(anyToJson(raw[0].any));
      expect(json).toContain('[redacted]');
      expect(json).toContain(b64(CERT));
      const dump = JSON.stringify(envoyConfigDump({ node: { id: 'x', metadata: {} }, resources: new Map([[TypeUrl.Secret, { version: '1', list: raw }]]) }));
      for (const text of [json, dump]) {
        expect(text).not.toContain(b64(KEY));
        expect(text).not.toContain('privatekeymaterial');
      }
      expect(dump).toContain('"dynamic_active_secrets":[{"name":"kubernetes://echo-cert"');
    } finally {
      m.stop();
    }
  });
});
