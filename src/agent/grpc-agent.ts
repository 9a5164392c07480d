/**
 * Proxyless gRPC (`mesh-agent proxy sidecar --mode grpc`, the `grpc-agent` template; docs/adr/0091):
 * no Envoy. The workload certificate (the same CertificateManager as the Envoy mode) is written as
 * files the application mounts read-only — chain, key (0600) and root, each written to a temporary
 * name and renamed so a reader never sees half a file — and written again on every renewal or root
 * change; the gRPC xDS bootstrap names meshd's secured port with TLS channel credentials over those
 * files and a `file_watcher` certificate provider `default` for the application's own mTLS.
 */
import { join } from 'node:path';
import { nodeId, type AgentSettings } from './settings.js';
import type { WorkloadCertificate } from './certificates.js';

/** The file names inside the certificate directory (CERT_OUTPUT_DIR in a pod). */
export const GRPC_CERT_FILES = Object.freeze({ chain: 'cert-chain.pem', key: 'key.pem', root: 'root-cert.pem' });
/** The gRPC bootstrap's name inside the config directory (GRPC_BOOTSTRAP_PATH in a pod). */
export const GRPC_BOOTSTRAP_FILE = 'grpc-bootstrap.json';
/** How often gRPC reads the certificate files again (seconds). */
export const GRPC_CERT_REFRESH_SECONDS = 300;
/** The listener name template of gRPC xDS servers (the name meshd's grpc generator answers). */
export const GRPC_SERVER_LISTENER_TEMPLATE = 'grpc/server?xds.resource.listening_address=%s';

export interface GrpcCertPaths {
  readonly chain: string;
  readonly key: string;
  readonly root: string;
}

export function grpcCertPaths(certDir: string): GrpcCertPaths {
  return { chain: join(certDir, GRPC_CERT_FILES.chain), key: join(certDir, GRPC_CERT_FILES.key), root: join(certDir, GRPC_CERT_FILES.root) };
}

/** The gRPC xDS bootstrap of the agent's pod (snake_case JSON, as gRPC reads it). */
export function grpcAgentBootstrap(s: AgentSettings, files: GrpcCertPaths, refreshSeconds = GRPC_CERT_REFRESH_SECONDS): Record<string, unknown> {
  const fileConfig = { certificate_file: files.chain, private_key_file: files.key, ca_certificate_file: files.root, refresh_interval: `${refreshSeconds}s` };
  return {
    xds_servers: [{ server_uri: s.discoveryAddress, channel_creds: [{ type: 'tls', config: fileConfig }], server_features: ['xds_v3'] }],
    node: { id: nodeId(s), metadata: s.metadata, locality: {} },
    certificate_providers: { default: { plugin_name: 'file_watcher', config: fileConfig } },
    server_listener_resource_name_template: GRPC_SERVER_LISTENER_TEMPLATE,
  };
}

/** Writes the three certificate files (atomically each; the key 0600). */
export async function writeGrpcCertFiles(files: GrpcCertPaths, c: WorkloadCertificate, writeAtomic: (path: string, content: string, mode?: number) => Promise<void>): Promise<void> {
  // Root first, then key and chain: a reader mid-rotation sees an old pair rather than a new key with an old chain for as short a time as the renames take.
  await writeAtomic(files.root, c.rootPem, 0o644);
  await writeAtomic(files.key, c.keyPem, 0o600);
  await writeAtomic(files.chain, c.certChainPem, 0o644);
}
