import type { Logger } from 'pino';
import { latestObservedAt, type ConfigEvent, type ConfigObject, type ConfigStore } from '../config/types.js';
import { nextTurn, turnDeadline } from '../util/cooperative.js';
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

/** Endpoints computed (or compared) between two looks at the clock. */
const STEP_ENDPOINTS = 2048;
/** Steps a change is computed in synchronously before the rest goes over turns: a change of fewer endpoints never leaves its turn. */
const SYNC_STEPS = 4;

/** The computation of one change: yields between steps of about STEP_ENDPOINTS endpoints, returns the new view. */
type Steps = Generator<void, View, void>;

interface View {
  readonly contributions: Map<string, Contribution>;
  readonly byHost: Map<string, Service[]>;
  readonly endpointsByHost: Map<string, ReadonlyArray<Endpoint>>;
}

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
 *
 * A change of more than SYNC_STEPS × STEP_ENDPOINTS endpoints (a ServiceEntry of 200,000) goes on
 * over turns of the cooperative queue, so it is never one stretch of the event loop (docs/adr/0204).
 * The registry's view is replaced whole once the computation is done: until then the previous one
 * serves, and a later change restarts the computation from the store's newest state.
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
  /** Bumped by every change: a computation over turns that sees another number was overtaken. */
  private generation = 0;
  /** The computation going on over turns, if any. */
  private pending: Promise<void> | undefined;

  constructor(
    private readonly store: ConfigStore,
    private readonly domain: string,
    private readonly clusterId: string,
    private readonly log?: Pick<Logger, 'error'>,
  ) {
    // what the store holds when the registry is made (the daemon's start): computed at once
    const steps = this.compute();
    let r = steps.next();
    while (!r.done) r = steps.next();
    this.apply(r.value);
  }

  static readonly KINDS: ReadonlySet<string> = new Set(['ServiceEntry', 'WorkloadEntry']);

  /** Subscribes to the store; resolves once a computation going on over turns is done. */
  async start(): Promise<void> {
    this.unsubscribe = this.store.onChange((events: ReadonlyArray<ConfigEvent>) => {
      if (events.some((e) => ServiceEntryRegistry.KINDS.has(e.kind))) this.recompute(latestObservedAt(events));
    });
    await this.computed();
  }

  computing(): Promise<void> | undefined {
    return this.pending;
  }

  /** Resolves once no computation is going on over turns (the view is the store's latest). */
  async computed(): Promise<void> {
    while (this.pending) await this.pending;
  }

  stop(): void {
    this.unsubscribe?.();
    this.generation++; // a computation over turns stops at its next turn
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

  /** Computes the view of the store's current state: at once when quick, else over turns. */
  private recompute(observedAt?: number): void {
    const generation = ++this.generation;
    const steps = this.compute();
    let r = steps.next();
    for (let step = 1; !r.done && step < SYNC_STEPS; step++) r = steps.next();
    if (r.done) {
      this.pending = undefined;
      this.apply(r.value, observedAt);
      return;
    }
    const pending = this.overTurns(steps, generation, observedAt).finally(() => {
      if (this.pending === pending) this.pending = undefined;
    });
    this.pending = pending;
  }

  private async overTurns(steps: Steps, generation: number, observedAt: number | undefined): Promise<void> {
    try {
      for (;;) {
        await nextTurn();
        if (generation !== this.generation) return; // a later change computes from the newer state
        let r = steps.next();
        while (!r.done && performance.now() < turnDeadline()) r = steps.next();
        if (r.done) {
          this.apply(r.value, observedAt);
          return;
        }
      }
    } catch (err) {
      // the previous view keeps serving
      this.log?.error({ err: err instanceof Error ? err.stack : String(err) }, 'ServiceEntry registry: computing services and endpoints failed; keeping the previous ones');
    }
  }

  private *compute(): Steps {
    const entries = this.store.list<ServiceEntry>('ServiceEntry');
    const workloads = this.store.list<WorkloadEntrySpec>('WorkloadEntry');
    const contributions = new Map<string, Contribution>();
    const byHost = new Map<string, Service[]>();
    const endpointsByHost = new Map<string, ReadonlyArray<Endpoint>>();
    /** Endpoints computed since the last step, over ServiceEntries (one of many thousand endpoints steps on its own too). */
    let work = 0;
    for (const se of entries) {
      const key = `${se.meta.namespace}/${se.meta.name}`;
      const prev = this.contributions.get(key);
      const c = yield* this.contributionOf(se, workloads, prev);
      contributions.set(key, c);
      if (c !== prev) {
        for (const p of c.parts) work += p.endpoints.length + 1;
        if (work >= STEP_ENDPOINTS) {
          work = 0;
          yield;
        }
      }
      for (const { service, endpoints } of c.parts) {
        const list = byHost.get(service.hostname);
        if (list) list.push(service);
        else byHost.set(service.hostname, [service]);
        const existing = endpointsByHost.get(service.hostname);
        // one contribution's list is used as is; a host of several gets a list of its own
        if (existing) endpointsByHost.set(service.hostname, [...existing, ...endpoints]);
        else endpointsByHost.set(service.hostname, endpoints);
      }
    }
    return { contributions, byHost, endpointsByHost };
  }

  /** Makes `next` the registry's view and says what changed. */
  private apply(next: View, observedAt?: number): void {
    const { byHost: nextByHost, endpointsByHost: nextEndpoints } = next;
    let servicesChanged = nextByHost.size !== this.byHost.size;
    for (const [host, list] of nextByHost) {
      const prev = this.byHost.get(host);
      if (!prev || !sameItems(prev, list)) servicesChanged = true;
    }
    const endpointHosts: string[] = [];
    for (const [host, b] of nextEndpoints) if (!sameItems(this.endpointsByHost.get(host) ?? [], b)) endpointHosts.push(host);
    for (const [host, a] of this.endpointsByHost) if (!nextEndpoints.has(host) && a.length > 0) endpointHosts.push(host);
    this.contributions = next.contributions;
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
  private *contributionOf(se: ConfigObject<ServiceEntry>, workloads: ReadonlyArray<ConfigObject<WorkloadEntrySpec>>, prev: Contribution | undefined): Generator<void, Contribution, void> {
    const selects = se.spec.workloadSelector?.labels !== undefined;
    if (prev && prev.source === se && (!selects || prev.workloads === workloads)) return prev;
    const parts: Array<Contribution['parts'][number]> = [];
    for (const svc of this.servicesOf(se)) {
      const before = prev?.parts.find((p) => p.service.hostname === svc.hostname);
      const service = before && JSON.stringify(before.service) === JSON.stringify(svc) ? before.service : svc;
      const eps = yield* this.endpointsOf(se, svc, workloads);
      let endpoints = eps;
      if (before?.endpoints.length === eps.length) {
        endpoints = [];
        for (const [i, e] of eps.entries()) {
          endpoints.push(JSON.stringify(before.endpoints[i]) === JSON.stringify(e) ? before.endpoints[i] : e);
          if (i % STEP_ENDPOINTS === STEP_ENDPOINTS - 1) yield;
        }
      }
      parts.push({ service, endpoints: before && sameItems(before.endpoints, endpoints) ? before.endpoints : endpoints });
    }
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

  private *endpointsOf(
    se: ConfigObject<ServiceEntry>,
    svc: Service,
    workloads: ReadonlyArray<ConfigObject<WorkloadEntrySpec>>,
  ): Generator<void, Endpoint[], void> {
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
    for (const [k, { we, workload }] of sources.entries()) {
      if (k % STEP_ENDPOINTS === STEP_ENDPOINTS - 1) yield;
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
