import { parseDiscoveryArgs } from '../../src/config/discovery-flags.js';
import { daemonConfigFrom } from '../../src/bootstrap/from-options.js';
import { ConfigError } from '../../src/util/config-error.js';
import { parseSpiffeBundleEndpoints } from '../../src/security/settings.js';

/** The daemon's configuration as `mesh-discovery discovery <args>` with `env` would resolve it. */
function config(args: string[], env: Record<string, string> = {}) {
  const { options, env: denv } = parseDiscoveryArgs(['--grpcAddr', '127.0.0.1:0', '--monitoringAddr', '127.0.0.1:0', ...args], env);
  return daemonConfigFrom(options, denv);
}

function refusal(args: string[], env: Record<string, string>): string {
  try {
    config(args, env);
  } catch (err) {
    if (err instanceof ConfigError) return err.message;
    throw err;
  }
  throw new Error('not refused');
}

describe('identity settings: each variable honoured or refused by name', () => {
  it('defaults: the built-in CA signs, the secured port serves a CA-issued certificate for meshd.<ns>.svc', () => {
    const c = config(['--registries', 'Mock', '--namespace', 'mesh-system']);
    expect(c.security.issuer).toEqual({ kind: 'ca' });
    expect(c.security.servingCert).toEqual({ kind: 'ca' });
    expect(c.security.secureGrpcAddr).toEqual({ host: '', port: 15012 });
    expect(c.security.dnsNames).toEqual(['meshd.mesh-system.svc', 'meshd.mesh-system.svc.cluster.local']);
    expect(c.security.tokens).toMatchObject({ audiences: ['mesh-ca'], jwtPolicy: 'third-party-jwt', requireThirdParty: false });
    expect(c.security.xds).toEqual({ auth: true, authPlaintext: false, identityCheck: true, skipValidateTrustDomain: false });
  });

  it('XDS_AUTH=false with DISC_ENABLE_XDS_IDENTITY_CHECK (default true) warns naming both; the check stays on for streams that show a credential', () => {
    const c = config(['--registries', 'Mock'], { XDS_AUTH: 'false' });
    expect(c.security.xds).toMatchObject({ auth: false, identityCheck: true });
    expect(c.securityWarnings?.join('\n')).toMatch(/DISC_ENABLE_XDS_IDENTITY_CHECK=true with XDS_AUTH=false: .* presents none is served for any namespace; .* still held to its own namespace/);
    expect(config(['--registries', 'Mock'], { XDS_AUTH: 'false', DISC_ENABLE_XDS_IDENTITY_CHECK: 'false' }).securityWarnings).toEqual([]);
    expect(config(['--registries', 'Mock']).securityWarnings).toEqual([]);
  });

  it('MESHD_CUSTOM_HOST and REVISION name the serving certificate', () => {
    const c = config(['--registries', 'Mock', '--namespace', 'm', '--domain', 'corp.local'], { MESHD_CUSTOM_HOST: 'meshd.example.com,istio.example.com', REVISION: 'canary' });
    expect(c.security.dnsNames).toEqual(['meshd-canary.m.svc', 'meshd-canary.m.svc.corp.local', 'meshd.example.com', 'istio.example.com']);
    expect(refusal(['--registries', 'Mock'], { MESHD_CUSTOM_HOST: 'bad host' })).toMatch(/MESHD_CUSTOM_HOST: "bad host" is not a DNS name/);
  });

  it('ENABLE_CA_SERVER=false: no issuer; the secured port stays closed without --tlsCertFile, with a note saying why', () => {
    const c = config(['--registries', 'Mock'], { ENABLE_CA_SERVER: 'false' });
    expect(c.security.issuer).toEqual({ kind: 'none' });
    expect(c.security.secureGrpcAddr).toBeNull();
    expect(c.securityNotes?.join('\n')).toMatch(/secured port .* is not opened: DISC_CERT_PROVIDER=meshd but the built-in CA is off \(ENABLE_CA_SERVER=false\)/);
    const files = config(['--registries', 'Mock', '--tlsCertFile', '/x/cert.pem', '--tlsKeyFile', '/x/key.pem'], { ENABLE_CA_SERVER: 'false' });
    expect(files.security.servingCert).toMatchObject({ kind: 'files', certFile: '/x/cert.pem' });
    expect(files.security.secureGrpcAddr).not.toBeNull();
  });

  it.each([
    [{ EXTERNAL_CA: 'MESHD_RA_MESH_API' }, ['--registries', 'Cluster'], /EXTERNAL_CA: MESHD_RA_MESH_API is not supported/],
    [{ EXTERNAL_CA: 'MESHD_RA_CLUSTER_API' }, ['--registries', 'Cluster'], /EXTERNAL_CA: MESHD_RA_CLUSTER_API needs CLUSTER_SIGNER/],
    [{ EXTERNAL_CA: 'MESHD_RA_CLUSTER_API', CLUSTER_SIGNER: 'example.com/mesh' }, ['--registries', 'Mock'], /needs --registries Cluster/],
    [{ CLUSTER_SIGNER: 'example.com/mesh' }, ['--registries', 'Cluster'], /CLUSTER_SIGNER: only used with EXTERNAL_CA=MESHD_RA_CLUSTER_API/],
    [{ USE_REMOTE_CERTS: 'true' }, ['--registries', 'Mock'], /USE_REMOTE_CERTS: reads the cacerts Secret from the cluster/],
    [{ USE_REMOTE_CERTS: 'true', ENABLE_CA_SERVER: 'false' }, ['--registries', 'Cluster'], /USE_REMOTE_CERTS: loads the plug-in CA of the built-in CA, which is off/],
    [{ MESH_MULTIROOT_MESH: 'true' }, ['--registries', 'Mock'], /MESH_MULTIROOT_MESH: multi-root trust .* is not supported yet/],
    [{ JWT_RULE: '{}' }, ['--registries', 'Mock'], /JWT_RULE: not supported/],
    [{ JWT_POLICY: 'none' }, ['--registries', 'Mock'], /JWT_POLICY: "none"/],
    [{ JWT_POLICY: 'first-party-jwt', REQUIRE_3P_TOKEN: 'true' }, ['--registries', 'Mock'], /REQUIRE_3P_TOKEN: true refuses the first-party tokens/],
    [{ TOKEN_AUDIENCES: ' , ' }, ['--registries', 'Mock'], /TOKEN_AUDIENCES: empty/],
    [{ XDS_AUTH: 'false', XDS_AUTH_PLAINTEXT: 'true' }, ['--registries', 'Cluster'], /XDS_AUTH_PLAINTEXT: extends XDS_AUTH to the plaintext port, but XDS_AUTH=false/],
    [{ XDS_AUTH_PLAINTEXT: 'true' }, ['--registries', 'Mock'], /XDS_AUTH_PLAINTEXT: .* needs --registries Cluster/],
    [{ DISC_CERT_PROVIDER: 'kubernetes' }, ['--registries', 'Cluster'], /DISC_CERT_PROVIDER: kubernetes: signing the daemon's serving certificate through the Kubernetes CSR API is not supported/],
    [{ DISC_CERT_PROVIDER: 'custom' }, ['--registries', 'Mock'], /DISC_CERT_PROVIDER: "custom" \(allowed: meshd, none\)/],
    [{ CA_SELF_SIGNED_CA_RSA_KEY_SIZE: '1024' }, ['--registries', 'Mock'], /CA_SELF_SIGNED_CA_RSA_KEY_SIZE: 1024 bits/],
    [{ CA_SELF_SIGNED_CA_CERT_TTL: '0s' }, ['--registries', 'Mock'], /CA_SELF_SIGNED_CA_CERT_TTL: must be positive/],
    [{ DEFAULT_WORKLOAD_CERT_TTL: '100h', MAX_WORKLOAD_CERT_TTL: '10h' }, ['--registries', 'Mock'], /DEFAULT_WORKLOAD_CERT_TTL: longer than MAX_WORKLOAD_CERT_TTL/],
    [{ SPIFFE_BUNDLE_ENDPOINTS: 'other.domain|http://bundle.example' }, ['--registries', 'Mock'], /SPIFFE_BUNDLE_ENDPOINTS: http:\/\/bundle.example must be https/],
  ] as Array<[Record<string, string>, string[], RegExp]>)('%j is refused', (env, args, message) => {
    expect(refusal(args, env)).toMatch(message);
  });

  it('--tlsCertFile without --tlsKeyFile, and the insecure cipher suites, are refused', () => {
    expect(refusal(['--registries', 'Mock', '--tlsCertFile', '/x'], {})).toMatch(/--tlsKeyFile: required together with --tlsCertFile/);
    expect(refusal(['--registries', 'Mock', '--tls-cipher-suites', 'TLS_RSA_WITH_RC4_128_SHA,TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256'], {})).toMatch(
      /--tls-cipher-suites: TLS_RSA_WITH_RC4_128_SHA, TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256 are classed insecure and refused/,
    );
  });

  it('--tls-cipher-suites become the OpenSSL list of the secured port', () => {
    const c = config(['--registries', 'Mock', '--tls-cipher-suites', 'TLS_AES_128_GCM_SHA256,TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384']);
    expect(c.security.ciphers).toBe('TLS_AES_128_GCM_SHA256:ECDHE-ECDSA-AES256-GCM-SHA384');
  });

  it('EXTERNAL_CA with CLUSTER_SIGNER and serving files: the cluster signer issues workload certificates', () => {
    const c = config(['--registries', 'Cluster', '--tlsCertFile', '/c', '--tlsKeyFile', '/k'], { EXTERNAL_CA: 'MESHD_RA_CLUSTER_API', CLUSTER_SIGNER: 'kubernetes.io/kube-apiserver-client' });
    expect(c.security.issuer).toEqual({ kind: 'cluster-signer', signerName: 'kubernetes.io/kube-apiserver-client' });
    expect(refusal(['--registries', 'Cluster'], { EXTERNAL_CA: 'MESHD_RA_CLUSTER_API', CLUSTER_SIGNER: 'example.com/x' })).toMatch(/EXTERNAL_CA: the certificate service needs the secured port/);
  });

  it('SPIFFE_BUNDLE_ENDPOINTS tuples', () => {
    expect(parseSpiffeBundleEndpoints('a.org|https://a.example/bundle||b.org|https://b.example')).toEqual({
      endpoints: [
        { trustDomain: 'a.org', url: 'https://a.example/bundle' },
        { trustDomain: 'b.org', url: 'https://b.example' },
      ],
      issues: [],
    });
    expect(parseSpiffeBundleEndpoints('justtext').issues).toEqual(['SPIFFE_BUNDLE_ENDPOINTS: "justtext" is not <trustdomain>|<endpoint>']);
  });
});
