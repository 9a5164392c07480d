/**
 * The daemon's metrics, named as the spec names them. One registry per daemon instance so tests and
 * benchmarks can run several in one process.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

const PUSH_BUCKETS = [0.01, 0.1, 0.5, 1, 3, 5, 10, 20, 30];
const SIZE_BUCKETS = [1, 10_000, 1_000_000, 4_000_000, 10_000_000, 40_000_000];
const MS_BUCKETS = [1, 10, 100, 1_000, 10_000, 100_000, 1_000_000];
const COUNT_BUCKETS = [1, 2, 5, 10, 20, 50, 100, 500, 1_000];

/** Facts of the current config that gauges read when scraped, not on every snapshot (the model gives them). */
export interface ConfigFacts {
  /** Objects per type URL (`group/version/Kind`). */
  typeInstances(): ReadonlyMap<string, number>;
  virtualServicesWithDuplicateDomains(): number;
  duplicateDestinationRuleSubsets(): number;
}

export function createMetrics(opts: { defaultMetrics?: boolean } = {}) {
  const registry = new Registry();
  let facts: ConfigFacts | undefined;
  if (opts.defaultMetrics !== false) collectDefaultMetrics({ register: registry });
  const r = [registry];
  const m = {
    registry,
    build: new Gauge({ name: 'mesh_build', help: 'Component build info.', labelNames: ['component', 'tag'], registers: r }),
    startupDuration: new Gauge({ name: 'startup_duration_seconds', help: 'Time from process start to ready.', registers: r }),
    xdsClients: new Gauge({ name: 'disc_xds', help: 'Endpoints connected to this daemon over xDS.', registers: r }),
    xdsPushes: new Counter({ name: 'disc_xds_pushes', help: 'Build and send errors for lds, rds, cds and eds.', labelNames: ['type'], registers: r }),
    pushTriggers: new Counter({ name: 'disc_push_triggers', help: 'Pushes triggered, labeled by reason.', labelNames: ['type'], registers: r }),
    convergence: new Histogram({ name: 'disc_proxy_convergence_time', help: 'Seconds between a config change and a proxy holding all required config.', buckets: PUSH_BUCKETS, registers: r }),
    queueTime: new Histogram({ name: 'disc_proxy_queue_time', help: 'Seconds a proxy waits in the push queue.', buckets: PUSH_BUCKETS, registers: r }),
    pushTime: new Histogram({ name: 'disc_xds_push_time', help: 'Seconds taken to push lds, rds, cds and eds.', labelNames: ['type'], buckets: PUSH_BUCKETS, registers: r }),
    sendTime: new Histogram({ name: 'disc_xds_send_time', help: 'Seconds taken to send generated config.', buckets: PUSH_BUCKETS, registers: r }),
    configSize: new Histogram({ name: 'disc_xds_config_size_bytes', help: 'Sizes of pushed configs.', labelNames: ['type'], buckets: SIZE_BUCKETS, registers: r }),
    services: new Gauge({ name: 'disc_services', help: 'Services known.', registers: r }),
    virtualServices: new Gauge({ name: 'disc_virt_services', help: 'Virtual services known.', registers: r }),
    inboundUpdates: new Counter({ name: 'disc_inbound_updates', help: 'Updates received.', labelNames: ['type'], registers: r }),
    rejectedConfigs: new Counter({ name: 'disc_total_rejected_configs', help: 'Configs rejected or ignored.', labelNames: ['type'], registers: r }),
    xdsRejects: new Counter({ name: 'disc_total_xds_rejects', help: 'xDS responses rejected by a proxy.', labelNames: ['type'], registers: r }),
    cdsReject: new Gauge({ name: 'disc_xds_cds_reject', help: 'CDS configs rejected.', labelNames: ['node', 'err'], registers: r }),
    edsReject: new Gauge({ name: 'disc_xds_eds_reject', help: 'EDS rejected.', labelNames: ['node', 'err'], registers: r }),
    ldsReject: new Gauge({ name: 'disc_xds_lds_reject', help: 'LDS rejected.', labelNames: ['node', 'err'], registers: r }),
    rdsReject: new Gauge({ name: 'disc_xds_rds_reject', help: 'RDS rejected.', labelNames: ['node', 'err'], registers: r }),
    expiredNonce: new Counter({ name: 'disc_xds_expired_nonce', help: 'xDS requests carrying an expired nonce.', labelNames: ['type'], registers: r }),
    sdsCertificateErrors: new Counter({ name: 'disc_sds_certificate_errors_total', help: 'Failures fetching an SDS key and certificate.', registers: r }),
    internalErrors: new Counter({ name: 'disc_total_xds_internal_errors', help: 'Internal xDS errors.', registers: r }),
    writeTimeouts: new Counter({ name: 'disc_xds_write_timeout', help: 'xDS response write timeouts.', registers: r }),
    configDirLost: new Counter({ name: 'disc_config_dir_lost', help: 'Times the --configDir directory disappeared (its last good configuration is kept).', registers: r }),
    meshConfigLost: new Counter({ name: 'disc_mesh_config_lost', help: 'Times a --meshConfig or --networksConfig file, once read, could no longer be read (its last good settings are kept), by flag.', labelNames: ['file'], registers: r }),
    requestsTooLarge: new Counter({ name: 'disc_xds_subscription_too_large', help: 'Delta xDS streams closed for subscribing past the per-type bound on names.', labelNames: ['type'], registers: r }),
    halfOpenClosed: new Counter({ name: 'disc_half_open_closed', help: 'Connections closed for sending no byte within 10 s of opening, by listener.', labelNames: ['listener'], registers: r }),
    pushContextErrors: new Counter({ name: 'disc_xds_push_context_errors', help: 'Errors (timeouts) initiating the push context.', registers: r }),
    delayedPushes: new Counter({ name: 'disc_xds_delayed_pushes_total', help: 'Delayed pushes.', labelNames: ['type'], registers: r }),
    delayedPushTimeouts: new Counter({ name: 'disc_xds_delayed_push_timeouts_total', help: 'Delayed pushes that timed out.', labelNames: ['type'], registers: r }),
    duplicateClusters: new Gauge({ name: 'disc_duplicate_envoy_clusters', help: 'Duplicate proxy clusters caused by service entries with one hostname.', registers: r }),
    edsNoInstances: new Gauge({ name: 'disc_eds_no_instances', help: 'Clusters without instances.', registers: r }),
    cacheReads: new Counter({ name: 'xds_cache_reads', help: 'xDS cache reads.', labelNames: ['type'], registers: r }),
    cacheEvictions: new Counter({ name: 'xds_cache_evictions', help: 'xDS cache evictions.', labelNames: ['type'], registers: r }),
    cacheSize: new Gauge({ name: 'xds_cache_size', help: 'Current xDS cache size.', registers: r }),
    endpointNotReady: new Gauge({ name: 'disc_endpoint_not_ready', help: 'Endpoints found unready.', registers: r }),
    jwksFetchSuccess: new Counter({ name: 'disc_jwks_resolver_network_fetch_success_total', help: 'Successful network fetches by the JWKS resolver.', registers: r }),
    jwksFetchFail: new Counter({ name: 'disc_jwks_resolver_network_fetch_fail_total', help: 'Failed network fetches by the JWKS resolver.', registers: r }),
    controllerSyncErrors: new Counter({ name: 'controller_sync_errors_total', help: 'Errors syncing controllers.', labelNames: ['controller'], registers: r }),
    clusterRegistryEvents: new Counter({ name: 'disc_cluster_reg_events', help: 'Events from the cluster registry.', labelNames: ['type', 'event'], registers: r }),
    clusterEndpointsPendingPod: new Gauge({ name: 'disc_cluster_endpoints_pending_pod', help: 'Endpoints with no corresponding pod yet.', registers: r }),
    clusterEndpointsWithNoPods: new Counter({ name: 'disc_cluster_endpoints_with_no_pods', help: 'Endpoints without any corresponding pod.', registers: r }),
    endpointNoPod: new Gauge({ name: 'endpoint_no_pod', help: 'Endpoints without a pod.', registers: r }),
    noIp: new Gauge({ name: 'disc_no_ip', help: 'Pods absent from the endpoint table, possibly invalid.', registers: r }),
    managedClusters: new Gauge({ name: 'meshd_managed_clusters', help: 'Clusters managed by the daemon.', registers: r }),
    remoteClusterSyncTimeouts: new Counter({ name: 'remote_cluster_sync_timeouts_total', help: 'Remote clusters that took too long to sync, making startup skip them.', registers: r }),
    autoRegistrationSuccess: new Counter({ name: 'auto_registration_success_total', help: 'Successful auto-registrations.', registers: r }),
    autoRegistrationUpdates: new Counter({ name: 'auto_registration_updates_total', help: 'Auto-registration updates.', registers: r }),
    autoRegistrationUnregister: new Counter({ name: 'auto_registration_unregister_total', help: 'Unregistrations.', registers: r }),
    autoRegistrationDeletes: new Counter({ name: 'auto_registration_deletes_total', help: 'Auto-registrations cleaned up by the periodic timer.', registers: r }),
    autoRegistrationErrors: new Counter({ name: 'auto_registration_errors_total', help: 'Auto-registration errors.', registers: r }),
    // The webhooks (src/server/webhooks.ts) and the webhook configurations they patch (src/controllers/webhook-ca-bundle/).
    injectionRequests: new Counter({ name: 'sidecar_injection_requests_total', help: 'Injection requests.', registers: r }),
    injectionSuccess: new Counter({ name: 'sidecar_injection_success_total', help: 'Successful injection requests.', registers: r }),
    injectionSkip: new Counter({ name: 'sidecar_injection_skip_total', help: 'Skipped injection requests, by reason.', labelNames: ['reason'], registers: r }),
    injectionFailure: new Counter({ name: 'sidecar_injection_failure_total', help: 'Failed injection requests, by reason (request, config, pod, internal, disabled).', labelNames: ['reason'], registers: r }),
    validationPassed: new Counter({ name: 'cfg_validation_passed', help: 'Resources found valid.', labelNames: ['group', 'version', 'resource'], registers: r }),
    validationFailed: new Counter({ name: 'cfg_validation_failed', help: 'Resource validations that failed.', labelNames: ['group', 'version', 'resource', 'reason'], registers: r }),
    validationHttpError: new Counter({ name: 'cfg_validation_http_error', help: 'HTTP serve errors of validation.', labelNames: ['status'], registers: r }),
    webhookConfigLoad: new Counter({ name: 'cfg_validation_config_load', help: 'Webhook configuration (re)loads.', registers: r }),
    webhookConfigLoadError: new Counter({ name: 'cfg_validation_config_load_error', help: 'Webhook configuration (re)load errors.', registers: r }),
    webhookConfigUpdates: new Counter({ name: 'cfg_validation_config_updates', help: 'Webhook configuration updates.', registers: r }),
    webhookConfigUpdateError: new Counter({ name: 'cfg_validation_config_update_error', help: 'Webhook configuration update errors.', registers: r }),
    // meshd deletes no webhook configuration (it patches their caBundle; `meshctl uninstall` and the
    // installation reconciler remove them), so this stays 0: exported for the spec's dashboards (docs/adr/0145).
    webhookConfigDeleteError: new Counter({ name: 'cfg_validation_config_delete_error', help: 'Webhook configuration delete errors.', registers: r }),
    // The config runtime processor: the model's debounce of config and registry events into snapshots
    // (src/model/debounce.ts, src/model/mesh-model.ts; docs/adr/0175).
    processorEventSpan: new Histogram({ name: 'cfg_runtime_processor_event_span_duration_milliseconds', help: 'Time between incoming events.', buckets: MS_BUCKETS, registers: r }),
    processorEvents: new Counter({ name: 'cfg_runtime_processor_events_processed_total', help: 'Events processed.', registers: r }),
    processorSnapshotEvents: new Histogram({ name: 'cfg_runtime_processor_snapshot_events_total', help: 'Events per snapshot.', buckets: COUNT_BUCKETS, registers: r }),
    processorSnapshotLifetime: new Histogram({ name: 'cfg_runtime_processor_snapshot_lifetime_duration_milliseconds', help: 'Lifetime of each snapshot.', buckets: MS_BUCKETS, registers: r }),
    processorSnapshots: new Counter({ name: 'cfg_runtime_processor_snapshots_published_total', help: 'Snapshots published.', registers: r }),
    stateTypeInstances: new Gauge({
      name: 'cfg_runtime_state_type_instances_total',
      help: 'Type instances per type URL.',
      labelNames: ['type_url'],
      registers: r,
      collect() {
        for (const [typeUrl, n] of facts?.typeInstances() ?? []) this.set({ type_url: typeUrl }, n);
      },
    }),
    strategyOnChange: new Counter({ name: 'cfg_runtime_strategy_on_change_total', help: 'Calls of the strategy\'s onChange.', registers: r }),
    strategyMaxTimeReached: new Counter({ name: 'cfg_runtime_strategy_timer_max_time_reached_total', help: 'Times the max time was reached.', registers: r }),
    strategyQuiesceReached: new Counter({ name: 'cfg_runtime_strategy_timer_quiesce_reached_total', help: 'Times a quiesce was reached.', registers: r }),
    strategyTimerResets: new Counter({ name: 'cfg_runtime_strategy_timer_resets_total', help: 'Timer resets.', registers: r }),
    // The config CRDs' source (src/config/kube-source.ts).
    sourceConverterFailure: new Counter({ name: 'cfg_source_cluster_dynamic_converter_failure_total', help: 'Failed conversions by a dynamic source.', labelNames: ['kind'], registers: r }),
    sourceConverterSuccess: new Counter({ name: 'cfg_source_cluster_dynamic_converter_success_total', help: 'Successful conversions by a dynamic source.', labelNames: ['kind'], registers: r }),
    sourceEventError: new Counter({ name: 'cfg_source_cluster_event_error_total', help: 'Errors while a source handled an event.', labelNames: ['kind'], registers: r }),
    sourceEventSuccess: new Counter({ name: 'cfg_source_cluster_event_success_total', help: 'Events handled successfully by a source.', labelNames: ['kind'], registers: r }),
    clusterConfigEvents: new Counter({ name: 'disc_cluster_cfg_events', help: 'Events from cluster config.', labelNames: ['type', 'event'], registers: r }),
    outgoingRetries: new Counter({ name: 'num_outgoing_retries', help: 'Outgoing retry requests, e.g. to a token exchange server or CA.', labelNames: ['request_type'], registers: r }),
    // Conflicts the snapshot resolves silently (src/model/config-conflicts.ts).
    virtualServiceDupDomain: new Gauge({
      name: 'disc_vservice_dup_domain',
      help: 'Virtual services with duplicate domains.',
      registers: r,
      collect() {
        if (facts) this.set(facts.virtualServicesWithDuplicateDomains());
      },
    }),
    destinationRuleSubsets: new Gauge({
      name: 'disc_destrule_subsets',
      help: 'Duplicate subsets across destination rules for one host.',
      registers: r,
      collect() {
        if (facts) this.set(facts.duplicateDestinationRuleSubsets());
      },
    }),
    /** Where the config gauges above read from when scraped (the model, once it exists). */
    setConfigFacts(f: ConfigFacts): void {
      facts = f;
    },
    // Listener conflicts the sidecar generators resolve, summed over connected proxies (src/xds/ads-server.ts).
    conflictInboundListener: new Gauge({ name: 'disc_conflict_inbound_listener', help: 'Conflicting inbound listeners.', registers: r }),
    conflictHttpOverTcp: new Gauge({ name: 'disc_conflict_outbound_listener_http_over_current_tcp', help: 'Wildcard http listeners conflicting with the current wildcard tcp listener.', registers: r }),
    conflictTcpOverHttp: new Gauge({ name: 'disc_conflict_outbound_listener_tcp_over_current_http', help: 'Wildcard tcp listeners conflicting with the current wildcard http listener.', registers: r }),
    conflictTcpOverTcp: new Gauge({ name: 'disc_conflict_outbound_listener_tcp_over_current_tcp', help: 'tcp listeners conflicting with the current tcp listener.', registers: r }),
    scrapes: new Counter({ name: 'scrapes_total', help: 'Scrapes.', registers: r }),
    scrapeFailures: new Counter({ name: 'scrape_failures_total', help: 'Failed scrapes.', registers: r }),
  };
  return m;
}

export type Metrics = ReturnType<typeof createMetrics>;
