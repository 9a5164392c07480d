/**
 * TLS transport sockets (docs/adr/0081): mesh mutual TLS on both ends (the workload certificate
 * and the trust bundle from the agent over SDS for Envoy, from certificate provider instances for
 * proxyless gRPC), DestinationRule client TLS (SIMPLE, MUTUAL, MESH_MUTUAL; files or a
 * `credentialName` asked for over SDS on the ADS stream).
 */
import { ApiConfigSource_ApiType, ApiVersion, type ConfigSource } from '../../../gen/envoy/config/core/v3/config_source.js';
import {
  DownstreamTlsContext,
  UpstreamTlsContext,
  type CommonTlsContext,
} from '../../../gen/envoy/extensions/transport_sockets/tls/v3/tls.js';
import { SubjectAltNameMatcher_SanType, type SubjectAltNameMatcher } from '../../../gen/envoy/extensions/transport_sockets/tls/v3/common.js';
import type { StringMatcher } from '../../../gen/envoy/type/matcher/v3/string.js';
import type { ClientTLSSettings } from '../../../gen/config/schemas.js';
import type { MeshSettings } from '../../../model/mesh-settings.js';
import { Filters } from '../names.js';
import { pack, type Shape } from '../pack.js';
import {
  AGENT_SDS_CLUSTER,
  GRPC_CERT_PROVIDER,
  GRPC_IDENTITY_CERT,
  GRPC_ROOT_CERT,
  ROOT_SECRET,
  WORKLOAD_SECRET,
  credentialCaSecretName,
  credentialSecretName,
} from './names.js';

/**
 * The ALPN value a sidecar offers first when it opens mesh mutual TLS: inbound PERMISSIVE ports tell
 * mesh TLS from an application's own TLS by it (docs/adr/0081).
 */
export const MESH_ALPN = 'mesh-mtls';

/** The trust domains whose identities a workload accepts: the mesh's and its aliases. */
export function acceptedTrustDomains(mesh: Pick<MeshSettings, 'trustDomain' | 'trustDomainAliases'>): string[] {
  return [...new Set([mesh.trustDomain, ...(mesh.trustDomainAliases ?? [])])];
}

export type TransportSocketShape = { readonly name: string; readonly typedConfig: ReturnType<typeof pack> };

/** SDS served by the sidecar agent over its Unix socket (a cluster of the bootstrap). */
export const AGENT_SDS: Shape<ConfigSource> = Object.freeze({
  apiConfigSource: {
    apiType: ApiConfigSource_ApiType.GRPC,
    transportApiVersion: ApiVersion.V3,
    grpcServices: [{ envoyGrpc: { clusterName: AGENT_SDS_CLUSTER } }],
    setNodeOnFirstMessageOnly: true,
  },
  resourceApiVersion: ApiVersion.V3,
});

/** SDS served by meshd on the ADS stream (Secret credentials). */
export const ADS_SDS: Shape<ConfigSource> = Object.freeze({ ads: {}, resourceApiVersion: ApiVersion.V3 });

/** Where the mesh identity comes from: the agent's SDS (Envoy) or certificate provider instances (gRPC). */
export type IdentitySource = 'sds' | 'provider';

const providerInstance = (certificateName: string): { instanceName: string; certificateName: string } => ({ instanceName: GRPC_CERT_PROVIDER, certificateName });

/** The workload certificate part of a common TLS context. */
function workloadIdentity(source: IdentitySource): Shape<CommonTlsContext> {
  return source === 'sds'
    ? { tlsCertificateSdsSecretConfigs: [{ name: WORKLOAD_SECRET, sdsConfig: AGENT_SDS }] }
    : { tlsCertificateProviderInstance: providerInstance(GRPC_IDENTITY_CERT) };
}

const uriSan = (m: Shape<StringMatcher>): Shape<SubjectAltNameMatcher> => ({ sanType: SubjectAltNameMatcher_SanType.URI, matcher: m });

/**
 * The server side of mesh mutual TLS: the workload's certificate, client certificates required and
 * verified against the mesh roots; for Envoy, peers must also be of an accepted trust domain.
 * gRPC servers cannot match SANs (gRFC A29), so they check the roots only.
 */
export function meshServerTls(source: IdentitySource, trustDomains: ReadonlyArray<string> | undefined, alpn: ReadonlyArray<string>): TransportSocketShape {
  const validation: Shape<CommonTlsContext> =
    source === 'sds'
      ? {
          combinedValidationContext: {
            defaultValidationContext: trustDomains && trustDomains.length > 0 ? { matchTypedSubjectAltNames: trustDomains.map((td) => uriSan({ prefix: `spiffe://${td}/` })) } : {},
            validationContextSdsSecretConfig: { name: ROOT_SECRET, sdsConfig: AGENT_SDS },
          },
        }
      : { validationContext: { caCertificateProviderInstance: providerInstance(GRPC_ROOT_CERT) } };
  return {
    name: Filters.tls,
    typedConfig: pack('envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext', DownstreamTlsContext, {
      requireClientCertificate: true,
      commonTlsContext: { ...workloadIdentity(source), ...validation, alpnProtocols: [...alpn] },
    }),
  };
}

/**
 * The client side of mesh mutual TLS toward `sni`: the workload certificate, the server verified
 * against the mesh roots and, when the destination's identities are known, against them: SPIFFE
 * URIs, or whatever names a DestinationRule's `subjectAltNames` give (URI, IP or DNS SANs by their
 * form for Envoy; gRPC matches a name against every SAN of the certificate).
 */
export function meshClientTls(source: IdentitySource, sni: string, identities: ReadonlyArray<string>, alpn: ReadonlyArray<string>): TransportSocketShape {
  const validation: Shape<CommonTlsContext> =
    source === 'sds'
      ? {
          combinedValidationContext: {
            defaultValidationContext: { matchTypedSubjectAltNames: identities.map(sanMatcher) },
            validationContextSdsSecretConfig: { name: ROOT_SECRET, sdsConfig: AGENT_SDS },
          },
        }
      : providerValidation(identities);
  return {
    name: Filters.tls,
    typedConfig: pack('envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext', UpstreamTlsContext, {
      sni,
      commonTlsContext: { ...workloadIdentity(source), ...validation, alpnProtocols: [...alpn] },
    }),
  };
}

/** Server verification from the roots of gRPC's certificate provider instance, with SAN names (exact). */
function providerValidation(sans: ReadonlyArray<string>): Shape<CommonTlsContext> {
  return { validationContext: { caCertificateProviderInstance: providerInstance(GRPC_ROOT_CERT), matchSubjectAltNames: sans.map((s) => ({ exact: s })) } };
}

/** Where a rule names its files (`caCertificates`, …) there are no SDS secrets, and the other way round. */
function clientValidation(tls: ClientTLSSettings, sdsCa: boolean): Shape<CommonTlsContext> {
  if (tls.insecureSkipVerify) return {};
  const sans = (tls.subjectAltNames ?? []).map((s) => sanMatcher(s));
  const crl = tls.caCrl ? { crl: { filename: tls.caCrl } } : {};
  if (sdsCa) {
    return {
      combinedValidationContext: {
        defaultValidationContext: { matchTypedSubjectAltNames: sans, ...crl },
        validationContextSdsSecretConfig: { name: credentialCaSecretName(tls.credentialName!), sdsConfig: ADS_SDS },
      },
    };
  }
  if (tls.caCertificates) return { validationContext: { trustedCa: { filename: tls.caCertificates }, matchTypedSubjectAltNames: sans, ...crl } };
  // SAN checks need roots: the system's, as a client that names no CA expects
  if (sans.length > 0) return { validationContext: { systemRootCerts: {}, matchTypedSubjectAltNames: sans } };
  return {};
}

/** A DNS name, URI or IP SAN written in a rule. */
function sanMatcher(s: string): Shape<SubjectAltNameMatcher> {
  if (s.includes('://')) return uriSan({ exact: s });
  if (/^[0-9.]+$/.test(s) || s.includes(':')) return { sanType: SubjectAltNameMatcher_SanType.IP_ADDRESS, matcher: { exact: s } };
  return { sanType: SubjectAltNameMatcher_SanType.DNS, matcher: { exact: s } };
}

/**
 * A DestinationRule's SIMPLE or MUTUAL TLS (for Envoy). The client certificate comes from files or
 * from `credentialName` (the Secret in the proxy's namespace, served by meshd over SDS); the CA from
 * `caCertificates`, the Secret, or the system roots when only SANs are given. `credentialCa` false:
 * the credential has no CA, which then comes from `caCertificates` or the system roots.
 */
export function destinationRuleTls(tls: ClientTLSSettings, defaultSni: string, credentialCa = true): TransportSocketShape {
  const mutual = tls.mode === 'MUTUAL';
  const credential = tls.credentialName || undefined;
  const common: Shape<CommonTlsContext> = {
    tlsCertificates: mutual && !credential && tls.clientCertificate && tls.privateKey ? [{ certificateChain: { filename: tls.clientCertificate }, privateKey: { filename: tls.privateKey } }] : [],
    tlsCertificateSdsSecretConfigs: mutual && credential ? [{ name: credentialSecretName(credential), sdsConfig: ADS_SDS }] : [],
    // the CA over SDS only when the credential has one (else a name that is never served): docs/adr/0152
    ...clientValidation(tls, credential !== undefined && credentialCa),
  };
  return {
    name: Filters.tls,
    typedConfig: pack('envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext', UpstreamTlsContext, { sni: tls.sni || defaultSni, commonTlsContext: common }),
  };
}

/**
 * A DestinationRule's SIMPLE or MUTUAL TLS for proxyless gRPC, which loads certificates only from the
 * certificate provider instances of its bootstrap (gRFC A29: no files named by the resource, no SDS):
 * TLS toward the rule's SNI, the server verified against the mesh roots and the rule's
 * `subjectAltNames`, and no client certificate (the rule's own cannot be loaded, and the mesh identity
 * is not what it asked to present). Servers with certificates of another CA are refused: the rule's
 * TLS fails closed rather than falling back to plaintext or to a configuration gRPC refuses
 * (docs/adr/0154; the model logs it per DestinationRule).
 */
export function proxylessDestinationRuleTls(tls: ClientTLSSettings, defaultSni: string): TransportSocketShape {
  return {
    name: Filters.tls,
    typedConfig: pack('envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext', UpstreamTlsContext, {
      sni: tls.sni || defaultSni,
      commonTlsContext: providerValidation(tls.subjectAltNames ?? []),
    }),
  };
}
