/**
 * Server TLS of gateway servers (docs/adr/0105): SIMPLE, MUTUAL and OPTIONAL_MUTUAL with certificate
 * files or `credentialName`(s) served by meshd over SDS on the ADS stream (`kubernetes://<name>`,
 * the CA as `kubernetes://<name>-cacert`), MESH_MUTUAL with the gateway's own mesh identity; the TLS
 * versions and cipher suites, and for client certificates the SANs, SPKI and certificate hashes a
 * server accepts.
 */
import { DownstreamTlsContext, type CommonTlsContext } from '../../../gen/envoy/extensions/transport_sockets/tls/v3/tls.js';
import { SubjectAltNameMatcher_SanType, TlsParameters_TlsProtocol, type CertificateValidationContext, type SubjectAltNameMatcher, type TlsParameters } from '../../../gen/envoy/extensions/transport_sockets/tls/v3/common.js';
import type { ServerTLSSettings } from '../../../gen/config/schemas.js';
import type { MeshSettings } from '../../../model/mesh-settings.js';
import { pack, type Shape } from '../pack.js';
import { credentialCaSecretName, credentialSecretName } from './names.js';
import { ADS_SDS, acceptedTrustDomains, meshServerTls } from './tls.js';

const PROTOCOLS: Readonly<Record<string, TlsParameters_TlsProtocol>> = {
  TLS_AUTO: TlsParameters_TlsProtocol.TLS_AUTO,
  TLSV1_0: TlsParameters_TlsProtocol.TLSv1_0,
  TLSV1_1: TlsParameters_TlsProtocol.TLSv1_1,
  TLSV1_2: TlsParameters_TlsProtocol.TLSv1_2,
  TLSV1_3: TlsParameters_TlsProtocol.TLSv1_3,
};

/** The TLS parameters a server writes (versions, cipher suites); undefined when it writes none. */
export function serverTlsParams(tls: ServerTLSSettings): Shape<TlsParameters> | undefined {
  const min = tls.minProtocolVersion ? PROTOCOLS[tls.minProtocolVersion] : undefined;
  const max = tls.maxProtocolVersion ? PROTOCOLS[tls.maxProtocolVersion] : undefined;
  const ciphers = tls.cipherSuites ?? [];
  if (min === undefined && max === undefined && ciphers.length === 0) return undefined;
  return {
    tlsMinimumProtocolVersion: min,
    tlsMaximumProtocolVersion: max,
    cipherSuites: ciphers.length > 0 ? [...ciphers] : undefined,
  };
}

/** A SAN written in a Gateway: URI, IP address or DNS name by its form. */
function sanMatcher(s: string): Shape<SubjectAltNameMatcher> {
  const type = s.includes('://') ? SubjectAltNameMatcher_SanType.URI : /^[0-9.]+$/.test(s) || s.includes(':') ? SubjectAltNameMatcher_SanType.IP_ADDRESS : SubjectAltNameMatcher_SanType.DNS;
  return { sanType: type, matcher: { exact: s } };
}

/** What a server checks of client certificates besides the CA (SANs, SPKI, hashes, CRL file). */
function clientChecks(tls: ServerTLSSettings): Shape<CertificateValidationContext> {
  return {
    matchTypedSubjectAltNames: (tls.subjectAltNames ?? []).map(sanMatcher),
    verifyCertificateSpki: [...(tls.verifyCertificateSpki ?? [])],
    verifyCertificateHash: [...(tls.verifyCertificateHash ?? [])],
    ...(tls.caCrl ? { crl: { filename: tls.caCrl } } : {}),
  };
}

/** The credential names of a server (`credentialName` or `credentialNames`), as written. */
export function serverCredentials(tls: ServerTLSSettings): string[] {
  if (tls.credentialName) return [tls.credentialName];
  return [...(tls.credentialNames ?? [])];
}

/** Whether the server verifies client certificates (MUTUAL requires one, OPTIONAL_MUTUAL checks one if sent). */
export const verifiesClients = (tls: ServerTLSSettings): boolean => tls.mode === 'MUTUAL' || tls.mode === 'OPTIONAL_MUTUAL';

/** The CA file that verifies clients: the server's own, or the first of its tlsCertificates. */
function caFileOf(tls: ServerTLSSettings): string | undefined {
  return tls.caCertificates || (tls.tlsCertificates ?? []).find((c) => c.caCertificates)?.caCertificates || undefined;
}

/**
 * The DownstreamTlsContext of a server that terminates TLS. With credentials, the certificates and
 * (for MUTUAL) the CA are SDS secrets on the ADS stream; otherwise files.
 */
export function gatewayServerTls(tls: ServerTLSSettings, mesh: MeshSettings, alpn: ReadonlyArray<string>): ReturnType<typeof pack> {
  const params = serverTlsParams(tls);
  if (tls.mode === 'MESH_MUTUAL') {
    const base = meshServerTls('sds', acceptedTrustDomains(mesh), alpn).typedConfig;
    if (!params) return base;
    const ctx = DownstreamTlsContext.decode(base.value);
    return pack('envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext', DownstreamTlsContext, { ...ctx, commonTlsContext: { ...ctx.commonTlsContext, tlsParams: params } } as Shape<DownstreamTlsContext>);
  }
  const credentials = serverCredentials(tls);
  const verify = verifiesClients(tls);
  const common: Shape<CommonTlsContext> = credentials.length > 0
    ? {
        tlsCertificateSdsSecretConfigs: credentials.map((c) => ({ name: credentialSecretName(c), sdsConfig: ADS_SDS })),
        ...(verify
          ? { combinedValidationContext: { defaultValidationContext: clientChecks(tls), validationContextSdsSecretConfig: { name: credentialCaSecretName(credentials[0]), sdsConfig: ADS_SDS } } }
          : {}),
      }
    : {
        tlsCertificates: [
          ...(tls.serverCertificate && tls.privateKey ? [{ certificateChain: { filename: tls.serverCertificate }, privateKey: { filename: tls.privateKey } }] : []),
          ...(tls.tlsCertificates ?? []).map((c) => ({ certificateChain: { filename: c.serverCertificate ?? '' }, privateKey: { filename: c.privateKey ?? '' } })),
        ],
        ...(verify && caFileOf(tls) ? { validationContext: { trustedCa: { filename: caFileOf(tls) }, ...clientChecks(tls) } } : {}),
      };
  return pack('envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext', DownstreamTlsContext, {
    requireClientCertificate: tls.mode === 'MUTUAL' ? true : undefined,
    commonTlsContext: { ...common, alpnProtocols: [...alpn], ...(params ? { tlsParams: params } : {}) },
  });
}
