/** Semantic checks of VirtualService specs. */
import type {
  CorsPolicy,
  Destination,
  HTTPFaultInjection,
  HTTPMatchRequest,
  HTTPRoute,
  HTTPRouteDestination,
  Headers,
  Headers_HeaderOperations,
  L4MatchAttributes,
  RouteDestination,
  StringMatch,
  VirtualService,
} from '../../gen/config/schemas.js';
import {
  type ConfigIssue,
  Issues,
  checkExportTo,
  checkHost,
  checkMinDuration,
  checkNonNegative,
  checkPercent,
  checkPortNumber,
  checkRegex,
  isDns1123Label,
  isDns1123Subdomain,
  isIpOrCidr,
  join,
} from './common.js';

const GRPC_STATUS = new Set([
  'OK',
  'CANCELLED',
  'UNKNOWN',
  'INVALID_ARGUMENT',
  'DEADLINE_EXCEEDED',
  'NOT_FOUND',
  'ALREADY_EXISTS',
  'PERMISSION_DENIED',
  'RESOURCE_EXHAUSTED',
  'FAILED_PRECONDITION',
  'ABORTED',
  'OUT_OF_RANGE',
  'UNIMPLEMENTED',
  'INTERNAL',
  'UNAVAILABLE',
  'DATA_LOSS',
  'UNAUTHENTICATED',
]);

const HTTP_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'CONNECT', 'OPTIONS', 'TRACE', 'PATCH']);
const REDIRECT_CODES = new Set([301, 302, 303, 307, 308]);

/** Retry conditions of the proxy (HTTP and gRPC); HTTP status codes are allowed as well. */
const RETRY_ON = new Set([
  '5xx',
  'gateway-error',
  'reset',
  'reset-before-request',
  'connect-failure',
  'envoy-ratelimited',
  'retriable-4xx',
  'refused-stream',
  'retriable-status-codes',
  'retriable-headers',
  'http3-post-connect-failure',
  'cancelled',
  'deadline-exceeded',
  'internal',
  'resource-exhausted',
  'unavailable',
]);

export function validateVirtualService(spec: VirtualService, path = 'spec'): ConfigIssue[] {
  const issues = new Issues();
  const hosts = spec.hosts ?? [];
  // A VirtualService without hosts can only be used as the delegate of another one.
  const isDelegate = hosts.length === 0;
  hosts.forEach((h, i) => checkHost(issues, join(path, 'hosts', i), h, { wildcard: true, ip: true }));
  checkDuplicates(issues, join(path, 'hosts'), hosts, 'host');
  checkOverlappingHosts(issues, join(path, 'hosts'), hosts);
  const gateways = spec.gateways ?? [];
  if ((gateways.length === 0 || gateways.includes('mesh')) && hosts.includes('*')) {
    issues.add(join(path, 'hosts', hosts.indexOf('*')), 'wildcard host "*" is not allowed for a VirtualService bound to the mesh gateway: it would capture all traffic of every sidecar');
  }
  if (isDelegate) {
    if ((spec.gateways?.length ?? 0) > 0) issues.add(join(path, 'gateways'), 'a VirtualService without hosts is a delegate and must not list gateways');
    if ((spec.tls?.length ?? 0) > 0) issues.add(join(path, 'tls'), 'a VirtualService without hosts is a delegate and cannot have tls routes');
  }
  (spec.gateways ?? []).forEach((g, i) => checkGatewayRef(issues, join(path, 'gateways', i), g));
  if (isDelegate && !spec.http?.length) {
    issues.add(join(path, 'hosts'), 'at least one host is required (only a delegate, which has http routes, may leave hosts out)');
  } else if (!spec.http?.length && !spec.tcp?.length && !spec.tls?.length) {
    issues.add(path, 'at least one of http, tcp or tls routes is required');
  }
  (spec.http ?? []).forEach((r, i) => checkHttpRoute(issues, join(path, 'http', i), r, isDelegate));
  (spec.tcp ?? []).forEach((r, i) => {
    const p = join(path, 'tcp', i);
    (r.match ?? []).forEach((m, j) => checkL4Match(issues, join(p, 'match', j), m));
    checkRouteDestinations(issues, join(p, 'route'), r.route);
  });
  (spec.tls ?? []).forEach((r, i) => {
    const p = join(path, 'tls', i);
    (r.match ?? []).forEach((m, j) => {
      const mp = join(p, 'match', j);
      m.sniHosts.forEach((h, k) => checkHost(issues, join(mp, 'sniHosts', k), h, { wildcard: true, ip: false }));
      checkL4Match(issues, mp, m);
    });
    checkRouteDestinations(issues, join(p, 'route'), r.route);
  });
  checkExportTo(issues, join(path, 'exportTo'), spec.exportTo);
  return issues.list;
}

/** A host that another host of the list already covers (`a.example.com` beside `*.example.com`). */
function checkOverlappingHosts(issues: Issues, path: string, hosts: ReadonlyArray<string>): void {
  hosts.forEach((h, i) => {
    const wider = hosts.findIndex((o, j) => j !== i && o !== h && wildcardCovers(o, h));
    if (wider >= 0) issues.add(join(path, i), `host "${h}" overlaps host "${hosts[wider]}" of the same VirtualService`);
  });
}

/** True when wildcard host `pattern` (`*`, `*.suffix`, `*suffix`) covers `host`. */
function wildcardCovers(pattern: string, host: string): boolean {
  if (!pattern.startsWith('*')) return false;
  const suffix = pattern.slice(1);
  return host.endsWith(suffix) && host.length > suffix.length && (!host.startsWith('*') || host.length > pattern.length);
}

function checkDuplicates(issues: Issues, path: string, items: ReadonlyArray<string>, what: string): void {
  const seen = new Set<string>();
  items.forEach((item, i) => {
    if (seen.has(item)) issues.add(join(path, i), `duplicate ${what} "${item}"`);
    seen.add(item);
  });
}

/** `mesh`, `name` or `namespace/name`. */
function checkGatewayRef(issues: Issues, path: string, ref: string): void {
  if (ref === 'mesh') return;
  const parts = ref.split('/');
  const ok = parts.length <= 2 && parts.every((p) => p.split('.').every((l) => isDns1123Label(l)));
  if (!ok) issues.add(path, `gateway "${ref}" is neither "mesh", "name" nor "namespace/name"`);
}

function checkHttpRoute(issues: Issues, path: string, route: HTTPRoute, inDelegate: boolean): void {
  const hasRoute = (route.route?.length ?? 0) > 0;
  const actions = [
    hasRoute ? 'route' : undefined,
    route.redirect ? 'redirect' : undefined,
    route.directResponse ? 'directResponse' : undefined,
    route.delegate ? 'delegate' : undefined,
  ].filter((a): a is string => a !== undefined);
  if (actions.length === 0) issues.add(path, 'one of route, redirect, directResponse or delegate is required');
  if (actions.length > 1) issues.add(path, `${actions.join(', ')} are mutually exclusive`);
  if (route.delegate && inDelegate) issues.add(join(path, 'delegate'), 'a delegate VirtualService cannot delegate further');
  if (route.redirect && route.rewrite) issues.add(join(path, 'rewrite'), 'rewrite cannot be combined with redirect');

  (route.match ?? []).forEach((m, i) => checkHttpMatch(issues, join(path, 'match', i), m));
  if (route.route) checkHttpRouteDestinations(issues, join(path, 'route'), route.route);

  if (route.redirect) {
    const r = route.redirect;
    const rp = join(path, 'redirect');
    if (!r.uri && !r.authority && r.port === undefined && !r.scheme && r.derivePort === undefined && r.prefixRewrite === undefined) {
      issues.add(rp, 'a redirect needs at least one of uri, prefixRewrite, authority, port, derivePort or scheme');
    }
    checkPortNumber(issues, join(rp, 'port'), r.port);
    // 0 means the default, 301
    if (r.redirectCode !== undefined && r.redirectCode !== 0 && !REDIRECT_CODES.has(r.redirectCode)) {
      issues.add(join(rp, 'redirectCode'), `redirect code ${r.redirectCode} is not one of 301, 302, 303, 307, 308`);
    }
    if (r.prefixRewrite !== undefined) {
      if (r.uri !== undefined && r.uri !== '') issues.add(join(rp, 'prefixRewrite'), 'prefixRewrite and uri are mutually exclusive');
      (route.match ?? []).forEach((m, i) => {
        if (m.uri && m.uri.prefix === undefined) issues.add(join(path, 'match', i, 'uri'), 'with redirect.prefixRewrite every uri match must be a prefix match');
      });
    }
  }
  if (route.directResponse) {
    const status = route.directResponse.status;
    if (status < 200 || status > 599) issues.add(join(path, 'directResponse', 'status'), `HTTP status ${status} is outside 200..599`);
  }
  if (route.delegate) {
    const d = route.delegate;
    if (!isDns1123Subdomain(d.name)) issues.add(join(path, 'delegate', 'name'), `"${d.name}" is not a valid resource name`);
    if (d.namespace !== undefined && !isDns1123Label(d.namespace)) issues.add(join(path, 'delegate', 'namespace'), `"${d.namespace}" is not a valid namespace`);
  }
  if (route.rewrite) {
    const rw = route.rewrite;
    const p = join(path, 'rewrite');
    if (rw.uri !== undefined && rw.uriRegexRewrite) issues.add(p, 'uri and uriRegexRewrite are mutually exclusive');
    if (rw.uriRegexRewrite) {
      if (!rw.uriRegexRewrite.match) issues.add(join(p, 'uriRegexRewrite', 'match'), 'a regex rewrite needs a match expression');
      checkRegex(issues, join(p, 'uriRegexRewrite', 'match'), rw.uriRegexRewrite.match);
    }
  }
  checkMinDuration(issues, join(path, 'timeout'), route.timeout, 0);
  if (route.retries) {
    const rp = join(path, 'retries');
    const r = route.retries;
    checkNonNegative(issues, join(rp, 'attempts'), r.attempts);
    if ((r.attempts ?? 0) === 0 && (r.perTryTimeout !== undefined || (r.retryOn ?? '') !== '' || r.retryRemoteLocalities !== undefined || r.backoff !== undefined)) {
      issues.add(join(rp, 'attempts'), 'retries are off with 0 attempts, yet other retry settings are given: set attempts or remove the settings');
    }
    checkMinDuration(issues, join(rp, 'perTryTimeout'), route.retries.perTryTimeout, 1);
    checkRetryOn(issues, join(rp, 'retryOn'), route.retries.retryOn);
    checkMinDuration(issues, join(rp, 'backoff'), route.retries.backoff, 1);
  }
  if (route.fault) checkFault(issues, join(path, 'fault'), route.fault);
  if (route.mirror) checkDestination(issues, join(path, 'mirror'), route.mirror);
  if (route.mirror && (route.mirrors?.length ?? 0) > 0) issues.add(join(path, 'mirrors'), 'mirror and mirrors are mutually exclusive');
  if (route.mirrorPercent !== undefined) {
    checkPercent(issues, join(path, 'mirrorPercent'), route.mirrorPercent);
    if (route.mirrorPercentage) issues.add(join(path, 'mirrorPercent'), 'mirrorPercent and mirrorPercentage are mutually exclusive');
    else issues.warn(join(path, 'mirrorPercent'), 'mirrorPercent is deprecated: use mirrorPercentage');
  }
  (route.mirrors ?? []).forEach((m, i) => {
    checkDestination(issues, join(path, 'mirrors', i, 'destination'), m.destination);
    checkPercent(issues, join(path, 'mirrors', i, 'percentage', 'value'), m.percentage?.value);
  });
  checkPercent(issues, join(path, 'mirrorPercentage', 'value'), route.mirrorPercentage?.value);
  if (route.corsPolicy) checkCors(issues, join(path, 'corsPolicy'), route.corsPolicy);
  if (route.headers) checkHeaders(issues, join(path, 'headers'), route.headers);
}

function checkHttpMatch(issues: Issues, path: string, m: HTTPMatchRequest): void {
  const fields = ['uri', 'scheme', 'method', 'authority'] as const;
  for (const f of fields) {
    const sm = m[f];
    if (sm) checkStringMatch(issues, join(path, f), sm, false);
  }
  for (const f of ['headers', 'withoutHeaders', 'queryParams'] as const) {
    for (const [name, sm] of Object.entries(m[f] ?? {})) {
      const p = join(path, f, name);
      if (name === '') issues.add(p, 'name must not be empty');
      // An empty condition on a header or parameter means "present".
      checkStringMatch(issues, p, sm, true);
    }
  }
  checkPortNumber(issues, join(path, 'port'), m.port);
  (m.gateways ?? []).forEach((g, i) => checkGatewayRef(issues, join(path, 'gateways', i), g));
  if (m.sourceNamespace !== undefined && !isDns1123Label(m.sourceNamespace)) {
    issues.add(join(path, 'sourceNamespace'), `"${m.sourceNamespace}" is not a valid namespace`);
  }
}

function checkStringMatch(issues: Issues, path: string, sm: StringMatch, emptyAllowed: boolean): void {
  if (sm.exact === undefined && sm.prefix === undefined && sm.regex === undefined) {
    if (!emptyAllowed) issues.add(path, 'one of exact, prefix or regex is required');
    return;
  }
  checkRegex(issues, join(path, 'regex'), sm.regex);
}

function checkL4Match(issues: Issues, path: string, m: L4MatchAttributes): void {
  (m.destinationSubnets ?? []).forEach((s, i) => {
    if (!isIpOrCidr(s)) issues.add(join(path, 'destinationSubnets', i), `"${s}" is neither an IP address nor a CIDR block`);
  });
  checkPortNumber(issues, join(path, 'port'), m.port);
  (m.gateways ?? []).forEach((g, i) => checkGatewayRef(issues, join(path, 'gateways', i), g));
}

export function checkDestination(issues: Issues, path: string, d: Destination): void {
  checkHost(issues, join(path, 'host'), d.host, { wildcard: false, ip: true });
  if (d.subset !== undefined && !isDns1123Label(d.subset)) issues.add(join(path, 'subset'), `subset "${d.subset}" is not a DNS-1123 label`);
  checkPortNumber(issues, join(path, 'port', 'number'), d.port?.number);
}

/**
 * Weights are relative shares: none may be negative and several may not all be 0. Weights that do
 * not add up to 100 are used in proportion, with a warning.
 */
function checkWeights(issues: Issues, path: string, weights: ReadonlyArray<number | undefined>): void {
  let sum = 0;
  weights.forEach((w, i) => {
    if (w !== undefined && w < 0) issues.add(join(path, i, 'weight'), `weight ${w} must not be negative`);
    sum += w ?? 0;
  });
  if (weights.length > 1 && sum === 0) issues.add(path, 'the weights of several destinations add up to 0: give at least one a weight');
  else if (weights.length > 1 && sum !== 100 && weights.every((w) => w === undefined || w >= 0)) {
    issues.warn(path, `weights add up to ${sum}, not 100: traffic is split in proportion to them`);
  }
}

function checkHttpRouteDestinations(issues: Issues, path: string, route: ReadonlyArray<HTTPRouteDestination>): void {
  route.forEach((d, i) => {
    checkDestination(issues, join(path, i, 'destination'), d.destination);
    if (d.headers) checkHeaders(issues, join(path, i, 'headers'), d.headers);
  });
  checkWeights(issues, path, route.map((d) => d.weight));
}

function checkRouteDestinations(issues: Issues, path: string, route: ReadonlyArray<RouteDestination> | undefined): void {
  if (!route || route.length === 0) {
    issues.add(path, 'at least one destination is required');
    return;
  }
  route.forEach((d, i) => checkDestination(issues, join(path, i, 'destination'), d.destination));
  checkWeights(issues, path, route.map((d) => d.weight));
}

function checkRetryOn(issues: Issues, path: string, retryOn: string | undefined): void {
  if (retryOn === undefined || retryOn === '') return;
  for (const part of retryOn.split(',')) {
    const token = part.trim();
    if (token === '') issues.add(path, `empty entry in "${retryOn}"`);
    else if (/^\d+$/.test(token)) {
      if (Number(token) < 100 || Number(token) > 599) issues.add(path, `retry status ${token} is outside 100..599`);
    } else if (!RETRY_ON.has(token)) issues.add(path, `"${token}" is not a retry condition (known: ${[...RETRY_ON].join(', ')}, or an HTTP status code)`);
  }
}

function checkFault(issues: Issues, path: string, fault: HTTPFaultInjection): void {
  if (!fault.delay && !fault.abort) issues.add(path, 'a fault needs delay or abort');
  if (fault.delay) {
    const p = join(path, 'delay');
    if (fault.delay.percent !== undefined) {
      checkPercent(issues, join(p, 'percent'), fault.delay.percent);
      if (fault.delay.percentage) issues.add(join(p, 'percent'), 'percent and percentage are mutually exclusive');
      else issues.warn(join(p, 'percent'), 'percent is deprecated: use percentage');
    }
    if (fault.delay.fixedDelay === undefined) issues.add(join(p, 'fixedDelay'), 'a delay fault needs fixedDelay');
    checkMinDuration(issues, join(p, 'fixedDelay'), fault.delay.fixedDelay, 1);
    checkPercent(issues, join(p, 'percentage', 'value'), fault.delay.percentage?.value);
  }
  if (fault.abort) {
    const a = fault.abort;
    const p = join(path, 'abort');
    if (a.httpStatus === undefined && a.grpcStatus === undefined && a.http2Error === undefined) {
      issues.add(p, 'an abort fault needs httpStatus, grpcStatus or http2Error');
    }
    if (a.httpStatus !== undefined && (a.httpStatus < 200 || a.httpStatus > 599)) {
      issues.add(join(p, 'httpStatus'), `HTTP status ${a.httpStatus} is outside 200..599`);
    }
    if (a.grpcStatus !== undefined && !GRPC_STATUS.has(a.grpcStatus)) {
      issues.add(join(p, 'grpcStatus'), `unknown gRPC status "${a.grpcStatus}"`);
    }
    checkPercent(issues, join(p, 'percentage', 'value'), a.percentage?.value);
  }
}

function checkCors(issues: Issues, path: string, cors: CorsPolicy): void {
  (cors.allowOrigins ?? []).forEach((o, i) => checkStringMatch(issues, join(path, 'allowOrigins', i), o, false));
  (cors.allowMethods ?? []).forEach((m, i) => {
    if (!HTTP_METHODS.has(m)) issues.add(join(path, 'allowMethods', i), `"${m}" is not an HTTP method`);
  });
  checkMinDuration(issues, join(path, 'maxAge'), cors.maxAge, 0);
  if ((cors.allowOrigin?.length ?? 0) > 0) {
    if ((cors.allowOrigins?.length ?? 0) > 0) issues.add(join(path, 'allowOrigin'), 'allowOrigin and allowOrigins are mutually exclusive');
    else issues.warn(join(path, 'allowOrigin'), 'allowOrigin is deprecated: use allowOrigins');
  }
}

const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

function checkHeaders(issues: Issues, path: string, headers: Headers): void {
  if (headers.request) checkHeaderOps(issues, join(path, 'request'), headers.request);
  if (headers.response) checkHeaderOps(issues, join(path, 'response'), headers.response);
}

function checkHeaderOps(issues: Issues, path: string, ops: Headers_HeaderOperations): void {
  const check = (p: string, name: string, op: string): void => {
    // Setting :authority rewrites the host; no other pseudo-header can be changed.
    if (op === 'set' && name.toLowerCase() === ':authority') return;
    if (!HEADER_NAME.test(name)) issues.add(p, `"${name}" is not a valid header name (only :authority may be set among the pseudo-headers)`);
  };
  for (const op of ['set', 'add'] as const) {
    for (const [name, value] of Object.entries(ops[op] ?? {})) {
      const p = join(path, op, name);
      check(p, name, op);
      const problem = headerValueProblem(value);
      if (problem) issues.add(p, problem);
    }
  }
  (ops.remove ?? []).forEach((name, i) => check(join(path, 'remove', i), name, 'remove'));
}

/**
 * Why `value` is not a header value the proxy accepts: no control characters, and every `%` starts
 * a formatter operator closed by another `%` (`%REQ(x-id)%`, `%DOWNSTREAM_REMOTE_ADDRESS%`) or is
 * doubled (`%%`).
 */
export function headerValueProblem(value: string): string | undefined {
  if (/[\0\r\n]/.test(value)) return 'header value must not contain NUL, CR or LF';
  let i = 0;
  while (i < value.length) {
    if (value[i] !== '%') {
      i++;
      continue;
    }
    if (value[i + 1] === '%') {
      i += 2;
      continue;
    }
    const end = value.indexOf('%', i + 1);
    const operator = end < 0 ? '' : value.slice(i + 1, end);
    if (end < 0 || !/^[A-Z][A-Z0-9_]*(\(.*\))?(:\d+)?$/.test(operator)) {
      return `header value "${value}" has a "%" that starts no formatter operator: write %% for a literal %, or %OPERATOR%`;
    }
    i = end + 1;
  }
  return undefined;
}
