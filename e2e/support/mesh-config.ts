/**
 * Builders for the networking.mesh.io/v1 objects the e2e tests write into the daemon's config
 * directory. Field names follow the public v1 networking messages (ServiceEntry, DestinationRule,
 * VirtualService); the builders only fill in what the scenarios need.
 */

export const API_VERSION = 'networking.mesh.io/v1';
export const NAMESPACE = 'default';
/** Not a Mock registry host, so the tests' ServiceEntry is the only definition. */
export const ECHO_HOST = 'echo-e2e.default.svc.cluster.local';
export const ECHO_PORT = 7070;
/** What a proxyless client dials (`xds:///<target>`), and the name of the listener it asks for. */
export const ECHO_TARGET = `${ECHO_HOST}:${ECHO_PORT}`;

export interface Manifest {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: { readonly name: string; readonly namespace: string };
  readonly spec: Record<string, unknown>;
}

export interface EndpointSpec {
  /** Port of the backend on 127.0.0.1. */
  readonly port: number;
  /** Value of the `version` label (default v1). */
  readonly version?: string;
  readonly address?: string;
  readonly labels?: Readonly<Record<string, string>>;
}

export interface ServiceEntryOptions {
  readonly name?: string;
  readonly host?: string;
  readonly port?: number;
  readonly endpoints: ReadonlyArray<EndpointSpec>;
}

/** A MESH_INTERNAL, STATIC ServiceEntry with one gRPC port and explicit endpoints. */
export function serviceEntry(opts: ServiceEntryOptions): Manifest {
  return {
    apiVersion: API_VERSION,
    kind: 'ServiceEntry',
    metadata: { name: opts.name ?? 'echo', namespace: NAMESPACE },
    spec: {
      hosts: [opts.host ?? ECHO_HOST],
      location: 'MESH_INTERNAL',
      resolution: 'STATIC',
      ports: [{ number: opts.port ?? ECHO_PORT, name: 'grpc', protocol: 'GRPC' }],
      endpoints: opts.endpoints.map((e) => ({
        address: e.address ?? '127.0.0.1',
        ports: { grpc: e.port },
        labels: { version: e.version ?? 'v1', ...(e.labels ?? {}) },
      })),
    },
  };
}

export interface DestinationRuleOptions {
  readonly name?: string;
  readonly host?: string;
  /** Subset names; each selects `version: <name>`. */
  readonly subsets: ReadonlyArray<string>;
}

export function destinationRule(opts: DestinationRuleOptions): Manifest {
  return {
    apiVersion: API_VERSION,
    kind: 'DestinationRule',
    metadata: { name: opts.name ?? 'echo', namespace: NAMESPACE },
    spec: {
      host: opts.host ?? ECHO_HOST,
      subsets: opts.subsets.map((s) => ({ name: s, labels: { version: s } })),
    },
  };
}

/** One destination of an HTTP route (`weight` as given, even when not a number, for bad-input tests). */
export function destination(subset: string | undefined, weight?: unknown, host = ECHO_HOST, port = ECHO_PORT): Record<string, unknown> {
  return {
    destination: { host, ...(subset ? { subset } : {}), port: { number: port } },
    ...(weight !== undefined ? { weight } : {}),
  };
}

export interface VirtualServiceOptions {
  readonly name?: string;
  readonly host?: string;
  /** The `http` routes, in order. */
  readonly http: ReadonlyArray<Record<string, unknown>>;
}

export function virtualService(opts: VirtualServiceOptions): Manifest {
  return {
    apiVersion: API_VERSION,
    kind: 'VirtualService',
    metadata: { name: opts.name ?? 'echo', namespace: NAMESPACE },
    spec: { hosts: [opts.host ?? ECHO_HOST], http: opts.http },
  };
}

/** A VirtualService splitting traffic between subsets by weight, e.g. `{ v1: 80, v2: 20 }`. */
export function weightedVirtualService(weights: Readonly<Record<string, number>>, name?: string): Manifest {
  return virtualService({ ...(name ? { name } : {}), http: [{ route: Object.entries(weights).map(([subset, w]) => destination(subset, w)) }] });
}
