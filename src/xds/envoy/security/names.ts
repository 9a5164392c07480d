/**
 * Names the security translation shares with the proxy side (docs/adr/0081): SDS secret names and
 * where they are served, gRPC certificate provider instances, and the authorization filter names.
 */

/** The sidecar agent's SDS cluster, defined in the Envoy bootstrap the agent writes (a Unix socket). */
export const AGENT_SDS_CLUSTER = 'sds-grpc';
/** The workload's certificate chain and key, served by the agent. */
export const WORKLOAD_SECRET = 'default';
/** The mesh's trust bundle (a validation context), served by the agent. */
export const ROOT_SECRET = 'ROOTCA';

/** Prefix of the SDS names of Kubernetes Secret credentials (`credentialName`), asked for on the ADS stream. */
export const CREDENTIAL_PREFIX = 'kubernetes://';
/** Suffix of the name of a credential's CA part (`ca.crt` of the Secret, or the Secret `<name>-cacert`). */
export const CA_SUFFIX = '-cacert';

/** The SDS name of a `credentialName`'s certificate and key. */
export function credentialSecretName(credentialName: string): string {
  return `${CREDENTIAL_PREFIX}${credentialName}`;
}

/** The SDS name of a `credentialName`'s CA certificates. */
export function credentialCaSecretName(credentialName: string): string {
  return `${CREDENTIAL_PREFIX}${credentialName}${CA_SUFFIX}`;
}

export { parseCredentialName, type CredentialRef } from '../../../model/credentials.js';

/** The certificate provider instance proxyless gRPC bootstraps declare (file watcher over the agent's files). */
export const GRPC_CERT_PROVIDER = 'default';
/** Certificate names passed to that provider for the identity and the roots. */
export const GRPC_IDENTITY_CERT = 'default';
export const GRPC_ROOT_CERT = 'ROOTCA';

/** HTTP and network filter names of the authorization filters. */
export const SecurityFilters = {
  rbacHttp: 'envoy.filters.http.rbac',
  rbacNetwork: 'envoy.filters.network.rbac',
} as const;

/** Stat (and metadata key) prefixes of dry-run policies' shadow rules. */
export const DRY_RUN_ALLOW_PREFIX = 'mesh_dry_run_allow_';
export const DRY_RUN_DENY_PREFIX = 'mesh_dry_run_deny_';

/** The dynamic metadata namespace jwt_authn writes verified payloads under (fixed by Envoy). */
export const JWT_METADATA_NAMESPACE = 'envoy.filters.http.jwt_authn';
/** Key under which each provider's verified payload is written. */
export const JWT_PAYLOAD_KEY = 'payload';
