/**
 * Combines registries behind the one contract; events are forwarded as they come.
 *
 * Kubernetes registries (one per cluster: the daemon's own and the remote ones) are merged: the same
 * hostname in the same namespace is ONE service whose endpoints are the union of every cluster's
 * endpoints (each keeps its cluster ID and network). The definition (ports, addresses) comes from
 * the config cluster (the daemon's own) when it has the service, else from the cluster with the
 * smallest ID. Other registries (ServiceEntry, Mock) keep the first-wins rule: when two of them, or
 * one of them and the Kubernetes group, define the same host in the same namespace, the earlier in
 * the list wins and the other definition is left out. The Kubernetes group sits where the first
 * Kubernetes registry sits in the constructor's list (first when there is none); registries added
 * later that are not Kubernetes ones come last.
 *
 * Registries can be added and removed while running (remote clusters); both emit a
 * `servicesChanged` event naming the hosts the registry had.
 *
 * Visibility of other clusters' endpoints (docs/adr/0018-remote-clusters.md):
 * - `mcsServiceDiscovery` (ENABLE_MCS_SERVICE_DISCOVERY): a remote cluster's endpoints of a service
 *   count only when that cluster exports the service (a ServiceExport of the same name/namespace);
 * - headless services (no virtual IP, not DNS) take only the config cluster's endpoints, or with
 *   `multiclusterHeadless` (ENABLE_MULTICLUSTER_HEADLESS) also other clusters' endpoints on a network
 *   of the config cluster's endpoints of that service (the unnamed network when it has none).
 */
import { EventHub, type RegistryEvent, type ServiceRegistry } from '../model/registry.js';
import type { Endpoint, Service } from '../model/service.js';
import { KubeRegistry } from './kube/registry.js';

/** Which services a cluster exports to the cluster set (MCS ServiceExports). */
export interface ExportedServices {
  isExported(namespace: string, name: string): boolean;
  /** Called with the namespace and name of a service whose export state changed. */
  onChange(handler: (namespace: string, name: string) => void): () => void;
}

/** How a registry takes part in the aggregate. */
export interface MemberOptions {
  /**
   * Merge with the other clusters' Kubernetes registries as cluster `clusterId`. Default: a
   * `KubeRegistry` is such a member under its id; any other registry is not.
   */
  readonly kubernetes?: { readonly clusterId: string; readonly exported?: ExportedServices } | false;
}

export interface AggregateOptions {
  /** The daemon's own cluster (`--clusterID`): its service definitions win; its endpoints are always visible. */
  readonly configClusterId?: string;
  /** ENABLE_MCS_SERVICE_DISCOVERY. */
  readonly mcsServiceDiscovery?: boolean;
  /** ENABLE_MULTICLUSTER_HEADLESS. */
  readonly multiclusterHeadless?: boolean;
}

interface Member {
  readonly registry: ServiceRegistry;
  readonly cluster?: { readonly clusterId: string; readonly exported?: ExportedServices };
  readonly unsubscribe: ReadonlyArray<() => void>;
}

/** One cluster's definition of a merged service. */
interface Part {
  readonly member: Member;
  readonly service: Service;
}

/** The parts of one merged service and the Service the aggregate shows for them. */
interface Group {
  readonly parts: ReadonlyArray<Part>;
  readonly merged: Service;
}

const keyOf = (s: Service): string => `${s.namespace}/${s.hostname}`;

function isHeadlessService(s: Service): boolean {
  return s.resolution !== 'DNS' && s.addresses.length === 0;
}

function sameList(a: ReadonlyArray<string>, b: ReadonlyArray<string>): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

export class AggregateRegistry implements ServiceRegistry {
  readonly id = 'Aggregate';
  private readonly hub = new EventHub<RegistryEvent>();
  private members: Member[] = [];
  /** How many of the other (non-Kubernetes) registries come before the Kubernetes group. */
  private kubeSlot = 0;
  private shadowed: string[] = [];
  private groups: Map<string, Group> | undefined;
  private started = false;

  constructor(registries: ReadonlyArray<ServiceRegistry>, private readonly opts: AggregateOptions = {}) {
    for (const r of registries) this.members.push(this.member(r, {}));
    const first = this.members.findIndex((m) => m.cluster);
    this.kubeSlot = first < 0 ? 0 : first;
  }

  async start(): Promise<void> {
    this.started = true;
    await Promise.all(this.members.map((m) => m.registry.start?.()));
  }

  stop(): void {
    this.started = false;
    for (const m of this.members) m.registry.stop?.();
  }

  /**
   * Adds a registry at run time (a registry with the same id is replaced; the replaced one is not
   * stopped). It is started when the aggregate runs. Emits `servicesChanged` for the hosts of both.
   */
  async addRegistry(registry: ServiceRegistry, options: MemberOptions = {}): Promise<void> {
    const previous = this.members.find((m) => m.registry.id === registry.id);
    const hosts = new Set(previous ? this.detach(previous) : []);
    const member = this.member(registry, options);
    if (this.started) await registry.start?.();
    this.members.push(member);
    for (const s of registry.services()) hosts.add(s.hostname);
    this.changed(registry.id, hosts);
  }

  /** Removes a registry (it is not stopped); its services and endpoints leave the aggregate. */
  removeRegistry(id: string): boolean {
    const member = this.members.find((m) => m.registry.id === id);
    if (!member) return false;
    this.changed(id, new Set(this.detach(member)));
    return true;
  }

  /** Ids of the registries, in order. */
  registryIds(): ReadonlyArray<string> {
    return this.members.map((m) => m.registry.id);
  }

  services(): ReadonlyArray<Service> {
    const groups = this.regroup();
    const seen = new Set<string>();
    const shadowed: string[] = [];
    const out: Service[] = [];
    const add = (s: Service, from: string): boolean => {
      const key = keyOf(s);
      if (seen.has(key)) {
        shadowed.push(`${key} (${from})`);
        return false;
      }
      seen.add(key);
      out.push(s);
      return true;
    };
    const addKube = (): void => {
      // A Kubernetes service shadowed by an earlier registry reports no endpoints either.
      for (const [key, g] of groups) if (!add(g.merged, g.merged.registry)) groups.delete(key);
    };
    let plain = 0;
    for (const m of this.members) {
      if (m.cluster) continue;
      if (plain++ === this.kubeSlot) addKube();
      for (const s of m.registry.services()) add(s, m.registry.id);
    }
    if (plain <= this.kubeSlot) addKube();
    this.shadowed = shadowed;
    return out;
  }

  /** The members' computations going on over turns, as one; undefined when none is. */
  computing(): Promise<void> | undefined {
    const busy = this.members.map((m) => m.registry.computing?.()).filter((c) => c !== undefined);
    return busy.length === 0 ? undefined : Promise.all(busy).then(() => undefined);
  }

  /** Services left out because an earlier registry defines the same host in the same namespace. */
  shadowedServices(): ReadonlyArray<string> {
    return this.shadowed;
  }

  endpoints(service: Service): ReadonlyArray<Endpoint> {
    const group = (this.groups ?? this.regroup()).get(keyOf(service));
    // The model may hand back copies of the services: match by host, namespace and registry.
    if (group && group.parts.some((p) => p.service.registry === service.registry)) return this.union(group);
    return this.members.find((m) => !m.cluster && m.registry.id === service.registry)?.registry.endpoints(service) ?? [];
  }

  onEvent(handler: (event: RegistryEvent) => void): () => void {
    return this.hub.on(handler);
  }

  hasSynced(): boolean {
    return this.members.every((m) => m.registry.hasSynced());
  }

  // ---- internals ----

  private member(registry: ServiceRegistry, options: MemberOptions): Member {
    const cluster =
      options.kubernetes === false
        ? undefined
        : (options.kubernetes ?? (registry instanceof KubeRegistry ? { clusterId: registry.id } : undefined));
    const unsubscribe = [
      registry.onEvent((e) => {
        if (e.servicesChanged) this.groups = undefined;
        this.hub.emit(e);
      }),
    ];
    if (cluster?.exported) {
      unsubscribe.push(
        cluster.exported.onChange((namespace, name) => {
          const hosts = registry.services().filter((s) => s.namespace === namespace && s.name === name).map((s) => s.hostname);
          if (hosts.length > 0 && this.opts.mcsServiceDiscovery) this.hub.emit({ registry: registry.id, servicesChanged: false, endpointHosts: hosts });
        }),
      );
    }
    return { registry, cluster, unsubscribe };
  }

  /** Takes a member out; returns the hosts it had. */
  private detach(member: Member): string[] {
    const index = this.members.indexOf(member);
    const plainBefore = this.members.slice(0, index).filter((m) => !m.cluster).length;
    this.members.splice(index, 1);
    if (!member.cluster && plainBefore < this.kubeSlot) this.kubeSlot--;
    for (const u of member.unsubscribe) u();
    return member.registry.services().map((s) => s.hostname);
  }

  private changed(registry: string, hosts: ReadonlySet<string>): void {
    this.groups = undefined;
    this.hub.emit({ registry, servicesChanged: true, endpointHosts: [...hosts] });
  }

  /** Kubernetes members, the config cluster first, then by cluster ID. */
  private clusterMembers(): Member[] {
    const own = this.opts.configClusterId;
    const rank = (m: Member): string => (m.cluster?.clusterId === own ? '' : `~${m.cluster?.clusterId ?? ''}`);
    return this.members.filter((m) => m.cluster).sort((a, b) => (rank(a) < rank(b) ? -1 : rank(a) > rank(b) ? 1 : 0));
  }

  private regroup(): Map<string, Group> {
    const previous = this.groups;
    const parts = new Map<string, Part[]>();
    for (const member of this.clusterMembers()) {
      for (const service of member.registry.services()) {
        const key = keyOf(service);
        const list = parts.get(key);
        if (list) list.push({ member, service });
        else parts.set(key, [{ member, service }]);
      }
    }
    const groups = new Map<string, Group>();
    for (const [key, list] of parts) {
      const winner = list[0].service;
      let merged = winner;
      if (list.length > 1) {
        const accounts = [...new Set(list.flatMap((p) => p.service.serviceAccounts))].sort();
        if (!sameList(accounts, winner.serviceAccounts)) {
          const before = previous?.get(key)?.merged;
          const candidate = { ...winner, serviceAccounts: accounts };
          // Keep the same object while nothing changed, so the model sees no service change.
          merged = before && JSON.stringify(before) === JSON.stringify(candidate) ? before : Object.freeze(candidate);
        }
      }
      groups.set(key, { parts: list, merged });
    }
    this.groups = groups;
    return groups;
  }

  private union(group: Group): Endpoint[] {
    const own = this.opts.configClusterId ?? group.parts[0].member.cluster?.clusterId;
    const headless = isHeadlessService(group.merged);
    // Other clusters' endpoints of ports the winning definition lacks have no service port to serve.
    const portNames = new Set(group.merged.ports.map((p) => p.name));
    const out: Endpoint[] = [];
    let ownNetworks: Set<string> | undefined;
    for (const { member, service } of group.parts) {
      let endpoints = member.registry.endpoints(service);
      if (member.cluster?.clusterId === own) {
        for (const e of endpoints) out.push(e);
        continue;
      }
      if (group.parts[0].member !== member) endpoints = endpoints.filter((e) => portNames.has(e.servicePortName));
      if (this.opts.mcsServiceDiscovery && !member.cluster?.exported?.isExported(service.namespace, service.name)) continue;
      if (!headless) {
        for (const e of endpoints) out.push(e);
        continue;
      }
      if (!this.opts.multiclusterHeadless) continue;
      if (!ownNetworks) {
        const ownPart = group.parts.find((p) => p.member.cluster?.clusterId === own);
        const nets = ownPart ? ownPart.member.registry.endpoints(ownPart.service).map((e) => e.network) : [];
        ownNetworks = new Set(nets.length > 0 ? nets : ['']);
      }
      const networks = ownNetworks;
      for (const e of endpoints) if (networks.has(e.network)) out.push(e);
    }
    return out;
  }
}
