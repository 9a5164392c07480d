import type { ConfigObject, ConfigStore } from '../config/types.js';
import type { DestinationRule, Gateway, HTTPRoute, Sidecar, VirtualService } from '../config/spec-types.js';
import { ChangeSet, Dep, DerivedMemo, recordDep, type DepKey, type EndpointSource } from './derived.js';
import { hostMatches, hostSpecificity, resolveHost, visibleTo } from './host.js';
import type { MeshSettings } from './mesh-settings.js';
import type { Proxy } from './proxy.js';
import { labelsMatch, type Service } from './service.js';
import { EMPTY_JWKS_VIEW, type JwksEntry, type JwksView } from './policy/jwks.js';
import { PolicyIndex, policyInputs as policyInputsOf } from './policy/index.js';
import { CACERT_SUFFIX, CredentialSet, type CredentialLookup } from './credentials.js';

/** A VirtualService after host resolution, gateway resolution and delegate merging. */
export interface ResolvedVirtualService {
  readonly source: ConfigObject<VirtualService>;
  readonly namespace: string;
  readonly hosts: ReadonlyArray<string>;
  /** `mesh` or `namespace/name` of gateways. */
  readonly gateways: ReadonlyArray<string>;
  readonly exportTo: ReadonlyArray<string>;
  readonly http: ReadonlyArray<HTTPRoute>;
  readonly spec: VirtualService;
}

export interface ResolvedDestinationRule {
  readonly source: ConfigObject<DestinationRule>;
  readonly namespace: string;
  readonly host: string;
  readonly exportTo: ReadonlyArray<string>;
  readonly spec: DestinationRule;
}

export interface FeatureFlags {
  readonly virtualServiceDelegate: boolean;
  readonly destinationRuleInheritance: boolean;
  readonly scopeGatewayToNamespace: boolean;
}

export const DEFAULT_FEATURES: FeatureFlags = Object.freeze({
  virtualServiceDelegate: true,
  destinationRuleInheritance: false,
  scopeGatewayToNamespace: false,
});

export interface PushContextInput {
  readonly version: string;
  readonly configs: ConfigStore;
  readonly services: ReadonlyArray<Service>;
  readonly mesh: MeshSettings;
  readonly features?: FeatureFlags;
  /** Automatic addresses by hostname (model/address-allocation.ts); none when absent. */
  readonly autoAddresses?: ReadonlyMap<string, string>;
  /**
   * The snapshot this one follows: values derived from it that read nothing the differences touch
   * are carried over (model/derived.ts).
   */
  readonly previous?: PushContext;
  /** Gateway credentials (Kubernetes Secrets named by `credentialName`); none when absent. */
  readonly credentials?: CredentialSet;
  /** Public key sets fetched for `jwksUri`s (model/policy/jwks.ts); none when absent. */
  readonly jwks?: JwksView;
}

const byCreation = (a: ConfigObject, b: ConfigObject): number =>
  (a.meta.creationTimestamp ?? '').localeCompare(b.meta.creationTimestamp ?? '') ||
  a.meta.namespace.localeCompare(b.meta.namespace) ||
  a.meta.name.localeCompare(b.meta.name);

/**
 * The immutable view of configuration and services that one push works on. Built once per full
 * push; endpoints live outside it (see EndpointIndex) so endpoint-only changes keep it.
 *
 * Its lookups record what they read as dependency keys of the derived value being computed
 * (model/derived.ts), and a snapshot built after another one knows which keys the differences
 * between them touch (`changes`), so that derived values that read nothing else are carried over.
 */
export class PushContext {
  private readonly versionString: string;
  readonly mesh: MeshSettings;
  readonly features: FeatureFlags;
  /** All services, sorted by hostname then namespace. */
  private readonly allServices: ReadonlyArray<Service>;
  private readonly servicesByHost: ReadonlyMap<string, ReadonlyArray<Service>>;
  private readonly vsByGateway: ReadonlyMap<string, ReadonlyArray<ResolvedVirtualService>>;
  /** Mesh-bound VirtualServices by exact host, and those with a wildcard host (creation order). */
  private readonly meshVsByHost: ReadonlyMap<string, ReadonlyArray<ResolvedVirtualService>>;
  private readonly meshVsWildcard: ReadonlyArray<ResolvedVirtualService>;
  /** Rules per namespace, by exact host and with a wildcard host (creation order). */
  private readonly destinationRulesByNamespace: ReadonlyMap<string, HostIndex<ResolvedDestinationRule>>;
  /** Rules with a workload selector make the lookup depend on the client's labels (no sharing). */
  private readonly destinationRulesSelectWorkloads: boolean;
  private readonly gatewayList: ReadonlyArray<ConfigObject<Gateway>>;
  private readonly sidecars: ReadonlyArray<ConfigObject<Sidecar>>;
  /** Values derived from this snapshot, with what they read (scoped service lists, route tables). */
  readonly derived: DerivedMemo;
  /** What differs from the snapshot this one follows (ChangeSet.ALL for the first one). */
  readonly changes: ChangeSet;
  readonly virtualServiceCount: number;
  /** True when some route matches on the client's labels or namespace: routes are then per client. */
  readonly usesSourceMatch: boolean;
  /** Security policies by workload (docs/adr/0080). */
  readonly policies: PolicyIndex;
  /** Resolved VirtualServices by their source object (change sets). */
  private readonly resolvedBySource: ReadonlyMap<ConfigObject<VirtualService>, ResolvedVirtualService>;
  private readonly sources: { readonly vs: ReadonlyArray<ConfigObject<VirtualService>>; readonly dr: ReadonlyArray<ConfigObject<DestinationRule>> };
  /**
   * The inputs the indexes above were built from, as given (the registry's service list, the store's
   * lists by kind): a next snapshot given the same object shares the index instead of building it.
   */
  private readonly inputs: SnapshotInputs;
  /** The store's lists the policy index was built from (policy/index.ts policyInputs). */
  private readonly policyInputs: ReadonlyArray<ReadonlyArray<ConfigObject>>;
  private readonly autoAddresses: ReadonlyMap<string, string>;
  private readonly credentialSet: CredentialSet;
  /** `credentialName`s of DestinationRules (TLS origination at gateways), in creation order. */
  private readonly drCredentials: ReadonlyArray<string>;
  private readonly jwksView: JwksView;

  private constructor(input: PushContextInput) {
    this.versionString = input.version;
    this.mesh = input.mesh;
    this.features = input.features ?? DEFAULT_FEATURES;
    // Each index is built from one input; an input that is the same object as the previous
    // snapshot's (the store keeps its list of a kind until that kind changes) lends its index, so a
    // rebuild costs what changed, not the whole mesh (docs/adr/0206).
    const prev = input.previous as unknown as (Internals & { readonly mesh: MeshSettings; readonly features: FeatureFlags }) | undefined;
    const sameSettings = prev !== undefined && prev.mesh === this.mesh && prev.features === this.features;
    const inputs: SnapshotInputs = {
      services: input.services,
      vs: input.configs.list<VirtualService>('VirtualService'),
      dr: input.configs.list<DestinationRule>('DestinationRule'),
      gateways: input.configs.list<Gateway>('Gateway'),
      sidecars: input.configs.list<Sidecar>('Sidecar'),
    };
    this.inputs = inputs;
    if (prev && prev.inputs.services === inputs.services) {
      this.allServices = prev.allServices;
      this.servicesByHost = prev.servicesByHost;
    } else {
      const sorted = [...inputs.services].sort((a, b) => (a.hostname < b.hostname ? -1 : a.hostname > b.hostname ? 1 : a.namespace < b.namespace ? -1 : a.namespace > b.namespace ? 1 : 0));
      const byHost = new Map<string, Service[]>();
      for (const s of sorted) pushTo(byHost, s.hostname, s);
      this.allServices = sorted;
      this.servicesByHost = byHost;
    }
    let vss: ReadonlyArray<ConfigObject<VirtualService>>;
    if (sameSettings && prev.inputs.vs === inputs.vs) {
      vss = prev.sources.vs;
      this.vsByGateway = prev.vsByGateway;
      this.meshVsByHost = prev.meshVsByHost;
      this.meshVsWildcard = prev.meshVsWildcard;
      this.resolvedBySource = prev.resolvedBySource;
      this.usesSourceMatch = prev.usesSourceMatch;
    } else {
      vss = [...inputs.vs].sort(byCreation);
      this.usesSourceMatch = vss.some((vs) => (vs.spec.http ?? []).some((r) => (r.match ?? []).some((m) => m.sourceLabels || m.sourceNamespace)));
      const index = this.indexVirtualServices(vss);
      this.vsByGateway = index.byGateway;
      this.meshVsByHost = index.meshByHost;
      this.meshVsWildcard = index.meshWildcard;
      this.resolvedBySource = index.bySource;
    }
    this.virtualServiceCount = vss.length;
    if (sameSettings && prev.inputs.dr === inputs.dr) {
      this.sources = { vs: vss, dr: prev.sources.dr };
      this.destinationRulesByNamespace = prev.destinationRulesByNamespace;
      this.destinationRulesSelectWorkloads = prev.destinationRulesSelectWorkloads;
      this.drCredentials = prev.drCredentials;
    } else {
      const drs = [...inputs.dr].sort(byCreation);
      this.sources = { vs: vss, dr: drs };
      const resolved = drs.map((c) => ({
        source: c,
        namespace: c.meta.namespace,
        host: resolveHost(c.spec.host ?? '', c.meta.namespace, this.mesh.domain),
        exportTo: c.spec.exportTo && c.spec.exportTo.length > 0 ? c.spec.exportTo : this.mesh.defaultDestinationRuleExportTo,
        spec: c.spec,
      }));
      this.destinationRulesSelectWorkloads = resolved.some((d) => d.spec.workloadSelector?.matchLabels);
      const byNamespace = new Map<string, HostIndex<ResolvedDestinationRule>>();
      for (const dr of resolved) {
        let index = byNamespace.get(dr.namespace);
        if (!index) {
          index = { exact: new Map(), wildcard: [] };
          byNamespace.set(dr.namespace, index);
        }
        if (isWildcard(dr.host)) index.wildcard.push(dr);
        else pushTo(index.exact, dr.host, dr);
      }
      this.destinationRulesByNamespace = byNamespace;
      this.drCredentials = [...new Set(drs.flatMap((c) => destinationRuleCredentialNames(c.spec)))];
    }
    this.autoAddresses = input.autoAddresses ?? new Map();
    this.gatewayList = prev && prev.inputs.gateways === inputs.gateways ? prev.gatewayList : [...inputs.gateways].sort(byCreation);
    this.sidecars = prev && prev.inputs.sidecars === inputs.sidecars ? prev.sidecars : [...inputs.sidecars].sort(byCreation);
    // the policy index reads the policy kinds, the mesh settings and, for its diagnostics, the
    // services, DestinationRules and Gateways: the same inputs, the same index (and no new diagnostics)
    const policyInputs = policyInputsOf(input.configs);
    const reusePolicies =
      sameSettings &&
      prev.policyInputs.every((list, i) => list === policyInputs[i]) &&
      prev.inputs.services === inputs.services &&
      prev.inputs.dr === inputs.dr &&
      prev.inputs.gateways === inputs.gateways;
    this.policyInputs = policyInputs;
    this.policies = reusePolicies
      ? prev.policies
      : new PolicyIndex({
          configs: input.configs,
          mesh: this.mesh,
          serviceExists: (service, port) => {
            const slash = service.indexOf('/');
            const ns = slash < 0 ? undefined : service.slice(0, slash);
            return (this.servicesByHost.get(service.slice(slash + 1)) ?? []).some((s) => (ns === undefined || s.namespace === ns) && s.ports.some((p) => p.port === port));
          },
        });
    this.jwksView = input.jwks ?? EMPTY_JWKS_VIEW;
    this.credentialSet = input.credentials ?? CredentialSet.EMPTY;
    this.changes = input.previous ? changesBetween(input.previous, this) : ChangeSet.ALL;
    this.derived = new DerivedMemo(input.previous ? { memo: input.previous.derived, changes: this.changes } : undefined);
  }

  static build(input: PushContextInput): PushContext {
    return new PushContext(input);
  }

  /** What the JWKS resolver holds for a `jwksUri`; undefined while its first fetch runs (docs/adr/0100). */
  jwks(uri: string): JwksEntry | undefined {
    recordDep(Dep.jwks(uri));
    return this.jwksView.get(uri);
  }

  /** The snapshot's version; values that embed it depend on every snapshot. */
  get version(): string {
    recordDep(Dep.version);
    return this.versionString;
  }

  /** All services, sorted by hostname then namespace. */
  get services(): ReadonlyArray<Service> {
    recordDep(Dep.allServices);
    return this.allServices;
  }

  /**
   * The addresses through which `proxy` reaches `service`: those the service declares, else, for a
   * proxy whose agent resolves names to automatic addresses, the service's automatic one.
   */
  serviceAddresses(service: Service, proxy: Pick<Proxy, 'dnsAutoAllocate'>): ReadonlyArray<string> {
    if (service.addresses.length > 0 || !proxy.dnsAutoAllocate) return service.addresses;
    recordDep(Dep.service(service.hostname));
    const a = this.autoAddresses.get(service.hostname);
    return a ? [a] : [];
  }

  /** The automatic address of a hostname, if it has one (name tables). */
  autoAddress(hostname: string): string | undefined {
    recordDep(Dep.service(hostname));
    return this.autoAddresses.get(hostname);
  }

  /**
   * Key under which proxies get the same listeners and routes: the scope, and whether hosts without
   * addresses are routed by their automatic addresses.
   */
  routingScopeKey(proxy: Proxy): string {
    return proxy.dnsAutoAllocate && this.autoAddresses.size > 0 ? `${this.scopeKey(proxy)}|dns` : this.scopeKey(proxy);
  }

  /** Gateway resources, oldest first. */
  get gateways(): ReadonlyArray<ConfigObject<Gateway>> {
    recordDep(Dep.gateways);
    return this.gatewayList;
  }

  private indexVirtualServices(vss: ReadonlyArray<ConfigObject<VirtualService>>): {
    byGateway: Map<string, ResolvedVirtualService[]>;
    meshByHost: Map<string, ResolvedVirtualService[]>;
    meshWildcard: ResolvedVirtualService[];
    bySource: Map<ConfigObject<VirtualService>, ResolvedVirtualService>;
  } {
    const out = { byGateway: new Map<string, ResolvedVirtualService[]>(), meshByHost: new Map<string, ResolvedVirtualService[]>(), meshWildcard: [] as ResolvedVirtualService[], bySource: new Map<ConfigObject<VirtualService>, ResolvedVirtualService>() };
    const delegates = new Map<string, ConfigObject<VirtualService>>();
    for (const vs of vss) {
      if (!vs.spec.hosts || vs.spec.hosts.length === 0) delegates.set(`${vs.meta.namespace}/${vs.meta.name}`, vs);
    }
    for (const vs of vss) {
      if (!vs.spec.hosts || vs.spec.hosts.length === 0) continue;
      const ns = vs.meta.namespace;
      const gateways = (vs.spec.gateways && vs.spec.gateways.length > 0 ? vs.spec.gateways : ['mesh']).map((g) =>
        g === 'mesh' || g.includes('/') ? g : `${ns}/${g}`,
      );
      const resolved: ResolvedVirtualService = {
        source: vs,
        namespace: ns,
        hosts: vs.spec.hosts.map((h) => resolveHost(h, ns, this.mesh.domain)),
        gateways,
        exportTo: vs.spec.exportTo && vs.spec.exportTo.length > 0 ? vs.spec.exportTo : this.mesh.defaultVirtualServiceExportTo,
        http: this.mergeDelegates(vs.spec.http ?? [], ns, delegates),
        spec: vs.spec,
      };
      out.bySource.set(vs, resolved);
      for (const g of gateways) pushTo(out.byGateway, g, resolved);
      if (gateways.includes('mesh')) {
        for (const h of new Set(resolved.hosts.filter((x) => !isWildcard(x)))) pushTo(out.meshByHost, h, resolved);
        if (resolved.hosts.some(isWildcard)) out.meshWildcard.push(resolved);
      }
    }
    return out;
  }

  /** Replaces each delegating route with the delegate's routes, each scoped by the root route's match. */
  private mergeDelegates(
    routes: ReadonlyArray<HTTPRoute>,
    ns: string,
    delegates: ReadonlyMap<string, ConfigObject<VirtualService>>,
  ): ReadonlyArray<HTTPRoute> {
    if (!routes.some((r) => r.delegate)) return routes;
    const out: HTTPRoute[] = [];
    for (const r of routes) {
      if (!r.delegate) {
        out.push(r);
        continue;
      }
      if (!this.features.virtualServiceDelegate) continue;
      const key = `${r.delegate.namespace || ns}/${r.delegate.name}`;
      const d = delegates.get(key);
      if (!d) continue;
      for (const dr of d.spec.http ?? []) {
        const rootMatches = r.match && r.match.length > 0 ? r.match : [undefined];
        const childMatches = dr.match && dr.match.length > 0 ? dr.match : [undefined];
        const merged = [];
        for (const rm of rootMatches) {
          for (const cm of childMatches) {
            if (!rm && !cm) continue;
            merged.push({ ...(rm ?? {}), ...(cm ?? {}), headers: { ...(rm?.headers ?? {}), ...(cm?.headers ?? {}) } });
          }
        }
        // short destination hosts of a delegate are written in the delegate's namespace, not the root's
        const dns = d.meta.namespace;
        const qualify = <D extends { host: string }>(dest: D): D => ({ ...dest, host: resolveHost(dest.host, dns, this.mesh.domain) });
        out.push({
          ...dr,
          match: merged.length > 0 ? merged : undefined,
          ...(dr.route ? { route: dr.route.map((rd) => ({ ...rd, destination: qualify(rd.destination) })) } : {}),
          ...(dr.mirror ? { mirror: qualify(dr.mirror) } : {}),
          ...(dr.mirrors ? { mirrors: dr.mirrors.map((mp) => ({ ...mp, destination: qualify(mp.destination) })) } : {}),
        });
      }
    }
    return out;
  }

  /**
   * The mesh service a `jwksUri` points at (its host is a service hostname with that port), or
   * undefined: with DISC_JWT_ENABLE_REMOTE_JWKS the proxy fetches such key sets itself through the
   * service's outbound cluster (docs/adr/0100).
   */
  jwksInMesh(uri: string): { readonly host: string; readonly port: number } | undefined {
    let u: URL;
    try {
      u = new URL(uri);
    } catch {
      return undefined;
    }
    const port = u.port !== '' ? Number(u.port) : u.protocol === 'https:' ? 443 : 80;
    const host = u.hostname;
    const found = this.servicesForHost(host).some((s) => s.ports.some((p) => p.port === port));
    return found ? { host, port } : undefined;
  }

  /** Services with this hostname (one per namespace that defines it). */
  servicesForHost(hostname: string): ReadonlyArray<Service> {
    recordDep(Dep.service(hostname));
    return this.servicesByHost.get(hostname) ?? [];
  }

  /** The service a client in `namespace` reaches for `hostname`: its own namespace's first, then the oldest visible. */
  serviceForHost(hostname: string, namespace: string): Service | undefined {
    recordDep(Dep.service(hostname));
    const list = this.servicesByHost.get(hostname);
    if (!list) return undefined;
    return list.find((s) => s.namespace === namespace && this.serviceVisible(s, namespace)) ?? list.find((s) => this.serviceVisible(s, namespace));
  }

  serviceVisible(s: Service, namespace: string): boolean {
    return visibleTo(s.exportTo ?? this.mesh.defaultServiceExportTo, s.namespace, namespace);
  }

  /** The Sidecar resource scoping this proxy: a workload-selecting one, else the namespace's default, else the root namespace's. */
  sidecarFor(proxy: Proxy): ConfigObject<Sidecar> | undefined {
    recordDep(Dep.sidecars);
    if (this.sidecars.length === 0) return undefined;
    const inNs = this.sidecars.filter((s) => s.meta.namespace === proxy.namespace);
    const selecting = inNs.find((s) => s.spec.workloadSelector?.labels && labelsMatch(s.spec.workloadSelector.labels, proxy.labels));
    if (selecting) return selecting;
    const nsDefault = inNs.find((s) => !s.spec.workloadSelector?.labels);
    if (nsDefault) return nsDefault;
    return this.sidecars.find((s) => s.meta.namespace === this.mesh.rootNamespace && !s.spec.workloadSelector?.labels);
  }

  /** Key under which proxies see the same outbound world (namespace + Sidecar scope). */
  scopeKey(proxy: Proxy): string {
    const sc = this.sidecarFor(proxy);
    const base = `${proxy.namespace}|${sc ? `${sc.meta.namespace}/${sc.meta.name}` : ''}`;
    // DestinationRules with a workloadSelector apply to some proxies of a namespace only: those
    // proxies see other clusters (and credentials, docs/adr/0152) than their neighbours
    return this.destinationRulesSelectWorkloads ? `${base}${this.workloadRulesKey(proxy)}` : base;
  }

  /** `|wdr:` and the DestinationRules with a workloadSelector that select `proxy` (its namespace's); '' when none. */
  private workloadRulesKey(proxy: Pick<Proxy, 'namespace' | 'labels'>): string {
    // asked on every generation of a proxy: once per labels object and namespace per snapshot
    const byNs = this.workloadRuleKeys.get(proxy.labels);
    const known = byNs?.get(proxy.namespace);
    if (known !== undefined) return known;
    const rules = this.workloadRules(proxy);
    const key = rules.length === 0 ? '' : `|wdr:${rules.map((r) => r.source.meta.name).join(',')}`;
    if (byNs) byNs.set(proxy.namespace, key);
    else this.workloadRuleKeys.set(proxy.labels, new Map([[proxy.namespace, key]]));
    return key;
  }
  private readonly workloadRuleKeys = new WeakMap<object, Map<string, string>>();

  /** The DestinationRules with a workloadSelector that select `proxy` (they live in its namespace). */
  private workloadRules(proxy: Pick<Proxy, 'namespace' | 'labels'>): ReadonlyArray<ResolvedDestinationRule> {
    if (!this.destinationRulesSelectWorkloads) return [];
    const index = this.destinationRulesByNamespace.get(proxy.namespace);
    if (!index) return [];
    const out: ResolvedDestinationRule[] = [];
    for (const list of [...index.exact.values(), index.wildcard]) {
      for (const dr of list) {
        const sel = dr.spec.workloadSelector?.matchLabels;
        if (sel && Object.keys(sel).length > 0 && labelsMatch(sel, proxy.labels)) out.push(dr);
      }
    }
    return out;
  }

  /** Services the proxy may reach: exportTo visibility, then the Sidecar's egress hosts. One copy per scope per push. */
  visibleServices(proxy: Proxy): ReadonlyArray<Service> {
    return this.memoize(`visible|${this.scopeKey(proxy)}`, () => this.computeVisibleServices(proxy));
  }

  private computeVisibleServices(proxy: Proxy): ReadonlyArray<Service> {
    const sc = this.sidecarFor(proxy);
    const egressHosts = sc?.spec.egress?.flatMap((e) => e.hosts ?? []) ?? [];
    const seen = new Set<string>();
    const out: Service[] = [];
    for (const s of this.services) {
      if (seen.has(s.hostname)) continue;
      if (!this.serviceVisible(s, proxy.namespace)) continue;
      if (sc && !egressAllows(egressHosts, s, proxy.namespace)) continue;
      // one service per hostname: prefer the proxy's own namespace (the whole list read every service)
      const list = this.servicesByHost.get(s.hostname)!;
      const chosen = (list.length === 1 ? list[0] : this.serviceForHost(s.hostname, proxy.namespace)) ?? s;
      seen.add(s.hostname);
      out.push(chosen);
    }
    return out;
  }

  /** VirtualServices bound to `gateway` (`mesh` or `ns/name`) that a proxy in `namespace` may see. */
  virtualServices(namespace: string, gateway: string): ReadonlyArray<ResolvedVirtualService> {
    recordDep(Dep.gatewayVirtualServices(gateway));
    const list = this.vsByGateway.get(gateway) ?? [];
    if (gateway !== 'mesh') return list;
    return list.filter((vs) => visibleTo(vs.exportTo, vs.namespace, namespace));
  }

  /**
   * The VirtualService for `hostname` on the mesh gateway as seen from `namespace`: the most specific
   * host wins (an exact host beats any wildcard), then the oldest. Indexed by host, memoized.
   */
  virtualServiceForHost(namespace: string, hostname: string): ResolvedVirtualService | undefined {
    // asked several times per host of every scope: a second ask is two map reads (keys as below)
    let byHost = this.vsByNamespace.get(namespace);
    const known = byHost?.get(hostname);
    if (known) {
      for (const d of known.deps) recordDep(d);
      return known.vs;
    }
    const vs = this.lookUpVirtualService(namespace, hostname);
    const exact = vs !== undefined && vs.hosts.includes(hostname);
    if (!byHost) this.vsByNamespace.set(namespace, (byHost = new Map()));
    byHost.set(hostname, { vs, deps: exact ? [Dep.virtualService(hostname)] : [Dep.virtualService(hostname), Dep.wildcardVirtualServices] });
    return vs;
  }
  /** virtualServiceForHost's answers by namespace and host, with the keys lookUpVirtualService records for them. */
  private readonly vsByNamespace = new Map<string, Map<string, { vs: ResolvedVirtualService | undefined; deps: ReadonlyArray<DepKey> }>>();

  private lookUpVirtualService(namespace: string, hostname: string): ResolvedVirtualService | undefined {
    return this.memoize(`vsh|${namespace}|${hostname}`, () => {
      recordDep(Dep.virtualService(hostname));
      for (const vs of this.meshVsByHost.get(hostname) ?? []) if (visibleTo(vs.exportTo, vs.namespace, namespace)) return vs;
      // an exact host beats any wildcard: only without one do wildcard hosts count
      recordDep(Dep.wildcardVirtualServices);
      let best: ResolvedVirtualService | undefined;
      let bestScore = -1;
      for (const vs of this.meshVsWildcard) {
        if (!visibleTo(vs.exportTo, vs.namespace, namespace)) continue;
        for (const h of vs.hosts) {
          if (!isWildcard(h) || !hostMatches(h, hostname)) continue;
          const score = hostSpecificity(h);
          if (score > bestScore) {
            best = vs;
            bestScore = score;
          }
        }
      }
      return best;
    });
  }

  /**
   * The value derived from this snapshot under `key`, computed once and kept with what it read (a
   * later snapshot takes it over when none of that changed). Keys name what the value depends on
   * besides what it reads through this snapshot (a proxy's namespace, a requested name set).
   * `endpoints`: the current endpoint index, for values that read endpoints.
   */
  memoize<T>(key: string, compute: () => T, endpoints?: EndpointSource): T {
    return this.derived.get(key, compute, endpoints);
  }

  /**
   * A list derived element by element (DerivedMemo.list): later snapshots and endpoint indexes
   * rebuild only the items whose inputs changed; under a deadline the build is spread over turns.
   */
  memoizeList<I, V>(
    key: string,
    opts: { reuseKey?: string; endpoints?: EndpointSource; owner?: object },
    items: () => ReadonlyArray<I>,
    itemKey: (item: I) => string,
    element: (item: I) => ReadonlyArray<V>,
  ): ReadonlyArray<V> {
    return this.derived.list(key, opts, items, itemKey, element);
  }

  /**
   * The destination rule that applies to traffic from `proxy` to `hostname`: the proxy's namespace first,
   * then the service's namespace, then the root namespace. With inheritance on, settings of a narrower
   * rule are laid over the mesh-wide and namespace-wide ones.
   */
  destinationRule(proxy: Pick<Proxy, 'namespace' | 'labels'>, service: Pick<Service, 'hostname' | 'namespace'>): ResolvedDestinationRule | undefined {
    const memoKey = `dr|${proxy.namespace}|${service.namespace}|${service.hostname}`;
    const applicable = (dr: ResolvedDestinationRule): boolean =>
      hostMatches(dr.host, service.hostname) &&
      (!dr.spec.workloadSelector?.matchLabels || (dr.namespace === proxy.namespace && labelsMatch(dr.spec.workloadSelector.matchLabels, proxy.labels)));
    const hasSelector = this.destinationRulesSelectWorkloads;
    if (hasSelector) return this.findDestinationRule(proxy, service, applicable);
    // Asked for every cluster, load assignment and route of every scope: a second ask for the same
    // service object and namespace is two map reads with no key to build, recording what the first read.
    let byNs = this.ruleByService.get(service);
    const known = byNs?.get(proxy.namespace);
    if (known) {
      recordDep(known.dep);
      recordDep(Dep.wildcardDestinationRules);
      return known.rule;
    }
    const rule = this.memoize(memoKey, () => this.findDestinationRule(proxy, service, applicable));
    if (!byNs) this.ruleByService.set(service, (byNs = new Map()));
    byNs.set(proxy.namespace, { rule, dep: Dep.destinationRule(service.hostname) });
    return rule;
  }
  /** destinationRule's answers by service object and proxy namespace (what findDestinationRule reads besides: the two keys kept). */
  private readonly ruleByService = new WeakMap<object, Map<string, { rule: ResolvedDestinationRule | undefined; dep: DepKey }>>();

  private findDestinationRule(
    proxy: Pick<Proxy, 'namespace' | 'labels'>,
    service: Pick<Service, 'hostname' | 'namespace'>,
    applicable: (dr: ResolvedDestinationRule) => boolean,
  ): ResolvedDestinationRule | undefined {
    recordDep(Dep.destinationRule(service.hostname));
    recordDep(Dep.wildcardDestinationRules);
    const pick = (ns: string): ResolvedDestinationRule | undefined => {
      const index = this.destinationRulesByNamespace.get(ns);
      if (!index) return undefined;
      let best: ResolvedDestinationRule | undefined;
      let score = -1;
      // exact hosts score above every wildcard, so looking at them first keeps "most specific, then oldest"
      for (const list of [index.exact.get(service.hostname), index.wildcard]) {
        for (const dr of list ?? []) {
          if (!applicable(dr)) continue;
          if (!visibleTo(dr.exportTo, dr.namespace, proxy.namespace)) continue;
          const s = hostSpecificity(dr.host) + (dr.spec.workloadSelector?.matchLabels ? 0.5 : 0);
          if (s > score) {
            best = dr;
            score = s;
          }
        }
      }
      return best;
    };
    const chain = [pick(proxy.namespace), proxy.namespace !== service.namespace ? pick(service.namespace) : undefined, pick(this.mesh.rootNamespace)];
    const found = chain.filter((d): d is ResolvedDestinationRule => d !== undefined);
    let result: ResolvedDestinationRule | undefined = found[0];
    if (this.features.destinationRuleInheritance && found.length > 1) {
      // mesh-wide → namespace → workload: the narrower rule's settings win field by field
      const layers = [...found].reverse();
      let merged: DestinationRule = { host: service.hostname };
      for (const l of layers) {
        merged = {
          ...merged,
          ...l.spec,
          trafficPolicy: l.spec.trafficPolicy ? { ...(merged.trafficPolicy ?? {}), ...l.spec.trafficPolicy } : merged.trafficPolicy,
          subsets: l.spec.subsets ?? merged.subsets,
        };
      }
      result = { ...found[0], spec: merged };
    }
    return result;
  }

  /**
   * The Secret `namespace/name` named by a `credentialName` (docs/adr/0105): pending while it loads,
   * missing, or present. Records the Secret as a dependency of the value being computed.
   */
  credential(namespace: string, name: string): CredentialLookup {
    recordDep(Dep.credential(`${namespace}/${name}`));
    return this.credentialSet.get(namespace, name);
  }

  /** `credentialName`s written in DestinationRules (any namespace). */
  destinationRuleCredentials(): ReadonlyArray<string> {
    recordDep(Dep.wildcardDestinationRules);
    return this.drCredentials;
  }

  /**
   * The Secrets a gateway proxy's configuration names, as `namespace/name` in the proxy's namespace
   * (the `credentialName`s of the Gateway servers that select it and of DestinationRules), each with
   * its `-cacert` companion; names of another namespace (`ns/name`) are never read for it.
   */
  credentialReferences(proxy: Proxy): string[] {
    if (proxy.type === 'sidecar') return this.sidecarCredentialReferences(proxy);
    if (proxy.type !== 'router') return [];
    const names = new Set<string>();
    const add = (n: string | undefined): void => {
      if (!n) return;
      const slash = n.indexOf('/');
      const ns = slash >= 0 ? n.slice(0, slash) : proxy.namespace;
      const name = slash >= 0 ? n.slice(slash + 1) : n;
      if (ns !== proxy.namespace || !name) return;
      names.add(`${ns}/${name}`);
      if (!name.endsWith(CACERT_SUFFIX)) names.add(`${ns}/${name}${CACERT_SUFFIX}`);
    };
    for (const gw of this.gatewaysFor(proxy)) {
      for (const s of gw.spec.servers ?? []) {
        add(s.tls?.credentialName);
        for (const n of s.tls?.credentialNames ?? []) add(n);
      }
    }
    for (const n of this.drCredentials) add(n);
    return [...names].sort();
  }

  /**
   * The Secrets a sidecar's configuration may name (docs/adr/0152): the `credentialName`s of the
   * DestinationRules with a workloadSelector that select it, in its own namespace, each with its
   * `-cacert` companion. A rule without a selector gives sidecars none (its files are used).
   */
  private sidecarCredentialReferences(proxy: Proxy): string[] {
    const rules = this.workloadRules(proxy);
    if (rules.length === 0) return [];
    const names = new Set<string>();
    for (const dr of rules) {
      for (const n of destinationRuleCredentialNames(dr.spec)) {
        const ref = ownNamespaceCredential(n, proxy.namespace);
        if (!ref) continue;
        names.add(`${proxy.namespace}/${ref}`);
        if (!ref.endsWith(CACERT_SUFFIX)) names.add(`${proxy.namespace}/${ref}${CACERT_SUFFIX}`);
      }
    }
    return [...names].sort();
  }

  /** Gateways whose selector matches a router proxy. */
  gatewaysFor(proxy: Proxy): ReadonlyArray<ConfigObject<Gateway>> {
    return this.gateways.filter(
      (g) =>
        (!this.features.scopeGatewayToNamespace || g.meta.namespace === proxy.namespace) &&
        labelsMatch(g.spec.selector ?? {}, proxy.labels) &&
        Object.keys(g.spec.selector ?? {}).length > 0,
    );
  }
}

/**
 * The dependency keys the differences between two snapshots touch: the hosts of VirtualServices and
 * DestinationRules that were added, removed or changed (their old and new versions), the gateways
 * their VirtualServices bind to, hostnames whose services changed, Sidecars and Gateways as a whole;
 * mesh settings and switches that change how every lookup answers touch everything.
 */
function changesBetween(prev: PushContext, next: PushContext): ChangeSet {
  const p = prev as unknown as Internals;
  const n = next as unknown as Internals;
  if (prev.mesh !== next.mesh || prev.features !== next.features || prev.usesSourceMatch !== next.usesSourceMatch || p.destinationRulesSelectWorkloads !== n.destinationRulesSelectWorkloads) {
    return ChangeSet.ALL;
  }
  const keys = new Set<DepKey>([Dep.version]);
  // a shared index has nothing to compare
  if (prev.policies !== next.policies) prev.policies.sources.forEach((before, i) =>
    forChanged(before, next.policies.sources[i] ?? [], () => {
      keys.add(Dep.policies);
      // sources[0] are the PeerAuthentications: mutual TLS modes (inbound chains, auto mTLS toward endpoints)
      if (i === 0) keys.add(Dep.peerAuthn);
    }),
  );
  if (p.jwksView !== n.jwksView) {
    for (const uri of new Set([...p.jwksView.keys(), ...n.jwksView.keys()])) if (p.jwksView.get(uri) !== n.jwksView.get(uri)) keys.add(Dep.jwks(uri));
  }
  const vsKeys = (ctx: Internals, src: ConfigObject<VirtualService>): void => {
    const r = ctx.resolvedBySource.get(src);
    if (!r) {
      // a delegate (no hosts of its own): every root that merges routes from it changes
      for (const root of ctx.resolvedBySource.values()) {
        if ((root.spec.http ?? []).some((h) => h.delegate && `${h.delegate.namespace || root.namespace}/${h.delegate.name}` === `${src.meta.namespace}/${src.meta.name}`)) {
          vsKeys(ctx, root.source);
        }
      }
      return;
    }
    for (const g of r.gateways) keys.add(Dep.gatewayVirtualServices(g));
    for (const h of r.hosts) keys.add(h.startsWith('*') ? Dep.wildcardVirtualServices : Dep.virtualService(h));
  };
  forChanged(p.sources.vs, n.sources.vs, (old, cur) => {
    if (old) vsKeys(p, old);
    if (cur) vsKeys(n, cur);
  });
  const drKey = (c: ConfigObject<DestinationRule>): DepKey => {
    const host = resolveHost(c.spec.host ?? '', c.meta.namespace, next.mesh.domain);
    return host.startsWith('*') ? Dep.wildcardDestinationRules : Dep.destinationRule(host);
  };
  forChanged(p.sources.dr, n.sources.dr, (old, cur) => {
    if (old) keys.add(drKey(old));
    if (cur) keys.add(drKey(cur));
  });
  forChanged(p.gatewayList, n.gatewayList, () => keys.add(Dep.gateways));
  forChanged(p.sidecars, n.sidecars, () => keys.add(Dep.sidecars));
  if (p.credentialSet !== n.credentialSet) {
    // a Secret is named by its key: values that read one Secret rebuild when it changes
    const before = p.credentialSet;
    const after = n.credentialSet;
    const all = new Set([...before.byKey.keys(), ...after.byKey.keys(), ...before.pending, ...after.pending]);
    for (const k of all) {
      const slash = k.indexOf('/');
      const a = before.get(k.slice(0, slash), k.slice(slash + 1));
      const b = after.get(k.slice(0, slash), k.slice(slash + 1));
      if (!sameLookup(a, b)) keys.add(Dep.credential(k));
    }
  }
  let servicesChanged = false;
  for (const [host, list] of p.servicesByHost === n.servicesByHost ? [] : n.servicesByHost) {
    const before = p.servicesByHost.get(host);
    if (!before || before.length !== list.length || before.some((s, i) => s !== list[i])) {
      keys.add(Dep.service(host));
      servicesChanged = true;
    }
  }
  for (const host of p.servicesByHost === n.servicesByHost ? [] : p.servicesByHost.keys()) {
    if (!n.servicesByHost.has(host)) {
      keys.add(Dep.service(host));
      servicesChanged = true;
    }
  }
  if (p.autoAddresses !== n.autoAddresses) {
    for (const [host, a] of n.autoAddresses) {
      if (p.autoAddresses.get(host) !== a) {
        keys.add(Dep.service(host));
        servicesChanged = true;
      }
    }
    for (const host of p.autoAddresses.keys()) {
      if (!n.autoAddresses.has(host)) {
        keys.add(Dep.service(host));
        servicesChanged = true;
      }
    }
  }
  if (servicesChanged) keys.add(Dep.allServices);
  return ChangeSet.of(keys);
}

/** What a snapshot's indexes were built from, as given: the same object lends the next snapshot its index. */
interface SnapshotInputs {
  readonly services: ReadonlyArray<Service>;
  readonly vs: ReadonlyArray<ConfigObject<VirtualService>>;
  readonly dr: ReadonlyArray<ConfigObject<DestinationRule>>;
  readonly gateways: ReadonlyArray<ConfigObject<Gateway>>;
  readonly sidecars: ReadonlyArray<ConfigObject<Sidecar>>;
}

/** The fields changesBetween compares and the next snapshot shares (private to the class, read here only). */
interface Internals {
  readonly inputs: SnapshotInputs;
  readonly policyInputs: ReadonlyArray<ReadonlyArray<ConfigObject>>;
  readonly policies: PolicyIndex;
  readonly usesSourceMatch: boolean;
  readonly allServices: ReadonlyArray<Service>;
  readonly vsByGateway: ReadonlyMap<string, ReadonlyArray<ResolvedVirtualService>>;
  readonly meshVsByHost: ReadonlyMap<string, ReadonlyArray<ResolvedVirtualService>>;
  readonly meshVsWildcard: ReadonlyArray<ResolvedVirtualService>;
  readonly destinationRulesByNamespace: ReadonlyMap<string, HostIndex<ResolvedDestinationRule>>;
  readonly drCredentials: ReadonlyArray<string>;
  readonly resolvedBySource: ReadonlyMap<ConfigObject<VirtualService>, ResolvedVirtualService>;
  readonly sources: { readonly vs: ReadonlyArray<ConfigObject<VirtualService>>; readonly dr: ReadonlyArray<ConfigObject<DestinationRule>> };
  readonly gatewayList: ReadonlyArray<ConfigObject<Gateway>>;
  readonly sidecars: ReadonlyArray<ConfigObject<Sidecar>>;
  readonly servicesByHost: ReadonlyMap<string, ReadonlyArray<Service>>;
  readonly destinationRulesSelectWorkloads: boolean;
  readonly autoAddresses: ReadonlyMap<string, string>;
  readonly credentialSet: CredentialSet;
  readonly jwksView: JwksView;
}

function sameLookup(a: CredentialLookup, b: CredentialLookup): boolean {
  if (a.state !== b.state) return false;
  if (a.state === 'present' && b.state === 'present') return a.credential === b.credential || a.credential.version === b.credential.version;
  if (a.state === 'missing' && b.state === 'missing') return a.reason === b.reason;
  return true;
}

/** Calls `fn` for every object (by namespace/name) that differs between the two lists: added, removed or replaced. */
function forChanged<T>(before: ReadonlyArray<ConfigObject<T>>, after: ReadonlyArray<ConfigObject<T>>, fn: (old: ConfigObject<T> | undefined, cur: ConfigObject<T> | undefined) => void): void {
  if (before === after) return;
  const key = (c: ConfigObject<T>): string => `${c.meta.namespace}/${c.meta.name}`;
  const old = new Map(before.map((c) => [key(c), c]));
  for (const c of after) {
    const k = key(c);
    const o = old.get(k);
    old.delete(k);
    if (o !== c) fn(o, c);
  }
  for (const o of old.values()) fn(o, undefined);
}

/** Entries by exact host, plus those whose host is a wildcard. */
interface HostIndex<T> {
  readonly exact: Map<string, T[]>;
  readonly wildcard: T[];
}

function isWildcard(host: string): boolean {
  return host.startsWith('*');
}

function pushTo<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}

function egressAllows(hosts: ReadonlyArray<string>, s: Service, proxyNs: string): boolean {
  for (const h of hosts) {
    const slash = h.indexOf('/');
    const ns = slash >= 0 ? h.slice(0, slash) : '*';
    const host = slash >= 0 ? h.slice(slash + 1) : h;
    const nsOk = ns === '*' || (ns === '.' ? s.namespace === proxyNs : ns === '~' ? false : ns === s.namespace);
    if (nsOk && hostMatches(host, s.hostname)) return true;
  }
  return false;
}

/** Every `credentialName` of a DestinationRule (traffic policy, port levels, subsets). */
export function destinationRuleCredentialNames(spec: DestinationRule): string[] {
  const tp = spec.trafficPolicy;
  const all = [tp, ...(tp?.portLevelSettings ?? []), ...(spec.subsets ?? []).flatMap((s) => [s.trafficPolicy, ...(s.trafficPolicy?.portLevelSettings ?? [])])];
  return all.map((p) => p?.tls?.credentialName).filter((n): n is string => typeof n === 'string' && n !== '');
}

/** The Secret name of a `credentialName` (`name` or `<namespace>/name`) when it is in `namespace`; undefined otherwise. */
export function ownNamespaceCredential(credentialName: string, namespace: string): string | undefined {
  const slash = credentialName.indexOf('/');
  if (slash < 0) return credentialName || undefined;
  return credentialName.slice(0, slash) === namespace && slash < credentialName.length - 1 ? credentialName.slice(slash + 1) : undefined;
}
