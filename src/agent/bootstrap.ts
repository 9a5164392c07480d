/**
 * The Envoy bootstrap the agent writes for its proxy (ENVOY_BOOTSTRAP_PATH), as protojson (lower
 * camel-case field names, `@type` in every Any), a pure function of the settings:
 *
 *   node            id `<type>~<ips>~<pod>.<ns>~<domain>` (what meshd parses), cluster, metadata
 *   admin           127.0.0.1:<proxyAdminPort> (15000)
 *   ADS             meshd's secured port over TLS: the client certificate `default` and the trust
 *                   bundle `ROOTCA` come over SDS from the agent; meshd's name is checked (SAN)
 *   sds-grpc        the agent's Unix socket
 *   prometheus      a listener on 15090 that serves Envoy's /stats/prometheus
 *
 * Readiness (15021) and merged metrics (15020) are the agent's own servers, not Envoy listeners.
 */
import { SDS_ROOT_SECRET, SDS_WORKLOAD_SECRET } from './names.js';
import { nodeId, type AgentSettings } from './settings.js';

export const XDS_CLUSTER = 'xds-grpc';
export const SDS_CLUSTER = 'sds-grpc';
export const PROMETHEUS_CLUSTER = 'prometheus_stats';
export const PROMETHEUS_LISTENER = 'prometheus';

const T = {
  upstreamTls: 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext',
  httpOptions: 'type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions',
  hcm: 'type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager',
  router: 'type.googleapis.com/envoy.extensions.filters.http.router.v3.Router',
};

type Json = Record<string, unknown>;

const http2Only = (): Json => ({
  'envoy.extensions.upstreams.http.v3.HttpProtocolOptions': { '@type': T.httpOptions, explicitHttpConfig: { http2ProtocolOptions: {} } },
});

const sdsConfig = (): Json => ({
  apiConfigSource: { apiType: 'GRPC', transportApiVersion: 'V3', grpcServices: [{ envoyGrpc: { clusterName: SDS_CLUSTER } }], setNodeOnFirstMessageOnly: true },
  resourceApiVersion: 'V3',
  initialFetchTimeout: '0s',
});

function endpoint(address: Json): Json {
  return { endpoints: [{ lbEndpoints: [{ endpoint: { address } }] }] };
}

function splitHostPort(a: string): { host: string; port: number } {
  const i = a.lastIndexOf(':');
  return { host: a.slice(0, i).replace(/^\[|\]$/g, ''), port: Number(a.slice(i + 1)) };
}

/** The bootstrap for `s`, with the SDS socket at `sdsSocketPath` (absolute). */
export function envoyBootstrap(s: AgentSettings, sdsSocketPath: string): Json {
  const xds = splitHostPort(s.discoveryAddress);
  const ipHost = /^[\d.]+$/.test(xds.host) || xds.host.includes(':');
  const workload = typeof s.metadata.WORKLOAD_NAME === 'string' && s.metadata.WORKLOAD_NAME ? s.metadata.WORKLOAD_NAME : s.podName;
  return {
    node: {
      id: nodeId(s),
      cluster: s.proxyConfig.serviceCluster || `${workload}.${s.namespace}`,
      metadata: s.metadata,
    },
    admin: { address: { socketAddress: { address: '127.0.0.1', portValue: s.ports.admin } } },
    dynamicResources: {
      adsConfig: { apiType: 'GRPC', transportApiVersion: 'V3', grpcServices: [{ envoyGrpc: { clusterName: XDS_CLUSTER } }], setNodeOnFirstMessageOnly: true },
      cdsConfig: { ads: {}, resourceApiVersion: 'V3', initialFetchTimeout: '0s' },
      ldsConfig: { ads: {}, resourceApiVersion: 'V3', initialFetchTimeout: '0s' },
    },
    staticResources: {
      clusters: [
        {
          name: XDS_CLUSTER,
          type: ipHost ? 'STATIC' : 'STRICT_DNS',
          connectTimeout: '1s',
          lbPolicy: 'ROUND_ROBIN',
          loadAssignment: { clusterName: XDS_CLUSTER, ...endpoint({ socketAddress: { address: xds.host, portValue: xds.port } }) },
          typedExtensionProtocolOptions: http2Only(),
          transportSocket: {
            name: 'envoy.transport_sockets.tls',
            typedConfig: {
              '@type': T.upstreamTls,
              sni: s.xdsServerName,
              commonTlsContext: {
                alpnProtocols: ['h2'],
                tlsCertificateSdsSecretConfigs: [{ name: SDS_WORKLOAD_SECRET, sdsConfig: sdsConfig() }],
                combinedValidationContext: {
                  defaultValidationContext: { matchTypedSubjectAltNames: [{ sanType: 'DNS', matcher: { exact: s.xdsServerName } }] },
                  validationContextSdsSecretConfig: { name: SDS_ROOT_SECRET, sdsConfig: sdsConfig() },
                },
              },
            },
          },
        },
        {
          name: SDS_CLUSTER,
          type: 'STATIC',
          connectTimeout: '1s',
          loadAssignment: { clusterName: SDS_CLUSTER, ...endpoint({ pipe: { path: sdsSocketPath } }) },
          typedExtensionProtocolOptions: http2Only(),
        },
        {
          name: PROMETHEUS_CLUSTER,
          type: 'STATIC',
          connectTimeout: '0.250s',
          loadAssignment: { clusterName: PROMETHEUS_CLUSTER, ...endpoint({ socketAddress: { address: '127.0.0.1', portValue: s.ports.admin } }) },
        },
      ],
      listeners: [
        {
          name: PROMETHEUS_LISTENER,
          address: { socketAddress: { address: '0.0.0.0', portValue: s.ports.envoyPrometheus } },
          filterChains: [
            {
              filters: [
                {
                  name: 'envoy.filters.network.http_connection_manager',
                  typedConfig: {
                    '@type': T.hcm,
                    statPrefix: 'stats',
                    codecType: 'AUTO',
                    routeConfig: {
                      virtualHosts: [{ name: 'backend', domains: ['*'], routes: [{ match: { prefix: '/stats/prometheus' }, route: { cluster: PROMETHEUS_CLUSTER } }] }],
                    },
                    httpFilters: [{ name: 'envoy.filters.http.router', typedConfig: { '@type': T.router } }],
                  },
                },
              ],
            },
          ],
        },
      ],
    },
  };
}
