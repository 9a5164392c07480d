/**
 * The Cluster registry: services and endpoints of one Kubernetes cluster, read from informer caches
 * (`ObjectCache`, src/kube/types.ts) of Services, EndpointSlices or Endpoints, Pods, Nodes and
 * Namespaces, plus WorkloadEntries selected by Service selectors. Each change rebuilds only the
 * services it touches and reports whether services changed or only their endpoints (the fast path).
 */
import type { V1Endpoints, V1EndpointSlice, V1Namespace, V1Node, V1Pod, V1Service } from '@kubernetes/client-node';
import type { DaemonEnv } from '../../config/daemon-env.js';
import type { ConfigEvent, ConfigStore } from '../../config/types.js';
import type { WorkloadEntry } from '../../config/spec-types.js';
import { EventHub, type RegistryEvent, type ServiceRegistry } from '../../model/registry.js';
import type { Endpoint, Service } from '../../model/service.js';
import { objectKey, splitKey, type InformerEvent, type KubeObject, type ObjectCache } from '../../kube/types.js';
import {
  buildEndpoints,
  clustersetAlias,
  convertService,
  externalNameEndpoints,
  LABEL_NETWORK,
  LABEL_REGION,
  LABEL_SERVICE_NAME,
  LABEL_SUBZONE,
  LABEL_ZONE,
  rawFromEndpoints,
  rawFromSlices,
  serviceAccountsOf,
  workloadEntryEndpoints,
  type ConvertSettings,
  type WorkloadLookup,
} from './convert.js';
import { NO_CLUSTER_METRICS, type ClusterRegistryMetrics, type ClusterResourceType } from './metrics.js';

/** One informer cache per resource type the registry reads. */
export interface KubeRegistryCaches {
  readonly services: ObjectCache<V1Service>;
  /** Required when `useEndpointSlices` is true. */
  readonly endpointSlices?: ObjectCache<V1EndpointSlice>;
  /** Required when `useEndpointSlices` is false. */
  readonly endpoints?: ObjectCache<V1Endpoints>;
  readonly pods: ObjectCache<V1Pod>;
  readonly nodes: ObjectCache<V1Node>;
  readonly namespaces: ObjectCache<V1Namespace>;
}

export interface KubeRegistryOptions {
  /** `--clusterID`: the registry id and every service's and endpoint's cluster id. Default `Cluster`. */
  readonly clusterId?: string;
  /** `--domain`. Default `cluster.local`. */
  readonly domain?: string;
  /** Trust domain of workload identities. Default `cluster.local`. */
  readonly trustDomain?: string;
  /** DISC_USE_ENDPOINT_SLICE: endpoints from EndpointSlices (true) or Endpoints (false). */
  readonly useEndpointSlices: boolean;
  /** DISC_ENABLE_EDS_FOR_HEADLESS_SERVICES. */
  readonly edsForHeadless: boolean;
  /** DISC_ENABLE_CLUSTER_SELECT_WORKLOAD_ENTRIES: needs the config store. */
  readonly selectWorkloadEntries: boolean;
  /** ENABLE_MCS_HOST: every service also under `<svc>.<ns>.svc.clusterset.local`. */
  readonly mcsHost?: boolean;
  readonly metrics?: ClusterRegistryMetrics;
}

/** The registry options that come from the daemon's environment. */
export function kubeRegistryFlags(
  env: Pick<DaemonEnv, 'DISC_USE_ENDPOINT_SLICE' | 'DISC_ENABLE_EDS_FOR_HEADLESS_SERVICES' | 'DISC_ENABLE_CLUSTER_SELECT_WORKLOAD_ENTRIES'>,
): Pick<KubeRegistryOptions, 'useEndpointSlices' | 'edsForHeadless' | 'selectWorkloadEntries'> {
  return {
    useEndpointSlices: env.DISC_USE_ENDPOINT_SLICE,
    edsForHeadless: env.DISC_ENABLE_EDS_FOR_HEADLESS_SERVICES,
    selectWorkloadEntries: env.DISC_ENABLE_CLUSTER_SELECT_WORKLOAD_ENTRIES,
  };
}

/** What the registry holds for one Kubernetes Service. */
interface ServiceState {
  readonly service: Service;
  /** The clusterset.local alias (ENABLE_MCS_HOST); shares `endpoints`. */
  readonly alias?: Service;
  readonly endpoints: ReadonlyArray<Endpoint>;
  readonly pods: ReadonlyArray<string>;
  readonly nodes: ReadonlyArray<string>;
  readonly pending: number;
  readonly noPodAddresses: ReadonlySet<string>;
}

/** key → set of service keys depending on it (pods, nodes). */
class DependencyIndex {
  private readonly map = new Map<string, Set<string>>();
  get(key: string): ReadonlySet<string> {
    return this.map.get(key) ?? new Set();
  }
  replace(owner: string, before: ReadonlyArray<string>, after: ReadonlyArray<string>): void {
    for (const k of before) {
      const set = this.map.get(k);
      if (!set) continue;
      set.delete(owner);
      if (set.size === 0) this.map.delete(k);
    }
    for (const k of after) {
      const set = this.map.get(k);
      if (set) set.add(owner);
      else this.map.set(k, new Set([owner]));
    }
  }
}

const NONE: ReadonlyArray<string> = Object.freeze([]);
const NO_ENDPOINTS: ReadonlyArray<Endpoint> = Object.freeze([]);

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

function podProjection(pod: V1Pod | undefined): string {
  return JSON.stringify([pod?.metadata?.labels ?? {}, pod?.spec?.serviceAccountName ?? '', pod?.spec?.nodeName ?? '']);
}

function nodeProjection(node: V1Node | undefined): string {
  const l = node?.metadata?.labels ?? {};
  return `${l[LABEL_REGION] ?? ''}/${l[LABEL_ZONE] ?? ''}/${l[LABEL_SUBZONE] ?? ''}`;
}

/** The hostnames a service state answers to (its own, and the clusterset alias). */
function hostsOf(st: ServiceState): string[] {
  return st.alias ? [st.service.hostname, st.alias.hostname] : [st.service.hostname];
}

function lacksIp(pod: V1Pod): boolean {
  const phase = pod.status?.phase;
  return !pod.status?.podIP && phase !== 'Succeeded' && phase !== 'Failed';
}

export class KubeRegistry implements ServiceRegistry {
  readonly id: string;
  private readonly settings: ConvertSettings;
  private readonly hub = new EventHub<RegistryEvent>();
  private readonly metrics: ClusterRegistryMetrics;
  private readonly state = new Map<string, ServiceState>();
  private readonly podIndex = new DependencyIndex();
  private readonly nodeIndex = new DependencyIndex();
  private readonly podsWithoutIp = new Set<string>();
  /** EndpointSlices by the key of their service, kept from slice events (no per-rebuild scan of the cache). */
  private readonly slicesByService = new Map<string, Map<string, V1EndpointSlice>>();
  private readonly lookup: WorkloadLookup;
  private sorted: ReadonlyArray<Service> | undefined;
  private pendingTotal = 0;
  private noPodTotal = 0;
  private unsubscribe: Array<() => void> = [];
  private started = false;

  constructor(
    private readonly caches: KubeRegistryCaches,
    private readonly store: ConfigStore | undefined,
    private readonly opts: KubeRegistryOptions,
  ) {
    if (opts.useEndpointSlices && !caches.endpointSlices) {
      throw new Error('KubeRegistry: caches.endpointSlices is required when useEndpointSlices (DISC_USE_ENDPOINT_SLICE) is true');
    }
    if (!opts.useEndpointSlices && !caches.endpoints) {
      throw new Error('KubeRegistry: caches.endpoints is required when useEndpointSlices (DISC_USE_ENDPOINT_SLICE) is false');
    }
    if (opts.selectWorkloadEntries && !store) {
      throw new Error('KubeRegistry: a config store is required when selectWorkloadEntries (DISC_ENABLE_CLUSTER_SELECT_WORKLOAD_ENTRIES) is true');
    }
    const clusterId = opts.clusterId || 'Cluster';
    this.id = clusterId;
    this.settings = Object.freeze({
      registry: clusterId,
      clusterId,
      domain: opts.domain || 'cluster.local',
      trustDomain: opts.trustDomain || 'cluster.local',
      edsForHeadless: opts.edsForHeadless,
    });
    this.metrics = opts.metrics ?? NO_CLUSTER_METRICS;
    this.lookup = {
      pod: (ns, name) => caches.pods.get(ns, name),
      node: (name) => caches.nodes.get('', name),
      namespace: (name) => caches.namespaces.get('', name),
    };
  }

  /** Subscribes to the caches and builds every service the caches hold now. */
  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    const c = this.caches;
    this.unsubscribe = [
      c.services.onEvent((e) => this.handle('Services', e, () => [objectKey(e.object)])),
      c.pods.onEvent((e) => this.handle('Pods', e, () => this.onPod(e))),
      c.nodes.onEvent((e) => this.handle('Nodes', e, () => this.onNode(e))),
      c.namespaces.onEvent((e) => this.handle('Namespaces', e, () => this.onNamespace(e))),
    ];
    if (this.opts.useEndpointSlices && c.endpointSlices) {
      this.unsubscribe.push(c.endpointSlices.onEvent((e) => this.handle('EndpointSlices', e, () => this.onSlice(e))));
    } else if (c.endpoints) {
      this.unsubscribe.push(c.endpoints.onEvent((e) => this.handle('Endpoints', e, () => [objectKey(e.object)])));
    }
    if (this.opts.selectWorkloadEntries && this.store) {
      this.unsubscribe.push(this.store.onEvent((e) => this.onConfig(e)));
    }
    this.slicesByService.clear();
    this.podsWithoutIp.clear();
    if (this.opts.useEndpointSlices) for (const slice of c.endpointSlices?.list() ?? []) this.indexSlice(slice, true);
    for (const pod of c.pods.list()) if (lacksIp(pod)) this.podsWithoutIp.add(objectKey(pod));
    this.metrics.podsWithoutIp(this.podsWithoutIp.size);
    // After a stop, services deleted meanwhile are still held: rebuilding their keys drops them.
    this.apply(new Set([...this.state.keys(), ...c.services.list().map((s) => objectKey(s))]));
  }

  stop(): void {
    for (const u of this.unsubscribe) u();
    this.unsubscribe = [];
    this.started = false;
  }

  services(): ReadonlyArray<Service> {
    if (!this.sorted) {
      this.sorted = Object.freeze(
        [...this.state.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).flatMap(([, st]) => (st.alias ? [st.service, st.alias] : [st.service])),
      );
    }
    return this.sorted;
  }

  endpoints(service: Service): ReadonlyArray<Endpoint> {
    const st = this.state.get(`${service.namespace}/${service.name}`);
    return st && (st.service.hostname === service.hostname || st.alias?.hostname === service.hostname) ? st.endpoints : NO_ENDPOINTS;
  }

  onEvent(handler: (event: RegistryEvent) => void): () => void {
    return this.hub.on(handler);
  }

  /** True once started and every cache (and, when WorkloadEntries are selected, the config store) has synced. */
  hasSynced(): boolean {
    const c = this.caches;
    const endpointsCache: ObjectCache<KubeObject> | undefined = this.opts.useEndpointSlices ? c.endpointSlices : c.endpoints;
    return (
      this.started &&
      c.services.hasSynced() &&
      (endpointsCache?.hasSynced() ?? false) &&
      c.pods.hasSynced() &&
      c.nodes.hasSynced() &&
      c.namespaces.hasSynced() &&
      (!this.opts.selectWorkloadEntries || (this.store?.hasSynced() ?? false))
    );
  }

  // ---- events → affected service keys ----

  private handle<T extends KubeObject>(type: ClusterResourceType, e: InformerEvent<T>, affected: () => Iterable<string>): void {
    this.metrics.registryEvent(type, e.type);
    this.apply(affected());
  }

  private onSlice(e: InformerEvent<V1EndpointSlice>): string[] {
    const keys = new Set<string>();
    if (e.type === 'update') keys.add(this.indexSlice(e.previous, false) ?? '');
    const key = this.indexSlice(e.object, e.type !== 'delete');
    if (key) keys.add(key);
    keys.delete('');
    return [...keys];
  }

  /** Adds or removes a slice in `slicesByService`; returns the key of its service, if it names one. */
  private indexSlice(slice: V1EndpointSlice, present: boolean): string | undefined {
    const svc = slice.metadata?.labels?.[LABEL_SERVICE_NAME];
    const ns = slice.metadata?.namespace;
    if (!svc || !ns) return undefined;
    const key = `${ns}/${svc}`;
    const sliceKey = objectKey(slice);
    let slices = this.slicesByService.get(key);
    if (present) {
      if (!slices) this.slicesByService.set(key, (slices = new Map()));
      slices.set(sliceKey, slice);
    } else if (slices) {
      slices.delete(sliceKey);
      if (slices.size === 0) this.slicesByService.delete(key);
    }
    return key;
  }

  private onPod(e: InformerEvent<V1Pod>): Iterable<string> {
    const key = objectKey(e.object);
    const before = this.podsWithoutIp.size;
    if (e.type !== 'delete' && lacksIp(e.object)) this.podsWithoutIp.add(key);
    else this.podsWithoutIp.delete(key);
    if (this.podsWithoutIp.size !== before) this.metrics.podsWithoutIp(this.podsWithoutIp.size);
    if (e.type === 'update' && podProjection(e.previous) === podProjection(e.object)) return NONE;
    return this.podIndex.get(key);
  }

  private onNode(e: InformerEvent<V1Node>): Iterable<string> {
    if (e.type === 'update' && nodeProjection(e.previous) === nodeProjection(e.object)) return NONE;
    return this.nodeIndex.get(e.object.metadata?.name ?? '');
  }

  private onNamespace(e: InformerEvent<V1Namespace>): Iterable<string> {
    const net = (n: V1Namespace | undefined) => n?.metadata?.labels?.[LABEL_NETWORK] ?? '';
    const changed = e.type === 'update' ? net(e.previous) !== net(e.object) : net(e.object) !== '';
    return changed ? this.keysInNamespace(e.object.metadata?.name ?? '') : NONE;
  }

  private onConfig(e: ConfigEvent): void {
    if (e.kind !== 'WorkloadEntry') return;
    this.metrics.registryEvent('WorkloadEntries', e.type);
    this.apply(this.keysInNamespace(e.object.meta.namespace));
  }

  private keysInNamespace(namespace: string): string[] {
    const prefix = `${namespace}/`;
    return [...this.state.keys()].filter((k) => k.startsWith(prefix));
  }

  // ---- rebuilding ----

  /** Rebuilds the given services and emits one event when anything changed. */
  private apply(keys: Iterable<string>): void {
    let servicesChanged = false;
    const endpointHosts: string[] = [];
    for (const key of new Set(keys)) {
      const r = this.rebuild(key);
      if (r.serviceChanged) servicesChanged = true;
      for (const h of r.endpointHosts) endpointHosts.push(h);
    }
    if (servicesChanged) this.sorted = undefined;
    this.metrics.pendingPodEndpoints(this.pendingTotal);
    this.metrics.endpointsWithoutPod(this.noPodTotal);
    if (servicesChanged || endpointHosts.length > 0) {
      this.hub.emit({ registry: this.id, servicesChanged, endpointHosts });
    }
  }

  private rebuild(key: string): { serviceChanged: boolean; endpointHosts: string[] } {
    const prev = this.state.get(key);
    const { namespace, name } = splitKey(key);
    const obj = this.caches.services.get(namespace, name);
    const next = obj ? this.build(obj, prev) : undefined;
    if (!next) {
      if (!prev) return { serviceChanged: false, endpointHosts: [] };
      this.forget(key, prev);
      this.state.delete(key);
      return { serviceChanged: true, endpointHosts: prev.endpoints.length > 0 ? hostsOf(prev) : [] };
    }
    this.podIndex.replace(key, prev?.pods ?? NONE, next.pods);
    this.nodeIndex.replace(key, prev?.nodes ?? NONE, next.nodes);
    this.pendingTotal += next.pending - (prev?.pending ?? 0);
    this.noPodTotal += next.noPodAddresses.size - (prev?.noPodAddresses.size ?? 0);
    let appeared = 0;
    for (const a of next.noPodAddresses) if (!prev?.noPodAddresses.has(a)) appeared++;
    if (appeared > 0) this.metrics.endpointsWithNoPodsAdded(appeared);
    this.state.set(key, next);
    const serviceChanged = prev?.service !== next.service || prev?.alias !== next.alias;
    const endpointHosts: string[] = [];
    if (prev && prev.service.hostname !== next.service.hostname && prev.endpoints.length > 0) endpointHosts.push(prev.service.hostname);
    if (prev?.endpoints !== next.endpoints && (next.endpoints.length > 0 || (prev?.endpoints.length ?? 0) > 0)) {
      endpointHosts.push(...hostsOf(next));
    }
    return { serviceChanged, endpointHosts };
  }

  private forget(key: string, prev: ServiceState): void {
    this.podIndex.replace(key, prev.pods, NONE);
    this.nodeIndex.replace(key, prev.nodes, NONE);
    this.pendingTotal -= prev.pending;
    this.noPodTotal -= prev.noPodAddresses.size;
  }

  /** The new state of one service; unchanged parts keep the previous objects. */
  private build(obj: V1Service, prev: ServiceState | undefined): ServiceState | undefined {
    const base = convertService(obj, this.settings);
    if (!base) return undefined;
    const ns = base.namespace;
    let endpoints: Endpoint[];
    let pods: ReadonlyArray<string> = NONE;
    let nodes: ReadonlyArray<string> = NONE;
    let pending = 0;
    let noPod: ReadonlyArray<string> = NONE;
    if (obj.spec?.type === 'ExternalName') {
      endpoints = externalNameEndpoints(obj, base, this.settings);
    } else {
      const raws = this.opts.useEndpointSlices
        ? rawFromSlices([...(this.slicesByService.get(`${ns}/${base.name}`)?.values() ?? [])])
        : rawFromEndpoints(this.caches.endpoints?.get(ns, base.name));
      const built = buildEndpoints(base, raws, this.lookup, this.settings);
      endpoints = [...built.endpoints];
      pods = built.pods;
      nodes = built.nodes;
      pending = built.pendingPods.length;
      noPod = built.noPodAddresses;
      if (this.opts.selectWorkloadEntries && this.store) {
        for (const e of workloadEntryEndpoints(obj, base, this.store.list<WorkloadEntry>('WorkloadEntry'), this.settings)) endpoints.push(e);
      }
    }
    const accounts = serviceAccountsOf(endpoints);
    const candidate = convertService(obj, this.settings, accounts) as Service;
    const service = prev && sameJson(prev.service, candidate) ? prev.service : candidate;
    const frozen = Object.freeze(endpoints);
    const eps = prev && sameJson(prev.endpoints, frozen) ? prev.endpoints : frozen;
    const alias = this.opts.mcsHost ? (prev?.alias && prev.service === service ? prev.alias : clustersetAlias(service)) : undefined;
    return { service, alias, endpoints: eps, pods, nodes, pending, noPodAddresses: new Set(noPod) };
  }
}
