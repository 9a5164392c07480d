import { latestObservedAt, type ConfigEvent, type ConfigObject, type ConfigStore } from '../config/types.js';
import type { ServiceEntry, WorkloadEntry } from '../config/spec-types.js';
import { resolveHost } from '../model/host.js';
import { EventHub, type RegistryEvent, type ServiceRegistry } from '../model/registry.js';
import { labelsMatch, parseLocality, parseProtocol, type Endpoint, type Resolution, type Service } from '../model/service.js';

const RESOLUTION: Record<string, Resolution> = {
  NONE: 'Passthrough',
  STATIC: 'ClientSideLB',
  DNS: 'DNS',
  DNS_ROUND_ROBIN: 'DNSRoundRobin',
  // Resolved when the request names a host under the wildcard: the original destination, as the client resolved it.
  DYNAMIC_DNS: 'Passthrough',
};

type WorkloadEntrySpec = WorkloadEntry;

/** What one ServiceEntry contributes, kept while the object (and, with a selector, the WorkloadEntries) stays the same. */
interface Contribution {
  readonly source: ConfigObject<ServiceEntry>;
  /** The WorkloadEntry list it was computed from, when it selects workloads. */
  readonly workloads?: ReadonlyArray<ConfigObject<WorkloadEntrySpec>>;
  /** Its services, each with its endpoints. */
  readonly parts: ReadonlyArray<{ readonly service: Service; readonly endpoints: ReadonlyArray<Endpoint> }>;
}

/**
 * Services and endpoints declared by ServiceEntry objects, with WorkloadEntry objects selected by a
 * ServiceEntry's workloadSelector. Recomputed once per change of the store (a file's new version is
 * one, however many objects it has; docs/adr/0163); a ServiceEntry whose object is unchanged keeps
 * what it contributed, so a change costs a lookup per ServiceEntry plus the work of the changed ones.
 * Unchanged services and endpoints keep their object identity so caches downstream stay warm.
 */
export class ServiceEntryRegistry implements ServiceRegistry {
  readonly id = 'ServiceEntry';
  private readonly hub = new EventHub<RegistryEvent>();
  private byHost = new Map<string, Service[]>();
  private endpointsByHost = new Map<string, ReadonlyArray<Endpoint>>();
  /** By ServiceEntry `namespace/name`. */
  private contributions = new Map<string, Contribution>();
  private list: ReadonlyArray<Service> = [];
  private unsubscribe?: () => void;

  constructor(
    private readonly store: ConfigStore,
    private readonly domain: string,
    private readonly clusterId: string,
  ) {
    this.recompute();
  }

  static readonly KINDS: ReadonlySet<string> = new Set(['ServiceEntry', 'WorkloadEntry']);

  async start(): Promise<void> {
    this.unsubscribe = this.store.onChange((events: ReadonlyArray<ConfigEvent>) => {
      if (events.some((e) => ServiceEntryRegistry.KINDS.has(e.kind))) this.recompute(latestObservedAt(events));
    });
  }

  stop(): void {
    this.unsubscribe?.();
  }

  services(): ReadonlyArray<Service> {
    return this.list;
  }

  endpoints(service: Service): ReadonlyArray<Endpoint> {
    return this.endpointsByHost.get(service.hostname) ?? [];
  }

  onEvent(handler: (event: RegistryEvent) => void): () => void {
    return this.hub.on(handler);
  }

  hasSynced(): boolean {
    return this.store.hasSynced();
  }

  private recompute(observedAt?: number): void {
    const entries = this.store.list<ServiceEntry>('ServiceEntry');
    const workloads = this.store.list<WorkloadEntrySpec>('WorkloadEntry');
    const contributions = new Map<string, Contribution>();
    const nextByHost = new Map<string, Service[]>();
    const nextEndpoints = new Map<string, Endpoint[] | ReadonlyArray<Endpoint>>();
    for (const se of entries) {
      const key = `${se.meta.namespace}/${se.meta.name}`;
      const c = this.contributionOf(se, workloads, this.contributions.get(key));
      contributions.set(key, c);
      for (const { service, endpoints } of c.parts) {
        const list = nextByHost.get(service.hostname);
        if (list) list.push(service);
        else nextByHost.set(service.hostname, [service]);
        const existing = nextEndpoints.get(service.hostname);
        // one contribution's list is used as is; a host of several gets a list of its own
        if (existing) nextEndpoints.set(service.hostname, [...existing, ...endpoints]);
        else nextEndpoints.set(service.hostname, endpoints);
      }
    }
    let servicesChanged = nextByHost.size !== this.byHost.size;
    for (const [host, list] of nextByHost) {
      const prev = this.byHost.get(host);
      if (!prev || !sameItems(prev, list)) servicesChanged = true;
    }
    const endpointHosts: string[] = [];
    for (const [host, b] of nextEndpoints) if (!sameItems(this.endpointsByHost.get(host) ?? [], b)) endpointHosts.push(host);
    for (const [host, a] of this.endpointsByHost) if (!nextEndpoints.has(host) && a.length > 0) endpointHosts.push(host);
    this.contributions = contributions;
    this.byHost = nextByHost;
    this.endpointsByHost = nextEndpoints;
    this.list = [...nextByHost.values()].flat();
    if (servicesChanged || endpointHosts.length > 0) {
      this.hub.emit({ registry: this.id, servicesChanged, endpointHosts, ...(observedAt !== undefined ? { observedAt } : {}) });
    }
  }

  /**
   * What `se` contributes: `prev` when computed from the same object (and workloads, if it selects
   * them); else computed again, reusing `prev`'s service and endpoint objects where they are equal.
   */
  private contributionOf(se: ConfigObject<ServiceEntry>, workloads: ReadonlyArray<ConfigObject<WorkloadEntrySpec>>, prev: Contribution | undefined): Contribution {
    const selects = se.spec.workloadSelector?.labels !== undefined;
    if (prev && prev.source === se && (!selects || prev.workloads === workloads)) return prev;
    const parts = this.servicesOf(se).map((svc) => {
      const before = prev?.parts.find((p) => p.service.hostname === svc.hostname);
      const service = before && JSON.stringify(before.service) === JSON.stringify(svc) ? before.service : svc;
      const eps = this.endpointsOf(se, svc, workloads);
      const endpoints = before?.endpoints.length === eps.length ? eps.map((e, i) => (JSON.stringify(before.endpoints[i]) === JSON.stringify(e) ? before.endpoints[i] : e)) : eps;
      return { service, endpoints: before && sameItems(before.endpoints, endpoints) ? before.endpoints : endpoints };
    });
    return { source: se, ...(selects ? { workloads } : {}), parts };
  }

  private servicesOf(se: ConfigObject<ServiceEntry>): Service[] {
    const spec = se.spec;
    const ns = se.meta.namespace;
    const ports = (spec.ports ?? []).map((p) => ({
      name: p.name ?? String(p.number),
      port: p.number ?? 0,
      protocol: parseProtocol(p.protocol ?? p.name),
    }));
    const created = se.meta.creationTimestamp ? Date.parse(se.meta.creationTimestamp) : 0;
    return (spec.hosts ?? []).map((h) =>
      Object.freeze({
        hostname: resolveHost(h, ns, this.domain),
        namespace: ns,
        name: se.meta.name,
        ports,
        addresses: spec.addresses ?? [],
        resolution: RESOLUTION[spec.resolution ?? 'NONE'] ?? 'Passthrough',
        meshExternal: (spec.location ?? 'MESH_EXTERNAL') === 'MESH_EXTERNAL',
        exportTo: spec.exportTo && spec.exportTo.length > 0 ? spec.exportTo : undefined,
        labels: se.meta.labels,
        serviceAccounts: spec.subjectAltNames ?? [],
        clusterId: this.clusterId,
        registry: this.id,
        creationTime: Number.isNaN(created) ? 0 : created,
      }),
    );
  }

  private endpointsOf(
    se: ConfigObject<ServiceEntry>,
    svc: Service,
    workloads: ReadonlyArray<ConfigObject<WorkloadEntrySpec>>,
  ): Endpoint[] {
    const spec = se.spec;
    const sources: Array<{ we: WorkloadEntrySpec; workload: string }> = [];
    if (spec.workloadSelector?.labels) {
      for (const w of workloads) {
        if (w.meta.namespace === se.meta.namespace && labelsMatch(spec.workloadSelector.labels, w.spec.labels ?? {})) {
          sources.push({ we: w.spec, workload: `${w.meta.name}.${w.meta.namespace}` });
        }
      }
    } else {
      (spec.endpoints ?? []).forEach((we, i) => sources.push({ we, workload: `${se.meta.name}-${i}.${se.meta.namespace}` }));
    }
    if (sources.length === 0 && (svc.resolution === 'DNS' || svc.resolution === 'DNSRoundRobin')) {
      // DNS resolution without endpoints: the host name itself is resolved by the client.
      sources.push({ we: { address: svc.hostname }, workload: svc.hostname });
    }
    const out: Endpoint[] = [];
    for (const { we, workload } of sources) {
      if (!we.address) continue;
      for (const port of svc.ports) {
        const target = we.ports?.[port.name] ?? (spec.ports ?? []).find((p) => p.name === port.name)?.targetPort ?? port.port;
        out.push(
          Object.freeze({
            address: we.address,
            port: target,
            servicePortName: port.name,
            labels: we.labels ?? {},
            serviceAccount: we.serviceAccount ?? '',
            locality: parseLocality(we.locality),
            network: we.network ?? '',
            clusterId: this.clusterId,
            weight: we.weight && we.weight > 0 ? we.weight : 1,
            healthy: true,
            tlsMode: we.labels?.['security.mesh.io/tlsMode'] === 'mesh' ? ('mesh' as const) : ('disabled' as const),
            workload,
          }),
        );
      }
    }
    return out;
  }
}

/** Same length and the same objects in the same order. */
function sameItems<T>(a: ReadonlyArray<T>, b: ReadonlyArray<T>): boolean {
  return a === b || (a.length === b.length && a.every((x, i) => x === b[i]));
}
