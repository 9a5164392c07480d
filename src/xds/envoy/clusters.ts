/**
 * Cluster builders: pure functions from (service, port, subset, destination rule, proxy kind) to
 * envoy.config.cluster.v3.Cluster values.
 */
import {
  Cluster,
  Cluster_DiscoveryType,
  Cluster_LbPolicy,
  Cluster_DnsLookupFamily,
  type Cluster_SlowStartConfig,
} from '../../gen/envoy/config/cluster/v3/cluster.js';
import { ApiVersion } from '../../gen/envoy/config/core/v3/config_source.js';
import { HttpProtocolOptions } from '../../gen/envoy/extensions/upstreams/http/v3/http_protocol_options.js';
import type { KeepaliveSettings } from '../../gen/envoy/config/core/v3/protocol.js';
import type { Duration } from '../../gen/google/protobuf/duration.js';
import type { TrafficPolicy } from '../../config/spec-types.js';
import type { MeshSettings } from '../../model/mesh-settings.js';
import { isHttp2Protocol, type Service, type ServicePort } from '../../model/service.js';
import { BLACKHOLE_CLUSTER, Filters, INBOUND_PASSTHROUGH_CLUSTER, PASSTHROUGH_CLUSTER, inboundClusterName } from './names.js';
import { configMs, duration, msg, pack, socketAddress, type Mutable, type Shape } from './pack.js';
import { MESH_ALPN, destinationRuleTls, meshClientTls, proxylessDestinationRuleTls } from './security/tls.js';

export type ClusterShape = Shape<Cluster>;

type LoadBalancer = NonNullable<TrafficPolicy['loadBalancer']>;
type ZoneAwareLb = NonNullable<LoadBalancer['zoneAwareLbSetting']>;
type ConnectionPool = NonNullable<TrafficPolicy['connectionPool']>;
type Http2KeepAlive = NonNullable<NonNullable<ConnectionPool['http']>['http2KeepAlive']>;
type TcpKeepalive = NonNullable<NonNullable<ConnectionPool['tcp']>['tcpKeepalive']>;
type RetryBudget = NonNullable<TrafficPolicy['retryBudget']>;

const ADS_CONFIG = { ads: {}, resourceApiVersion: ApiVersion.V3 } as const;

/** Traffic policy for one port: port-level settings replace the rule-level ones they set. */
export function policyForPort(policy: TrafficPolicy | undefined, port: number): TrafficPolicy | undefined {
  if (!policy) return undefined;
  const pl = policy.portLevelSettings?.find((p) => p.port?.number === port);
  if (!pl) return policy;
  return {
    ...policy,
    loadBalancer: pl.loadBalancer ?? policy.loadBalancer,
    connectionPool: pl.connectionPool ?? policy.connectionPool,
    outlierDetection: pl.outlierDetection ?? policy.outlierDetection,
    tls: pl.tls ?? policy.tls,
  };
}

/** A subset's policy is laid over the rule's. */
export function mergePolicy(base: TrafficPolicy | undefined, over: TrafficPolicy | undefined): TrafficPolicy | undefined {
  if (!over) return base;
  if (!base) return over;
  return {
    ...base,
    ...over,
    loadBalancer: over.loadBalancer ?? base.loadBalancer,
    connectionPool: over.connectionPool ?? base.connectionPool,
    outlierDetection: over.outlierDetection ?? base.outlierDetection,
    tls: over.tls ?? base.tls,
  };
}

export interface OutboundClusterInput {
  readonly name: string;
  readonly service: Service;
  readonly port: ServicePort;
  readonly policy: TrafficPolicy | undefined;
  readonly mesh: MeshSettings;
  /** Proxyless gRPC clients get only what they implement (no transport socket matches, no DNS clusters). */
  readonly proxyless: boolean;
  /**
   * Proxyless clients under automatic mutual TLS: mesh TLS from the certificate provider instances
   * (the generator decides per cluster, docs/adr/0103).
   */
  readonly proxylessMeshTls?: boolean;
  /** Whether the DestinationRule's `credentialName` has a CA to verify the server with (over SDS); default true. */
  readonly credentialCa?: boolean;
  /** Endpoints for DNS/static clusters that carry them inline. */
  readonly inlineEndpoints?: ReadonlyArray<{ address: string; port: number }>;
}

export function buildOutboundCluster(input: OutboundClusterInput): Cluster {
  const { name, service, port, policy, mesh } = input;
  const c: Mutable<ClusterShape> = {
    name,
    connectTimeout: duration(configMs(policy?.connectionPool?.tcp?.connectTimeout, mesh.connectTimeoutMs)),
  };
  switch (service.resolution) {
    case 'ClientSideLB':
      c.type = Cluster_DiscoveryType.EDS;
      // no service_name: Envoy and gRPC then ask EDS for the cluster's own name (ADR 0210)
      c.edsClusterConfig = { edsConfig: ADS_CONFIG };
      break;
    case 'DNS':
    case 'DNSRoundRobin':
      c.type = service.resolution === 'DNS' ? Cluster_DiscoveryType.STRICT_DNS : Cluster_DiscoveryType.LOGICAL_DNS;
      c.dnsLookupFamily = Cluster_DnsLookupFamily.V4_ONLY;
      c.loadAssignment = {
        clusterName: name,
        endpoints: [
          {
            lbEndpoints: (service.resolution === 'DNS' ? (input.inlineEndpoints ?? []) : (input.inlineEndpoints ?? []).slice(0, 1)).map((e) => ({
              endpoint: { address: socketAddress(e.address, e.port) },
            })),
          },
        ],
      };
      break;
    case 'Passthrough':
      c.type = Cluster_DiscoveryType.ORIGINAL_DST;
      c.lbPolicy = Cluster_LbPolicy.CLUSTER_PROVIDED;
      break;
  }
  if (service.resolution !== 'Passthrough') applyLoadBalancer(c, policy);
  applyConnectionPool(c, policy, isHttp2Protocol(port.protocol), input.proxyless);
  applyOutlierDetection(c, policy);
  if (!input.proxyless) applyEnvoyOnlyPolicy(c, policy, service.resolution !== 'Passthrough');
  const tls = buildUpstreamTls(input);
  if (tls) c.transportSocket = tls;
  else if (input.proxyless && input.proxylessMeshTls) c.transportSocket = meshClientTls('provider', meshSni(name), identitiesOf(service), []);
  else if (!input.proxyless && mesh.enableAutoMtls && !service.meshExternal && !policy?.tls) {
    // auto mutual TLS: mesh TLS toward endpoints labelled as having a sidecar, plaintext toward the
    // others: an endpoint no match selects gets the cluster's transport socket, which unset is
    // plaintext (raw_buffer), so the catch-all plaintext match is not spelled out (ADR 0210)
    c.transportSocketMatches = [
      { name: 'tlsMode-mesh', match: { tlsMode: 'mesh' }, transportSocket: meshClientTls('sds', meshSni(name), identitiesOf(service), [MESH_ALPN, 'h2', 'http/1.1']) },
    ];
  }
  return msg(Cluster, c);
}

function applyLoadBalancer(c: Mutable<ClusterShape>, policy: TrafficPolicy | undefined): void {
  const lb = policy?.loadBalancer;
  if (!lb) return;
  if (lb.consistentHash) {
    if (lb.consistentHash.maglev) {
      c.lbPolicy = Cluster_LbPolicy.MAGLEV;
      if (lb.consistentHash.maglev.tableSize) c.maglevLbConfig = { tableSize: lb.consistentHash.maglev.tableSize };
    } else {
      c.lbPolicy = Cluster_LbPolicy.RING_HASH;
      const size = lb.consistentHash.ringHash?.minimumRingSize ?? lb.consistentHash.minimumRingSize;
      if (size) c.ringHashLbConfig = { minimumRingSize: size };
    }
    return;
  }
  switch (lb.simple) {
    case 'LEAST_CONN':
    case 'LEAST_REQUEST':
      c.lbPolicy = Cluster_LbPolicy.LEAST_REQUEST;
      break;
    case 'RANDOM':
      c.lbPolicy = Cluster_LbPolicy.RANDOM;
      break;
    default:
      c.lbPolicy = Cluster_LbPolicy.ROUND_ROBIN;
  }
}

function applyConnectionPool(
  c: Mutable<ClusterShape>,
  policy: TrafficPolicy | undefined,
  http2: boolean,
  proxyless: boolean,
): void {
  const pool = policy?.connectionPool;
  if (pool?.tcp || pool?.http) {
    c.circuitBreakers = {
      thresholds: [
        {
          maxConnections: pool.tcp?.maxConnections,
          maxPendingRequests: pool.http?.http1MaxPendingRequests,
          maxRequests: pool.http?.http2MaxRequests,
          maxRetries: pool.http?.maxRetries,
        },
      ],
    };
  }
  const idle = configMs(pool?.http?.idleTimeout);
  const perConn = pool?.http?.maxRequestsPerConnection;
  const useH2 = http2 || pool?.http?.h2UpgradePolicy === 'UPGRADE';
  const envoy = proxyless ? undefined : envoyHttpConnectionOptions(pool);
  if (useH2 || idle !== undefined || perConn || envoy?.maxConnectionDuration || envoy?.useClientProtocol) {
    const http2Options = { maxConcurrentStreams: pool?.http?.maxConcurrentStreams || undefined, connectionKeepalive: envoy?.http2Keepalive };
    c.typedExtensionProtocolOptions = {
      [Filters.httpProtocolOptions]: pack('envoy.extensions.upstreams.http.v3.HttpProtocolOptions', HttpProtocolOptions, {
        commonHttpProtocolOptions: {
          idleTimeout: idle !== undefined ? duration(idle) : undefined,
          maxRequestsPerConnection: perConn || undefined,
          maxConnectionDuration: envoy?.maxConnectionDuration,
        },
        ...(envoy?.useClientProtocol
          ? { useDownstreamProtocolConfig: { httpProtocolOptions: {}, http2ProtocolOptions: http2Options } }
          : { explicitHttpConfig: useH2 ? { http2ProtocolOptions: http2Options } : { httpProtocolOptions: {} } }),
      }),
    };
  }
}

interface EnvoyHttpConnectionOptions {
  readonly maxConnectionDuration?: Duration;
  readonly useClientProtocol: boolean;
  readonly http2Keepalive?: Shape<KeepaliveSettings>;
}

/**
 * Connection-pool settings that only Envoy implements (gRPC's xDS client ignores them):
 * `tcp.maxConnectionDuration` (common HTTP protocol options), `http.useClientProtocol`
 * (the upstream speaks the downstream's protocol) and `http.http2KeepAlive` (HTTP/2 PINGs).
 */
function envoyHttpConnectionOptions(pool: ConnectionPool | undefined): EnvoyHttpConnectionOptions {
  const maxDuration = configMs(pool?.tcp?.maxConnectionDuration);
  return {
    maxConnectionDuration: maxDuration !== undefined ? duration(maxDuration) : undefined,
    useClientProtocol: pool?.http?.useClientProtocol === true,
    http2Keepalive: http2KeepaliveSettings(pool?.http?.http2KeepAlive),
  };
}

/** Envoy requires a PING timeout; when the rule leaves it unset, this one applies (ADR 0049). */
export const DEFAULT_HTTP2_KEEPALIVE_TIMEOUT_MS = 20_000;

/** `http.http2KeepAlive` as Envoy HTTP/2 `connection_keepalive` (interval and PING timeout). */
export function http2KeepaliveSettings(keepAlive: Http2KeepAlive | undefined): Shape<KeepaliveSettings> | undefined {
  if (!keepAlive) return undefined;
  const interval = configMs(keepAlive.interval);
  return {
    interval: interval ? duration(interval) : undefined,
    timeout: duration(configMs(keepAlive.timeout, DEFAULT_HTTP2_KEEPALIVE_TIMEOUT_MS)),
  };
}

/**
 * Parts of the traffic policy that only Envoy implements; gRPC's xDS client has no slow start,
 * zone-aware routing, retry budget or socket keepalive, so proxyless clusters go without them.
 */
function applyEnvoyOnlyPolicy(c: Mutable<ClusterShape>, policy: TrafficPolicy | undefined, balanced: boolean): void {
  if (balanced) applySlowStart(c, policy?.loadBalancer);
  if (balanced) applyZoneAwareLb(c, policy?.loadBalancer?.zoneAwareLbSetting);
  applyRetryBudget(c, policy?.retryBudget);
  applyTcpKeepalive(c, policy?.connectionPool?.tcp?.tcpKeepalive);
}

/** Runtime key of the slow-start aggression (Envoy requires one beside the configured value). */
export const SLOW_START_AGGRESSION_RUNTIME_KEY = 'mesh.slow_start.aggression';

/**
 * `loadBalancer.warmup` (or the deprecated `warmupDurationSecs`) as Envoy slow start, which Envoy
 * implements for round robin and least request only; other algorithms get none.
 */
function applySlowStart(c: Mutable<ClusterShape>, lb: LoadBalancer | undefined): void {
  const config = slowStartConfig(lb);
  if (!config) return;
  if (c.lbPolicy === Cluster_LbPolicy.ROUND_ROBIN) c.roundRobinLbConfig = { slowStartConfig: config };
  else if (c.lbPolicy === Cluster_LbPolicy.LEAST_REQUEST) c.leastRequestLbConfig = { slowStartConfig: config };
}

export function slowStartConfig(lb: LoadBalancer | undefined): Shape<Cluster_SlowStartConfig> | undefined {
  const windowMs = configMs(lb?.warmup?.duration ?? lb?.warmupDurationSecs);
  if (!windowMs) return undefined;
  const warmup = lb?.warmup;
  return {
    slowStartWindow: duration(windowMs),
    aggression: warmup?.aggression !== undefined ? { defaultValue: warmup.aggression, runtimeKey: SLOW_START_AGGRESSION_RUNTIME_KEY } : undefined,
    minWeightPercent: warmup?.minimumPercent !== undefined ? { value: warmup.minimumPercent } : undefined,
  };
}

/**
 * `loadBalancer.zoneAwareLbSetting` as Envoy's zone-aware routing: `enabled` routes all requests
 * zone-aware (off when unset or false), `minClusterSize` is passed as is.
 */
function applyZoneAwareLb(c: Mutable<ClusterShape>, zoneAware: ZoneAwareLb | undefined): void {
  if (!zoneAware) return;
  const enabled = zoneAware.enabled === true;
  c.commonLbConfig = {
    ...c.commonLbConfig,
    zoneAwareLbConfig: {
      routingEnabled: { value: enabled ? 100 : 0 },
      minClusterSize: enabled ? zoneAware.minClusterSize : undefined,
    },
  };
}

/** `trafficPolicy.retryBudget` as the retry budget of the cluster's default-priority circuit breaker. */
function applyRetryBudget(c: Mutable<ClusterShape>, budget: RetryBudget | undefined): void {
  if (!budget) return;
  const retryBudget = {
    budgetPercent: budget.percent !== undefined ? { value: budget.percent } : undefined,
    minRetryConcurrency: budget.minRetryConcurrency,
  };
  const [first, ...rest] = c.circuitBreakers?.thresholds ?? [{}];
  c.circuitBreakers = { ...c.circuitBreakers, thresholds: [{ ...first, retryBudget }, ...rest] };
}

/** `tcp.tcpKeepalive` as the upstream sockets' TCP keepalive; Envoy counts its times in whole seconds. */
function applyTcpKeepalive(c: Mutable<ClusterShape>, keepalive: TcpKeepalive | undefined): void {
  if (!keepalive) return;
  const seconds = (d: string | undefined): number | undefined => {
    const ms = configMs(d);
    return ms === undefined ? undefined : Math.floor(ms / 1000);
  };
  c.upstreamConnectionOptions = {
    tcpKeepalive: { keepaliveProbes: keepalive.probes, keepaliveTime: seconds(keepalive.time), keepaliveInterval: seconds(keepalive.interval) },
  };
}

function applyOutlierDetection(c: Mutable<ClusterShape>, policy: TrafficPolicy | undefined): void {
  const od = policy?.outlierDetection;
  if (!od) return;
  const interval = configMs(od.interval);
  const base = configMs(od.baseEjectionTime);
  // consecutiveErrors is the deprecated spelling of consecutive5xxErrors
  const consecutive5xx = od.consecutive5xxErrors ?? (od.consecutiveErrors ? od.consecutiveErrors : undefined);
  c.outlierDetection = {
    consecutive5xx,
    consecutiveGatewayFailure: od.consecutiveGatewayErrors,
    enforcingConsecutive5xx: consecutive5xx !== undefined ? 100 : undefined,
    enforcingConsecutiveGatewayFailure: od.consecutiveGatewayErrors !== undefined ? 100 : 0,
    interval: interval !== undefined ? duration(interval) : undefined,
    baseEjectionTime: base !== undefined ? duration(base) : undefined,
    maxEjectionPercent: od.maxEjectionPercent,
    splitExternalLocalOriginErrors: od.splitExternalLocalOriginErrors ?? false,
    consecutiveLocalOriginFailure: od.consecutiveLocalOriginFailures,
  };
  if (od.minHealthPercent !== undefined) c.commonLbConfig = { healthyPanicThreshold: { value: od.minHealthPercent } };
}

/** The SNI of mesh mutual TLS toward a cluster: `outbound_.<port>_.<subset>_.<host>` (its name, reshaped). */
export function meshSni(clusterName: string): string {
  return clusterName.split('|').join('_.');
}

/** A destination's identities: the SPIFFE URIs of its service accounts (what mesh TLS verifies). */
function identitiesOf(service: Service): string[] {
  return service.serviceAccounts.filter((sa) => sa.startsWith('spiffe://'));
}

/**
 * Client TLS of a DestinationRule (docs/adr/0081): DISABLE none; SIMPLE and MUTUAL as written (files,
 * or `credentialName` over SDS); MESH_MUTUAL the mesh identity, with the rule's `sni` and
 * `subjectAltNames` replacing the defaults when given. Proxyless gRPC clients take the mesh identity
 * from their certificate provider instances, and SIMPLE and MUTUAL in the form gRPC can load.
 */
function buildUpstreamTls(input: OutboundClusterInput): ClusterShape['transportSocket'] | undefined {
  const tls = input.policy?.tls;
  if (!tls || !tls.mode || tls.mode === 'DISABLE') return undefined;
  if (tls.mode === 'MESH_MUTUAL') {
    const sans = tls.subjectAltNames && tls.subjectAltNames.length > 0 ? tls.subjectAltNames : identitiesOf(input.service);
    return meshClientTls(input.proxyless ? 'provider' : 'sds', tls.sni || meshSni(input.name), sans, input.proxyless ? [] : [MESH_ALPN, 'h2', 'http/1.1']);
  }
  return input.proxyless ? proxylessDestinationRuleTls(tls, input.service.hostname) : destinationRuleTls(tls, input.service.hostname, input.credentialCa ?? true);
}

/** Inbound cluster for a port of the proxy's own workload. */
export function buildInboundCluster(port: number, passthrough: boolean, mesh: MeshSettings): Cluster {
  const name = inboundClusterName(port);
  if (passthrough) {
    return msg(Cluster, {
      name,
      type: Cluster_DiscoveryType.ORIGINAL_DST,
      lbPolicy: Cluster_LbPolicy.CLUSTER_PROVIDED,
      connectTimeout: duration(mesh.connectTimeoutMs),
      upstreamBindConfig: { sourceAddress: { address: '127.0.0.6', portValue: 0 } },
    });
  }
  return msg(Cluster, {
    name,
    type: Cluster_DiscoveryType.STATIC,
    connectTimeout: duration(mesh.connectTimeoutMs),
    loadAssignment: { clusterName: name, endpoints: [{ lbEndpoints: [{ endpoint: { address: socketAddress('127.0.0.1', port) } }] }] },
  });
}

export function buildBlackholeCluster(mesh: MeshSettings): Cluster {
  return msg(Cluster, { name: BLACKHOLE_CLUSTER, type: Cluster_DiscoveryType.STATIC, connectTimeout: duration(mesh.connectTimeoutMs) });
}

export function buildPassthroughCluster(name: typeof PASSTHROUGH_CLUSTER | typeof INBOUND_PASSTHROUGH_CLUSTER, mesh: MeshSettings): Cluster {
  return msg(Cluster, {
    name,
    type: Cluster_DiscoveryType.ORIGINAL_DST,
    lbPolicy: Cluster_LbPolicy.CLUSTER_PROVIDED,
    connectTimeout: duration(mesh.connectTimeoutMs),
    upstreamBindConfig: name === INBOUND_PASSTHROUGH_CLUSTER ? { sourceAddress: { address: '127.0.0.6', portValue: 0 } } : undefined,
  });
}
