/**
 * DestinationRule `credentialName` at sidecars (docs/adr/0152), as the public API defines it: it
 * applies to a sidecar only through a rule with a workloadSelector (which selects workloads of its
 * own namespace), with the Secret in the proxy's namespace, served by meshd over SDS on the ADS
 * stream. Everywhere else the sidecar uses the rule's certificate files, and never names an SDS
 * secret that would not come (a cluster that would never warm). Decoded here; the daemon half runs
 * a sidecar's configuration through xds-validate, which asks for every SDS name it finds.
 */
import pino from 'pino';
import { UpstreamTlsContext } from '../../src/gen/envoy/extensions/transport_sockets/tls/v3/tls.js';
import type { Cluster } from '../../src/gen/envoy/config/cluster/v3/cluster.js';
import { createMetrics } from '../../src/metrics/metrics.js';
import { credentialAccess, SECRET_TYPE_URL } from '../../src/security/credential-access.js';
import { parseProxy } from '../../src/model/proxy.js';
import { TestCredentials } from '../support/credentials.js';
import { modelFromYaml, sidecar, router, TypeUrl, type TestModel } from '../support/model.js';
import { makeConfigDir, startDaemon, type ConfigDir, type Daemon } from '../support/daemon.js';
import { goToolPath, GO_TOOL_BUILD_TIMEOUT_MS, runXdsValidate, type XdsValidateReport, echoSidecarValidateArgs } from '../support/go-tools.js';

const CERT = '-----BEGIN CERTIFICATE-----\nMIIBclientcert\n-----END CERTIFICATE-----\n';
const KEY = '-----BEGIN PRIVATE KEY-----\nMIIEvQclientkey\n-----END PRIVATE KEY-----\n';
const CA = '-----BEGIN CERTIFICATE-----\nMIIBserverca\n-----END CERTIFICATE-----\n';
const RATINGS = 'outbound|9080||ratings.default.svc.cluster.local';

const rule = (selector: string, tls: string, ns = 'default'): string => `
apiVersion: networking.mesh.io/v1
kind: DestinationRule
metadata: { name: ratings-tls, namespace: ${ns} }
spec:
  host: ratings.default.svc.cluster.local
${selector}
  trafficPolicy: { tls: ${tls} }
`;

const SELECT_ECHO = '  workloadSelector: { matchLabels: { app: echo } }';
const MUTUAL = '{ mode: MUTUAL, credentialName: client-cert, subjectAltNames: [ratings.example.com] }';
const MUTUAL_FILES = '{ mode: MUTUAL, credentialName: client-cert, clientCertificate: /etc/c.pem, privateKey: /etc/k.pem, caCertificates: /etc/ca.pem }';

const echo = sidecar('127.0.0.1', 'echo-v1-abc', 'default', { app: 'echo', version: 'v1' });
const web = sidecar('10.0.0.5', 'web-1', 'default', { app: 'web' });

function tlsOf(m: TestModel, proxy = echo): UpstreamTlsContext | undefined {
  const c: Cluster | undefined = m.generate(proxy, TypeUrl.Cluster).find((x) => x.name === RATINGS);
  const ts = c?.transportSocket;
  return ts?.typedConfig ? UpstreamTlsContext.decode(ts.typedConfig.value) : undefined;
}

const sdsNames = (ctx: UpstreamTlsContext | undefined): string[] => [
  ...(ctx?.commonTlsContext?.tlsCertificateSdsSecretConfigs ?? []).map((s) => `${s.name}${s.sdsConfig?.ads ? ' (ads)' : ''}`),
  ...(ctx?.commonTlsContext?.combinedValidationContext?.validationContextSdsSecretConfig ? [`${ctx.commonTlsContext.combinedValidationContext.validationContextSdsSecretConfig.name} (ca)`] : []),
];

describe('DestinationRule credentialName at a sidecar', () => {
  it('a rule with a workloadSelector: the selected sidecar asks for the Secret of its namespace over ADS, and is served it', () => {
    const creds = new TestCredentials();
    const m = modelFromYaml(rule(SELECT_ECHO, MUTUAL), { credentials: creds });
    try {
      creds.secret('default', 'client-cert', { 'tls.crt': CERT, 'tls.key': KEY, 'ca.crt': CA });
      m.model.flush();
      expect(sdsNames(tlsOf(m))).toEqual(['kubernetes://client-cert (ads)', 'kubernetes://client-cert-cacert (ca)']);
      expect(m.model.current().push.credentialReferences(echo)).toEqual(['default/client-cert', 'default/client-cert-cacert']);
      const [cert] = m.generate(echo, TypeUrl.Secret, ['kubernetes://client-cert']);
      expect(Buffer.from(cert.tlsCertificate!.certificateChain!.inlineBytes!).toString()).toBe(CERT);
      const [ca] = m.generate(echo, TypeUrl.Secret, ['kubernetes://client-cert-cacert']);
      expect(Buffer.from(ca.validationContext!.trustedCa!.inlineBytes!).toString()).toBe(CA);
      // a sidecar the rule does not select: auto mTLS as before, no reference, nothing served
      expect(tlsOf(m, web)).toBeUndefined();
      expect(m.model.current().push.credentialReferences(web)).toEqual([]);
      expect(m.generate(web, TypeUrl.Secret, ['kubernetes://client-cert'])).toEqual([]);
      // proxyless gRPC clients have no SDS: nothing served to them either
      const grpc = parseProxy('sidecar~127.0.0.1~echo-g.default~default.svc.cluster.local', { GENERATOR: 'grpc', NAMESPACE: 'default', LABELS: { app: 'echo' } });
      expect(m.generate(grpc, TypeUrl.Secret, ['kubernetes://client-cert'])).toEqual([]);
    } finally {
      m.stop();
    }
  });

  it('a missing Secret is not referenced (the rule’s files, or TLS without a client certificate); when it appears the cluster names it', () => {
    const creds = new TestCredentials();
    const m = modelFromYaml(rule(SELECT_ECHO, MUTUAL), { credentials: creds });
    try {
      creds.secret('default', 'other', { 'tls.crt': CERT, 'tls.key': KEY });
      m.model.flush();
      const ctx = tlsOf(m)!;
      expect(sdsNames(ctx)).toEqual([]);
      expect(ctx.commonTlsContext?.tlsCertificates).toEqual([]);
      // still TLS, still checking the server's names (against the system roots)
      expect(ctx.commonTlsContext?.validationContext?.systemRootCerts).toBeDefined();
      expect(ctx.commonTlsContext?.validationContext?.matchTypedSubjectAltNames.map((s) => s.matcher?.exact)).toEqual(['ratings.example.com']);
      creds.secret('default', 'client-cert', { 'tls.crt': CERT, 'tls.key': KEY });
      m.model.flush();
      // no CA in the credential: the server is checked against the system roots, no -cacert name that would not come
      expect(sdsNames(tlsOf(m))).toEqual(['kubernetes://client-cert (ads)']);
      expect(tlsOf(m)!.commonTlsContext?.validationContext?.systemRootCerts).toBeDefined();
      creds.secret('default', 'client-cert-cacert', { 'ca.crt': CA });
      m.model.flush();
      expect(sdsNames(tlsOf(m))).toEqual(['kubernetes://client-cert (ads)', 'kubernetes://client-cert-cacert (ca)']);
      creds.secret('default', 'client-cert-cacert', undefined);
      // while loading, it is named (it will come)
      creds.loading('default', 'client-cert');
      m.model.flush();
      expect(sdsNames(tlsOf(m))).toEqual(['kubernetes://client-cert (ads)', 'kubernetes://client-cert-cacert (ca)']);
    } finally {
      m.stop();
    }
  });

  it('a rule without a workloadSelector: sidecars use its certificate files, gateways the Secret', () => {
    const creds = new TestCredentials();
    const m = modelFromYaml(rule('', MUTUAL_FILES), { credentials: creds });
    try {
      creds.secret('default', 'client-cert', { 'tls.crt': CERT, 'tls.key': KEY });
      creds.secret('mesh-system', 'client-cert', { 'tls.crt': CERT, 'tls.key': KEY });
      m.model.flush();
      const ctx = tlsOf(m)!;
      expect(sdsNames(ctx)).toEqual([]);
      expect(ctx.commonTlsContext?.tlsCertificates.map((t) => [t.certificateChain?.filename, t.privateKey?.filename])).toEqual([['/etc/c.pem', '/etc/k.pem']]);
      expect(ctx.commonTlsContext?.validationContext?.trustedCa?.filename).toBe('/etc/ca.pem');
      expect(m.model.current().push.credentialReferences(echo)).toEqual([]);
      // the gateway's Secret has no CA: its certificate over SDS, the server checked with the rule's CA file
      expect(sdsNames(tlsOf(m, router()))).toEqual(['kubernetes://client-cert (ads)']);
      expect(tlsOf(m, router())!.commonTlsContext?.validationContext?.trustedCa?.filename).toBe('/etc/ca.pem');
      expect(m.model.current().push.policies.diagnostics.map((d) => d.message)).toContainEqual(
        'tls.credentialName "client-cert" applies at gateways only: the rule has no workloadSelector, so sidecars use its certificate files',
      );
    } finally {
      m.stop();
    }
  });

  it('a Secret of another namespace is never referenced by a sidecar', () => {
    const creds = new TestCredentials();
    const m = modelFromYaml(rule(SELECT_ECHO, '{ mode: MUTUAL, credentialName: other/client-cert }'), { credentials: creds });
    try {
      creds.secret('other', 'client-cert', { 'tls.crt': CERT, 'tls.key': KEY });
      m.model.flush();
      expect(sdsNames(tlsOf(m))).toEqual([]);
      expect(m.model.current().push.credentialReferences(echo)).toEqual([]);
      expect(m.model.current().push.policies.diagnostics.map((d) => d.message)).toContainEqual(expect.stringContaining('tls.credentialName "other/client-cert" names a Secret of another namespace'));
    } finally {
      m.stop();
    }
  });

  it('SDS access: a sidecar may ask for Secrets of its own namespace only; proxyless clients for none', () => {
    const metrics = createMetrics({ defaultMetrics: false });
    const access = credentialAccess(metrics.sdsCertificateErrors, pino({ level: 'silent' }));
    const grpc = parseProxy('sidecar~127.0.0.1~echo-g.default~default.svc.cluster.local', { GENERATOR: 'grpc', NAMESPACE: 'default' });
    expect([...access(echo, SECRET_TYPE_URL, new Set(['kubernetes://client-cert', 'kubernetes://default/client-cert', 'kubernetes://other/client-cert', 'default']))].sort()).toEqual([
      'default',
      'kubernetes://other/client-cert',
    ]);
    expect([...access(grpc, SECRET_TYPE_URL, new Set(['kubernetes://client-cert']))]).toEqual(['kubernetes://client-cert']);
  });
});

describe('sidecar credentials through a running daemon', () => {
  let bin: string;
  let config: ConfigDir;
  let daemon: Daemon;

  beforeAll(async () => {
    bin = await goToolPath('xds-validate');
    config = await makeConfigDir();
    // no cluster: the Secret cannot be read, so the sidecar must not wait for it
    await config.write('rules.yaml', rule(SELECT_ECHO, MUTUAL));
    daemon = await startDaemon({ configDir: config.path });
  }, GO_TOOL_BUILD_TIMEOUT_MS);

  afterAll(async () => {
    await daemon?.stop();
    await config?.cleanup();
  });

  it('serves a configuration that passes Envoy validation and names no SDS secret that would not come', async () => {
    const report = await runXdsValidate<XdsValidateReport>(bin, echoSidecarValidateArgs(daemon.grpcAddr));
    expect(report.errors).toEqual([]);
    expect(report.ok).toBe(true);
    const cluster = JSON.stringify(report.dump['type.googleapis.com/envoy.config.cluster.v3.Cluster'][RATINGS]);
    expect(cluster).toContain('envoy.transport_sockets.tls');
    expect(cluster).not.toContain('kubernetes://');
  }, 120_000);
});
