/**
 * The pure conversion of gateway-api objects into the project's own config kinds
 * (docs/adr/0019-gateway-api.md): every listener of a Gateway whose GatewayClass names this
 * controller becomes a derived `Gateway` (one server, selecting the pods labelled
 * `gateway.networking.k8s.io/gateway-name: <gateway>`); the HTTPRoute and GRPCRoute rules attached
 * to a listener become one derived `VirtualService` per (listener, hostname), with the rules in
 * gateway-api precedence order. Alongside, the status every input object should carry.
 *
 * Nothing here throws on bad input: an invalid or unresolvable reference becomes a condition.
 */
import type { ConfigObject, ConfigMeta } from '../types.js';
import type { Gateway, GatewayServer, HTTPMatchRequest, HTTPRoute, HTTPRouteDestination, VirtualService } from '../spec-types.js';
import { isDuration } from '../../util/config-duration.js';
import {
  CONTROLLER_NAME,
  GATEWAY_API_GROUP,
  GATEWAY_NAME_LABEL,
  type ApiCondition,
  type BackendRef,
  type GatewayClassObject,
  type GatewayObject,
  type GRPCRouteMatchSpec,
  type GRPCRouteObject,
  type HeaderModifier,
  type HTTPRouteMatchSpec,
  type HTTPRouteObject,
  type L4RouteObject,
  type LabelSelector,
  type ListenerSpec,
  type ParentReference,
  type ReferenceGrantObject,
  type RouteFilter,
  type RouteObject,
  type ValueMatch,
} from './types.js';

/** Store origin (and `meta.origin`) of the derived configs. */
export const GATEWAY_API_ORIGIN = 'gateway-api';
/**
 * Suffix of derived object names (docs/adr/0019-gateway-api.md): `<gateway>-<listener>-gwapi` for
 * Gateways, `<gateway>-<listener>-<host>-gwapi` for VirtualServices. The suffix is reserved; should a
 * user object take such a name anyway, the store keeps whichever came first and reports the other.
 */
export const DERIVED_SUFFIX = '-gwapi';

/** The name part for a hostname: `*` → `wildcard`, `*.example.com` → `wildcard.example.com`. */
function hostSlug(host: string): string {
  return host.replace(/\*/g, 'wildcard');
}

export interface ConversionInput {
  readonly gatewayClasses: ReadonlyArray<GatewayClassObject>;
  readonly gateways: ReadonlyArray<GatewayObject>;
  readonly httpRoutes: ReadonlyArray<HTTPRouteObject>;
  readonly grpcRoutes: ReadonlyArray<GRPCRouteObject>;
  readonly tcpRoutes?: ReadonlyArray<L4RouteObject>;
  readonly tlsRoutes?: ReadonlyArray<L4RouteObject>;
  readonly referenceGrants: ReadonlyArray<ReferenceGrantObject>;
  /** Port numbers of a Service; undefined when there is no such Service. */
  readonly servicePorts: (namespace: string, name: string) => ReadonlyArray<number> | undefined;
  /** Labels of a namespace (for `allowedRoutes.namespaces.from: Selector`). */
  readonly namespaceLabels: (namespace: string) => Readonly<Record<string, string>> | undefined;
  /** Cluster domain, for the service hosts of destinations. */
  readonly domain: string;
}

export interface ListenerStatus {
  readonly name: string;
  readonly supportedKinds: ReadonlyArray<{ readonly group: string; readonly kind: string }>;
  readonly attachedRoutes: number;
  readonly conditions: ReadonlyArray<ApiCondition>;
}

export interface GatewayStatus {
  readonly conditions: ReadonlyArray<ApiCondition>;
  readonly listeners: ReadonlyArray<ListenerStatus>;
}

export interface RouteParentStatus {
  readonly parentRef: ParentReference;
  readonly controllerName: string;
  readonly conditions: ReadonlyArray<ApiCondition>;
}

export type RouteKind = 'HTTPRoute' | 'GRPCRoute' | 'TCPRoute' | 'TLSRoute';

export interface ConversionResult {
  /** Derived Gateway and VirtualService objects, for the store (origin `gateway-api`). */
  readonly configs: ReadonlyArray<ConfigObject>;
  /** By GatewayClass name; only classes of this controller. */
  readonly gatewayClasses: ReadonlyMap<string, { readonly conditions: ReadonlyArray<ApiCondition> }>;
  /** By `namespace/name`; only Gateways of this controller's classes. */
  readonly gateways: ReadonlyMap<string, GatewayStatus>;
  /** By `Kind/namespace/name`; only routes with a parent of this controller (or a missing one). */
  readonly routes: ReadonlyMap<string, { readonly parents: ReadonlyArray<RouteParentStatus> }>;
}

// ---- small helpers ---------------------------------------------------------------------------

function cond(type: string, ok: boolean, reason: string, message: string, generation: number | undefined): ApiCondition {
  return { type, status: ok ? 'True' : 'False', reason, message, ...(generation !== undefined ? { observedGeneration: generation } : {}) };
}

function keyOf(o: { metadata?: { namespace?: string; name?: string } }): string {
  return `${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;
}

const HTTP_KINDS = [
  { group: GATEWAY_API_GROUP, kind: 'HTTPRoute' },
  { group: GATEWAY_API_GROUP, kind: 'GRPCRoute' },
];

/** Route kinds a listener protocol carries (the ones this daemon converts). */
function kindsForProtocol(protocol: string): ReadonlyArray<{ group: string; kind: string }> {
  if (protocol === 'HTTP' || protocol === 'HTTPS') return HTTP_KINDS;
  if (protocol === 'TCP') return [{ group: GATEWAY_API_GROUP, kind: 'TCPRoute' }];
  if (protocol === 'TLS') return [{ group: GATEWAY_API_GROUP, kind: 'TLSRoute' }];
  return [];
}

const isL4 = (kind: RouteKind): boolean => kind === 'TCPRoute' || kind === 'TLSRoute';

function selectorMatches(sel: LabelSelector | undefined, labels: Readonly<Record<string, string>>): boolean {
  if (!sel) return true;
  for (const [k, v] of Object.entries(sel.matchLabels ?? {})) if (labels[k] !== v) return false;
  for (const e of sel.matchExpressions ?? []) {
    const key = e.key ?? '';
    const values = e.values ?? [];
    const has = Object.hasOwn(labels, key);
    switch (e.operator) {
      case 'In':
        if (!has || !values.includes(labels[key])) return false;
        break;
      case 'NotIn':
        if (has && values.includes(labels[key])) return false;
        break;
      case 'Exists':
        if (!has) return false;
        break;
      case 'DoesNotExist':
        if (has) return false;
        break;
      default:
        return false;
    }
  }
  return true;
}

/**
 * The hostname both a listener (undefined: any) and a route hostname admit, or undefined when they
 * share none. Wildcards (`*.example.com`) match one or more labels.
 */
export function intersectHostnames(listener: string | undefined, route: string): string | undefined {
  if (!listener || listener === '*') return route;
  if (route === '*') return listener;
  if (listener === route) return route;
  const matches = (pattern: string, host: string): boolean => pattern.startsWith('*.') && host.endsWith(pattern.slice(1)) && host.length > pattern.length - 1;
  if (matches(listener, route)) return route;
  if (matches(route, listener)) return listener;
  return undefined;
}

/** A ReferenceGrant in `to.namespace` lets `from` objects refer to `to`. */
function referenceAllowed(
  grants: ReadonlyArray<ReferenceGrantObject>,
  from: { group: string; kind: string; namespace: string },
  to: { group: string; kind: string; namespace: string; name: string },
): boolean {
  if (from.namespace === to.namespace) return true;
  return grants.some(
    (g) =>
      g.metadata?.namespace === to.namespace &&
      (g.spec?.from ?? []).some((f) => (f.group ?? '') === from.group && f.kind === from.kind && f.namespace === from.namespace) &&
      (g.spec?.to ?? []).some((t) => (t.group ?? '') === to.group && t.kind === to.kind && (t.name === undefined || t.name === '' || t.name === to.name)),
  );
}

function derivedMeta(kind: 'Gateway' | 'VirtualService', namespace: string, name: string, source: string, created: string | undefined): ConfigMeta {
  return {
    gvk: { group: 'networking.mesh.io', version: 'v1', kind },
    name,
    namespace,
    labels: {},
    annotations: { 'mesh.io/gateway-api-source': source },
    generation: 1,
    resourceVersion: '',
    creationTimestamp: created,
    origin: GATEWAY_API_ORIGIN,
  };
}

function createdOf(o: { metadata?: { creationTimestamp?: Date | string } }): string {
  const c = o.metadata?.creationTimestamp;
  return c === undefined ? '' : typeof c === 'string' ? c : c.toISOString();
}

// ---- listeners -------------------------------------------------------------------------------

interface ListenerState {
  readonly gateway: GatewayObject;
  readonly spec: ListenerSpec;
  readonly name: string;
  readonly protocol: string;
  /** The derived Gateway's name, when the listener is valid. */
  readonly derived?: string;
  readonly conditions: ApiCondition[];
  attached: number;
  /** host → http rules, for the derived VirtualServices. */
  readonly hosts: Map<string, RuleEntry[]>;
  /** host → TCP/TLS destinations of the attached routes (`*` for TCP), oldest route first. */
  readonly l4: Map<string, L4Entry[]>;
}

interface L4Entry {
  readonly created: string;
  readonly routeKey: string;
  readonly route: ReadonlyArray<{ destination: { host: string; port: { number: number } }; weight?: number }>;
}

function convertListener(gw: GatewayObject, l: ListenerSpec, index: number, grants: ReadonlyArray<ReferenceGrantObject>): { state: ListenerState; server?: GatewayServer } {
  const generation = gw.metadata?.generation;
  const ns = gw.metadata?.namespace ?? '';
  const name = l.name || `listener-${index}`;
  const protocol = (l.protocol ?? '').toUpperCase();
  const conditions: ApiCondition[] = [];
  const state = (derived: string | undefined): ListenerState => ({ gateway: gw, spec: l, name, protocol, derived, conditions, attached: 0, hosts: new Map(), l4: new Map() });
  const invalid = (type: string, reason: string, message: string): { state: ListenerState } => {
    conditions.push(cond('Accepted', type !== 'Accepted', type === 'Accepted' ? reason : 'Accepted', type === 'Accepted' ? message : 'listener accepted', generation));
    conditions.push(cond('ResolvedRefs', type !== 'ResolvedRefs', type === 'ResolvedRefs' ? reason : 'ResolvedRefs', type === 'ResolvedRefs' ? message : 'references resolved', generation));
    conditions.push(cond('Programmed', false, 'Invalid', message, generation));
    return { state: state(undefined) };
  };
  if (!['HTTP', 'HTTPS', 'TLS', 'TCP'].includes(protocol)) return invalid('Accepted', 'UnsupportedProtocol', `listeners[${index}].protocol: "${l.protocol ?? ''}" is not supported (HTTP, HTTPS, TLS, TCP)`);
  if (!Number.isInteger(l.port) || (l.port ?? 0) < 1 || (l.port ?? 0) > 65535) return invalid('Accepted', 'PortUnavailable', `listeners[${index}].port: ${String(l.port)} is not a port number`);
  const server: { -readonly [K in keyof GatewayServer]: GatewayServer[K] } = {
    port: { number: l.port!, protocol, name },
    hosts: [l.hostname || '*'],
    name,
  };
  const tlsMode = l.tls?.mode ?? 'Terminate';
  if (protocol === 'HTTPS' || (protocol === 'TLS' && tlsMode === 'Terminate')) {
    const ref = l.tls?.certificateRefs?.[0];
    if (!ref?.name) return invalid('ResolvedRefs', 'InvalidCertificateRef', `listeners[${index}].tls.certificateRefs: a certificate Secret is required for ${protocol}`);
    if ((ref.group ?? '') !== '' || (ref.kind ?? 'Secret') !== 'Secret') {
      return invalid('ResolvedRefs', 'InvalidCertificateRef', `listeners[${index}].tls.certificateRefs[0]: only core Secrets are supported, got ${ref.group ?? ''}/${ref.kind ?? ''}`);
    }
    const refNs = ref.namespace || ns;
    if (!referenceAllowed(grants, { group: GATEWAY_API_GROUP, kind: 'Gateway', namespace: ns }, { group: '', kind: 'Secret', namespace: refNs, name: ref.name })) {
      return invalid('ResolvedRefs', 'RefNotPermitted', `listeners[${index}].tls.certificateRefs[0]: Secret ${refNs}/${ref.name} is in another namespace and no ReferenceGrant allows it`);
    }
    server.tls = { mode: 'SIMPLE', credentialName: refNs === ns ? ref.name : `${refNs}/${ref.name}` };
  } else if (protocol === 'TLS') {
    server.tls = { mode: 'PASSTHROUGH' };
  }
  const kinds = l.allowedRoutes?.kinds;
  const supported = kindsForProtocol(protocol);
  const unsupportedKinds = (kinds ?? []).filter((k) => !supported.some((s) => s.kind === k.kind && s.group === (k.group ?? GATEWAY_API_GROUP)));
  conditions.push(cond('Accepted', true, 'Accepted', 'listener accepted', generation));
  conditions.push(
    unsupportedKinds.length > 0
      ? cond('ResolvedRefs', false, 'InvalidRouteKinds', `allowedRoutes.kinds: ${unsupportedKinds.map((k) => k.kind).join(', ')} not supported on ${protocol}`, generation)
      : cond('ResolvedRefs', true, 'ResolvedRefs', 'references resolved', generation),
  );
  conditions.push(cond('Programmed', true, 'Programmed', 'listener programmed', generation));
  const derived = `${gw.metadata?.name ?? ''}-${name}${DERIVED_SUFFIX}`;
  return { state: state(derived), server };
}

// ---- route rules -----------------------------------------------------------------------------

interface RuleEntry {
  /** Sort key parts, by gateway-api precedence. */
  readonly pathRank: number;
  readonly pathLength: number;
  readonly method: boolean;
  readonly headers: number;
  readonly query: number;
  readonly created: string;
  readonly routeKey: string;
  readonly rule: number;
  readonly match: number;
  readonly http: HTTPRoute;
}

function comparePrecedence(a: RuleEntry, b: RuleEntry): number {
  return (
    b.pathRank - a.pathRank ||
    b.pathLength - a.pathLength ||
    Number(b.method) - Number(a.method) ||
    b.headers - a.headers ||
    b.query - a.query ||
    a.created.localeCompare(b.created) ||
    a.routeKey.localeCompare(b.routeKey) ||
    a.rule - b.rule ||
    a.match - b.match
  );
}

/**
 * Weights scaled to add up to 100, as the VirtualService kind asks (largest remainder; every
 * backend keeps at least 1 when there is room).
 */
export function normalizeWeights(weights: ReadonlyArray<number>): number[] {
  const total = weights.reduce((a, b) => a + b, 0);
  if (total <= 0) return weights.map(() => 0);
  const exact = weights.map((w) => (100 * w) / total);
  const out = exact.map((x) => Math.max(Math.floor(x), weights.length <= 100 ? 1 : 0));
  let rest = 100 - out.reduce((a, b) => a + b, 0);
  const order = exact.map((x, i) => ({ i, frac: x - Math.floor(x) })).sort((a, b) => b.frac - a.frac || a.i - b.i);
  for (let k = 0; rest > 0; k = (k + 1) % order.length, rest--) out[order[k].i]++;
  for (let k = order.length - 1; rest < 0; k = (k - 1 + order.length) % order.length) {
    if (out[order[k].i] > 1) {
      out[order[k].i]--;
      rest++;
    }
  }
  return out;
}

function withNormalizedWeights<T extends { weight?: number }>(dests: ReadonlyArray<T>): T[] {
  const w = normalizeWeights(dests.map((d) => d.weight ?? 1));
  return dests.map((d, i) => ({ ...d, weight: w[i] }));
}

function escapeRegex(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

function valueMatches(list: ReadonlyArray<ValueMatch> | undefined, lower: boolean, where: string): Record<string, { exact?: string; regex?: string }> | undefined {
  if (!list || list.length === 0) return undefined;
  const out: Record<string, { exact?: string; regex?: string }> = {};
  for (const [i, m] of list.entries()) {
    if (!m.name) throw new RuleError('UnsupportedValue', `${where}[${i}].name is required`);
    const name = lower ? m.name.toLowerCase() : m.name;
    if (Object.hasOwn(out, name)) continue; // the first match of a name wins
    out[name] = (m.type ?? 'Exact') === 'RegularExpression' ? { regex: m.value ?? '' } : { exact: m.value ?? '' };
  }
  return out;
}

class RuleError extends Error {
  constructor(
    readonly reason: string,
    message: string,
  ) {
    super(message);
  }
}

interface ConvertedMatch {
  readonly matches: HTTPMatchRequest[];
  readonly pathRank: number;
  readonly pathLength: number;
  readonly method: boolean;
  readonly headers: number;
  readonly query: number;
  /** The path prefix matched, for prefix rewrites. */
  readonly prefix?: string;
}

function convertHttpMatch(m: HTTPRouteMatchSpec | undefined, where: string, keepPrefixWhole: boolean): ConvertedMatch {
  const type = m?.path?.type ?? 'PathPrefix';
  const value = m?.path?.value ?? '/';
  const base: HTTPMatchRequest = {
    ...(m?.headers?.length ? { headers: valueMatches(m.headers, true, `${where}.headers`) } : {}),
    ...(m?.queryParams?.length ? { queryParams: valueMatches(m.queryParams, false, `${where}.queryParams`) } : {}),
    ...(m?.method ? { method: { exact: m.method.toUpperCase() } } : {}),
  };
  const rank = { method: !!m?.method, headers: m?.headers?.length ?? 0, query: m?.queryParams?.length ?? 0 };
  if (!value.startsWith('/') && type !== 'RegularExpression') throw new RuleError('UnsupportedValue', `${where}.path.value: "${value}" must start with "/"`);
  if (type === 'Exact') return { matches: [{ ...base, uri: { exact: value } }], pathRank: 3, pathLength: value.length, ...rank };
  if (type === 'RegularExpression') return { matches: [{ ...base, uri: { regex: value } }], pathRank: 1, pathLength: value.length, ...rank };
  if (type !== 'PathPrefix') throw new RuleError('UnsupportedValue', `${where}.path.type: "${type}" is not supported (Exact, PathPrefix, RegularExpression)`);
  const prefix = value.length > 1 ? value.replace(/\/+$/, '') : '/';
  // A path prefix matches whole path elements: /foo matches /foo and /foo/bar, not /foobar.
  const matches: HTTPMatchRequest[] =
    prefix === '/' ? [{ ...base, uri: { prefix: '/' } }] : keepPrefixWhole ? [{ ...base, uri: { regex: `${escapeRegex(prefix)}(/.*)?` } }] : [{ ...base, uri: { exact: prefix } }, { ...base, uri: { prefix: `${prefix}/` } }];
  return { matches, pathRank: 2, pathLength: prefix.length, prefix, ...rank };
}

function convertGrpcMatch(m: GRPCRouteMatchSpec | undefined, where: string): ConvertedMatch {
  const headers = m?.headers?.length ? { headers: valueMatches(m.headers, true, `${where}.headers`) } : {};
  const rank = { method: false, headers: m?.headers?.length ?? 0, query: 0 };
  const service = m?.method?.service;
  const method = m?.method?.method;
  if (!service && !method) return { matches: [{ ...headers, uri: { prefix: '/' } }], pathRank: 2, pathLength: 1, ...rank };
  if ((m?.method?.type ?? 'Exact') === 'RegularExpression') {
    const re = `/${service || '[^/]+'}/${method || '[^/]+'}`;
    return { matches: [{ ...headers, uri: { regex: re } }], pathRank: 1, pathLength: re.length, ...rank };
  }
  if (service && method) return { matches: [{ ...headers, uri: { exact: `/${service}/${method}` } }], pathRank: 3, pathLength: service.length + method.length + 2, ...rank };
  if (service) return { matches: [{ ...headers, uri: { prefix: `/${service}/` } }], pathRank: 2, pathLength: service.length + 2, ...rank };
  const re = `/[^/]+/${escapeRegex(method!)}`;
  return { matches: [{ ...headers, uri: { regex: re } }], pathRank: 1, pathLength: re.length, ...rank };
}

function headerOps(h: HeaderModifier | undefined): { set?: Record<string, string>; add?: Record<string, string>; remove?: string[] } | undefined {
  if (!h) return undefined;
  const toRecord = (list: HeaderModifier['set']): Record<string, string> | undefined =>
    list && list.length > 0 ? Object.fromEntries(list.filter((x) => x.name).map((x) => [x.name!.toLowerCase(), x.value ?? ''])) : undefined;
  const set = toRecord(h.set);
  const add = toRecord(h.add);
  const remove = h.remove && h.remove.length > 0 ? [...h.remove] : undefined;
  return { ...(set ? { set } : {}), ...(add ? { add } : {}), ...(remove ? { remove } : {}) };
}

interface RefProblem {
  readonly reason: string;
  readonly message: string;
}

interface RuleContext {
  readonly input: ConversionInput;
  readonly routeKind: RouteKind;
  readonly namespace: string;
  readonly problems: RefProblem[];
}

/** A Service host for a backendRef, or undefined (the problem is recorded). */
function resolveBackend(ref: BackendRef | undefined, where: string, ctx: RuleContext): { host: string; port: number } | undefined {
  if (!ref?.name) {
    ctx.problems.push({ reason: 'BackendNotFound', message: `${where}.name is required` });
    return undefined;
  }
  if ((ref.group ?? '') !== '' || (ref.kind ?? 'Service') !== 'Service') {
    ctx.problems.push({ reason: 'InvalidKind', message: `${where}: ${ref.group ?? ''}/${ref.kind ?? ''} is not supported (only core Services)` });
    return undefined;
  }
  const ns = ref.namespace || ctx.namespace;
  if (!referenceAllowed(ctx.input.referenceGrants, { group: GATEWAY_API_GROUP, kind: ctx.routeKind, namespace: ctx.namespace }, { group: '', kind: 'Service', namespace: ns, name: ref.name })) {
    ctx.problems.push({ reason: 'RefNotPermitted', message: `${where}: Service ${ns}/${ref.name} is in another namespace and no ReferenceGrant allows it` });
    return undefined;
  }
  if (ref.port === undefined) {
    ctx.problems.push({ reason: 'UnsupportedValue', message: `${where}.port is required for a Service` });
    return undefined;
  }
  const ports = ctx.input.servicePorts(ns, ref.name);
  if (!ports) {
    ctx.problems.push({ reason: 'BackendNotFound', message: `${where}: Service ${ns}/${ref.name} not found` });
    return undefined;
  }
  if (!ports.includes(ref.port)) {
    ctx.problems.push({ reason: 'BackendNotFound', message: `${where}: Service ${ns}/${ref.name} has no port ${ref.port}` });
    return undefined;
  }
  return { host: `${ref.name}.${ns}.svc.${ctx.input.domain}`, port: ref.port };
}

/** The VirtualService routes (one per match) of one rule, or a RuleError for an unsupported rule. */
function convertRule(
  rule: { matches?: ReadonlyArray<unknown>; filters?: ReadonlyArray<RouteFilter>; backendRefs?: ReadonlyArray<BackendRef>; timeouts?: { request?: string; backendRequest?: string }; name?: string },
  where: string,
  ctx: RuleContext,
): Array<Omit<RuleEntry, 'created' | 'routeKey' | 'rule'>> {
  const filters = rule.filters ?? [];
  const rewrite = filters.find((f) => f.type === 'URLRewrite')?.urlRewrite;
  const keepPrefixWhole = rewrite?.path?.type === 'ReplacePrefixMatch';
  const rawMatches = rule.matches && rule.matches.length > 0 ? rule.matches : [undefined];
  const matches = rawMatches.map((m, i) =>
    ctx.routeKind === 'GRPCRoute' ? convertGrpcMatch(m as GRPCRouteMatchSpec | undefined, `${where}.matches[${i}]`) : convertHttpMatch(m as HTTPRouteMatchSpec | undefined, `${where}.matches[${i}]`, keepPrefixWhole),
  );

  const base: { -readonly [K in keyof HTTPRoute]: HTTPRoute[K] } = {};
  if (rule.name) base.name = rule.name;
  const headers: { request?: ReturnType<typeof headerOps>; response?: ReturnType<typeof headerOps> } = {};
  const mirrors: NonNullable<HTTPRoute['mirrors']>[number][] = [];
  for (const [i, f] of filters.entries()) {
    const fw = `${where}.filters[${i}]`;
    switch (f.type) {
      case 'RequestHeaderModifier':
        headers.request = headerOps(f.requestHeaderModifier);
        break;
      case 'ResponseHeaderModifier':
        headers.response = headerOps(f.responseHeaderModifier);
        break;
      case 'RequestRedirect': {
        if (ctx.routeKind === 'GRPCRoute') throw new RuleError('UnsupportedValue', `${fw}: RequestRedirect is not allowed on a GRPCRoute`);
        const r = f.requestRedirect ?? {};
        const redirect: { -readonly [K in keyof NonNullable<HTTPRoute['redirect']>]: NonNullable<HTTPRoute['redirect']>[K] } = { redirectCode: r.statusCode ?? 302 };
        if (r.scheme) redirect.scheme = r.scheme;
        if (r.hostname) redirect.authority = r.hostname;
        if (r.port) redirect.port = r.port;
        if (r.path?.type === 'ReplaceFullPath') redirect.uri = r.path.replaceFullPath ?? '/';
        else if (r.path?.type === 'ReplacePrefixMatch') {
          // The redirect replaces the whole path: only exact for a rule without a longer path.
          redirect.uri = r.path.replacePrefixMatch ?? '/';
        }
        base.redirect = redirect;
        break;
      }
      case 'URLRewrite': {
        if (ctx.routeKind === 'GRPCRoute') throw new RuleError('UnsupportedValue', `${fw}: URLRewrite is not allowed on a GRPCRoute`);
        const r = f.urlRewrite ?? {};
        const rw: { -readonly [K in keyof NonNullable<HTTPRoute['rewrite']>]: NonNullable<HTTPRoute['rewrite']>[K] } = {};
        if (r.hostname) rw.authority = r.hostname;
        if (r.path?.type === 'ReplaceFullPath') rw.uriRegexRewrite = { match: '^/.*$', rewrite: r.path.replaceFullPath ?? '/' };
        else if (r.path?.type === 'ReplacePrefixMatch') {
          const prefix = matches[0]?.prefix;
          if (matches.length !== 1 || prefix === undefined) throw new RuleError('UnsupportedValue', `${fw}: ReplacePrefixMatch needs exactly one PathPrefix match`);
          const to = r.path.replacePrefixMatch ?? '/';
          if (prefix === '/') rw.uriRegexRewrite = { match: '^/', rewrite: to.endsWith('/') ? to : `${to}/` };
          else rw.uriRegexRewrite = to.endsWith('/') ? { match: `^${escapeRegex(prefix)}/?`, rewrite: to } : { match: `^${escapeRegex(prefix)}`, rewrite: to };
        }
        base.rewrite = rw;
        break;
      }
      case 'RequestMirror': {
        const m = f.requestMirror ?? {};
        const target = resolveBackend(m.backendRef, `${fw}.requestMirror.backendRef`, ctx);
        if (!target) break;
        const percent = m.fraction?.numerator !== undefined ? (100 * m.fraction.numerator) / (m.fraction.denominator || 100) : m.percent;
        mirrors.push({ destination: { host: target.host, port: { number: target.port } }, ...(percent !== undefined ? { percentage: { value: percent } } : {}) });
        break;
      }
      default:
        throw new RuleError('UnsupportedValue', `${fw}.type: "${f.type ?? ''}" is not supported`);
    }
  }
  if (headers.request || headers.response) base.headers = { ...(headers.request ? { request: headers.request } : {}), ...(headers.response ? { response: headers.response } : {}) };
  if (mirrors.length > 0) base.mirrors = mirrors;
  const timeout = rule.timeouts?.request ?? rule.timeouts?.backendRequest;
  if (timeout !== undefined) {
    if (!isDuration(timeout)) throw new RuleError('UnsupportedValue', `${where}.timeouts: "${timeout}" is not a duration`);
    base.timeout = timeout;
  }
  if (!base.redirect) {
    const dests: HTTPRouteDestination[] = [];
    for (const [i, b] of (rule.backendRefs ?? []).entries()) {
      const target = resolveBackend(b, `${where}.backendRefs[${i}]`, ctx);
      const weight = b.weight ?? 1;
      if (!target || weight === 0) continue;
      const own = b.filters ?? [];
      const req = headerOps(own.find((x) => x.type === 'RequestHeaderModifier')?.requestHeaderModifier);
      const res = headerOps(own.find((x) => x.type === 'ResponseHeaderModifier')?.responseHeaderModifier);
      dests.push({
        destination: { host: target.host, port: { number: target.port } },
        weight,
        ...(req || res ? { headers: { ...(req ? { request: req } : {}), ...(res ? { response: res } : {}) } } : {}),
      });
    }
    // No usable backend: gateway-api asks for a 500 answer.
    if (dests.length === 0) base.directResponse = { status: 500 };
    else if (dests.length === 1) {
      const { weight: _unused, ...single } = dests[0];
      base.route = [single];
    } else base.route = withNormalizedWeights(dests);
  }
  return matches.map((m, i) => ({ pathRank: m.pathRank, pathLength: m.pathLength, method: m.method, headers: m.headers, query: m.query, match: i, http: { ...base, match: m.matches } }));
}

// ---- the conversion --------------------------------------------------------------------------

export function convertGatewayApi(input: ConversionInput): ConversionResult {
  const configs: ConfigObject[] = [];
  const classStatus = new Map<string, { conditions: ApiCondition[] }>();
  for (const c of input.gatewayClasses) {
    if (c.spec?.controllerName !== CONTROLLER_NAME) continue;
    classStatus.set(c.metadata?.name ?? '', { conditions: [cond('Accepted', true, 'Accepted', `handled by ${CONTROLLER_NAME}`, c.metadata?.generation)] });
  }

  // Gateways of our classes, their listeners and derived Gateways
  const ours = new Map<string, { gw: GatewayObject; listeners: ListenerState[] }>();
  const foreign = new Set<string>();
  for (const gw of input.gateways) {
    const key = keyOf(gw);
    if (!classStatus.has(gw.spec?.gatewayClassName ?? '')) {
      foreign.add(key);
      continue;
    }
    const listeners: ListenerState[] = [];
    const seen = new Set<string>();
    for (const [i, l] of (gw.spec?.listeners ?? []).entries()) {
      const { state, server } = convertListener(gw, l, i, input.referenceGrants);
      if (seen.has(state.name)) continue; // listener names are unique; the first one wins
      seen.add(state.name);
      listeners.push(state);
      if (server && state.derived) {
        const spec: Gateway = { servers: [server], selector: { [GATEWAY_NAME_LABEL]: gw.metadata?.name ?? '' } };
        configs.push({ meta: derivedMeta('Gateway', gw.metadata?.namespace ?? '', state.derived, `Gateway ${key}`, createdOf(gw) || undefined), spec });
      }
    }
    ours.set(key, { gw, listeners });
  }

  // Routes
  const routeStatus = new Map<string, { parents: RouteParentStatus[] }>();
  const routes: Array<{ kind: RouteKind; route: RouteObject<unknown> }> = [
    ...input.httpRoutes.map((r) => ({ kind: 'HTTPRoute' as const, route: r as RouteObject<unknown> })),
    ...input.grpcRoutes.map((r) => ({ kind: 'GRPCRoute' as const, route: r as RouteObject<unknown> })),
    ...(input.tcpRoutes ?? []).map((r) => ({ kind: 'TCPRoute' as const, route: r as RouteObject<unknown> })),
    ...(input.tlsRoutes ?? []).map((r) => ({ kind: 'TLSRoute' as const, route: r as RouteObject<unknown> })),
  ];
  for (const { kind, route } of routes) {
    const parents = attachRoute(kind, route, input, ours, foreign);
    if (parents.length > 0) routeStatus.set(`${kind}/${keyOf(route)}`, { parents });
  }

  // Derived VirtualServices: one per listener and hostname
  const gatewayStatus = new Map<string, GatewayStatus>();
  for (const [key, { gw, listeners }] of ours) {
    const generation = gw.metadata?.generation;
    for (const l of listeners) {
      if (!l.derived) continue;
      for (const [host, entries] of [...l.hosts].sort(([a], [b]) => a.localeCompare(b))) {
        const http = [...entries].sort(comparePrecedence).map((e) => e.http);
        if (http.length === 0) continue; // a route without rules attaches but routes nothing
        const spec: VirtualService = { hosts: [host], gateways: [`${gw.metadata?.namespace ?? ''}/${l.derived}`], http };
        configs.push({ meta: derivedMeta('VirtualService', gw.metadata?.namespace ?? '', `${gw.metadata?.name ?? ''}-${l.name}-${hostSlug(host)}${DERIVED_SUFFIX}`, `Gateway ${key}`, createdOf(gw) || undefined), spec });
      }
      for (const [host, entries] of [...l.l4].sort(([a], [b]) => a.localeCompare(b))) {
        const sorted = [...entries].sort((a, b) => a.created.localeCompare(b.created) || a.routeKey.localeCompare(b.routeKey)).filter((e) => e.route.length > 0);
        if (sorted.length === 0) continue;
        const gateways = [`${gw.metadata?.namespace ?? ''}/${l.derived}`];
        const spec: VirtualService =
          l.protocol === 'TLS'
            ? { hosts: [host], gateways, tls: sorted.map((e) => ({ match: [{ sniHosts: [host] }], route: [...e.route] })) }
            : { hosts: ['*'], gateways, tcp: sorted.map((e) => ({ route: [...e.route] })) };
        configs.push({ meta: derivedMeta('VirtualService', gw.metadata?.namespace ?? '', `${gw.metadata?.name ?? ''}-${l.name}-${hostSlug(host)}${DERIVED_SUFFIX}`, `Gateway ${key}`, createdOf(gw) || undefined), spec });
      }
    }
    const valid = listeners.filter((l) => l.derived).length;
    gatewayStatus.set(key, {
      conditions: [
        cond('Accepted', true, valid === listeners.length ? 'Accepted' : 'ListenersNotValid', valid === listeners.length ? `handled by ${CONTROLLER_NAME}` : `${listeners.length - valid} of ${listeners.length} listeners are invalid`, generation),
        cond('Programmed', valid > 0, valid > 0 ? 'Programmed' : 'Invalid', valid > 0 ? `${valid} listeners programmed for pods labelled ${GATEWAY_NAME_LABEL}=${gw.metadata?.name ?? ''}` : 'no valid listener', generation),
      ],
      listeners: listeners.map((l) => ({ name: l.name, supportedKinds: kindsForProtocol(l.protocol), attachedRoutes: l.attached, conditions: l.conditions })),
    });
  }
  return { configs, gatewayClasses: classStatus, gateways: gatewayStatus, routes: routeStatus };
}

/** Attaches one route to its parents; returns the route's status for the parents this controller handles. */
function attachRoute(
  kind: RouteKind,
  route: RouteObject<unknown>,
  input: ConversionInput,
  ours: ReadonlyMap<string, { gw: GatewayObject; listeners: ListenerState[] }>,
  foreign: ReadonlySet<string>,
): RouteParentStatus[] {
  const ns = route.metadata?.namespace ?? '';
  const generation = route.metadata?.generation;
  const routeKey = `${ns}/${route.metadata?.name ?? ''}`;
  const created = createdOf(route);
  const out: RouteParentStatus[] = [];

  // The rules once, with the problems of their references
  const problems: RefProblem[] = [];
  let ruleError: RuleError | undefined;
  const entries: Array<Omit<RuleEntry, 'created' | 'routeKey' | 'rule'> & { rule: number }> = [];
  const l4: L4Entry['route'][number][] = [];
  for (const [r, rule] of (route.spec?.rules ?? [undefined]).entries()) {
    if (isL4(kind)) {
      // TCP and TLS routes: the backends of all rules, weighted
      for (const [i, b] of (rule?.backendRefs ?? []).entries()) {
        const target = resolveBackend(b, `spec.rules[${r}].backendRefs[${i}]`, { input, routeKind: kind, namespace: ns, problems });
        const weight = b.weight ?? 1;
        if (target && weight > 0) l4.push({ destination: { host: target.host, port: { number: target.port } }, weight });
      }
      continue;
    }
    try {
      for (const e of convertRule(rule ?? {}, `spec.rules[${r}]`, { input, routeKind: kind, namespace: ns, problems })) entries.push({ ...e, rule: r });
    } catch (err) {
      if (!(err instanceof RuleError)) throw err;
      ruleError ??= err;
    }
  }
  const resolved = problems.length === 0 ? cond('ResolvedRefs', true, 'ResolvedRefs', 'all references resolved', generation) : cond('ResolvedRefs', false, problems[0].reason, problems.map((p) => p.message).join('; '), generation);

  for (const [i, ref] of (route.spec?.parentRefs ?? []).entries()) {
    if ((ref.group ?? GATEWAY_API_GROUP) !== GATEWAY_API_GROUP || (ref.kind ?? 'Gateway') !== 'Gateway') continue;
    const gwKey = `${ref.namespace || ns}/${ref.name ?? ''}`;
    if (foreign.has(gwKey)) continue; // another controller's Gateway
    const parent = ours.get(gwKey);
    const report = (accepted: ApiCondition): void => {
      out.push({ parentRef: ref, controllerName: CONTROLLER_NAME, conditions: [accepted, resolved] });
    };
    if (!parent) {
      report(cond('Accepted', false, 'NoMatchingParent', `parentRefs[${i}]: Gateway ${gwKey} not found`, generation));
      continue;
    }
    if (ruleError) {
      report(cond('Accepted', false, ruleError.reason, ruleError.message, generation));
      continue;
    }
    let candidates = parent.listeners.filter((l) => (ref.sectionName === undefined || l.name === ref.sectionName) && (ref.port === undefined || l.spec.port === ref.port));
    if (candidates.length === 0) {
      report(cond('Accepted', false, 'NoMatchingParent', `parentRefs[${i}]: Gateway ${gwKey} has no listener${ref.sectionName ? ` named ${ref.sectionName}` : ''}${ref.port ? ` on port ${ref.port}` : ''}`, generation));
      continue;
    }
    candidates = candidates.filter((l) => l.derived && kindsForProtocol(l.protocol).some((k) => k.kind === kind) && listenerAllows(l, kind, ns, input));
    if (candidates.length === 0) {
      report(cond('Accepted', false, 'NotAllowedByListeners', `parentRefs[${i}]: no listener of Gateway ${gwKey} admits ${kind}s from namespace ${ns}`, generation));
      continue;
    }
    let attached = 0;
    for (const l of candidates) {
      const routeHosts = route.spec?.hostnames && route.spec.hostnames.length > 0 ? route.spec.hostnames : ['*'];
      const hosts = [...new Set(routeHosts.map((h) => intersectHostnames(l.spec.hostname, h)).filter((h): h is string => h !== undefined))];
      if (hosts.length === 0) continue;
      attached++;
      l.attached++;
      for (const host of hosts) {
        if (isL4(kind)) {
          const key = kind === 'TCPRoute' ? '*' : host;
          const route4 = l4.length === 1 ? [{ destination: l4[0].destination }] : withNormalizedWeights(l4);
          l.l4.set(key, [...(l.l4.get(key) ?? []), { created, routeKey: `${kind}/${routeKey}`, route: route4 }]);
          continue;
        }
        const list = l.hosts.get(host) ?? [];
        for (const e of entries) list.push({ ...e, created, routeKey: `${kind}/${routeKey}` });
        l.hosts.set(host, list);
      }
    }
    report(
      attached > 0
        ? cond('Accepted', true, 'Accepted', `attached to ${attached} listener(s) of Gateway ${gwKey}`, generation)
        : cond('Accepted', false, 'NoMatchingListenerHostname', `parentRefs[${i}]: no listener hostname of Gateway ${gwKey} intersects the route's hostnames`, generation),
    );
  }
  return out;
}

function listenerAllows(l: ListenerState, kind: RouteKind, routeNs: string, input: ConversionInput): boolean {
  const kinds = l.spec.allowedRoutes?.kinds;
  if (kinds && kinds.length > 0 && !kinds.some((k) => k.kind === kind && (k.group ?? GATEWAY_API_GROUP) === GATEWAY_API_GROUP)) return false;
  const from = l.spec.allowedRoutes?.namespaces?.from ?? 'Same';
  const gwNs = l.gateway.metadata?.namespace ?? '';
  if (from === 'All') return true;
  if (from === 'Same') return routeNs === gwNs;
  if (from === 'Selector') return selectorMatches(l.spec.allowedRoutes?.namespaces?.selector ?? { matchLabels: {} }, input.namespaceLabels(routeNs) ?? {});
  return false;
}
