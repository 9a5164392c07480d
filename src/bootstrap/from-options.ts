import type { DaemonEnv } from '../config/daemon-env.js';
import { ConfigError } from '../util/config-error.js';
import type { DiscoveryOptions, ListenAddr } from '../config/discovery-flags.js';
import type { DaemonConfig } from './daemon-config.js';
import { resolveSecuritySettings, type SecuritySettings } from '../security/settings.js';
import { revisionWebhookName } from '../install/tags.js';

function required(name: string, a: ListenAddr | null): ListenAddr {
  if (!a) throw new ConfigError([`${name}: an address is required to serve`]);
  return a;
}

/** The identity settings; a setting that cannot work is a ConfigError naming it (notes are logged at start). */
function securityFrom(o: DiscoveryOptions, env: DaemonEnv): { settings: SecuritySettings; notes: string[]; warnings: string[] } {
  const { settings, issues, notes, warnings } = resolveSecuritySettings({
    env,
    secureGrpcAddr: o.secureGRPCAddr,
    tlsCertFile: o.tlsCertFile,
    tlsKeyFile: o.tlsKeyFile,
    caCertFile: o.caCertFile,
    cipherSuites: o.tlsCipherSuites,
    cluster: o.registries.includes('Cluster'),
    namespace: o.namespace,
    domain: o.domain,
  });
  if (issues.length > 0) throw new ConfigError(issues);
  return { settings, notes, warnings };
}

/** What `--plugins` may name; each turns one part of the security translation on (docs/adr/0082). */
const PLUGINS = ['ext_authz', 'authn', 'authz'];

function pluginsFrom(o: DiscoveryOptions): { authz: boolean; authn: boolean; extAuthz: boolean } {
  const unknown = o.plugins.filter((p) => !PLUGINS.includes(p));
  if (unknown.length > 0) throw new ConfigError([`--plugins: unknown plugin${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')} (known: ${PLUGINS.join(', ')})`]);
  return { authz: o.plugins.includes('authz'), authn: o.plugins.includes('authn'), extAuthz: o.plugins.includes('ext_authz') };
}

/**
 * The mutating configuration whose caBundle meshd keeps: INJECTION_WEBHOOK_CONFIG_NAME, where its
 * default `mesh-sidecar-injector` means the daemon's own revision's, `mesh-sidecar-injector-<REVISION>`
 * (the name `meshctl install --revision` gives it; docs/adr/0146). Without this a revision's daemon
 * would write its caBundle into the default revision's configuration.
 */
function injectionConfigName(env: DaemonEnv): string {
  const name = env.INJECTION_WEBHOOK_CONFIG_NAME;
  return name === revisionWebhookName('') ? revisionWebhookName(env.REVISION ?? '') : name;
}

/** Resolves parsed flags and environment into what the running daemon uses. */
export function daemonConfigFrom(o: DiscoveryOptions, env: DaemonEnv): DaemonConfig {
  const security = securityFrom(o, env);
  const plugins = pluginsFrom(o);
  if (env.DISC_JWT_PUB_KEY_REFRESH_INTERVAL <= 0) throw new ConfigError([`DISC_JWT_PUB_KEY_REFRESH_INTERVAL: must be a positive duration`]);
  const serving = security.settings.servingCert;
  const webhookNotes: string[] = [];
  if (o.httpsAddr && serving.kind === 'none') webhookNotes.push(`the webhook port ${o.httpsAddr.host}:${o.httpsAddr.port} (--httpsAddr) is not opened: it needs a serving certificate, and ${serving.why}`);
  return {
    security: security.settings,
    securityNotes: [...security.notes, ...webhookNotes],
    securityWarnings: security.warnings,
    webhooks: {
      addr: serving.kind === 'none' ? null : o.httpsAddr,
      injectEnabled: env.INJECT_ENABLED,
      injectionConfigName: injectionConfigName(env),
      validationConfigName: env.VALIDATION_WEBHOOK_CONFIG_NAME,
      probeLocalhost: env.REWRITE_PROBE_LEGACY_LOCALHOST_DESTINATION,
      legacyFsGroup: env.ENABLE_LEGACY_FSGROUP_INJECTION,
    },
    grpcAddr: required('--grpcAddr', o.grpcAddr),
    httpAddr: o.httpAddr ?? { host: '127.0.0.1', port: 8080 },
    monitoringAddr: required('--monitoringAddr', o.monitoringAddr),
    debugOnHttp: env.ENABLE_DEBUG_ON_HTTP && o.httpAddr !== null,
    debugRemote: env.UNSAFE_ENABLE_ADMIN_ENDPOINTS,
    ctrlz: { host: o.ctrlzAddress === '*' ? '' : o.ctrlzAddress, port: o.ctrlzPort },
    profile: o.profile,
    configDir: o.configDir || undefined,
    registries: o.registries,
    meshConfigFile: o.meshConfig,
    networksConfigFile: o.networksConfig || undefined,
    domain: o.domain,
    clusterId: o.clusterID,
    namespace: o.namespace,
    shutdownMs: o.shutdownDuration,
    keepalive: { intervalMs: o.keepaliveInterval, timeoutMs: o.keepaliveTimeout, maxConnectionAgeMs: o.keepaliveMaxServerConnectionAge },
    grpcMaxStreams: env.MESH_GPRC_MAXSTREAMS,
    grpcMaxRecvMsgSize: env.MESH_GPRC_MAXRECVMSGSIZE,
    debounceAfterMs: env.DISC_DEBOUNCE_AFTER,
    debounceMaxMs: env.DISC_DEBOUNCE_MAX,
    edsDebounce: env.DISC_ENABLE_EDS_DEBOUNCE,
    xdsCache: { enabled: env.DISC_ENABLE_XDS_CACHE, size: env.DISC_XDS_CACHE_SIZE, cds: env.DISC_ENABLE_CDS_CACHE, stats: env.DISC_XDS_CACHE_STATS },
    features: {
      virtualServiceDelegate: env.DISC_ENABLE_VIRTUAL_SERVICE_DELEGATE,
      destinationRuleInheritance: env.DISC_ENABLE_DESTINATION_RULE_INHERITANCE,
      scopeGatewayToNamespace: env.DISC_SCOPE_GATEWAY_TO_NAMESPACE,
    },
    generator: {
      inboundPassthrough: env.DISC_ENABLE_INBOUND_PASSTHROUGH,
      defaultRequestTimeoutMs: env.MESH_DEFAULT_REQUEST_TIMEOUT,
      sidecarUseRemoteAddress: env.DISC_SIDECAR_USE_REMOTE_ADDRESS,
      http10: env.DISC_HTTP10,
      httpDelayedCloseTimeoutMs: env.DISC_HTTP_DELAYED_CLOSE_TIMEOUT,
      gatewayStripHostPort: env.MESH_GATEWAY_STRIP_HOST_PORT,
      routeCollapse: env.DISC_ENABLE_ROUTE_COLLAPSE_OPTIMIZATION,
      authz: plugins.authz,
      authn: plugins.authn,
      extAuthz: plugins.extAuthz,
      remoteJwks: env.DISC_JWT_ENABLE_REMOTE_JWKS,
      traceSampling: env.DISC_TRACE_SAMPLING,
    },
    jwks: { refreshMs: env.DISC_JWT_PUB_KEY_REFRESH_INTERVAL },
    ads: {
      pushThrottle: env.DISC_PUSH_THROTTLE,
      sendTimeoutMs: env.DISC_XDS_SEND_TIMEOUT,
      flowControl: env.DISC_ENABLE_FLOW_CONTROL,
      flowControlTimeoutMs: env.DISC_FLOW_CONTROL_TIMEOUT,
      deltaEnabled: env.MESH_DELTA_XDS,
      distributionTracking: env.DISC_ENABLE_CONFIG_DISTRIBUTION_TRACKING,
    },
    podName: env.POD_NAME ?? '',
    env,
    cluster: {
      kubeconfig: o.clusterconfig,
      qps: o.clusterApiQPS,
      burst: o.clusterApiBurst,
      resyncMs: o.resync,
      useEndpointSlices: env.DISC_USE_ENDPOINT_SLICE,
      edsForHeadless: env.DISC_ENABLE_EDS_FOR_HEADLESS_SERVICES,
      selectWorkloadEntries: env.DISC_ENABLE_CLUSTER_SELECT_WORKLOAD_ENTRIES,
      serviceApis: env.DISC_ENABLED_SERVICE_APIS,
      registriesNamespace: o.clusterRegistriesNamespace,
      remoteSyncTimeoutMs: env.DISC_REMOTE_CLUSTER_TIMEOUT,
    },
  };
}
