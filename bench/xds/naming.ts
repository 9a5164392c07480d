/** Names and addresses of the synthetic mesh, shared by the config generator and the client drivers. */
import type { ClientKind, ClientSpec } from './protocol.js';

export const NAMESPACES = 10;
export const DOMAIN = 'cluster.local';
export const HTTP_PORT = 8080;

export function serviceNamespace(i: number): string {
  return `ns-${i % NAMESPACES}`;
}

export function serviceName(i: number): string {
  return `svc-${i}`;
}

export function serviceHost(i: number): string {
  return `${serviceName(i)}.${serviceNamespace(i)}.svc.${DOMAIN}`;
}

/** Every tenth service has a VirtualService with a weighted split. */
export function hasVirtualService(i: number): boolean {
  return i % 10 === 0;
}

/** 2 or 3 endpoints per service. */
export function endpointCount(i: number): number {
  return 2 + (i % 2);
}

function dotted(n: number, firstOctet: number): string {
  return `${firstOctet}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`;
}

/** Distinct 10.0.0.0/10 addresses: 4 slots per service (endpoints use 0..2; slot 3 is the edit's new address). */
export function endpointAddress(i: number, j: number): string {
  return dotted(i * 4 + j + 1, 10);
}

export function endpointVersion(j: number): 'v1' | 'v2' {
  return j % 2 === 0 ? 'v1' : 'v2';
}

/** A virtual IP per service (`--vips`): 240.240.0.0/12, away from endpoints and clients. */
export function serviceVip(i: number): string {
  const n = i + 1;
  return `240.${240 + ((n >>> 16) & 15)}.${(n >>> 8) & 255}.${n & 255}`;
}

/** Client addresses live in 10.200.0.0/16 and up, away from every endpoint. */
export function clientAddress(c: number): string {
  return `10.${200 + ((c >>> 16) & 31)}.${(c >>> 8) & 255}.${c & 255}`;
}

export function clientNamespace(c: number): string {
  return `ns-${c % NAMESPACES}`;
}

/** `<type>~<ip>~<pod>.<ns>~<ns>.svc.<domain>` */
export function clientNodeId(c: number): string {
  const ns = clientNamespace(c);
  return `sidecar~${clientAddress(c)}~client-${c}.${ns}~${ns}.svc.${DOMAIN}`;
}

/**
 * The service a proxyless client dials: spread over all services, except that `hotPercent` percent
 * of the clients dial service 0 (the one the edits change), to get more than a handful of samples.
 */
export function grpcTargetIndex(c: number, services: number, hotPercent = 0): number {
  return c % 100 < hotPercent ? 0 : c % services;
}

export function listenerName(i: number): string {
  return `${serviceHost(i)}:${HTTP_PORT}`;
}

export function clusterName(i: number, subset = ''): string {
  return `outbound|${HTTP_PORT}|${subset}|${serviceHost(i)}`;
}

/**
 * Node id, node metadata and (grpc) dial target of client `c`. `extraMetadata` is added to every
 * client's node metadata (`--node-meta`, e.g. DNS_CAPTURE for sidecars whose agent resolves names).
 */
export function clientSpec(c: number, kind: ClientKind, services: number, hotPercent: number, extraMetadata: Readonly<Record<string, string>>): ClientSpec {
  const ns = clientNamespace(c);
  const metadata: Record<string, unknown> = { NAMESPACE: ns, CLUSTER_ID: 'Kubernetes', LABELS: { app: `client-${c % 100}` }, ...extraMetadata };
  if (kind === 'grpc') metadata.GENERATOR = 'grpc';
  return {
    id: clientNodeId(c),
    cluster: `client-${c % 100}.${ns}`,
    metadata,
    userAgent: kind === 'grpc' ? 'grpc-node-js' : 'envoy',
    target: kind === 'grpc' ? listenerName(grpcTargetIndex(c, services, hotPercent)) : undefined,
  };
}
