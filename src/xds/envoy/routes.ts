/**
 * Route builders: VirtualService HTTP routes → envoy.config.route.v3.Route, for sidecars, gateways
 * and proxyless gRPC clients alike (the `proxyless` switch trims what gRPC clients don't implement).
 */
import {
  RedirectAction_RedirectResponseCode,
  type Route,
  type RouteAction,
  type HeaderMatcher,
  type RouteMatch,
} from '../../gen/envoy/config/route/v3/route_components.js';
import { HeaderValueOption_HeaderAppendAction } from '../../gen/envoy/config/core/v3/base.js';
import { HTTPFault } from '../../gen/envoy/extensions/filters/http/fault/v3/fault.js';
import { CorsPolicy } from '../../gen/envoy/extensions/filters/http/cors/v3/cors.js';
import type { StringMatcher } from '../../gen/envoy/type/matcher/v3/string.js';
import type { Any } from '../../gen/google/protobuf/any.js';
import type { HTTPMatchRequest, HTTPRoute, HTTPRouteDestination, TrafficPolicy } from '../../config/spec-types.js';
import { resolveHost } from '../../model/host.js';
import type { PushContext } from '../../model/push-context.js';
import type { Proxy } from '../../model/proxy.js';
import type { Service } from '../../model/service.js';
import { Filters, outboundClusterName } from './names.js';
import { configMs, duration, pack, percent, type Shape } from './pack.js';

export type RouteShape = Shape<Route>;
type StringMatch = { exact?: string; prefix?: string; regex?: string };

const GRPC_CODES: Record<string, number> = {
  OK: 0, CANCELLED: 1, UNKNOWN: 2, INVALID_ARGUMENT: 3, DEADLINE_EXCEEDED: 4, NOT_FOUND: 5, ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7, RESOURCE_EXHAUSTED: 8, FAILED_PRECONDITION: 9, ABORTED: 10, OUT_OF_RANGE: 11,
  UNIMPLEMENTED: 12, INTERNAL: 13, UNAVAILABLE: 14, DATA_LOSS: 15, UNAUTHENTICATED: 16,
};

const DEFAULT_RETRY_ON = 'connect-failure,refused-stream,unavailable,cancelled,retriable-status-codes';
const DEFAULT_RETRY_ATTEMPTS = 2;

/** What route building needs to know about its surroundings. */
export interface RouteContext {
  readonly push: PushContext;
  readonly proxy: Proxy;
  /** Namespace of the VirtualService whose routes are built (short hosts resolve against it). */
  readonly namespace: string;
  /** The listener/server port the routes are for; routes matching other ports are dropped. */
  readonly listenerPort: number;
  readonly proxyless: boolean;
  readonly defaultTimeoutMs: number;
  /** Gateway names the routes are built for (`mesh` or `ns/name`), for match.gateways filtering. */
  readonly gateway: string;
}

export function stringMatcher(m: StringMatch, ignoreCase = false): Shape<StringMatcher> | undefined {
  if (m.exact !== undefined) return { exact: m.exact, ignoreCase };
  if (m.prefix !== undefined) return { prefix: m.prefix, ignoreCase };
  if (m.regex !== undefined) return { safeRegex: { regex: m.regex } };
  return undefined;
}

function headerMatcher(name: string, m: StringMatch, invert: boolean): Shape<HeaderMatcher> {
  const sm = stringMatcher(m);
  // An empty StringMatch means "header present".
  return sm ? { name, stringMatch: sm, invertMatch: invert } : { name, presentMatch: true, invertMatch: invert };
}

function buildMatch(m: HTTPMatchRequest | undefined): Shape<RouteMatch> {
  const match: { -readonly [K in keyof Shape<RouteMatch>]: Shape<RouteMatch>[K] } = {};
  const uri = m?.uri as StringMatch | undefined;
  if (uri?.exact !== undefined) match.path = uri.exact;
  else if (uri?.regex !== undefined) match.safeRegex = { regex: uri.regex };
  else match.prefix = uri?.prefix ?? '/';
  if (m?.ignoreUriCase) match.caseSensitive = false;
  const headers: Shape<HeaderMatcher>[] = [];
  for (const [name, v] of Object.entries(m?.headers ?? {})) headers.push(headerMatcher(name.toLowerCase(), v as StringMatch, false));
  for (const [name, v] of Object.entries(m?.withoutHeaders ?? {})) headers.push(headerMatcher(name.toLowerCase(), v as StringMatch, true));
  if (m?.method) headers.push(headerMatcher(':method', m.method as StringMatch, false));
  if (m?.authority) headers.push(headerMatcher(':authority', m.authority as StringMatch, false));
  if (m?.scheme) headers.push(headerMatcher(':scheme', m.scheme as StringMatch, false));
  if (headers.length > 0) match.headers = headers;
  const qp = Object.entries(m?.queryParams ?? {});
  if (qp.length > 0) {
    match.queryParameters = qp.map(([name, v]) => {
      const sm = stringMatcher(v as StringMatch);
      return sm ? { name, stringMatch: sm } : { name, presentMatch: true };
    });
  }
  return match;
}

function matchApplies(m: HTTPMatchRequest | undefined, ctx: RouteContext): boolean {
  if (!m) return true;
  if (m.port && m.port !== ctx.listenerPort) return false;
  if (m.gateways && m.gateways.length > 0) {
    const gws = m.gateways.map((g) => (g === 'mesh' || g.includes('/') ? g : `${ctx.namespace}/${g}`));
    if (!gws.includes(ctx.gateway)) return false;
  }
  if (m.sourceLabels) {
    for (const [k, v] of Object.entries(m.sourceLabels)) if (ctx.proxy.labels[k] !== v) return false;
  }
  if (m.sourceNamespace && m.sourceNamespace !== ctx.proxy.namespace) return false;
  return true;
}

/** The cluster a destination resolves to, or undefined when the host or subset does not exist. */
export function destinationCluster(d: HTTPRouteDestination['destination'] | undefined, ctx: RouteContext): string | undefined {
  if (!d?.host) return undefined;
  const host = resolveHost(d.host, ctx.namespace, ctx.push.mesh.domain);
  const svc = ctx.push.serviceForHost(host, ctx.proxy.namespace);
  if (!svc) return undefined;
  const port = d.port?.number ?? (svc.ports.length === 1 ? svc.ports[0].port : ctx.listenerPort);
  if (!svc.ports.some((p) => p.port === port)) return undefined;
  if (d.subset) {
    const dr = ctx.push.destinationRule(ctx.proxy, svc);
    if (!dr?.spec.subsets?.some((s) => s.name === d.subset)) return undefined;
  }
  return outboundClusterName(port, d.subset ?? '', svc.hostname);
}

type HeaderOps = { set?: Record<string, string>; add?: Record<string, string>; remove?: string[] };

function headersToAdd(ops: HeaderOps | undefined): Array<{ header: { key: string; value: string }; appendAction: HeaderValueOption_HeaderAppendAction }> {
  const out: Array<{ header: { key: string; value: string }; appendAction: HeaderValueOption_HeaderAppendAction }> = [];
  for (const [key, value] of Object.entries(ops?.set ?? {})) out.push({ header: { key, value }, appendAction: HeaderValueOption_HeaderAppendAction.OVERWRITE_IF_EXISTS_OR_ADD });
  for (const [key, value] of Object.entries(ops?.add ?? {})) out.push({ header: { key, value }, appendAction: HeaderValueOption_HeaderAppendAction.APPEND_IF_EXISTS_OR_ADD });
  return out;
}

function retryPolicy(route: HTTPRoute): Shape<RouteAction>['retryPolicy'] | undefined {
  const r = route.retries;
  const attempts = r?.attempts ?? DEFAULT_RETRY_ATTEMPTS;
  if (attempts <= 0) return undefined;
  const statusCodes: number[] = [];
  const on: string[] = [];
  for (const item of (r?.retryOn ?? DEFAULT_RETRY_ON).split(',').map((s) => s.trim()).filter(Boolean)) {
    if (/^\d{3}$/.test(item)) statusCodes.push(Number(item));
    else on.push(item);
  }
  if (statusCodes.length > 0 && !on.includes('retriable-status-codes')) on.push('retriable-status-codes');
  const perTry = configMs(r?.perTryTimeout);
  return {
    retryOn: on.join(','),
    numRetries: attempts,
    perTryTimeout: perTry !== undefined ? duration(perTry) : undefined,
    retriableStatusCodes: statusCodes,
    retryHostPredicate: [],
    hostSelectionRetryMaxAttempts: 5,
  };
}

function faultConfig(route: HTTPRoute): Any | undefined {
  const f = route.fault;
  if (!f || (!f.delay && !f.abort)) return undefined;
  const delayMs = configMs(f.delay?.fixedDelay);
  const grpc = f.abort?.grpcStatus;
  return pack('envoy.extensions.filters.http.fault.v3.HTTPFault', HTTPFault, {
    delay: f.delay && delayMs !== undefined ? { fixedDelay: duration(delayMs), percentage: percent(f.delay.percentage?.value) } : undefined,
    abort: f.abort
      ? {
          ...(grpc !== undefined
            ? { grpcStatus: typeof grpc === 'number' ? grpc : (GRPC_CODES[String(grpc).toUpperCase()] ?? 2) }
            : { httpStatus: f.abort.httpStatus ?? 503 }),
          percentage: percent(f.abort.percentage?.value),
        }
      : undefined,
  });
}

function corsConfig(route: HTTPRoute): Any | undefined {
  const c = route.corsPolicy;
  if (!c) return undefined;
  const maxAgeMs = configMs(c.maxAge);
  return pack('envoy.extensions.filters.http.cors.v3.CorsPolicy', CorsPolicy, {
    allowOriginStringMatch: (c.allowOrigins ?? []).map((o) => stringMatcher(o as StringMatch)).filter((m): m is Shape<StringMatcher> => m !== undefined),
    allowMethods: (c.allowMethods ?? []).join(','),
    allowHeaders: (c.allowHeaders ?? []).join(','),
    exposeHeaders: (c.exposeHeaders ?? []).join(','),
    maxAge: maxAgeMs !== undefined ? String(Math.floor(maxAgeMs / 1000)) : '',
    allowCredentials: c.allowCredentials,
  });
}

/** Hash policy for consistent-hash load balancing, from the destination's rule. */
export function hashPolicy(policy: TrafficPolicy | undefined): Shape<RouteAction>['hashPolicy'] {
  const ch = policy?.loadBalancer?.consistentHash;
  if (!ch) return [];
  if (ch.httpHeaderName) return [{ header: { headerName: ch.httpHeaderName } }];
  if (ch.httpCookie) {
    const ttl = configMs(ch.httpCookie.ttl);
    return [{ cookie: { name: ch.httpCookie.name ?? '', path: ch.httpCookie.path ?? '', ttl: ttl !== undefined ? duration(ttl) : undefined } }];
  }
  if (ch.useSourceIp) return [{ connectionProperties: { sourceIp: true } }];
  if (ch.httpQueryParameterName) return [{ queryParameter: { name: ch.httpQueryParameterName } }];
  return [];
}

function routeAction(route: HTTPRoute, ctx: RouteContext): Shape<RouteAction> | undefined {
  const dests = (route.route ?? [])
    .map((d) => ({ d, cluster: destinationCluster(d.destination, ctx) }))
    .filter((x): x is { d: HTTPRouteDestination; cluster: string } => x.cluster !== undefined);
  const weighted = dests.filter((x) => dests.length === 1 || (x.d.weight ?? 0) > 0);
  if (weighted.length === 0) return undefined;
  const timeoutMs = configMs(route.timeout, ctx.defaultTimeoutMs);
  const action: { -readonly [K in keyof Shape<RouteAction>]: Shape<RouteAction>[K] } = {};
  if (weighted.length === 1) action.cluster = weighted[0].cluster;
  else {
    action.weightedClusters = {
      clusters: weighted.map((x) => ({
        name: x.cluster,
        weight: x.d.weight ?? 0,
        requestHeadersToAdd: headersToAdd(x.d.headers?.request as HeaderOps | undefined),
        requestHeadersToRemove: (x.d.headers?.request as HeaderOps | undefined)?.remove ?? [],
        responseHeadersToAdd: headersToAdd(x.d.headers?.response as HeaderOps | undefined),
        responseHeadersToRemove: (x.d.headers?.response as HeaderOps | undefined)?.remove ?? [],
      })),
    };
  }
  if (ctx.proxyless) {
    action.maxStreamDuration = { maxStreamDuration: duration(timeoutMs) };
  } else {
    action.timeout = duration(timeoutMs);
  }
  const retry = retryPolicy(route);
  if (retry) action.retryPolicy = retry;
  if (route.rewrite?.uri !== undefined) action.prefixRewrite = route.rewrite.uri;
  else if (route.rewrite?.uriRegexRewrite) action.regexRewrite = { pattern: { regex: route.rewrite.uriRegexRewrite.match ?? '' }, substitution: route.rewrite.uriRegexRewrite.rewrite ?? '' };
  if (route.rewrite?.authority) action.hostRewriteLiteral = route.rewrite.authority;
  // mirrorPercent is the deprecated whole-number spelling of mirrorPercentage
  const mirrorPercentage = route.mirrorPercentage ?? (route.mirrorPercent !== undefined ? { value: route.mirrorPercent } : undefined);
  const mirrors = [...(route.mirror ? [{ destination: route.mirror, percentage: mirrorPercentage }] : []), ...(route.mirrors ?? [])];
  if (mirrors.length > 0 && !ctx.proxyless) {
    action.requestMirrorPolicies = mirrors
      .map((m) => ({ cluster: destinationCluster(m.destination, ctx), pct: m.percentage?.value }))
      .filter((m): m is { cluster: string; pct: number | undefined } => m.cluster !== undefined)
      .map((m) => ({ cluster: m.cluster, runtimeFraction: { defaultValue: percent(m.pct), runtimeKey: '' } }));
  }
  // consistent hashing of the first destination's rule
  const first = weighted[0].d.destination;
  if (first?.host) {
    const svc = ctx.push.serviceForHost(resolveHost(first.host, ctx.namespace, ctx.push.mesh.domain), ctx.proxy.namespace);
    if (svc) {
      const hp = hashPolicy(ctx.push.destinationRule(ctx.proxy, svc)?.spec.trafficPolicy);
      if (hp && hp.length > 0) action.hashPolicy = hp;
    }
  }
  return action;
}

const REDIRECT_CODES: Record<number, RedirectAction_RedirectResponseCode> = {
  301: RedirectAction_RedirectResponseCode.MOVED_PERMANENTLY,
  302: RedirectAction_RedirectResponseCode.FOUND,
  303: RedirectAction_RedirectResponseCode.SEE_OTHER,
  307: RedirectAction_RedirectResponseCode.TEMPORARY_REDIRECT,
  308: RedirectAction_RedirectResponseCode.PERMANENT_REDIRECT,
};

/** Routes for one VirtualService's http section (already delegate-merged), for one listener port. */
export function buildHttpRoutes(vsName: string, http: ReadonlyArray<HTTPRoute>, ctx: RouteContext): RouteShape[] {
  const out: RouteShape[] = [];
  http.forEach((route, ri) => {
    const matches = route.match && route.match.length > 0 ? route.match : [undefined];
    for (const m of matches) {
      if (!matchApplies(m, ctx)) continue;
      const name = route.name ?? m?.name ?? `${vsName}.${ri}`;
      const typedPerFilterConfig: Record<string, Any> = {};
      const fault = faultConfig(route);
      if (fault) typedPerFilterConfig[Filters.fault] = fault;
      const cors = ctx.proxyless ? undefined : corsConfig(route);
      if (cors) typedPerFilterConfig[Filters.cors] = cors;
      const reqHeaders = route.headers?.request as HeaderOps | undefined;
      const respHeaders = route.headers?.response as HeaderOps | undefined;
      const base: { -readonly [K in keyof RouteShape]: RouteShape[K] } = {
        name,
        match: buildMatch(m),
        typedPerFilterConfig,
      };
      if (!ctx.proxyless) {
        base.requestHeadersToAdd = headersToAdd(reqHeaders);
        base.requestHeadersToRemove = reqHeaders?.remove ?? [];
        base.responseHeadersToAdd = headersToAdd(respHeaders);
        base.responseHeadersToRemove = respHeaders?.remove ?? [];
      }
      if (route.redirect) {
        const r = route.redirect;
        base.redirect = {
          ...(r.prefixRewrite !== undefined ? { prefixRewrite: r.prefixRewrite } : { pathRedirect: r.uri }),
          hostRedirect: r.authority ?? '',
          portRedirect: r.port ?? 0,
          schemeRedirect: r.scheme,
          responseCode: REDIRECT_CODES[r.redirectCode ?? 301] ?? RedirectAction_RedirectResponseCode.MOVED_PERMANENTLY,
        };
      } else if (route.directResponse) {
        base.directResponse = { status: route.directResponse.status ?? 200, body: route.directResponse.body?.string !== undefined ? { inlineString: route.directResponse.body.string } : undefined };
      } else {
        const action = routeAction(route, ctx);
        if (action) base.route = action;
        else base.directResponse = { status: 503 };
      }
      out.push(base);
    }
  });
  return out;
}

/** The route used when no VirtualService covers a service: everything to the service's port cluster. */
export function defaultRoute(service: Service, port: number, ctx: RouteContext): RouteShape {
  const timeout = duration(ctx.defaultTimeoutMs);
  const hp = hashPolicy(ctx.push.destinationRule(ctx.proxy, service)?.spec.trafficPolicy);
  const action: Shape<RouteAction> = {
    cluster: outboundClusterName(port, '', service.hostname),
    ...(ctx.proxyless ? { maxStreamDuration: { maxStreamDuration: timeout } } : { timeout }),
    retryPolicy: retryPolicy({}),
    hashPolicy: hp,
  };
  return { name: 'default', match: { prefix: '/' }, route: action };
}
