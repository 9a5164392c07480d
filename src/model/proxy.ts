import { parseLocality, type Locality } from './service.js';

/** The kinds of data-plane client this daemon serves. */
export type ProxyType = 'sidecar' | 'router' | 'grpc';

/** Who is asking, from the xDS node id and node metadata. Immutable for a connection. */
export interface Proxy {
  readonly id: string;
  readonly type: ProxyType;
  readonly ipAddresses: ReadonlyArray<string>;
  /** `<pod>.<namespace>` */
  readonly workloadId: string;
  readonly namespace: string;
  readonly dnsDomain: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly clusterId: string;
  readonly network: string;
  readonly locality: Locality;
  readonly serviceAccount: string;
  readonly workloadGroup?: string;
  /**
   * The proxy's agent answers DNS for mesh hostnames with automatically allocated addresses (node
   * metadata DNS_CAPTURE and DNS_AUTO_ALLOCATE both "true"): hosts without addresses are routed by
   * their allocated address (model/address-allocation.ts).
   */
  readonly dnsAutoAllocate: boolean;
  /**
   * The proxy's agent answers the application's DNS (node metadata DNS_CAPTURE "true"): it is sent
   * the name table (docs/adr/0187).
   */
  readonly dnsCapture: boolean;
  readonly metadata: Readonly<Record<string, unknown>>;
}

export class ProxyIdError extends Error {}

/**
 * Parses the node id `<type>~<ip>~<pod>.<ns>~<ns>.svc.<domain>` and the node metadata.
 * The metadata key GENERATOR = "grpc" marks a proxyless gRPC client.
 */
export function parseProxy(nodeId: string, metadata: Record<string, unknown>, locality?: { region?: string; zone?: string; subZone?: string }): Proxy {
  const parts = nodeId.split('~');
  if (parts.length !== 4) {
    throw new ProxyIdError(`node id "${nodeId}": expected 4 parts "<type>~<ip>~<pod>.<namespace>~<namespace>.svc.<domain>", got ${parts.length}`);
  }
  const [rawType, ips, workloadId, dnsDomain] = parts;
  let type: ProxyType;
  if (metadata.GENERATOR === 'grpc') type = 'grpc';
  else if (rawType === 'sidecar') type = 'sidecar';
  else if (rawType === 'router') type = 'router';
  else throw new ProxyIdError(`node id "${nodeId}": unknown proxy type "${rawType}" (want sidecar or router)`);
  const str = (k: string): string | undefined => (typeof metadata[k] === 'string' ? (metadata[k] as string) : undefined);
  const namespace = str('NAMESPACE') ?? (workloadId.includes('.') ? workloadId.slice(workloadId.lastIndexOf('.') + 1) : '') ?? '';
  const labels: Record<string, string> = {};
  const rawLabels = metadata.LABELS;
  if (rawLabels && typeof rawLabels === 'object') {
    for (const [k, v] of Object.entries(rawLabels as Record<string, unknown>)) if (typeof v === 'string') labels[k] = v;
  }
  const metaLocality = str('LOCALITY');
  const loc = locality && (locality.region || locality.zone || locality.subZone)
    ? { region: locality.region ?? '', zone: locality.zone ?? '', subzone: locality.subZone ?? '' }
    : parseLocality(metaLocality);
  return Object.freeze({
    id: nodeId,
    type,
    ipAddresses: ips ? ips.split(',').filter(Boolean) : [],
    workloadId,
    namespace,
    dnsDomain,
    labels,
    clusterId: str('CLUSTER_ID') ?? '',
    network: str('NETWORK') ?? '',
    locality: loc,
    serviceAccount: str('SERVICE_ACCOUNT') ?? '',
    workloadGroup: str('WORKLOAD_GROUP'),
    dnsAutoAllocate: isTrue(metadata.DNS_CAPTURE) && isTrue(metadata.DNS_AUTO_ALLOCATE),
    dnsCapture: isTrue(metadata.DNS_CAPTURE),
    metadata,
  });
}

/** Node metadata booleans arrive as strings (environment variables) or booleans. */
function isTrue(v: unknown): boolean {
  return v === true || (typeof v === 'string' && v.toLowerCase() === 'true');
}
