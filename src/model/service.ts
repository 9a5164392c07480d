/**
 * The service model every registry produces: services (hostnames with ports) and their endpoints.
 * Registries (Mock, ServiceEntry, Cluster) feed these shapes; the model never sees registry specifics.
 */

export type Protocol =
  | 'HTTP'
  | 'HTTP2'
  | 'GRPC'
  | 'GRPC-Web'
  | 'HTTPS'
  | 'TLS'
  | 'TCP'
  | 'MONGO'
  | 'REDIS'
  | 'MYSQL'
  | 'UDP'
  | 'UNSUPPORTED';

const KNOWN: ReadonlyArray<Protocol> = ['HTTP', 'HTTP2', 'GRPC', 'GRPC-Web', 'HTTPS', 'TLS', 'TCP', 'MONGO', 'REDIS', 'MYSQL', 'UDP'];

/** Protocol from an explicit protocol string or a port name prefix (`http-web`, `grpc`, `tcp-db`). */
export function parseProtocol(value: string | undefined): Protocol {
  if (!value) return 'UNSUPPORTED';
  const lower = value.toLowerCase();
  for (const p of KNOWN) {
    const name = p.toLowerCase();
    if (lower === name || lower.startsWith(`${name}-`)) return p;
  }
  if (lower === 'http2' || lower.startsWith('h2')) return 'HTTP2';
  return 'UNSUPPORTED';
}

export function isHttpProtocol(p: Protocol): boolean {
  return p === 'HTTP' || p === 'HTTP2' || p === 'GRPC' || p === 'GRPC-Web';
}

export function isHttp2Protocol(p: Protocol): boolean {
  return p === 'HTTP2' || p === 'GRPC';
}

export interface ServicePort {
  readonly name: string;
  readonly port: number;
  readonly protocol: Protocol;
}

/** How a client reaches the endpoints of a service. */
export type Resolution = 'ClientSideLB' | 'DNS' | 'DNSRoundRobin' | 'Passthrough';

export interface Service {
  readonly hostname: string;
  readonly namespace: string;
  /** Short name of the owning object (Service name, ServiceEntry name). */
  readonly name: string;
  readonly ports: ReadonlyArray<ServicePort>;
  /** Virtual IPs; empty means none (the service is reached by name only). */
  readonly addresses: ReadonlyArray<string>;
  readonly resolution: Resolution;
  readonly meshExternal: boolean;
  /** Visibility: undefined = mesh default; otherwise '*', '.', '~' or namespace names. */
  readonly exportTo?: ReadonlyArray<string>;
  readonly labels: Readonly<Record<string, string>>;
  readonly serviceAccounts: ReadonlyArray<string>;
  readonly clusterId: string;
  /** Which registry produced it: 'Mock', 'ServiceEntry', 'Cluster'. */
  readonly registry: string;
  readonly creationTime: number;
}

export interface Locality {
  readonly region: string;
  readonly zone: string;
  readonly subzone: string;
}

export const NO_LOCALITY: Locality = Object.freeze({ region: '', zone: '', subzone: '' });

export function parseLocality(value: string | undefined): Locality {
  if (!value) return NO_LOCALITY;
  const [region = '', zone = '', subzone = ''] = value.split('/');
  return { region, zone, subzone };
}

export function localityKey(l: Locality): string {
  return `${l.region}/${l.zone}/${l.subzone}`;
}

/** One address serving one port of a service. */
export interface Endpoint {
  readonly address: string;
  /** The port the endpoint listens on for this service port. */
  readonly port: number;
  /** Name of the service port this endpoint serves. */
  readonly servicePortName: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly serviceAccount: string;
  readonly locality: Locality;
  readonly network: string;
  readonly clusterId: string;
  readonly weight: number;
  readonly healthy: boolean;
  /** 'mesh' when the workload carries a sidecar that accepts mutual TLS. */
  readonly tlsMode: 'mesh' | 'disabled';
  /** Workload name for debugging (pod or workload entry). */
  readonly workload: string;
}

export function labelsMatch(selector: Readonly<Record<string, string>> | undefined, labels: Readonly<Record<string, string>>): boolean {
  if (!selector) return true;
  for (const [k, v] of Object.entries(selector)) {
    if (labels[k] !== v) return false;
  }
  return true;
}
