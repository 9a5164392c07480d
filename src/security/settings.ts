/**
 * The identity settings of the daemon (CA, certificate service, secured port, xDS authentication),
 * resolved from its environment and flags once at start-up. Every variable is either honoured or
 * refused here with a `<NAME>: <why>` issue; nothing is silently ignored (docs/adr/0043).
 */
import { getCiphers } from 'node:tls';
import type { DaemonEnv } from '../config/daemon-env.js';
import { INSECURE_CIPHER_SUITES, type CipherSuite, type ListenAddr } from '../config/discovery-flags.js';

/** OpenSSL names of the spec's preferred suites (TLS 1.3 suites keep their names). */
export const CIPHER_SUITE_OPENSSL: Readonly<Record<string, string>> = {
  TLS_AES_128_GCM_SHA256: 'TLS_AES_128_GCM_SHA256',
  TLS_AES_256_GCM_SHA384: 'TLS_AES_256_GCM_SHA384',
  TLS_CHACHA20_POLY1305_SHA256: 'TLS_CHACHA20_POLY1305_SHA256',
  TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA: 'ECDHE-ECDSA-AES128-SHA',
  TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256: 'ECDHE-ECDSA-AES128-GCM-SHA256',
  TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA: 'ECDHE-ECDSA-AES256-SHA',
  TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384: 'ECDHE-ECDSA-AES256-GCM-SHA384',
  TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256: 'ECDHE-ECDSA-CHACHA20-POLY1305',
  TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA: 'ECDHE-RSA-DES-CBC3-SHA',
  TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA: 'ECDHE-RSA-AES128-SHA',
  TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256: 'ECDHE-RSA-AES128-GCM-SHA256',
  TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA: 'ECDHE-RSA-AES256-SHA',
  TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384: 'ECDHE-RSA-AES256-GCM-SHA384',
  TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256: 'ECDHE-RSA-CHACHA20-POLY1305',
  TLS_RSA_WITH_3DES_EDE_CBC_SHA: 'DES-CBC3-SHA',
  TLS_RSA_WITH_AES_128_CBC_SHA: 'AES128-SHA',
  TLS_RSA_WITH_AES_128_GCM_SHA256: 'AES128-GCM-SHA256',
  TLS_RSA_WITH_AES_256_CBC_SHA: 'AES256-SHA',
  TLS_RSA_WITH_AES_256_GCM_SHA384: 'AES256-GCM-SHA384',
};

/** Where the daemon's serving certificate for the secured port comes from. */
export type ServingCertSource =
  | { readonly kind: 'files'; readonly certFile: string; readonly keyFile: string; readonly caCertFile?: string }
  | { readonly kind: 'ca' }
  | { readonly kind: 'none'; readonly why: string };

export interface SpiffeBundleEndpoint {
  readonly trustDomain: string;
  readonly url: string;
}

export interface SecuritySettings {
  /** The secured port; null when `--secureGRPCAddr` is empty or nothing can serve it. */
  readonly secureGrpcAddr: ListenAddr | null;
  readonly servingCert: ServingCertSource;
  /** Extra roots for client certificates (`--caCertFile`). */
  readonly caCertFile?: string;
  /** OpenSSL cipher list for the secured port; undefined: the runtime's defaults. */
  readonly ciphers?: string;
  /** DNS names of the serving certificate. */
  readonly dnsNames: ReadonlyArray<string>;
  /** What issues workload certificates: the built-in CA, a registration authority, or nothing. */
  readonly issuer: { readonly kind: 'ca' } | { readonly kind: 'cluster-signer'; readonly signerName: string } | { readonly kind: 'none' };
  readonly ca: {
    readonly rootCaDir: string;
    readonly useRemoteCerts: boolean;
    readonly rsaKeySize: number;
    readonly rootTtlMs: number;
    readonly checkIntervalMs: number;
    readonly gracePeriodPercentile: number;
    readonly jitter: boolean;
  };
  readonly workloadTtl: { readonly defaultMs: number; readonly maxMs: number };
  readonly tokens: {
    readonly audiences: ReadonlyArray<string>;
    readonly jwtPolicy: 'third-party-jwt' | 'first-party-jwt';
    readonly requireThirdParty: boolean;
    readonly issuer?: string;
    readonly audience?: string;
  };
  readonly xds: {
    /**
     * XDS_AUTH: the secured port authenticates every stream. When false, with `identityCheck`, a
     * stream that presents a credential is still authenticated and held to its namespace.
     */
    readonly auth: boolean;
    /** XDS_AUTH_PLAINTEXT: the plaintext port too (bearer tokens). */
    readonly authPlaintext: boolean;
    readonly identityCheck: boolean;
    /** DISC_SKIP_VALIDATE_TRUST_DOMAIN: xDS clients of other trust domains (with known roots) are accepted. */
    readonly skipValidateTrustDomain: boolean;
  };
  readonly spiffeBundles: ReadonlyArray<SpiffeBundleEndpoint>;
}

export interface SecurityInputs {
  readonly env: DaemonEnv;
  readonly secureGrpcAddr: ListenAddr | null;
  readonly tlsCertFile: string;
  readonly tlsKeyFile: string;
  readonly caCertFile: string;
  readonly cipherSuites: ReadonlyArray<CipherSuite>;
  /** The daemon reads a Kubernetes cluster (`--registries Cluster`). */
  readonly cluster: boolean;
  readonly namespace: string;
  readonly domain: string;
}

/** Parses SPIFFE_BUNDLE_ENDPOINTS: `<trust-domain>|<https-url>` tuples separated by `||`. */
export function parseSpiffeBundleEndpoints(text: string): { endpoints: SpiffeBundleEndpoint[]; issues: string[] } {
  const endpoints: SpiffeBundleEndpoint[] = [];
  const issues: string[] = [];
  for (const tuple of text.split('||').map((s) => s.trim()).filter((s) => s !== '')) {
    const bar = tuple.indexOf('|');
    const td = bar < 0 ? '' : tuple.slice(0, bar).trim();
    const url = bar < 0 ? '' : tuple.slice(bar + 1).trim();
    if (!td || !url) {
      issues.push(`SPIFFE_BUNDLE_ENDPOINTS: ${JSON.stringify(tuple)} is not <trustdomain>|<endpoint>`);
      continue;
    }
    if (!/^[a-z0-9._-]+$/.test(td)) issues.push(`SPIFFE_BUNDLE_ENDPOINTS: ${JSON.stringify(td)} is not a trust domain (lower-case letters, digits, '.', '-', '_')`);
    let parsed: URL | undefined;
    try {
      parsed = new URL(url);
    } catch {
      issues.push(`SPIFFE_BUNDLE_ENDPOINTS: ${JSON.stringify(url)} is not a URL`);
    }
    if (parsed && parsed.protocol !== 'https:') issues.push(`SPIFFE_BUNDLE_ENDPOINTS: ${url} must be https (the SPIFFE bundle endpoint profile https_web)`);
    if (endpoints.some((e) => e.trustDomain === td)) issues.push(`SPIFFE_BUNDLE_ENDPOINTS: trust domain ${td} appears twice`);
    endpoints.push({ trustDomain: td, url });
  }
  return { endpoints, issues };
}

/** Resolves the identity settings; throws `ConfigError`-style issues through the returned list. */
export function resolveSecuritySettings(i: SecurityInputs): { settings: SecuritySettings; issues: string[]; notes: string[]; warnings: string[] } {
  const env = i.env;
  const issues: string[] = [];
  const notes: string[] = [];
  /** Settings that work, but less than their names promise (logged as warnings at start). */
  const warnings: string[] = [];

  // --- who issues workload certificates
  let issuer: SecuritySettings['issuer'] = env.ENABLE_CA_SERVER ? { kind: 'ca' } : { kind: 'none' };
  if (env.EXTERNAL_CA === 'MESHD_RA_MESH_API') {
    issues.push('EXTERNAL_CA: MESHD_RA_MESH_API is not supported by this daemon; use MESHD_RA_CLUSTER_API (signing through the Kubernetes CSR API with CLUSTER_SIGNER)');
  } else if (env.EXTERNAL_CA === 'MESHD_RA_CLUSTER_API') {
    if (!env.CLUSTER_SIGNER) issues.push('EXTERNAL_CA: MESHD_RA_CLUSTER_API needs CLUSTER_SIGNER, the signer name of the Kubernetes CSRs (e.g. example.com/mesh-signer)');
    else if (!/^[a-z0-9.-]+\/[A-Za-z0-9._/-]+$/.test(env.CLUSTER_SIGNER)) issues.push(`CLUSTER_SIGNER: ${JSON.stringify(env.CLUSTER_SIGNER)} is not a signer name (<domain>/<path>)`);
    if (!i.cluster) issues.push('EXTERNAL_CA: MESHD_RA_CLUSTER_API signs through the Kubernetes CSR API and needs --registries Cluster');
    if (!env.ENABLE_CA_SERVER) issues.push('EXTERNAL_CA: set, but ENABLE_CA_SERVER=false turns the certificate service off; unset one of them');
    if (env.CLUSTER_SIGNER) issuer = { kind: 'cluster-signer', signerName: env.CLUSTER_SIGNER };
  } else if (env.CLUSTER_SIGNER) {
    issues.push('CLUSTER_SIGNER: only used with EXTERNAL_CA=MESHD_RA_CLUSTER_API; set that too or unset CLUSTER_SIGNER');
  }
  if (env.USE_REMOTE_CERTS) {
    if (issuer.kind !== 'ca') issues.push('USE_REMOTE_CERTS: loads the plug-in CA of the built-in CA, which is off (ENABLE_CA_SERVER=false or EXTERNAL_CA set)');
    if (!i.cluster) issues.push('USE_REMOTE_CERTS: reads the cacerts Secret from the cluster and needs --registries Cluster');
  }
  if (env.MESH_MULTIROOT_MESH) {
    issues.push('MESH_MULTIROOT_MESH: multi-root trust for MESH_MUTUAL is not supported yet (the trust bundle given to workloads carries only this CA\'s roots, not other trust domains\' roots); unset it');
  }
  if (env.JWT_RULE !== undefined) issues.push('JWT_RULE: not supported; tokens are checked with TokenReview (TOKEN_AUDIENCES, JWT_POLICY, REQUIRE_3P_TOKEN, TOKEN_ISSUER, AUDIENCE)');

  // --- CA lifetimes and sizes
  if (env.CA_SELF_SIGNED_CA_RSA_KEY_SIZE < 2048 || env.CA_SELF_SIGNED_CA_RSA_KEY_SIZE > 8192) {
    issues.push(`CA_SELF_SIGNED_CA_RSA_KEY_SIZE: ${env.CA_SELF_SIGNED_CA_RSA_KEY_SIZE} bits (allowed: 2048 to 8192)`);
  }
  if (!(env.CA_SELF_SIGNED_CA_CERT_TTL > 0)) issues.push('CA_SELF_SIGNED_CA_CERT_TTL: must be positive');
  if (!(env.DEFAULT_WORKLOAD_CERT_TTL > 0)) issues.push('DEFAULT_WORKLOAD_CERT_TTL: must be positive');
  if (!(env.MAX_WORKLOAD_CERT_TTL > 0)) issues.push('MAX_WORKLOAD_CERT_TTL: must be positive');
  if (env.DEFAULT_WORKLOAD_CERT_TTL > env.MAX_WORKLOAD_CERT_TTL) issues.push('DEFAULT_WORKLOAD_CERT_TTL: longer than MAX_WORKLOAD_CERT_TTL');

  // --- tokens
  const audiences = env.TOKEN_AUDIENCES.split(',').map((s) => s.trim()).filter((s) => s !== '');
  if (audiences.length === 0) issues.push('TOKEN_AUDIENCES: empty; name at least one audience (default mesh-ca)');
  const jwtPolicy = env.JWT_POLICY;
  if (jwtPolicy !== 'third-party-jwt' && jwtPolicy !== 'first-party-jwt') issues.push(`JWT_POLICY: ${JSON.stringify(jwtPolicy)} (allowed: third-party-jwt, first-party-jwt)`);
  if (jwtPolicy === 'first-party-jwt' && env.REQUIRE_3P_TOKEN) issues.push('REQUIRE_3P_TOKEN: true refuses the first-party tokens JWT_POLICY=first-party-jwt asks for');
  if (env.TOKEN_ISSUER !== undefined && env.TOKEN_ISSUER.trim() === '') issues.push('TOKEN_ISSUER: empty');
  if (env.AUDIENCE !== undefined && env.AUDIENCE.trim() === '') issues.push('AUDIENCE: empty');

  // --- xDS authentication
  if (env.XDS_AUTH_PLAINTEXT && !env.XDS_AUTH) issues.push('XDS_AUTH_PLAINTEXT: extends XDS_AUTH to the plaintext port, but XDS_AUTH=false');
  if (env.XDS_AUTH_PLAINTEXT && !i.cluster) issues.push('XDS_AUTH_PLAINTEXT: the plaintext port authenticates by service-account token, which needs --registries Cluster (TokenReview)');
  if (env.XDS_AUTH && !env.XDS_AUTH_PLAINTEXT && i.secureGrpcAddr !== null) {
    notes.push('the plaintext xDS port does not authenticate its clients (XDS_AUTH_PLAINTEXT=false); expose only the secured port outside the pod');
  }
  if (!env.XDS_AUTH && env.DISC_ENABLE_XDS_IDENTITY_CHECK) {
    // docs/adr/0142: the check still binds every stream that shows who it is
    warnings.push(
      'DISC_ENABLE_XDS_IDENTITY_CHECK=true with XDS_AUTH=false: xDS clients need no credential, so a client that presents none is served for any namespace; ' +
        'a stream on the secured port that presents a client certificate or a service-account token is still held to its own namespace. Set XDS_AUTH=true to require a credential',
    );
  }

  // --- SPIFFE bundles of other trust domains
  const bundles = env.SPIFFE_BUNDLE_ENDPOINTS ? parseSpiffeBundleEndpoints(env.SPIFFE_BUNDLE_ENDPOINTS) : { endpoints: [], issues: [] };
  issues.push(...bundles.issues);
  if (env.DISC_SKIP_VALIDATE_TRUST_DOMAIN && bundles.endpoints.length === 0) {
    notes.push('DISC_SKIP_VALIDATE_TRUST_DOMAIN=true: xDS clients of other trust domains are accepted when their roots are known (SPIFFE_BUNDLE_ENDPOINTS); none are configured');
  }

  // --- the serving certificate of the secured port
  const files = i.tlsCertFile !== '' || i.tlsKeyFile !== '';
  if (files && (i.tlsCertFile === '' || i.tlsKeyFile === '')) issues.push(`${i.tlsCertFile === '' ? '--tlsCertFile' : '--tlsKeyFile'}: required together with ${i.tlsCertFile === '' ? '--tlsKeyFile' : '--tlsCertFile'}`);
  let servingCert: ServingCertSource;
  const provider = env.DISC_CERT_PROVIDER;
  if (files) {
    servingCert = { kind: 'files', certFile: i.tlsCertFile, keyFile: i.tlsKeyFile, caCertFile: i.caCertFile || undefined };
  } else if (provider === 'meshd') {
    servingCert = issuer.kind === 'ca' ? { kind: 'ca' } : { kind: 'none', why: issuer.kind === 'none' ? 'DISC_CERT_PROVIDER=meshd but the built-in CA is off (ENABLE_CA_SERVER=false) and no --tlsCertFile/--tlsKeyFile are given' : 'DISC_CERT_PROVIDER=meshd but EXTERNAL_CA replaces the built-in CA' };
  } else if (provider === 'kubernetes' || provider.startsWith('k8s.io/')) {
    issues.push(`DISC_CERT_PROVIDER: ${provider}: signing the daemon's serving certificate through the Kubernetes CSR API is not supported; use meshd (the built-in CA) or none with --tlsCertFile/--tlsKeyFile`);
    servingCert = { kind: 'none', why: 'unsupported DISC_CERT_PROVIDER' };
  } else if (provider === 'none') {
    servingCert = { kind: 'none', why: 'DISC_CERT_PROVIDER=none and no --tlsCertFile/--tlsKeyFile are given' };
  } else {
    issues.push(`DISC_CERT_PROVIDER: ${JSON.stringify(provider)} (allowed: meshd, none)`);
    servingCert = { kind: 'none', why: 'invalid DISC_CERT_PROVIDER' };
  }
  if (i.caCertFile !== '' && !files) notes.push('--caCertFile: its certificates are trusted for client certificates on the secured port');
  if (issuer.kind === 'cluster-signer' && servingCert.kind === 'none' && i.secureGrpcAddr !== null) {
    issues.push('EXTERNAL_CA: the certificate service needs the secured port, which has no serving certificate without the built-in CA; give --tlsCertFile/--tlsKeyFile');
  }

  // --- cipher suites
  let ciphers: string | undefined;
  if (i.cipherSuites.length > 0) {
    const insecure = i.cipherSuites.filter((s) => (INSECURE_CIPHER_SUITES as readonly string[]).includes(s));
    if (insecure.length > 0) issues.push(`--tls-cipher-suites: ${insecure.join(', ')} ${insecure.length === 1 ? 'is' : 'are'} classed insecure and refused`);
    const available = new Set(getCiphers().map((c) => c.toUpperCase()));
    const names = i.cipherSuites.filter((s) => !insecure.includes(s)).map((s) => ({ s, o: CIPHER_SUITE_OPENSSL[s] }));
    const missing = names.filter((n) => !n.o || !available.has(n.o.toUpperCase()));
    if (missing.length > 0) issues.push(`--tls-cipher-suites: ${missing.map((n) => n.s).join(', ')} not available in this runtime's TLS library`);
    ciphers = names.map((n) => n.o).join(':');
  }

  const service = env.REVISION ? `meshd-${env.REVISION}` : 'meshd';
  const dnsNames = [`${service}.${i.namespace}.svc`, `${service}.${i.namespace}.svc.${i.domain}`];
  for (const h of (env.MESHD_CUSTOM_HOST ?? '').split(',').map((s) => s.trim()).filter((s) => s !== '')) {
    if (!/^[A-Za-z0-9*]([-A-Za-z0-9.]*[A-Za-z0-9])?$/.test(h)) issues.push(`MESHD_CUSTOM_HOST: ${JSON.stringify(h)} is not a DNS name`);
    else if (!dnsNames.includes(h)) dnsNames.push(h);
  }

  let secureGrpcAddr = i.secureGrpcAddr;
  if (secureGrpcAddr && servingCert.kind === 'none') {
    notes.push(`the secured port ${secureGrpcAddr.host}:${secureGrpcAddr.port} is not opened: ${servingCert.why}`);
    secureGrpcAddr = null;
  }

  return {
    settings: {
      secureGrpcAddr,
      servingCert,
      caCertFile: i.caCertFile || undefined,
      ciphers,
      dnsNames,
      issuer,
      ca: {
        rootCaDir: env.ROOT_CA_DIR,
        useRemoteCerts: env.USE_REMOTE_CERTS,
        rsaKeySize: env.CA_SELF_SIGNED_CA_RSA_KEY_SIZE,
        rootTtlMs: env.CA_SELF_SIGNED_CA_CERT_TTL,
        checkIntervalMs: env.CA_SELF_SIGNED_ROOT_CERT_CHECK_INTERVAL,
        gracePeriodPercentile: env.CA_SELF_SIGNED_ROOT_CERT_GRACE_PERIOD_PERCENTILE,
        jitter: env.CA_ENABLE_JITTER_FOR_ROOT_CERT_ROTATOR,
      },
      workloadTtl: { defaultMs: env.DEFAULT_WORKLOAD_CERT_TTL, maxMs: env.MAX_WORKLOAD_CERT_TTL },
      tokens: {
        audiences,
        jwtPolicy: jwtPolicy === 'first-party-jwt' ? 'first-party-jwt' : 'third-party-jwt',
        requireThirdParty: env.REQUIRE_3P_TOKEN,
        issuer: env.TOKEN_ISSUER || undefined,
        audience: env.AUDIENCE || undefined,
      },
      xds: { auth: env.XDS_AUTH, authPlaintext: env.XDS_AUTH_PLAINTEXT, identityCheck: env.DISC_ENABLE_XDS_IDENTITY_CHECK, skipValidateTrustDomain: env.DISC_SKIP_VALIDATE_TRUST_DOMAIN },
      spiffeBundles: bundles.endpoints,
    },
    issues,
    notes,
    warnings,
  };
}
