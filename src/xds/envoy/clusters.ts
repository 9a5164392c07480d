/**
 * Cluster builders: pure functions from (service, port, subset, destination rule, proxy kind) to
 * envoy.config.cluster.v3.Cluster values.
 */
import {
  Cluster,
  Cluster_DiscoveryType,
  Cluster_LbPolicy,
  Cluster_DnsLookupFamily,
} from '../../gen/envoy/config/cluster/v3/cluster.js';
import { ApiVersion } from '../../gen/envoy/config/core/v3/config_source.js';
import { HttpProtocolOptions } from '../../gen/envoy/extensions/upstreams/http/v3/http_protocol_options.js';
import { UpstreamTlsContext } from '../../gen/envoy/extensions/transport_sockets/tls/v3/tls.js';
import { RawBuffer } from '../../gen/envoy/extensions/transport_sockets/raw_buffer/v3/raw_buffer.js';
import type { TrafficPolicy } from '../../config/spec-types.js';
import type { MeshSettings } from '../../model/mesh-settings.js';
import { isHttp2Protocol, type Service, type ServicePort } from '../../model/service.js';
import { BLACKHOLE_CLUSTER, Filters, INBOUND_PASSTHROUGH_CLUSTER, PASSTHROUGH_CLUSTER, inboundClusterName } from './names.js';
import { configMs, duration, msg, pack, socketAddress, type Mutable, type Shape } from './pack.js';

export type ClusterShape = Shape<Cluster>;

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
      c.edsClusterConfig = { edsConfig: ADS_CONFIG, serviceName: name };
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
  applyConnectionPool(c, policy, isHttp2Protocol(port.protocol));
  applyOutlierDetection(c, policy);
  const tls = buildUpstreamTls(policy, service, mesh, input.proxyless);
  if (tls) c.transportSocket = tls;
  else if (!input.proxyless && mesh.enableAutoMtls && !service.meshExternal && !policy?.tls) {
    c.transportSocketMatches = [
      { name: 'tlsMode-mesh', match: { tlsMode: 'mesh' }, transportSocket: meshMtlsSocket(service) },
      { name: 'tlsMode-disabled', match: {}, transportSocket: { name: Filters.rawBuffer, typedConfig: pack('envoy.extensions.transport_sockets.raw_buffer.v3.RawBuffer', RawBuffer, {}) } },
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
  if (useH2 || idle !== undefined || perConn) {
    c.typedExtensionProtocolOptions = {
      [Filters.httpProtocolOptions]: pack('envoy.extensions.upstreams.http.v3.HttpProtocolOptions', HttpProtocolOptions, {
        commonHttpProtocolOptions: {
          idleTimeout: idle !== undefined ? duration(idle) : undefined,
          maxRequestsPerConnection: perConn || undefined,
        },
        explicitHttpConfig: useH2
          ? { http2ProtocolOptions: { maxConcurrentStreams: pool?.http?.maxConcurrentStreams || undefined } }
          : { httpProtocolOptions: {} },
      }),
    };
  }
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

const SDS_ADS = { ads: {}, resourceApiVersion: ApiVersion.V3 } as const;

function meshMtlsSocket(service: Service, sni?: string): ClusterShape['transportSocket'] {
  return {
    name: Filters.tls,
    typedConfig: pack('envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext', UpstreamTlsContext, {
      sni: sni ?? `outbound_.${service.hostname}`,
      commonTlsContext: {
        tlsCertificateSdsSecretConfigs: [{ name: 'default', sdsConfig: SDS_ADS }],
        combinedValidationContext: {
          defaultValidationContext: {
            matchTypedSubjectAltNames: service.serviceAccounts
              .filter((sa) => sa.startsWith('spiffe://'))
              .map((sa) => ({ sanType: 5 /* URI */, matcher: { exact: sa } })),
          },
          validationContextSdsSecretConfig: { name: 'ROOTCA', sdsConfig: SDS_ADS },
        },
        alpnProtocols: ['h2', 'http/1.1'],
      },
    }),
  };
}

function buildUpstreamTls(policy: TrafficPolicy | undefined, service: Service, mesh: MeshSettings, proxyless: boolean): ClusterShape['transportSocket'] | undefined {
  const tls = policy?.tls;
  if (!tls || !tls.mode || tls.mode === 'DISABLE') return undefined;
  if (tls.mode === 'MESH_MUTUAL') return proxyless ? undefined : meshMtlsSocket(service, tls.sni);
  const sans = tls.subjectAltNames ?? [];
  return {
    name: Filters.tls,
    typedConfig: pack('envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext', UpstreamTlsContext, {
      sni: tls.sni ?? service.hostname,
      commonTlsContext: {
        tlsCertificates:
          tls.mode === 'MUTUAL' && tls.clientCertificate && tls.privateKey
            ? [{ certificateChain: { filename: tls.clientCertificate }, privateKey: { filename: tls.privateKey } }]
            : [],
        tlsCertificateSdsSecretConfigs: tls.credentialName ? [{ name: tls.credentialName, sdsConfig: SDS_ADS }] : [],
        validationContext:
          tls.insecureSkipVerify || (!tls.caCertificates && sans.length === 0)
            ? undefined
            : {
                trustedCa: tls.caCertificates ? { filename: tls.caCertificates } : undefined,
                matchTypedSubjectAltNames: sans.map((s) => ({ sanType: 2 /* DNS */, matcher: { exact: s } })),
              },
      },
    }),
  };
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
