/**
 * Turns config and registry events into snapshots and push requests. Config changes (and service
 * changes) rebuild the PushContext after debouncing; endpoint-only changes update the EndpointIndex
 * and ask for an EDS push, keeping the snapshot.
 */
import type { Logger } from 'pino';
import { latestObservedAt, type ConfigEvent, type ConfigStore } from '../config/types.js';
import type { Metrics } from '../metrics/metrics.js';
import { Debouncer, type DebounceObserver } from './debounce.js';
import { duplicateDestinationRuleSubsets, typeInstances, virtualServicesWithDuplicateDomains } from './config-conflicts.js';
import { pushRequest, type PushRequest } from './push-request.js';
import { EndpointIndex } from './endpoint-index.js';
import type { MeshSettings } from './mesh-settings.js';
import { PushContext, type FeatureFlags } from './push-context.js';
import { allocateAddresses } from './address-allocation.js';
import type { RegistryEvent, ServiceRegistry } from './registry.js';
import type { Endpoint, Service } from './service.js';
import { diagnosticText } from './policy/diagnostics.js';
import type { CredentialSource } from './credentials.js';
import type { JwksSource } from './policy/jwks.js';
import type { PushActivity } from './push-activity.js';

export interface MeshModelOptions {
  readonly debounceAfterMs: number;
  readonly debounceMaxMs: number;
  readonly edsDebounce: boolean;
  readonly features: FeatureFlags;
  /** Gateway credentials (Kubernetes Secrets, docs/adr/0105); none without a cluster. */
  readonly credentials?: CredentialSource;
  /** Where `jwksUri` key sets come from (src/security/jwks-resolver.ts); none: every jwksUri fails closed. */
  readonly jwks?: JwksSource;
  /** DISC_JWT_ENABLE_REMOTE_JWKS: key sets of in-mesh URIs are left to the proxy, not fetched here. */
  readonly remoteJwks?: boolean;
  /**
   * Told while a push request waits out its debounce and is being built (one span per debouncer,
   * from its first pending request until the listeners have it); docs/adr/0140.
   */
  readonly activity?: PushActivity;
}

/** Kinds whose changes are handled by a registry rather than a snapshot rebuild on their own. */
const REGISTRY_KINDS = new Set(['ServiceEntry', 'WorkloadEntry']);

/**
 * Reasons of full pushes that leave the registries' services and endpoints as they were: config
 * kinds the registries do not read (those reach the model as `service` or `endpoint` events), key
 * sets, credential Secrets. A rebuild for them alone keeps the services and the endpoint index.
 */
const SNAPSHOT_ONLY_REASONS: ReadonlySet<string> = new Set(['config', 'jwks', 'secret']);

interface GaugeShare {
  readonly noInstances: number;
  readonly notReady: number;
}

const NO_SHARE: GaugeShare = Object.freeze({ noInstances: 0, notReady: 0 });

export class MeshModel {
  private push: PushContext;
  /** The registry's services the current snapshot was built from (kept by rebuilds that do not change them). */
  private services: ReadonlyArray<Service> | undefined;
  private endpoints = EndpointIndex.empty();
  /** Automatic addresses of hosts without one, kept across snapshots (address-allocation.ts). */
  private autoAddresses: ReadonlyMap<string, string> = new Map();
  private versionCounter = 0;
  private readonly debouncer: Debouncer;
  private readonly edsDebouncer: Debouncer;
  /** Open spans of `opts.activity`, per debouncer with a pending request. */
  private readonly pending = new Map<Debouncer, () => void>();
  private readonly listeners = new Set<(req: PushRequest) => void>();
  private unsubscribers: Array<() => void> = [];
  /** The policy index whose diagnostics were last logged (a snapshot that keeps it has nothing new to say). */
  private diagnosedPolicies: PushContext['policies'] | undefined;
  /** Policy diagnostics already logged (text), so each is said once while it lasts. */
  private saidDiagnostics = new Set<string>();
  /** configFacts() of one snapshot version. */
  private facts: ReturnType<MeshModel['configFacts']> | undefined;
  /** A full push already waited for a registry's computation since the last rebuild (one wait at most, so pushes never starve). */
  private waited = false;
  /** When the current snapshot was published (cfg_runtime_processor_snapshot_lifetime_duration_milliseconds). */
  private publishedAt = Date.now();
  /** What disc_eds_no_instances and disc_endpoint_not_ready were last set to. */
  private endpointGauges: GaugeShare = NO_SHARE;

  constructor(
    private readonly store: ConfigStore,
    private readonly registry: ServiceRegistry,
    private mesh: MeshSettings,
    private readonly opts: MeshModelOptions,
    private readonly metrics: Metrics,
    private readonly log: Logger,
  ) {
    this.push = this.buildContext();
    // The conflict and type gauges scan every config: computed when scraped, once per snapshot.
    metrics.setConfigFacts({
      typeInstances: () => this.configFacts().types,
      virtualServicesWithDuplicateDomains: () => this.configFacts().vsDupDomains,
      duplicateDestinationRuleSubsets: () => this.configFacts().drDupSubsets,
    });
    // The config runtime processor's strategy (docs/adr/0175): both debouncers report to the same metrics.
    const observer: DebounceObserver = {
      onChange: (sinceLastMs) => {
        metrics.strategyOnChange.inc();
        if (sinceLastMs !== undefined) metrics.processorEventSpan.observe(sinceLastMs);
      },
      timerReset: () => metrics.strategyTimerResets.inc(),
      fired: (reason, requests) => {
        (reason === 'max' ? metrics.strategyMaxTimeReached : metrics.strategyQuiesceReached).inc();
        metrics.processorSnapshotEvents.observe(requests);
      },
    };
    const debouncer = (after: number, max: number): Debouncer => {
      const d: Debouncer = new Debouncer(
        after,
        max,
        (req) => {
          try {
            this.onDebounced(req);
          } finally {
            this.endPending(d);
          }
        },
        Date.now,
        observer,
      );
      return d;
    };
    this.debouncer = debouncer(opts.debounceAfterMs, opts.debounceMaxMs);
    this.edsDebouncer = opts.edsDebounce ? this.debouncer : debouncer(0, 0);
  }

  /** Hands `req` to `d`, opening the activity span of `d` when it had nothing pending. */
  private request(d: Debouncer, req: PushRequest): void {
    if (this.opts.activity && !this.pending.has(d)) this.pending.set(d, this.opts.activity.begin());
    d.push(req);
  }

  private endPending(d: Debouncer): void {
    this.pending.get(d)?.();
    this.pending.delete(d);
  }

  /** Wires event sources and computes the initial state. */
  start(): void {
    this.unsubscribers.push(
      this.store.onChange((events) => this.onConfigChange(events)),
      this.registry.onEvent((e) => this.onRegistryEvent(e)),
      // a key set fetched or changed: listeners that inlined it are rebuilt (Dep.jwks)
      ...(this.opts.jwks ? [this.opts.jwks.onChange(() => this.request(this.debouncer, pushRequest({ full: true, reason: 'jwks' })))] : []),
    );
    const credentials = this.opts.credentials;
    if (credentials) {
      // a Secret change is a config change of its own kind: the snapshot is rebuilt and only the
      // values that read that Secret (its SDS resource, its gateways' listeners) are computed again
      this.unsubscribers.push(credentials.onChange(() => this.request(this.debouncer, pushRequest({ full: true, reason: 'secret', kinds: ['Secret'] }))));
    }
    this.rebuildAll();
  }

  stop(): void {
    for (const u of this.unsubscribers) u();
    this.unsubscribers = [];
    this.debouncer.stop();
    this.edsDebouncer.stop();
    for (const d of [...this.pending.keys()]) this.endPending(d);
  }

  current(): { push: PushContext; endpoints: EndpointIndex } {
    return { push: this.push, endpoints: this.endpoints };
  }

  meshSettings(): MeshSettings {
    return this.mesh;
  }

  /** Replace mesh settings (mesh config file changed): full push. */
  setMeshSettings(mesh: MeshSettings): void {
    this.mesh = mesh;
    this.request(this.debouncer, pushRequest({ full: true, reason: 'global' }));
  }

  /** Applies pending debounced changes now (tests, shutdown). */
  flush(): void {
    this.debouncer.flush();
    this.edsDebouncer.flush();
  }

  onPush(listener: (req: PushRequest) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** A new snapshot; `servicesChanged` false: the registries' services are those of the current one. */
  private buildContext(servicesChanged = true): PushContext {
    const version = `${new Date().toISOString().replace(/\.\d+Z$/, 'Z')}/${++this.versionCounter}`;
    // the current snapshot's services when the registries did not change them
    const kept = servicesChanged ? undefined : this.services;
    const services = kept ?? this.registry.services();
    this.services = services;
    // always allocated; only proxies that ask (DNS_CAPTURE and DNS_AUTO_ALLOCATE) are routed by them
    // and learn them from the name table (docs/adr/0050, 0187)
    if (!kept) this.autoAddresses = allocateAddresses(services, this.autoAddresses);
    // the previous snapshot lends the new one every derived value its changes do not touch
    const previous = this.versionCounter > 1 ? this.push : undefined;
    const jwks = this.opts.jwks;
    const push = PushContext.build({ version, configs: this.store, services, mesh: this.mesh, features: this.opts.features, autoAddresses: this.autoAddresses, previous, credentials: this.opts.credentials?.current(), jwks: jwks?.view() });
    if (jwks && push.policies !== previous?.policies) jwks.want(new Set([...push.policies.jwksUris].filter((u) => !(this.opts.remoteJwks && push.jwksInMesh(u)))));
    if (!kept) {
      this.metrics.services.set(push.services.length);
      const shadowed = this.registry.shadowedServices?.() ?? [];
      this.metrics.duplicateClusters.set(shadowed.length);
      if (shadowed.length > 0) this.log.warn({ shadowed: shadowed.slice(0, 20), count: shadowed.length }, 'model: hosts defined by more than one registry; the first registry wins');
    }
    this.metrics.virtualServices.set(push.virtualServiceCount);
    return push;
  }

  /** The config facts of the current snapshot, computed on first use (a scrape). */
  private configFacts(): { readonly version: string; readonly types: ReadonlyMap<string, number>; readonly vsDupDomains: number; readonly drDupSubsets: number } {
    const version = this.push.version;
    if (this.facts?.version !== version) {
      this.facts = {
        version,
        types: typeInstances(this.store),
        vsDupDomains: virtualServicesWithDuplicateDomains(this.store, this.mesh.domain),
        drDupSubsets: duplicateDestinationRuleSubsets(this.store, this.mesh.domain),
      };
    }
    return this.facts;
  }

  /**
   * Logs the policy diagnostics of `push` on a later turn, off the push path (they scan every policy,
   * DestinationRule and Gateway); a newer snapshot's supersede them.
   */
  private sayPolicyDiagnostics(push: PushContext): void {
    setImmediate(() => {
      if (this.push === push) this.logPolicyDiagnostics(push);
    });
  }

  /** Logs what the security translation leaves out or changes, once per diagnostic while it lasts. */
  private logPolicyDiagnostics(push: PushContext): void {
    const now = new Set<string>();
    for (const d of push.policies.diagnostics) {
      const text = diagnosticText(d);
      now.add(text);
      if (!this.saidDiagnostics.has(text)) this.log[d.level ?? 'warn']({ kind: d.kind, namespace: d.namespace, name: d.name }, `policy: ${text}`);
    }
    this.saidDiagnostics = now;
  }

  /** A new snapshot, and (`servicesChanged`) the endpoints of every service read again. */
  private rebuildAll(servicesChanged = true): void {
    this.push = this.buildContext(servicesChanged);
    // the diagnostics of a new policy index: computed and logged after the push is on its way
    if (this.push.policies !== this.diagnosedPolicies) {
      this.diagnosedPolicies = this.push.policies;
      this.sayPolicyDiagnostics(this.push);
    }
    // endpoints come from the registries, which did not change
    if (!servicesChanged) return;
    const changes = new Map<string, Endpoint[]>();
    for (const s of this.push.services) {
      const list = changes.get(s.hostname) ?? [];
      for (const e of this.registry.endpoints(s)) list.push(e); // not a spread: a service may have 200,000 endpoints
      changes.set(s.hostname, list);
    }
    for (const host of this.endpoints.hostnames()) if (!changes.has(host)) changes.set(host, []);
    this.endpoints = this.endpoints.update(changes).index;
    this.updateEndpointGauges();
  }

  /** disc_eds_no_instances and disc_endpoint_not_ready from the current view. */
  private updateEndpointGauges(): void {
    let noInstances = 0;
    let notReady = 0;
    for (const s of this.push.services) {
      const share = this.endpointGaugeShare(s, this.endpoints);
      noInstances += share.noInstances;
      notReady += share.notReady;
    }
    this.endpointGauges = { noInstances, notReady };
    this.metrics.edsNoInstances.set(noInstances);
    this.metrics.endpointNotReady.set(notReady);
  }

  /**
   * The endpoint gauges after an endpoint change of `hosts`, from the index before it: only those
   * hosts' shares counted again (an endpoint change costs what it changed, not every service).
   */
  private adjustEndpointGauges(before: EndpointIndex, hosts: ReadonlyArray<string>): void {
    let { noInstances, notReady } = this.endpointGauges;
    for (const host of hosts) {
      for (const s of this.push.servicesForHost(host)) {
        const was = this.endpointGaugeShare(s, before);
        const now = this.endpointGaugeShare(s, this.endpoints);
        noInstances += now.noInstances - was.noInstances;
        notReady += now.notReady - was.notReady;
      }
    }
    this.endpointGauges = { noInstances, notReady };
    this.metrics.edsNoInstances.set(noInstances);
    this.metrics.endpointNotReady.set(notReady);
  }

  /** One service's part of the endpoint gauges under `index`. */
  private endpointGaugeShare(s: Service, index: EndpointIndex): GaugeShare {
    if (s.resolution !== 'ClientSideLB') return NO_SHARE;
    const eps = index.get(s.hostname).endpoints;
    let notReady = 0;
    for (const e of eps) if (!e.healthy) notReady++;
    return { noInstances: eps.length === 0 ? s.ports.length : 0, notReady };
  }

  /** One push request per change of the store (a whole file is one), whatever its number of objects. */
  private onConfigChange(events: ReadonlyArray<ConfigEvent>): void {
    this.metrics.inboundUpdates.inc({ type: 'config' }, events.length);
    this.metrics.processorEvents.inc(events.length);
    // the ServiceEntry registry reports what its kinds changed
    const own = events.filter((e) => !REGISTRY_KINDS.has(e.kind));
    if (own.length === 0) return;
    // disc_push_triggers still counts config changes by object
    // debounced from when the change was seen (a file's watch event), not from when it got here
    this.request(this.debouncer, pushRequest({ full: true, reason: 'config', kinds: new Set(own.map((e) => e.kind)), count: own.length, start: latestObservedAt(own) }));
  }

  private onRegistryEvent(e: RegistryEvent): void {
    this.metrics.processorEvents.inc();
    if (e.servicesChanged) {
      this.metrics.inboundUpdates.inc({ type: 'svc' });
      this.request(this.debouncer, pushRequest({ full: true, reason: 'service', edsHosts: e.endpointHosts, start: e.observedAt }));
      return;
    }
    this.metrics.inboundUpdates.inc({ type: 'eds' });
    // Endpoint-only: update the index now so the next push sees it, then push EDS.
    this.updateEndpoints(e.endpointHosts);
    this.request(this.edsDebouncer, pushRequest({ full: false, reason: 'endpoint', edsHosts: e.endpointHosts, start: e.observedAt }));
  }

  private updateEndpoints(hosts: ReadonlyArray<string>): string[] {
    const changes = new Map<string, Endpoint[]>();
    for (const host of hosts) {
      const list: Endpoint[] = [];
      for (const s of this.push.servicesForHost(host)) for (const e of this.registry.endpoints(s)) list.push(e); // not a spread: a service may have 200,000 endpoints
      changes.set(host, list);
    }
    const before = this.endpoints;
    const { index, changed } = before.update(changes);
    this.endpoints = index;
    if (changed.length > 0) this.adjustEndpointGauges(before, changed);
    return changed;
  }

  private onDebounced(req: PushRequest): void {
    // A registry still computing a large change over turns (a file of ServiceEntries that also holds
    // DestinationRules) will ask for its own push: wait for it once, so that one snapshot is built
    // with both instead of one for each (docs/adr/0204)
    const busy = req.full && !this.waited ? this.registry.computing?.() : undefined;
    if (busy) {
      this.waited = true;
      void busy.then(() => this.request(this.debouncer, req));
      return;
    }
    if (req.full) this.waited = false;
    const started = Date.now();
    try {
      if (req.full) this.rebuildAll([...req.reasons.keys()].some((r) => !SNAPSHOT_ONLY_REASONS.has(r)));
    } catch (e) {
      this.metrics.pushContextErrors.inc();
      this.log.error({ err: e instanceof Error ? e.stack : String(e) }, 'model: building the push context failed; keeping the previous one');
      return;
    }
    this.log.info(
      { version: this.push.version, full: req.full, reasons: Object.fromEntries(req.reasons), kinds: [...req.configKinds], edsHosts: req.edsHosts.size, buildMs: Date.now() - started },
      req.full ? 'push: configuration changed' : 'push: endpoints changed',
    );
    if (req.full) {
      const now = Date.now();
      this.metrics.processorSnapshotLifetime.observe(now - this.publishedAt);
      this.publishedAt = now;
      this.metrics.processorSnapshots.inc();
    }
    for (const l of this.listeners) l(req);
  }
}
