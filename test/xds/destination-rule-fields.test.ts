/**
 * The newer DestinationRule fields of the public API reach the proxies: each one set lands in the
 * exact Envoy cluster or route field for sidecars and gateways, and is absent when unset. Proxyless
 * gRPC clients get none of them (gRPC's xDS client implements neither slow start, zone-aware
 * routing, retry budgets, keepalives nor generated cookies).
 */
import { Cluster } from '../../src/gen/envoy/config/cluster/v3/cluster.js';
import type { RouteConfiguration } from '../../src/gen/envoy/config/route/v3/route.js';
import { HttpProtocolOptions } from '../../src/gen/envoy/extensions/upstreams/http/v3/http_protocol_options.js';
import { DEFAULT_HTTP2_KEEPALIVE_TIMEOUT_MS, SLOW_START_AGGRESSION_RUNTIME_KEY } from '../../src/xds/envoy/clusters.js';
import { hcmOf } from '../support/decode.js';
import { makeConfigDir, startDaemon, type ConfigDir, type Daemon } from '../support/daemon.js';
import { GO_TOOL_BUILD_TIMEOUT_MS, goToolPath, runXdsValidate } from '../support/go-tools.js';
import { grpcClient, modelFromYaml, router, sidecar, TypeUrl, type TestModel } from '../support/model.js';
import type { Proxy } from '../../src/model/proxy.js';

const RATINGS = 'ratings.default.svc.cluster.local';
const ECHO = 'echo.default.svc.cluster.local';
const HTTP_OPTIONS = 'envoy.extensions.upstreams.http.v3.HttpProtocolOptions';

/** A gateway that routes ratings.example.com to ratings, so the router gets ratings' clusters and routes. */
const GATEWAY = `
apiVersion: networking.mesh.io/v1
kind: Gateway
metadata: { name: public, namespace: mesh-system }
spec:
  selector: { app: mesh-ingressgateway }
  servers: [{ port: { number: 8080, name: http, protocol: HTTP }, hosts: ["*/ratings.example.com"] }]
---
apiVersion: networking.mesh.io/v1
kind: VirtualService
metadata: { name: public, namespace: default }
spec:
  hosts: [ratings.example.com]
  gateways: [mesh-system/public]
  http: [{ route: [{ destination: { host: ${RATINGS}, port: { number: 9080 } } }] }]
`;

function rule(host: string, trafficPolicy: string): string {
  return `${GATEWAY}
---
apiVersion: networking.mesh.io/v1
kind: DestinationRule
metadata: { name: rule, namespace: default }
spec:
  host: ${host}
  trafficPolicy: ${trafficPolicy}
`;
}

function clusterOf(m: TestModel, proxy: Proxy, name: string): Cluster {
  const found = m.generate(proxy, TypeUrl.Cluster, [name]).find((c) => c.name === name);
  if (!found) throw new Error(`no cluster ${name} for ${proxy.id}`);
  return found;
}

function httpOptions(c: Cluster): HttpProtocolOptions | undefined {
  const any = c.typedExtensionProtocolOptions[HTTP_OPTIONS];
  return any ? HttpProtocolOptions.decode(any.value) : undefined;
}

/** Every route configuration the proxy's listeners name (the gRPC client's is named as it dials). */
function routesOf(m: TestModel, proxy: Proxy, host: string, port: number): RouteConfiguration[] {
  if (proxy.type === 'grpc') return m.generate(proxy, TypeUrl.Route, [`${host}:${port}`]);
  const names = new Set(m.generate(proxy, TypeUrl.Listener).flatMap((l) => hcmOf(l).map((h) => h.rds?.routeConfigName ?? '')));
  names.delete('');
  return m.generate(proxy, TypeUrl.Route, names);
}

function hashPolicies(m: TestModel, proxy: Proxy, host: string, port: number) {
  return routesOf(m, proxy, host, port)
    .flatMap((rc) => rc.virtualHosts)
    .flatMap((vh) => vh.routes)
    .filter((r) => [r.route?.cluster, ...(r.route?.weightedClusters?.clusters.map((w) => w.name) ?? [])].some((c) => c?.endsWith(`|${host}`)))
    .map((r) => r.route?.hashPolicy ?? []);
}

const PROXIES: ReadonlyArray<[string, Proxy]> = [
  ['sidecar', sidecar('10.0.0.5', 'client-1')],
  ['gateway', router()],
];

interface FieldCase {
  readonly field: string;
  readonly host: string;
  readonly port: number;
  readonly trafficPolicy: string;
  /** Reads the Envoy field the setting must land in (undefined when absent). */
  readonly read: (c: Cluster) => unknown;
  readonly expected: unknown;
}

const readSlowStartRR = (c: Cluster) => c.roundRobinLbConfig?.slowStartConfig;
const readSlowStartLR = (c: Cluster) => c.leastRequestLbConfig?.slowStartConfig;
const readZoneAware = (c: Cluster) => c.commonLbConfig?.zoneAwareLbConfig;
const readRetryBudget = (c: Cluster) => c.circuitBreakers?.thresholds[0]?.retryBudget;
const readH2Keepalive = (c: Cluster) => {
  const o = httpOptions(c);
  return (o?.explicitHttpConfig?.http2ProtocolOptions ?? o?.useDownstreamProtocolConfig?.http2ProtocolOptions)?.connectionKeepalive;
};
const readTcpKeepalive = (c: Cluster) => c.upstreamConnectionOptions?.tcpKeepalive;
const readMaxConnectionDuration = (c: Cluster) => httpOptions(c)?.commonHttpProtocolOptions?.maxConnectionDuration;
const readUseClientProtocol = (c: Cluster) => httpOptions(c)?.useDownstreamProtocolConfig;

const CASES: ReadonlyArray<FieldCase> = [
  {
    field: 'loadBalancer.warmup (round robin)',
    host: RATINGS,
    port: 9080,
    trafficPolicy: '{ loadBalancer: { simple: ROUND_ROBIN, warmup: { duration: 90s, minimumPercent: 15, aggression: 2 } } }',
    read: readSlowStartRR,
    expected: {
      slowStartWindow: { seconds: 90, nanos: 0 },
      aggression: { defaultValue: 2, runtimeKey: SLOW_START_AGGRESSION_RUNTIME_KEY },
      minWeightPercent: { value: 15 },
    },
  },
  {
    field: 'loadBalancer.warmup (least request, defaults left to Envoy)',
    host: RATINGS,
    port: 9080,
    trafficPolicy: '{ loadBalancer: { simple: LEAST_REQUEST, warmup: { duration: 1500ms } } }',
    read: readSlowStartLR,
    expected: { slowStartWindow: { seconds: 1, nanos: 500_000_000 }, aggression: undefined, minWeightPercent: undefined },
  },
  {
    field: 'loadBalancer.warmupDurationSecs (deprecated, default algorithm)',
    host: RATINGS,
    port: 9080,
    trafficPolicy: '{ loadBalancer: { warmupDurationSecs: 30s } }',
    read: readSlowStartRR,
    expected: { slowStartWindow: { seconds: 30, nanos: 0 }, aggression: undefined, minWeightPercent: undefined },
  },
  {
    field: 'loadBalancer.warmup with consistent hashing (Envoy has no slow start there)',
    host: RATINGS,
    port: 9080,
    trafficPolicy: '{ loadBalancer: { consistentHash: { httpHeaderName: x-user }, warmup: { duration: 60s } } }',
    read: (c) => readSlowStartRR(c) ?? readSlowStartLR(c),
    expected: undefined,
  },
  {
    field: 'loadBalancer.zoneAwareLbSetting (enabled)',
    host: RATINGS,
    port: 9080,
    trafficPolicy: '{ loadBalancer: { zoneAwareLbSetting: { enabled: true, minClusterSize: 3 } } }',
    read: readZoneAware,
    expected: { routingEnabled: { value: 100 }, minClusterSize: 3, failTrafficOnPanic: false },
  },
  {
    field: 'loadBalancer.zoneAwareLbSetting (enabled unset: off)',
    host: RATINGS,
    port: 9080,
    trafficPolicy: '{ loadBalancer: { zoneAwareLbSetting: { minClusterSize: 3 } } }',
    read: readZoneAware,
    expected: { routingEnabled: { value: 0 }, minClusterSize: undefined, failTrafficOnPanic: false },
  },
  {
    field: 'loadBalancer.zoneAwareLbSetting beside outlierDetection.minHealthPercent',
    host: RATINGS,
    port: 9080,
    trafficPolicy: '{ loadBalancer: { zoneAwareLbSetting: { enabled: true } }, outlierDetection: { consecutive5xxErrors: 3, minHealthPercent: 40 } }',
    read: (c) => [c.commonLbConfig?.healthyPanicThreshold, readZoneAware(c)?.routingEnabled],
    expected: [{ value: 40 }, { value: 100 }],
  },
  {
    field: 'connectionPool.http.http2KeepAlive (HTTP/2 port)',
    host: ECHO,
    port: 7070,
    trafficPolicy: '{ connectionPool: { http: { http2KeepAlive: { interval: 30s, timeout: 5s } } } }',
    read: readH2Keepalive,
    expected: { interval: { seconds: 30, nanos: 0 }, timeout: { seconds: 5, nanos: 0 }, intervalJitter: undefined, connectionIdleInterval: undefined },
  },
  {
    field: 'connectionPool.http.http2KeepAlive without timeout (Envoy requires one)',
    host: ECHO,
    port: 7070,
    trafficPolicy: '{ connectionPool: { http: { http2KeepAlive: { interval: 10s } } } }',
    read: (c) => readH2Keepalive(c)?.timeout,
    expected: { seconds: DEFAULT_HTTP2_KEEPALIVE_TIMEOUT_MS / 1000, nanos: 0 },
  },
  {
    field: 'connectionPool.http.http2KeepAlive on an HTTP/1.1 port upgraded to HTTP/2',
    host: RATINGS,
    port: 9080,
    trafficPolicy: '{ connectionPool: { http: { h2UpgradePolicy: UPGRADE, http2KeepAlive: { interval: 15s, timeout: 2s } } } }',
    read: (c) => readH2Keepalive(c)?.interval,
    expected: { seconds: 15, nanos: 0 },
  },
  {
    field: 'trafficPolicy.retryBudget',
    host: RATINGS,
    port: 9080,
    trafficPolicy: '{ retryBudget: { percent: 25, minRetryConcurrency: 5 } }',
    read: readRetryBudget,
    expected: { budgetPercent: { value: 25 }, minRetryConcurrency: 5 },
  },
  {
    field: 'trafficPolicy.retryBudget beside connection limits (one threshold)',
    host: RATINGS,
    port: 9080,
    trafficPolicy: '{ retryBudget: { percent: 10 }, connectionPool: { tcp: { maxConnections: 50 } } }',
    read: (c) => c.circuitBreakers?.thresholds.map((t) => [t.maxConnections, t.retryBudget]),
    expected: [[50, { budgetPercent: { value: 10 }, minRetryConcurrency: undefined }]],
  },
  {
    field: 'connectionPool.tcp.tcpKeepalive (whole seconds)',
    host: RATINGS,
    port: 9080,
    trafficPolicy: '{ connectionPool: { tcp: { tcpKeepalive: { probes: 4, time: 2m, interval: 1500ms } } } }',
    read: readTcpKeepalive,
    expected: { keepaliveProbes: 4, keepaliveTime: 120, keepaliveInterval: 1 },
  },
  {
    field: 'connectionPool.tcp.maxConnectionDuration',
    host: RATINGS,
    port: 9080,
    trafficPolicy: '{ connectionPool: { tcp: { maxConnectionDuration: 10m } } }',
    read: readMaxConnectionDuration,
    expected: { seconds: 600, nanos: 0 },
  },
  {
    field: 'connectionPool.http.useClientProtocol',
    host: RATINGS,
    port: 9080,
    trafficPolicy: '{ connectionPool: { http: { useClientProtocol: true } } }',
    read: (c) => [readUseClientProtocol(c) !== undefined, httpOptions(c)?.explicitHttpConfig],
    expected: [true, undefined],
  },
];

/** A rule that sets none of the fields above: every reader finds nothing. */
const UNSET = '{ loadBalancer: { simple: ROUND_ROBIN }, connectionPool: { tcp: { maxConnections: 10 }, http: { idleTimeout: 30s } } }';

describe.each(PROXIES)('DestinationRule fields in the clusters of a %s', (_kind, proxy) => {
  it.each(CASES)('$field: set → the exact Envoy field', ({ host, port, trafficPolicy, read, expected }) => {
    const m = modelFromYaml(rule(host, trafficPolicy));
    try {
      expect(read(clusterOf(m, proxy, `outbound|${port}||${host}`))).toEqual(expected);
    } finally {
      m.stop();
    }
  });

  it.each([
    ['ratings (HTTP/1.1)', RATINGS, 9080],
    ['echo (HTTP/2)', ECHO, 7070],
  ])('unset on %s → every one of those Envoy fields is absent', (_name, host, port) => {
    const m = modelFromYaml(rule(host, UNSET));
    try {
      const c = clusterOf(m, proxy, `outbound|${port}||${host}`);
      for (const read of [readSlowStartRR, readSlowStartLR, readZoneAware, readRetryBudget, readH2Keepalive, readTcpKeepalive, readMaxConnectionDuration, readUseClientProtocol]) {
        expect(read(c)).toBeUndefined();
      }
    } finally {
      m.stop();
    }
  });
});

describe('DestinationRule fields a proxyless gRPC client does not implement', () => {
  it.each(CASES.filter((c) => c.expected !== undefined))('$field: left out of the gRPC cluster', ({ host, port, trafficPolicy }) => {
    const m = modelFromYaml(rule(host, trafficPolicy));
    try {
      const c = clusterOf(m, grpcClient(), `outbound|${port}||${host}`);
      expect([readSlowStartRR(c), readSlowStartLR(c), readZoneAware(c), readRetryBudget(c), readH2Keepalive(c), readTcpKeepalive(c), readMaxConnectionDuration(c), readUseClientProtocol(c)]).toEqual(
        Array(8).fill(undefined),
      );
      // …while what gRPC does implement from the same rule is still there
      if (trafficPolicy.includes('maxConnections')) expect(c.circuitBreakers?.thresholds[0]?.maxConnections).toBe(50);
    } finally {
      m.stop();
    }
  });
});

describe('consistentHash.httpCookie.attributes', () => {
  const COOKIE = '{ loadBalancer: { consistentHash: { httpCookie: { name: session, path: /, ttl: 1h, attributes: [{ name: SameSite, value: Strict }, { name: Secure }] } } } }';
  const NO_ATTRIBUTES = '{ loadBalancer: { consistentHash: { httpCookie: { name: session, ttl: 0s } } } }';

  it.each(PROXIES)('%s: set → the attributes of the hash policy cookie, flags with an empty value', (_kind, proxy) => {
    const m = modelFromYaml(rule(RATINGS, COOKIE));
    try {
      const policies = hashPolicies(m, proxy, RATINGS, 9080);
      expect(policies.length).toBeGreaterThan(0);
      for (const hp of policies) {
        expect(hp).toHaveLength(1);
        expect(hp[0].cookie).toEqual({
          name: 'session',
          path: '/',
          ttl: { seconds: 3600, nanos: 0 },
          attributes: [
            { name: 'SameSite', value: 'Strict' },
            { name: 'Secure', value: '' },
          ],
        });
      }
    } finally {
      m.stop();
    }
  });

  it.each(PROXIES)('%s: unset → no attributes', (_kind, proxy) => {
    const m = modelFromYaml(rule(RATINGS, NO_ATTRIBUTES));
    try {
      const policies = hashPolicies(m, proxy, RATINGS, 9080);
      expect(policies.length).toBeGreaterThan(0);
      for (const hp of policies) expect(hp[0].cookie?.attributes).toEqual([]);
    } finally {
      m.stop();
    }
  });

  it('proxyless gRPC: the cookie goes without attributes (gRPC generates no cookies)', () => {
    const m = modelFromYaml(rule(RATINGS, COOKIE));
    try {
      const policies = hashPolicies(m, grpcClient(), RATINGS, 9080);
      expect(policies.length).toBeGreaterThan(0);
      for (const hp of policies) expect(hp[0].cookie).toMatchObject({ name: 'session', attributes: [] });
    } finally {
      m.stop();
    }
  });
});

describe('the same fields, and the VirtualService ones, pass Envoy’s protos and validation rules (tools/xds-validate against the daemon)', () => {
  const CONFIG = `
apiVersion: networking.mesh.io/v1
kind: Gateway
metadata: { name: public, namespace: mesh-system }
spec:
  selector: { app: mesh-ingressgateway }
  servers: [{ port: { number: 8080, name: http, protocol: HTTP }, hosts: ["*/ratings.example.com"] }]
---
apiVersion: networking.mesh.io/v1
kind: VirtualService
metadata: { name: ratings, namespace: default }
spec:
  hosts: [ratings, ratings.example.com]
  gateways: [mesh, mesh-system/public]
  http:
    - route: [{ destination: { host: ratings } }]
      retries: { attempts: 3, backoff: 250ms }
      corsPolicy: { allowOrigin: ["https://a.example.com"], unmatchedPreflights: IGNORE }
---
apiVersion: networking.mesh.io/v1
kind: DestinationRule
metadata: { name: ratings, namespace: default }
spec:
  host: ratings
  trafficPolicy:
    retryBudget: { percent: 25, minRetryConcurrency: 5 }
    loadBalancer:
      consistentHash: { httpCookie: { name: session, ttl: 1h, attributes: [{ name: SameSite, value: Lax }, { name: Secure }] } }
      zoneAwareLbSetting: { enabled: true, minClusterSize: 2 }
    connectionPool:
      tcp: { maxConnections: 20, maxConnectionDuration: 10m, tcpKeepalive: { probes: 3, time: 60s, interval: 10s } }
      http: { useClientProtocol: true, http2KeepAlive: { interval: 30s } }
  subsets:
    - name: v1
      labels: { version: v1 }
      trafficPolicy: { loadBalancer: { simple: LEAST_REQUEST, warmup: { duration: 45s, minimumPercent: 5, aggression: 1.5 } } }
---
apiVersion: networking.mesh.io/v1
kind: DestinationRule
metadata: { name: echo, namespace: default }
spec:
  host: echo
  trafficPolicy:
    loadBalancer: { warmupDurationSecs: 20s }
    connectionPool: { http: { http2KeepAlive: { interval: 15s } } }
`;
  const CDS = 'type.googleapis.com/envoy.config.cluster.v3.Cluster';
  const RDS = 'type.googleapis.com/envoy.config.route.v3.RouteConfiguration';

  interface Report {
    ok: boolean;
    errors: Array<{ type: string; name: string; message: string }>;
    dump?: Record<string, Record<string, unknown>>;
  }

  let validator: string;
  let dir: ConfigDir;
  let daemon: Daemon;

  beforeAll(async () => {
    validator = await goToolPath('xds-validate');
    dir = await makeConfigDir();
    await dir.write('rules.yaml', CONFIG);
    daemon = await startDaemon({ configDir: dir.path });
  }, GO_TOOL_BUILD_TIMEOUT_MS);

  afterAll(async () => {
    await daemon?.stop();
    await dir?.cleanup();
  });

  async function validate(nodeId: string, metadata: object): Promise<Report> {
    const args = ['-addr', daemon.grpcAddr, '-node-id', nodeId, '-metadata', JSON.stringify(metadata), '-timeout', '20s', '-dump'];
    return runXdsValidate<Report>(validator, args);
  }

  it.each([
    ['sidecar', 'sidecar~127.0.0.1~client-1.default~default.svc.cluster.local', { NAMESPACE: 'default', LABELS: { app: 'client' } }],
    ['gateway', 'router~127.0.0.1~gw-1.mesh-system~mesh-system.svc.cluster.local', { NAMESPACE: 'mesh-system', LABELS: { app: 'mesh-ingressgateway' } }],
  ])('a %s receives them under their Envoy names, and ACKs', async (_kind, nodeId, metadata) => {
    const report = await validate(nodeId, metadata);
    expect(report.errors).toEqual([]);
    expect(report.ok).toBe(true);
    const clusters = report.dump?.[CDS] ?? {};
    const ratings = JSON.stringify(clusters[`outbound|9080||${RATINGS}`]);
    expect(ratings).toContain('"retry_budget":{"budget_percent":{"value":25},"min_retry_concurrency":5}');
    expect(ratings).toContain('"zone_aware_lb_config":{"routing_enabled":{"value":100},"min_cluster_size":"2"}');
    expect(ratings).toContain('"tcp_keepalive":{"keepalive_probes":3,"keepalive_time":60,"keepalive_interval":10}');
    expect(ratings).toContain('"max_connection_duration":"600s"');
    expect(ratings).toContain('"use_downstream_protocol_config":{"http_protocol_options":{},"http2_protocol_options":{"connection_keepalive":{"interval":"30s","timeout":"20s"}}}');
    expect(JSON.stringify(clusters[`outbound|9080|v1|${RATINGS}`])).toContain(
      `"least_request_lb_config":{"slow_start_config":{"slow_start_window":"45s","aggression":{"default_value":1.5,"runtime_key":"${SLOW_START_AGGRESSION_RUNTIME_KEY}"},"min_weight_percent":{"value":5}}}`,
    );
    const echo = JSON.stringify(clusters[`outbound|7070||${ECHO}`]);
    expect(echo).toContain('"round_robin_lb_config":{"slow_start_config":{"slow_start_window":"20s"}}');
    expect(echo).toContain('"connection_keepalive":{"interval":"15s","timeout":"20s"}');
    const routes = JSON.stringify(report.dump?.[RDS] ?? {});
    expect(routes).toContain('"attributes":[{"name":"SameSite","value":"Lax"},{"name":"Secure"}]');
    expect(routes).toContain('"retry_back_off":{"base_interval":"0.250s"}');
    expect(routes).toContain(
      '"retry_host_predicate":[{"name":"envoy.retry_host_predicates.previous_hosts","typed_config":{"@type":"type.googleapis.com/envoy.extensions.retry.host.previous_hosts.v3.PreviousHostsPredicate"}}]',
    );
    expect(routes).toContain('"allow_origin_string_match":[{"exact":"https://a.example.com"}]');
    expect(routes).toContain('"forward_not_matching_preflights":false');
  }, 120_000);

  it('no proxy NACKed anything the daemon sent', async () => {
    expect(await daemon.metric('disc_total_xds_rejects')).toBe(0);
  });
});
