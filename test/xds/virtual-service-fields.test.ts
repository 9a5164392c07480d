/**
 * VirtualService fields of the public API that the generators used to drop reach the proxies: retry
 * back-off and the previous-hosts retry predicate, the deprecated `corsPolicy.allowOrigin` and
 * `corsPolicy.unmatchedPreflights`. Each set lands in the exact Envoy route field for sidecars and
 * gateways and is absent when unset; proxyless gRPC clients get only what gRPC's xDS client implements
 * (retry back-off, no host predicates, no CORS).
 */
import { CorsPolicy } from '../../src/gen/envoy/extensions/filters/http/cors/v3/cors.js';
import { HTTPFault } from '../../src/gen/envoy/extensions/filters/http/fault/v3/fault.js';
import type { RouteConfiguration } from '../../src/gen/envoy/config/route/v3/route.js';
import type { Route } from '../../src/gen/envoy/config/route/v3/route_components.js';
import type { Proxy } from '../../src/model/proxy.js';
import { hcmOf } from '../support/decode.js';
import { grpcClient, modelFromYaml, router, sidecar, TypeUrl, type TestModel } from '../support/model.js';

const RATINGS = 'ratings.default.svc.cluster.local';
const PREVIOUS_HOSTS = {
  name: 'envoy.retry_host_predicates.previous_hosts',
  typedConfig: { typeUrl: 'type.googleapis.com/envoy.extensions.retry.host.previous_hosts.v3.PreviousHostsPredicate', value: Buffer.alloc(0) },
};

/** One HTTP route for ratings, served to sidecars (by host) and to the gateway (ratings.example.com). */
function config(httpRoute: string): string {
  return `
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
  http: [${httpRoute}]
`;
}

function routeConfigs(m: TestModel, proxy: Proxy): RouteConfiguration[] {
  if (proxy.type === 'grpc') return m.generate(proxy, TypeUrl.Route, [`${RATINGS}:9080`]);
  const names = new Set(m.generate(proxy, TypeUrl.Listener).flatMap((l) => hcmOf(l).map((h) => h.rds?.routeConfigName ?? '')));
  names.delete('');
  return m.generate(proxy, TypeUrl.Route, names);
}

/** The routes the VirtualService made (its routes go to ratings' cluster). */
function ratingsRoutes(m: TestModel, proxy: Proxy): Route[] {
  const routes = routeConfigs(m, proxy)
    .flatMap((rc) => rc.virtualHosts)
    .filter((vh) => vh.domains.some((d) => d.startsWith('ratings')))
    .flatMap((vh) => vh.routes)
    .filter((r) => r.route?.cluster === `outbound|9080||${RATINGS}`);
  if (routes.length === 0) throw new Error(`no ratings route for ${proxy.id}`);
  return routes;
}

function cors(r: Route): CorsPolicy | undefined {
  const any = r.typedPerFilterConfig['envoy.filters.http.cors'];
  return any ? CorsPolicy.decode(any.value) : undefined;
}

function fault(r: Route): HTTPFault | undefined {
  const any = r.typedPerFilterConfig['envoy.filters.http.fault'];
  return any ? HTTPFault.decode(any.value) : undefined;
}

const ROUTE = `route: [{ destination: { host: ratings } }]`;

interface FieldCase {
  readonly field: string;
  readonly httpRoute: string;
  readonly read: (r: Route) => unknown;
  readonly expected: unknown;
}

const readBackOff = (r: Route) => r.route?.retryPolicy?.retryBackOff;
const readHostPredicates = (r: Route) => r.route?.retryPolicy?.retryHostPredicate;
const readOrigins = (r: Route) => cors(r)?.allowOriginStringMatch;
const readPreflights = (r: Route) => cors(r)?.forwardNotMatchingPreflights;

const CASES: ReadonlyArray<FieldCase> = [
  {
    field: 'retries.backoff',
    httpRoute: `{ ${ROUTE}, retries: { attempts: 3, backoff: 250ms } }`,
    read: readBackOff,
    expected: { baseInterval: { seconds: 0, nanos: 250_000_000 }, maxInterval: undefined },
  },
  {
    field: 'retries.retryIgnorePreviousHosts unset (default true)',
    httpRoute: `{ ${ROUTE}, retries: { attempts: 3 } }`,
    read: readHostPredicates,
    expected: [PREVIOUS_HOSTS],
  },
  {
    field: 'retries.retryIgnorePreviousHosts: false',
    httpRoute: `{ ${ROUTE}, retries: { attempts: 3, retryIgnorePreviousHosts: false } }`,
    read: readHostPredicates,
    expected: [],
  },
  {
    field: 'corsPolicy.allowOrigin (deprecated): exact matches',
    httpRoute: `{ ${ROUTE}, corsPolicy: { allowOrigin: ["https://a.example.com", "https://b.example.com"], allowMethods: [GET] } }`,
    read: (r) => readOrigins(r)?.map((m) => m.exact),
    expected: ['https://a.example.com', 'https://b.example.com'],
  },
  {
    field: 'corsPolicy.unmatchedPreflights: IGNORE',
    httpRoute: `{ ${ROUTE}, corsPolicy: { allowOrigins: [{ exact: "https://a.example.com" }], unmatchedPreflights: IGNORE } }`,
    read: readPreflights,
    expected: false,
  },
  {
    field: 'corsPolicy.unmatchedPreflights: FORWARD',
    httpRoute: `{ ${ROUTE}, corsPolicy: { allowOrigins: [{ exact: "https://a.example.com" }], unmatchedPreflights: FORWARD } }`,
    read: readPreflights,
    expected: true,
  },
  {
    field: 'fault.abort.http2Error alone (not applied: no abort, rather than a wrong one)',
    httpRoute: `{ ${ROUTE}, fault: { abort: { http2Error: REFUSED_STREAM, percentage: { value: 5 } } } }`,
    read: fault,
    expected: undefined,
  },
  {
    field: 'fault.abort.http2Error beside a delay (the delay still applies)',
    httpRoute: `{ ${ROUTE}, fault: { delay: { fixedDelay: 2s }, abort: { http2Error: REFUSED_STREAM } } }`,
    read: (r) => [fault(r)?.delay?.fixedDelay, fault(r)?.abort],
    expected: [{ seconds: 2, nanos: 0 }, undefined],
  },
  {
    field: 'fault.abort.httpStatus (still applied)',
    httpRoute: `{ ${ROUTE}, fault: { abort: { httpStatus: 418, percentage: { value: 5 } } } }`,
    read: (r) => fault(r)?.abort?.httpStatus,
    expected: 418,
  },
];

describe.each([
  ['sidecar', sidecar('10.0.0.5', 'client-1')],
  ['gateway', router()],
])('VirtualService fields in the routes of a %s', (_kind, proxy) => {
  it.each(CASES)('$field → the exact Envoy field', ({ httpRoute, read, expected }) => {
    const m = modelFromYaml(config(httpRoute));
    try {
      for (const r of ratingsRoutes(m, proxy)) expect(read(r)).toEqual(expected);
    } finally {
      m.stop();
    }
  });

  it('unset → no back-off, no allowed origins from allowOrigin, Envoy’s default for preflights', () => {
    const m = modelFromYaml(config(`{ ${ROUTE}, retries: { attempts: 2 }, corsPolicy: { allowOrigins: [{ prefix: "https://" }] } }`));
    try {
      for (const r of ratingsRoutes(m, proxy)) {
        expect(readBackOff(r)).toBeUndefined();
        expect(readOrigins(r)?.map((o) => o.prefix)).toEqual(['https://']);
        expect(readPreflights(r)).toBeUndefined();
      }
    } finally {
      m.stop();
    }
  });
});

describe('VirtualService retry fields for a proxyless gRPC client', () => {
  it('keeps the back-off (gRPC implements it) and leaves out host predicates (it has none)', () => {
    const m = modelFromYaml(config(`{ ${ROUTE}, retries: { attempts: 3, retryOn: unavailable, backoff: 1s } }`));
    try {
      for (const r of ratingsRoutes(m, grpcClient())) {
        expect(readBackOff(r)).toEqual({ baseInterval: { seconds: 1, nanos: 0 }, maxInterval: undefined });
        expect(readHostPredicates(r)).toEqual([]);
        expect(cors(r)).toBeUndefined();
      }
    } finally {
      m.stop();
    }
  });
});
