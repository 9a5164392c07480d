/**
 * Pure conversions from Kubernetes objects (Service, EndpointSlice, Endpoints, Pod, Node, Namespace)
 * and WorkloadEntry configs to the mesh service model. No caches, no events: the Cluster registry
 * (./registry.ts) feeds these functions from its informer caches and decides what changed.
 */
import type { V1Endpoints, V1EndpointSlice, V1Namespace, V1Node, V1Pod, V1Service, V1ServicePort } from '@kubernetes/client-node';
import type { ConfigObject } from '../../config/types.js';
import type { WorkloadEntry } from '../../config/spec-types.js';
import { labelsMatch, NO_LOCALITY, parseLocality, parseProtocol, type Endpoint, type Locality, type Protocol, type Resolution, type Service, type ServicePort } from '../../model/service.js';
import { LABEL_NETWORK } from '../../model/labels.js';

/** Label the EndpointSlice controller puts on every slice: the name of its Service. */
export const LABEL_SERVICE_NAME = 'kubernetes.io/service-name';
/** Service annotation: comma-separated exportTo (`*`, `.`, `~` or namespace names). */
export const ANNOTATION_EXPORT_TO = 'networking.mesh.io/exportTo';
/** Pod or Namespace label naming the network of a workload (the pod's label wins). */
export { LABEL_NETWORK };
/** Pod label: `mesh` when the workload's sidecar accepts mutual TLS. */
export const LABEL_TLS_MODE = 'security.mesh.io/tlsMode';
export const LABEL_REGION = 'topology.kubernetes.io/region';
export const LABEL_ZONE = 'topology.kubernetes.io/zone';
export const LABEL_SUBZONE = 'topology.mesh.io/subzone';

/** What every conversion needs to know about the registry and the mesh. */
export interface ConvertSettings {
  /** Id of the registry (the cluster id); written to `Service.registry`. */
  readonly registry: string;
  readonly clusterId: string;
  /** DNS suffix of service hostnames (`--domain`). */
  readonly domain: string;
  /** Trust domain of SPIFFE identities. */
  readonly trustDomain: string;
  /** DISC_ENABLE_EDS_FOR_HEADLESS_SERVICES: headless services are load balanced over EDS. */
  readonly edsForHeadless: boolean;
}

export function serviceHostname(name: string, namespace: string, domain: string): string {
  return `${name}.${namespace}.svc.${domain}`;
}

/** Domain of the multi-cluster services alias (ENABLE_MCS_HOST). */
export const CLUSTERSET_DOMAIN = 'clusterset.local';

/**
 * The alias `<svc>.<ns>.svc.clusterset.local` of a cluster service (ENABLE_MCS_HOST): same ports,
 * endpoints and identities, no virtual IP of its own (a cluster-set IP comes from an MCS
 * ServiceImport, not from this cluster's Service), so sidecars route it by Host / SNI and
 * proxyless clients by name.
 */
export function clustersetAlias(service: Service): Service {
  return Object.freeze({ ...service, hostname: serviceHostname(service.name, service.namespace, CLUSTERSET_DOMAIN), addresses: [] });
}

export function spiffeIdentity(trustDomain: string, namespace: string, serviceAccount: string): string {
  return `spiffe://${trustDomain}/ns/${namespace}/sa/${serviceAccount}`;
}

/** appProtocol values Kubernetes defines beside the plain protocol names. */
const KUBE_APP_PROTOCOLS: Readonly<Record<string, Protocol>> = {
  'kubernetes.io/h2c': 'HTTP2',
  'kubernetes.io/ws': 'HTTP',
  'kubernetes.io/wss': 'HTTPS',
};

/**
 * Protocol of a Service port: UDP ports are UDP; otherwise `appProtocol` when it names a known
 * protocol, else the port name's prefix (`http-web`, `grpc`, `tcp-db`), else UNSUPPORTED (sniffed).
 */
export function portProtocol(port: Pick<V1ServicePort, 'name' | 'protocol' | 'appProtocol'>): Protocol {
  const l4 = (port.protocol ?? 'TCP').toUpperCase();
  if (l4 === 'UDP') return 'UDP';
  if (l4 !== 'TCP') return 'UNSUPPORTED';
  if (port.appProtocol) {
    const known = KUBE_APP_PROTOCOLS[port.appProtocol.toLowerCase()];
    if (known) return known;
    const p = parseProtocol(port.appProtocol);
    if (p !== 'UNSUPPORTED') return p;
  }
  return parseProtocol(port.name);
}

/** `networking.mesh.io/exportTo` value → list; undefined (mesh default) when absent or empty. */
export function parseExportTo(value: string | undefined): ReadonlyArray<string> | undefined {
  if (value === undefined) return undefined;
  const list = value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  return list.length > 0 ? list : undefined;
}

function timeOf(value: Date | string | undefined): number {
  if (value === undefined) return 0;
  const t = value instanceof Date ? value.getTime() : Date.parse(value);
  return Number.isNaN(t) ? 0 : t;
}

export function isHeadless(svc: V1Service): boolean {
  return svc.spec?.clusterIP === 'None';
}

export function isExternalName(svc: V1Service): boolean {
  return svc.spec?.type === 'ExternalName';
}

/** The service ports the mesh knows (ports without a number are left out). */
export function servicePorts(svc: V1Service): ServicePort[] {
  const out: ServicePort[] = [];
  for (const p of svc.spec?.ports ?? []) {
    if (!Number.isInteger(p.port) || p.port <= 0) continue;
    out.push(Object.freeze({ name: p.name ?? '', port: p.port, protocol: portProtocol(p) }));
  }
  return out;
}

function resolutionOf(svc: V1Service, s: ConvertSettings): Resolution {
  if (isExternalName(svc)) return 'DNS';
  if (isHeadless(svc)) return s.edsForHeadless ? 'ClientSideLB' : 'Passthrough';
  return 'ClientSideLB';
}

function clusterAddresses(svc: V1Service): string[] {
  if (isExternalName(svc) || isHeadless(svc)) return [];
  const ips = svc.spec?.clusterIPs && svc.spec.clusterIPs.length > 0 ? svc.spec.clusterIPs : [svc.spec?.clusterIP ?? ''];
  return ips.filter((ip) => ip !== '' && ip !== 'None');
}

/**
 * The mesh Service of a Kubernetes Service, or undefined when the object has no name or namespace.
 * `serviceAccounts` (SPIFFE identities of the backing workloads) comes from its endpoints.
 */
export function convertService(svc: V1Service, s: ConvertSettings, serviceAccounts: ReadonlyArray<string> = []): Service | undefined {
  const name = svc.metadata?.name;
  const namespace = svc.metadata?.namespace;
  if (!name || !namespace) return undefined;
  return Object.freeze({
    hostname: serviceHostname(name, namespace, s.domain),
    namespace,
    name,
    ports: servicePorts(svc),
    addresses: clusterAddresses(svc),
    resolution: resolutionOf(svc, s),
    meshExternal: isExternalName(svc),
    exportTo: parseExportTo(svc.metadata?.annotations?.[ANNOTATION_EXPORT_TO]),
    labels: { ...(svc.metadata?.labels ?? {}) },
    serviceAccounts,
    clusterId: s.clusterId,
    registry: s.registry,
    creationTime: timeOf(svc.metadata?.creationTimestamp),
  });
}

/** Locality from a node's topology labels; `fallbackZone` (an EndpointSlice's zone) when there is no node. */
export function localityOf(node: V1Node | undefined, fallbackZone?: string): Locality {
  const labels = node?.metadata?.labels;
  if (!labels) return fallbackZone ? { region: '', zone: fallbackZone, subzone: '' } : NO_LOCALITY;
  const region = labels[LABEL_REGION] ?? '';
  const zone = labels[LABEL_ZONE] ?? '';
  const subzone = labels[LABEL_SUBZONE] ?? '';
  if (!region && !zone && !subzone) return NO_LOCALITY;
  return { region, zone, subzone };
}

/** One backend address as an endpoint source (EndpointSlice or Endpoints) reports it, before pod lookup. */
export interface RawEndpoint {
  readonly address: string;
  /** Port numbers by service port name (`''` for an unnamed port). */
  readonly ports: ReadonlyMap<string, number>;
  readonly ready: boolean;
  readonly targetRef?: { readonly kind?: string; readonly namespace?: string; readonly name?: string };
  readonly nodeName?: string;
  readonly zone?: string;
}

function mergeRaw(into: Map<string, RawEndpoint>, e: RawEndpoint): void {
  const prev = into.get(e.address);
  if (!prev) {
    into.set(e.address, e);
    return;
  }
  // One address in two slices (during a slice reshuffle): merge the ports; ready wins.
  const ports = new Map(prev.ports);
  for (const [k, v] of e.ports) if (!ports.has(k)) ports.set(k, v);
  const base = e.ready && !prev.ready ? e : prev;
  into.set(e.address, { ...base, ports, ready: prev.ready || e.ready });
}

/**
 * Backends from the EndpointSlices of one service. Addresses of type FQDN are left out; a missing
 * `ready` condition counts as ready (the API's rule).
 */
export function rawFromSlices(slices: ReadonlyArray<V1EndpointSlice>): RawEndpoint[] {
  const byAddress = new Map<string, RawEndpoint>();
  for (const slice of slices) {
    if (slice.addressType !== 'IPv4' && slice.addressType !== 'IPv6') continue;
    const ports = new Map<string, number>();
    for (const p of slice.ports ?? []) if (p.port !== undefined) ports.set(p.name ?? '', p.port);
    for (const e of slice.endpoints ?? []) {
      for (const address of e.addresses ?? []) {
        if (!address) continue;
        mergeRaw(byAddress, {
          address,
          ports,
          ready: e.conditions?.ready !== false,
          targetRef: e.targetRef,
          nodeName: e.nodeName,
          zone: e.zone,
        });
      }
    }
  }
  return [...byAddress.values()];
}

/** Backends from a service's Endpoints object: `addresses` are ready, `notReadyAddresses` are not. */
export function rawFromEndpoints(ep: V1Endpoints | undefined): RawEndpoint[] {
  const byAddress = new Map<string, RawEndpoint>();
  for (const subset of ep?.subsets ?? []) {
    const ports = new Map<string, number>();
    for (const p of subset.ports ?? []) ports.set(p.name ?? '', p.port);
    for (const [list, ready] of [
      [subset.addresses ?? [], true],
      [subset.notReadyAddresses ?? [], false],
    ] as const) {
      for (const a of list) {
        if (!a.ip) continue;
        mergeRaw(byAddress, { address: a.ip, ports, ready, targetRef: a.targetRef, nodeName: a.nodeName });
      }
    }
  }
  return [...byAddress.values()];
}

/** Read access to the objects endpoint building looks up. */
export interface WorkloadLookup {
  pod(namespace: string, name: string): V1Pod | undefined;
  node(name: string): V1Node | undefined;
  namespace(name: string): V1Namespace | undefined;
}

/** Endpoints of one service plus what the registry needs for its indexes and metrics. */
export interface EndpointBuild {
  /** Sorted by address, then service port name. */
  readonly endpoints: ReadonlyArray<Endpoint>;
  /** `namespace/name` of every pod the endpoints refer to, found or not. */
  readonly pods: ReadonlyArray<string>;
  /** Pods referred to but not (yet) in the cache; their addresses are held back. */
  readonly pendingPods: ReadonlyArray<string>;
  /** Nodes whose labels the endpoints' localities come from. */
  readonly nodes: ReadonlyArray<string>;
  /** Addresses kept without a pod (no pod target reference): they carry the service's labels. */
  readonly noPodAddresses: ReadonlyArray<string>;
  /** Backend addresses that are not ready (their endpoints are included as unhealthy). */
  readonly notReady: number;
}

function networkOf(podLabels: Readonly<Record<string, string>> | undefined, ns: V1Namespace | undefined): string {
  return podLabels?.[LABEL_NETWORK] ?? ns?.metadata?.labels?.[LABEL_NETWORK] ?? '';
}

function byAddressAndPort(a: Endpoint, b: Endpoint): number {
  if (a.address !== b.address) return a.address < b.address ? -1 : 1;
  if (a.servicePortName !== b.servicePortName) return a.servicePortName < b.servicePortName ? -1 : 1;
  return a.port - b.port;
}

/**
 * Endpoints of `service` (the converted Service) from its backends: each backend serves the service
 * ports whose names its ports carry. A backend whose target pod is in the cache takes the pod's
 * labels, service account, node locality, network and TLS mode; one whose pod is not there yet is
 * held back (pending); one without a pod reference keeps the service's labels.
 */
export function buildEndpoints(service: Service, raws: ReadonlyArray<RawEndpoint>, lookup: WorkloadLookup, s: ConvertSettings): EndpointBuild {
  const endpoints: Endpoint[] = [];
  const pods = new Set<string>();
  const pendingPods = new Set<string>();
  const nodes = new Set<string>();
  const noPodAddresses: string[] = [];
  let notReady = 0;
  const ns = lookup.namespace(service.namespace);
  for (const raw of raws) {
    const served = service.ports.filter((p) => raw.ports.has(p.name));
    if (served.length === 0) continue;
    let labels: Readonly<Record<string, string>>;
    let serviceAccount = '';
    let nodeName = raw.nodeName;
    let network: string;
    let tlsMode: Endpoint['tlsMode'] = 'disabled';
    let workload: string;
    const ref = raw.targetRef;
    if (ref?.kind === 'Pod' && ref.name) {
      const podNs = ref.namespace || service.namespace;
      const podKey = `${podNs}/${ref.name}`;
      pods.add(podKey);
      const pod = lookup.pod(podNs, ref.name);
      if (!pod) {
        pendingPods.add(podKey);
        continue;
      }
      const podLabels = pod.metadata?.labels ?? {};
      labels = { ...podLabels };
      serviceAccount = spiffeIdentity(s.trustDomain, podNs, pod.spec?.serviceAccountName || 'default');
      nodeName = pod.spec?.nodeName || nodeName;
      network = networkOf(podLabels, podNs === service.namespace ? ns : lookup.namespace(podNs));
      tlsMode = podLabels[LABEL_TLS_MODE] === 'mesh' ? 'mesh' : 'disabled';
      workload = `${ref.name}.${podNs}`;
    } else {
      labels = service.labels;
      network = networkOf(undefined, ns);
      workload = raw.address;
      noPodAddresses.push(raw.address);
    }
    if (nodeName) nodes.add(nodeName);
    const locality = localityOf(nodeName ? lookup.node(nodeName) : undefined, raw.zone);
    if (!raw.ready) notReady++;
    for (const port of served) {
      endpoints.push(
        Object.freeze({
          address: raw.address,
          port: raw.ports.get(port.name) ?? port.port,
          servicePortName: port.name,
          labels,
          serviceAccount,
          locality,
          network,
          clusterId: s.clusterId,
          weight: 1,
          healthy: raw.ready,
          tlsMode,
          workload,
        }),
      );
    }
  }
  endpoints.sort(byAddressAndPort);
  return { endpoints, pods: [...pods], pendingPods: [...pendingPods], nodes: [...nodes], noPodAddresses, notReady };
}

/** Port of a selected WorkloadEntry for a service port: the entry's own port of that name, else the numeric targetPort, else the service port. */
function workloadEntryPort(svc: V1Service, port: ServicePort, we: WorkloadEntry): number {
  const own = we.ports?.[port.name];
  if (own !== undefined && own > 0) return own;
  const target = svc.spec?.ports?.find((p) => (p.name ?? '') === port.name)?.targetPort;
  if (typeof target === 'number' && target > 0) return target;
  if (typeof target === 'string' && /^\d+$/.test(target)) return Number(target);
  if (typeof target === 'string' && we.ports?.[target]) return we.ports[target];
  return port.port;
}

/**
 * Endpoints from WorkloadEntries of the service's namespace whose labels match the service's
 * selector (DISC_ENABLE_CLUSTER_SELECT_WORKLOAD_ENTRIES). Services without a selector select none.
 */
export function workloadEntryEndpoints(svc: V1Service, service: Service, entries: ReadonlyArray<ConfigObject<WorkloadEntry>>, s: ConvertSettings): Endpoint[] {
  const selector = svc.spec?.selector;
  if (!selector || Object.keys(selector).length === 0 || isExternalName(svc)) return [];
  const out: Endpoint[] = [];
  for (const entry of entries) {
    const we = entry.spec;
    if (entry.meta.namespace !== service.namespace || !we.address) continue;
    const labels = we.labels ?? {};
    if (!labelsMatch(selector, labels)) continue;
    for (const port of service.ports) {
      out.push(
        Object.freeze({
          address: we.address,
          port: workloadEntryPort(svc, port, we),
          servicePortName: port.name,
          labels,
          serviceAccount: we.serviceAccount ? spiffeIdentity(s.trustDomain, entry.meta.namespace, we.serviceAccount) : '',
          locality: parseLocality(we.locality),
          network: we.network ?? '',
          clusterId: s.clusterId,
          weight: we.weight && we.weight > 0 ? we.weight : 1,
          healthy: true,
          tlsMode: labels[LABEL_TLS_MODE] === 'mesh' ? 'mesh' : 'disabled',
          workload: `${entry.meta.name}.${entry.meta.namespace}`,
        }),
      );
    }
  }
  return out.sort(byAddressAndPort);
}

/** An ExternalName service resolves its external name by DNS: one endpoint per port. */
export function externalNameEndpoints(svc: V1Service, service: Service, s: ConvertSettings): Endpoint[] {
  const target = svc.spec?.externalName;
  if (!isExternalName(svc) || !target) return [];
  return service.ports.map((port) =>
    Object.freeze({
      address: target,
      port: port.port,
      servicePortName: port.name,
      labels: service.labels,
      serviceAccount: '',
      locality: NO_LOCALITY,
      network: '',
      clusterId: s.clusterId,
      weight: 1,
      healthy: true,
      tlsMode: 'disabled' as const,
      workload: target,
    }),
  );
}

/** Sorted, distinct SPIFFE identities of the endpoints: the service's subject alternative names. */
export function serviceAccountsOf(endpoints: ReadonlyArray<Endpoint>): string[] {
  return [...new Set(endpoints.map((e) => e.serviceAccount).filter((sa) => sa.startsWith('spiffe://')))].sort();
}
