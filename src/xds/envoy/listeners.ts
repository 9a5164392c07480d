/** Listener and network-filter builders shared by the sidecar, gateway and gRPC generators. */
import { Listener } from '../../gen/envoy/config/listener/v3/listener.js';
import type { FilterChain } from '../../gen/envoy/config/listener/v3/listener_components.js';
import { TrafficDirection } from '../../gen/envoy/config/core/v3/base.js';
import { ApiVersion } from '../../gen/envoy/config/core/v3/config_source.js';
import {
  HttpConnectionManager,
  HttpConnectionManager_CodecType,
  type HttpFilter,
} from '../../gen/envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.js';
import type { RouteConfiguration } from '../../gen/envoy/config/route/v3/route.js';
import { TcpProxy } from '../../gen/envoy/extensions/filters/network/tcp_proxy/v3/tcp_proxy.js';
import { Router } from '../../gen/envoy/extensions/filters/http/router/v3/router.js';
import { HTTPFault } from '../../gen/envoy/extensions/filters/http/fault/v3/fault.js';
import { Cors } from '../../gen/envoy/extensions/filters/http/cors/v3/cors.js';
import { OriginalDst } from '../../gen/envoy/extensions/filters/listener/original_dst/v3/original_dst.js';
import { TlsInspector } from '../../gen/envoy/extensions/filters/listener/tls_inspector/v3/tls_inspector.js';
import { FileAccessLog } from '../../gen/envoy/extensions/access_loggers/file/v3/file.js';
import { Filters } from './names.js';
import { duration, msg, pack, socketAddress, type Shape } from './pack.js';

export type FilterChainShape = Shape<FilterChain>;

export interface HcmOptions {
  readonly statPrefix: string;
  /** RDS name, or an inline route configuration. */
  readonly rds?: string;
  readonly routeConfig?: Shape<RouteConfiguration>;
  /** Proxyless clients: fault + router only. */
  readonly proxyless: boolean;
  readonly useRemoteAddress?: boolean;
  readonly http10?: boolean;
  readonly delayedCloseTimeoutMs?: number;
  readonly stripHostPort?: boolean;
  /** Filters that go before the others (authorization: docs/adr/0082). */
  readonly leadingFilters?: ReadonlyArray<Shape<HttpFilter>>;
  /** Tracing and access logging of the connection manager (docs/adr/0176). */
  readonly observability?: HcmObservability;
}

/** What a connection manager records: trace sampling and an access-log file (docs/adr/0176). */
export interface HcmObservability {
  /** Share of requests traced, 0..100; absent: no tracing. */
  readonly traceSampling?: number;
  /** Longest request path kept in a span's tag. */
  readonly maxPathTagLength?: number;
  /** File the access log is written to; absent: none. */
  readonly accessLogPath?: string;
}

const ACCESS_LOG_FILE = 'envoy.access_loggers.file';

function observabilityFields(o: HcmObservability | undefined): Partial<Shape<HttpConnectionManager>> {
  if (!o) return {};
  return {
    tracing:
      o.traceSampling !== undefined
        ? { randomSampling: { value: o.traceSampling }, maxPathTagLength: o.maxPathTagLength, verbose: false, customTags: [] }
        : undefined,
    accessLog:
      o.accessLogPath !== undefined
        ? [{ name: ACCESS_LOG_FILE, typedConfig: pack('envoy.extensions.access_loggers.file.v3.FileAccessLog', FileAccessLog, { path: o.accessLogPath }) }]
        : [],
  };
}

function httpFilters(proxyless: boolean, leading: ReadonlyArray<Shape<HttpFilter>> = []): Shape<HttpFilter>[] {
  const fault = { name: Filters.fault, typedConfig: pack('envoy.extensions.filters.http.fault.v3.HTTPFault', HTTPFault, {}) };
  const router = { name: Filters.router, typedConfig: pack('envoy.extensions.filters.http.router.v3.Router', Router, {}) };
  if (proxyless) return [...leading, fault, router];
  const cors = { name: Filters.cors, typedConfig: pack('envoy.extensions.filters.http.cors.v3.Cors', Cors, {}) };
  return [...leading, cors, fault, router];
}

export function httpConnectionManager(o: HcmOptions): Shape<HttpConnectionManager> {
  return {
    statPrefix: o.statPrefix,
    codecType: HttpConnectionManager_CodecType.AUTO,
    rds: o.rds !== undefined ? { routeConfigName: o.rds, configSource: { ads: {}, resourceApiVersion: ApiVersion.V3 } } : undefined,
    routeConfig: o.routeConfig,
    httpFilters: httpFilters(o.proxyless, o.leadingFilters),
    useRemoteAddress: o.useRemoteAddress,
    httpProtocolOptions: o.http10 ? { acceptHttp10: true } : undefined,
    delayedCloseTimeout: o.delayedCloseTimeoutMs !== undefined ? duration(o.delayedCloseTimeoutMs) : undefined,
    stripAnyHostPort: o.stripHostPort || undefined,
    ...observabilityFields(o.observability),
  };
}

export function hcmFilter(o: HcmOptions): { name: string; typedConfig: ReturnType<typeof pack> } {
  return {
    name: Filters.httpConnectionManager,
    typedConfig: pack(
      'envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager',
      HttpConnectionManager,
      httpConnectionManager(o),
    ),
  };
}

export function tcpProxyFilter(statPrefix: string, target: string | ReadonlyArray<{ name: string; weight: number }>): { name: string; typedConfig: ReturnType<typeof pack> } {
  return {
    name: Filters.tcpProxy,
    typedConfig: pack('envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy', TcpProxy, {
      statPrefix,
      ...(typeof target === 'string' ? { cluster: target } : { weightedClusters: { clusters: target } }),
    }),
  };
}

export function originalDstListenerFilter(): { name: string; typedConfig: ReturnType<typeof pack> } {
  return { name: Filters.originalDst, typedConfig: pack('envoy.extensions.filters.listener.original_dst.v3.OriginalDst', OriginalDst, {}) };
}

export function tlsInspectorListenerFilter(): { name: string; typedConfig: ReturnType<typeof pack> } {
  return { name: Filters.tlsInspector, typedConfig: pack('envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector', TlsInspector, {}) };
}

export interface ListenerOptions {
  readonly name: string;
  readonly address: string;
  readonly port: number;
  readonly filterChains: ReadonlyArray<FilterChainShape>;
  readonly defaultFilterChain?: FilterChainShape;
  readonly bindToPort?: boolean;
  readonly useOriginalDst?: boolean;
  readonly direction: 'inbound' | 'outbound';
  readonly listenerFilters?: ReadonlyArray<{ name: string; typedConfig: ReturnType<typeof pack> }>;
}

export function buildListener(o: ListenerOptions): Listener {
  return msg(Listener, {
    name: o.name,
    address: socketAddress(o.address, o.port),
    filterChains: o.filterChains,
    defaultFilterChain: o.defaultFilterChain,
    bindToPort: o.bindToPort === false ? false : undefined,
    useOriginalDst: o.useOriginalDst || undefined,
    trafficDirection: o.direction === 'inbound' ? TrafficDirection.INBOUND : TrafficDirection.OUTBOUND,
    listenerFilters: o.listenerFilters ?? [],
  });
}

/** A proxyless gRPC client's listener: an API listener named as the client dials it. */
export function buildApiListener(name: string, rds: string): Listener {
  return msg(Listener, {
    name,
    apiListener: {
      apiListener: pack(
        'envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager',
        HttpConnectionManager,
        httpConnectionManager({ statPrefix: name, rds, proxyless: true }),
      ),
    },
  });
}
