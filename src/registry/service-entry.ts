import type { ConfigEvent, ConfigObject, ConfigStore } from '../config/types.js';
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

/**
 * Services and endpoints declared by ServiceEntry objects, with WorkloadEntry objects selected by a
 * ServiceEntry's workloadSelector. Recomputed on every ServiceEntry/WorkloadEntry event; unchanged
 * services keep their object identity so caches downstream stay warm.
 */
export class ServiceEntryRegistry implements ServiceRegistry {
  readonly id = 'ServiceEntry';
  private readonly hub = new EventHub<RegistryEvent>();
  private byHost = new Map<string, Service[]>();
  private endpointsByHost = new Map<string, ReadonlyArray<Endpoint>>();
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
    this.unsubscribe = this.store.onEvent((e: ConfigEvent) => {
      if (ServiceEntryRegistry.KINDS.has(e.kind)) this.recompute();
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

  private recompute(): void {
    const entries = this.store.list<ServiceEntry>('ServiceEntry');
    const workloads = this.store.list<WorkloadEntrySpec>('WorkloadEntry');
    const nextByHost = new Map<string, Service[]>();
    const nextEndpoints = new Map<string, Endpoint[]>();
    for (const se of entries) {
      for (const svc of this.servicesOf(se)) {
        const prev = this.byHost.get(svc.hostname)?.find((p) => p.namespace === svc.namespace);
        const kept = prev && JSON.stringify(prev) === JSON.stringify(svc) ? prev : svc;
        const list = nextByHost.get(svc.hostname);
        if (list) list.push(kept);
        else nextByHost.set(svc.hostname, [kept]);
        const eps = this.endpointsOf(se, svc, workloads);
        const existing = nextEndpoints.get(svc.hostname);
        if (existing) existing.push(...eps);
        else nextEndpoints.set(svc.hostname, eps);
      }
    }
    let servicesChanged = nextByHost.size !== this.byHost.size;
    for (const [host, list] of nextByHost) {
      const prev = this.byHost.get(host);
      if (!prev || prev.length !== list.length || prev.some((p, i) => p !== list[i])) servicesChanged = true;
    }
    const endpointHosts: string[] = [];
    const allHosts = new Set([...nextEndpoints.keys(), ...this.endpointsByHost.keys()]);
    for (const host of allHosts) {
      const a = this.endpointsByHost.get(host);
      const b = nextEndpoints.get(host);
      if (JSON.stringify(a ?? []) !== JSON.stringify(b ?? [])) endpointHosts.push(host);
    }
    this.byHost = nextByHost;
    this.endpointsByHost = nextEndpoints;
    this.list = [...nextByHost.values()].flat();
    if (servicesChanged || endpointHosts.length > 0) {
      this.hub.emit({ registry: this.id, servicesChanged, endpointHosts });
    }
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
