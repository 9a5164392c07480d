/**
 * The gRPC xDS bootstrap (the JSON file GRPC_XDS_BOOTSTRAP names) of a proxyless gRPC application,
 * written by `mesh-agent grpc-bootstrap` in the init step of the `grpc-simple` template: meshd's
 * plaintext xDS port (15010, channel credentials `insecure`), and the node as meshd parses it
 * (`sidecar~<ip>~<pod>.<ns>~<domain>`, metadata GENERATOR=grpc marking a proxyless client). The
 * settings come from the init container's variables; a missing or bad one is an
 * AgentSettingsError naming it.
 */
import { isIP } from 'node:net';
import { META_ENV_PREFIX } from './names.js';
import { AgentSettingsError } from './settings.js';

export interface GrpcBootstrapSettings {
  readonly xdsAddress: string;
  readonly nodeId: string;
  readonly metadata: Readonly<Record<string, string>>;
}

const bad = (what: string, reason: string): never => {
  throw new AgentSettingsError(`${what}: ${reason}`);
};

/** Settings of `grpc-bootstrap` from its flags and the init container's environment. */
export function grpcBootstrapSettings(flags: { readonly xdsAddress?: string; readonly domain?: string }, env: Readonly<Record<string, string | undefined>>): GrpcBootstrapSettings {
  const need = (name: string): string => env[name] || bad(name, 'is not set (the injector sets it from the downward API)');
  const xdsAddress = flags.xdsAddress ?? bad('--xds-address', 'is required (host:port of meshd\'s plaintext xDS port)');
  if (!/^([A-Za-z0-9.-]+|\[[0-9a-fA-F:]+\]):\d{1,5}$/.test(xdsAddress)) bad('--xds-address', `${JSON.stringify(xdsAddress)} is not host:port`);
  const pod = need('POD_NAME');
  const namespace = need('POD_NAMESPACE');
  const ip = need('INSTANCE_IP');
  if (isIP(ip) === 0) bad('INSTANCE_IP', `${JSON.stringify(ip)} is not an IP address`);
  const domain = flags.domain || `${namespace}.svc.cluster.local`;
  if (!/^[A-Za-z0-9.-]+$/.test(domain)) bad('--domain', `${JSON.stringify(domain)} is not a DNS domain (was $(POD_NAMESPACE) expanded?)`);
  const metadata: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (k.startsWith(META_ENV_PREFIX) && k.length > META_ENV_PREFIX.length && v !== undefined) metadata[k.slice(META_ENV_PREFIX.length)] = v;
  Object.assign(metadata, { NAMESPACE: namespace, NAME: pod, INSTANCE_IPS: ip, GENERATOR: 'grpc' });
  if (env.SERVICE_ACCOUNT) metadata.SERVICE_ACCOUNT = env.SERVICE_ACCOUNT;
  return { xdsAddress, nodeId: `sidecar~${ip}~${pod}.${namespace}~${domain}`, metadata };
}

/** The bootstrap JSON object (snake_case, as gRPC reads it). */
export function grpcXdsBootstrap(s: GrpcBootstrapSettings): Record<string, unknown> {
  return {
    xds_servers: [{ server_uri: s.xdsAddress, channel_creds: [{ type: 'insecure' }], server_features: ['xds_v3'] }],
    node: { id: s.nodeId, metadata: s.metadata, locality: {} },
  };
}
