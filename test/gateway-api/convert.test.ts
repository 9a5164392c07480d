/**
 * The pure gateway-api conversion: listeners → derived Gateways, HTTPRoute/GRPCRoute rules →
 * derived VirtualServices (matches, filters, weights, hostnames, precedence), and the status of
 * every input (ReferenceGrant denial, missing backends, unmatched parents).
 */
import { convertGatewayApi, intersectHostnames, normalizeWeights, type ConversionInput, type ConversionResult } from '../../src/config/gateway-api/convert.js';
import type { GatewayObject, HTTPRouteObject, L4RouteObject, GRPCRouteObject, ReferenceGrantObject, ListenerSpec } from '../../src/config/gateway-api/types.js';
import { kindByName } from '../../src/config/kinds.js';
import type { ConfigObject } from '../../src/config/types.js';
import type { Gateway, VirtualService } from '../../src/config/spec-types.js';

const CLASS = { metadata: { name: 'mesh' }, spec: { controllerName: 'mesh.io/gateway-controller' } };
const OTHER_CLASS = { metadata: { name: 'other' }, spec: { controllerName: 'example.com/other' } };

function gateway(listeners: ListenerSpec[], name = 'gw', namespace = 'infra', className = 'mesh'): GatewayObject {
  return { metadata: { name, namespace, generation: 2, creationTimestamp: '2026-01-01T00:00:00Z' }, spec: { gatewayClassName: className, listeners } };
}

function route(name: string, spec: HTTPRouteObject['spec'], namespace = 'infra', created = '2026-01-01T00:00:00Z'): HTTPRouteObject {
  return { metadata: { name, namespace, generation: 3, creationTimestamp: created }, spec };
}

const SERVICES: Record<string, number[]> = { 'infra/web': [80], 'infra/web-v2': [80], 'apps/api': [8080], 'infra/mirror': [80] };

/** Every derived config must pass the schema and semantic checks of its kind, as a user's would. */
function convert(partial: Partial<ConversionInput>): ConversionResult {
  const result = convertWithoutChecks(partial);
  for (const c of result.configs) {
    const def = kindByName(c.meta.gvk.kind)!;
    const parsed = def.schema.safeParse(c.spec);
    expect({ name: c.meta.name, issues: parsed.success ? [] : parsed.error.issues }).toEqual({ name: c.meta.name, issues: [] });
    expect({ name: c.meta.name, issues: def.validate(parsed.data as never) }).toEqual({ name: c.meta.name, issues: [] });
  }
  return result;
}

function convertWithoutChecks(partial: Partial<ConversionInput>): ConversionResult {
  return convertGatewayApi({
    gatewayClasses: [CLASS, OTHER_CLASS],
    gateways: [],
    httpRoutes: [],
    grpcRoutes: [],
    referenceGrants: [],
    servicePorts: (ns, name) => SERVICES[`${ns}/${name}`],
    namespaceLabels: (ns) => ({ 'kubernetes.io/metadata.name': ns, ...(ns === 'apps' ? { team: 'a' } : {}) }),
    domain: 'cluster.local',
    ...partial,
  });
}

function gateways(r: ConversionResult): ConfigObject<Gateway>[] {
  return r.configs.filter((c) => c.meta.gvk.kind === 'Gateway') as ConfigObject<Gateway>[];
}

function virtualServices(r: ConversionResult): ConfigObject<VirtualService>[] {
  return r.configs.filter((c) => c.meta.gvk.kind === 'VirtualService') as ConfigObject<VirtualService>[];
}

function parentConditions(r: ConversionResult, key: string): Record<string, { status: string; reason: string; message: string }> {
  const parents = r.routes.get(key)?.parents ?? [];
  expect(parents).toHaveLength(1);
  return Object.fromEntries(parents[0].conditions.map((c) => [c.type, c]));
}

const HTTP: ListenerSpec = { name: 'http', port: 80, protocol: 'HTTP' };

describe('gateway-api conversion: gateways', () => {
  it('turns each listener of a Gateway of this controller into a derived Gateway selecting the gateway-name label', () => {
    const r = convert({
      gateways: [
        gateway([HTTP, { name: 'web', port: 443, protocol: 'HTTPS', hostname: 'shop.example.com', tls: { certificateRefs: [{ name: 'shop-cert' }] } }]),
        gateway([HTTP], 'theirs', 'infra', 'other'),
      ],
    });
    const gws = gateways(r);
    expect(gws.map((g) => `${g.meta.namespace}/${g.meta.name}`)).toEqual(['infra/gw-http-gwapi', 'infra/gw-web-gwapi']);
    expect(gws[0].spec).toEqual({ selector: { 'gateway.networking.k8s.io/gateway-name': 'gw' }, servers: [{ name: 'http', port: { number: 80, protocol: 'HTTP', name: 'http' }, hosts: ['*'] }] });
    expect(gws[1].spec.servers[0]).toMatchObject({ hosts: ['shop.example.com'], tls: { mode: 'SIMPLE', credentialName: 'shop-cert' } });
    expect(r.gateways.has('infra/theirs')).toBe(false);
    const status = r.gateways.get('infra/gw')!;
    expect(status.conditions.map((c) => [c.type, c.status, c.observedGeneration])).toEqual([
      ['Accepted', 'True', 2],
      ['Programmed', 'True', 2],
    ]);
    expect(r.gatewayClasses.get('mesh')?.conditions[0]).toMatchObject({ type: 'Accepted', status: 'True' });
    expect(r.gatewayClasses.has('other')).toBe(false);
  });

  it('refuses a certificate in another namespace without a ReferenceGrant, and accepts it with one', () => {
    const listener: ListenerSpec = { name: 'web', port: 443, protocol: 'HTTPS', tls: { certificateRefs: [{ name: 'cert', namespace: 'certs' }] } };
    const denied = convert({ gateways: [gateway([listener])] });
    expect(gateways(denied)).toHaveLength(0);
    const l = denied.gateways.get('infra/gw')!.listeners[0];
    expect(l.conditions.find((c) => c.type === 'ResolvedRefs')).toMatchObject({ status: 'False', reason: 'RefNotPermitted' });
    expect(denied.gateways.get('infra/gw')!.conditions.find((c) => c.type === 'Programmed')).toMatchObject({ status: 'False' });
    const grant: ReferenceGrantObject = {
      metadata: { name: 'allow', namespace: 'certs' },
      spec: { from: [{ group: 'gateway.networking.k8s.io', kind: 'Gateway', namespace: 'infra' }], to: [{ group: '', kind: 'Secret' }] },
    };
    const allowed = convert({ gateways: [gateway([listener])], referenceGrants: [grant] });
    expect(gateways(allowed)[0].spec.servers[0].tls).toEqual({ mode: 'SIMPLE', credentialName: 'certs/cert' });
  });

  it('reports an unsupported listener protocol', () => {
    const r = convert({ gateways: [gateway([{ name: 'udp', port: 53, protocol: 'UDP' }])] });
    expect(r.gateways.get('infra/gw')!.listeners[0].conditions[0]).toMatchObject({ type: 'Accepted', status: 'False', reason: 'UnsupportedProtocol' });
  });
});

describe('gateway-api conversion: HTTPRoute', () => {
  it('converts path, header, query and method matches, whole-segment prefixes included', () => {
    const r = convert({
      gateways: [gateway([HTTP])],
      httpRoutes: [
        route('r', {
          parentRefs: [{ name: 'gw' }],
          hostnames: ['shop.example.com'],
          rules: [
            {
              matches: [
                { path: { type: 'PathPrefix', value: '/api/' }, headers: [{ name: 'X-Env', value: 'canary' }], queryParams: [{ name: 'debug', type: 'RegularExpression', value: '1|true' }], method: 'get' },
                { path: { type: 'Exact', value: '/healthz' } },
                { path: { type: 'RegularExpression', value: '/v[0-9]+/.*' } },
              ],
              backendRefs: [{ name: 'web', port: 80 }],
            },
          ],
        }),
      ],
    });
    const [vs] = virtualServices(r);
    expect(vs.meta.name).toBe('gw-http-shop.example.com-gwapi');
    expect(vs.spec.hosts).toEqual(['shop.example.com']);
    expect(vs.spec.gateways).toEqual(['infra/gw-http-gwapi']);
    // precedence: exact, then prefix, then regular expression
    expect(vs.spec.http!.map((h) => h.match)).toEqual([
      [{ uri: { exact: '/healthz' } }],
      [
        { uri: { exact: '/api' }, headers: { 'x-env': { exact: 'canary' } }, queryParams: { debug: { regex: '1|true' } }, method: { exact: 'GET' } },
        { uri: { prefix: '/api/' }, headers: { 'x-env': { exact: 'canary' } }, queryParams: { debug: { regex: '1|true' } }, method: { exact: 'GET' } },
      ],
      [{ uri: { regex: '/v[0-9]+/.*' } }],
    ]);
    expect(vs.spec.http![0].route).toEqual([{ destination: { host: 'web.infra.svc.cluster.local', port: { number: 80 } } }]);
    expect(parentConditions(r, 'HTTPRoute/infra/r')).toMatchObject({ Accepted: { status: 'True' }, ResolvedRefs: { status: 'True' } });
    expect(r.gateways.get('infra/gw')!.listeners[0].attachedRoutes).toBe(1);
  });

  it('orders rules of several routes by gateway-api precedence: longer prefix first, then the older route', () => {
    const r = convert({
      gateways: [gateway([HTTP])],
      httpRoutes: [
        route('young', { parentRefs: [{ name: 'gw' }], rules: [{ matches: [{ path: { value: '/' } }], backendRefs: [{ name: 'web', port: 80 }] }] }, 'infra', '2026-02-01T00:00:00Z'),
        route('old', { parentRefs: [{ name: 'gw' }], rules: [{ matches: [{ path: { value: '/' } }], backendRefs: [{ name: 'web-v2', port: 80 }] }, { matches: [{ path: { value: '/a/b' } }], backendRefs: [{ name: 'web-v2', port: 80 }] }] }, 'infra', '2026-01-01T00:00:00Z'),
      ],
    });
    const [vs] = virtualServices(r);
    expect(vs.spec.hosts).toEqual(['*']);
    expect(vs.spec.http!.map((h) => `${JSON.stringify(h.match![0].uri)}→${h.route![0].destination.host.split('.')[0]}`)).toEqual([
      '{"exact":"/a/b"}→web-v2',
      '{"prefix":"/"}→web-v2',
      '{"prefix":"/"}→web',
    ]);
  });

  it('converts header modifiers, redirects, rewrites, mirrors and timeouts', () => {
    const r = convert({
      gateways: [gateway([HTTP])],
      httpRoutes: [
        route('r', {
          parentRefs: [{ name: 'gw' }],
          rules: [
            {
              matches: [{ path: { value: '/old' } }],
              filters: [{ type: 'RequestRedirect', requestRedirect: { scheme: 'https', hostname: 'new.example.com', path: { type: 'ReplaceFullPath', replaceFullPath: '/new' } } }],
            },
            {
              matches: [{ path: { value: '/app' } }],
              filters: [
                { type: 'RequestHeaderModifier', requestHeaderModifier: { set: [{ name: 'X-Via', value: 'gw' }], add: [{ name: 'X-Tag', value: 'a' }], remove: ['X-Debug'] } },
                { type: 'ResponseHeaderModifier', responseHeaderModifier: { set: [{ name: 'Cache-Control', value: 'no-store' }] } },
                { type: 'URLRewrite', urlRewrite: { hostname: 'internal', path: { type: 'ReplacePrefixMatch', replacePrefixMatch: '/' } } },
                { type: 'RequestMirror', requestMirror: { backendRef: { name: 'mirror', port: 80 }, percent: 10 } },
              ],
              backendRefs: [{ name: 'web', port: 80 }],
              timeouts: { request: '5s' },
            },
          ],
        }),
      ],
    });
    const [vs] = virtualServices(r);
    const redirect = vs.spec.http!.find((h) => h.redirect)!;
    expect(redirect.redirect).toEqual({ scheme: 'https', authority: 'new.example.com', uri: '/new', redirectCode: 302 });
    expect(redirect.route).toBeUndefined();
    const app = vs.spec.http!.find((h) => h.rewrite)!;
    expect(app.headers).toEqual({ request: { set: { 'x-via': 'gw' }, add: { 'x-tag': 'a' }, remove: ['X-Debug'] }, response: { set: { 'cache-control': 'no-store' } } });
    // /app/x → /x and /app → /: the prefix and one following slash are replaced
    expect(app.rewrite).toEqual({ authority: 'internal', uriRegexRewrite: { match: '^/app/?', rewrite: '/' } });
    expect(app.match).toEqual([{ uri: { regex: '/app(/.*)?' } }]);
    expect(app.mirrors).toEqual([{ destination: { host: 'mirror.infra.svc.cluster.local', port: { number: 80 } }, percentage: { value: 10 } }]);
    expect(app.timeout).toBe('5s');
    const rx = new RegExp(app.rewrite!.uriRegexRewrite!.match!);
    expect('/app/x'.replace(rx, app.rewrite!.uriRegexRewrite!.rewrite!)).toBe('/x');
    expect('/app'.replace(rx, app.rewrite!.uriRegexRewrite!.rewrite!)).toBe('/');
  });

  it('keeps weights of backendRefs, drops a missing Service and reports BackendNotFound; 500 when none is left', () => {
    const r = convert({
      gateways: [gateway([HTTP])],
      httpRoutes: [
        route('split', {
          parentRefs: [{ name: 'gw' }],
          rules: [{ backendRefs: [{ name: 'web', port: 80, weight: 80 }, { name: 'web-v2', port: 80, weight: 20 }, { name: 'gone', port: 80, weight: 5 }] }],
        }),
        route('broken', { parentRefs: [{ name: 'gw' }], hostnames: ['broken.example.com'], rules: [{ backendRefs: [{ name: 'web' }] }] }),
      ],
    });
    const byHost = new Map(virtualServices(r).map((v) => [v.spec.hosts![0], v]));
    expect(byHost.get('*')!.spec.http![0].route!.map((d) => [d.destination.host, d.weight])).toEqual([
      ['web.infra.svc.cluster.local', 80],
      ['web-v2.infra.svc.cluster.local', 20],
    ]);
    expect(parentConditions(r, 'HTTPRoute/infra/split').ResolvedRefs).toMatchObject({ status: 'False', reason: 'BackendNotFound' });
    expect(parentConditions(r, 'HTTPRoute/infra/split').ResolvedRefs.message).toContain('Service infra/gone not found');
    expect(byHost.get('broken.example.com')!.spec.http![0]).toMatchObject({ directResponse: { status: 500 } });
    expect(parentConditions(r, 'HTTPRoute/infra/broken').ResolvedRefs.message).toContain('port is required');
  });

  it('scales weights to add up to 100, as the VirtualService kind asks', () => {
    expect(normalizeWeights([1, 1, 1])).toEqual([34, 33, 33]);
    expect(normalizeWeights([80, 20])).toEqual([80, 20]);
    expect(normalizeWeights([1000, 1])).toEqual([99, 1]);
  });

  it('refuses a backend in another namespace without a ReferenceGrant (RefNotPermitted) and allows it with one', () => {
    const spec: HTTPRouteObject['spec'] = { parentRefs: [{ name: 'gw' }], rules: [{ backendRefs: [{ name: 'api', namespace: 'apps', port: 8080 }] }] };
    const denied = convert({ gateways: [gateway([HTTP])], httpRoutes: [route('x', spec)] });
    expect(parentConditions(denied, 'HTTPRoute/infra/x').ResolvedRefs).toMatchObject({ status: 'False', reason: 'RefNotPermitted' });
    expect(virtualServices(denied)[0].spec.http![0].directResponse).toEqual({ status: 500 });
    const wrongKind: ReferenceGrantObject = { metadata: { name: 'g', namespace: 'apps' }, spec: { from: [{ group: 'gateway.networking.k8s.io', kind: 'GRPCRoute', namespace: 'infra' }], to: [{ group: '', kind: 'Service' }] } };
    expect(parentConditions(convert({ gateways: [gateway([HTTP])], httpRoutes: [route('x', spec)], referenceGrants: [wrongKind] }), 'HTTPRoute/infra/x').ResolvedRefs.reason).toBe('RefNotPermitted');
    const grant: ReferenceGrantObject = { metadata: { name: 'g', namespace: 'apps' }, spec: { from: [{ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', namespace: 'infra' }], to: [{ group: '', kind: 'Service', name: 'api' }] } };
    const allowed = convert({ gateways: [gateway([HTTP])], httpRoutes: [route('x', spec)], referenceGrants: [grant] });
    expect(parentConditions(allowed, 'HTTPRoute/infra/x').ResolvedRefs.status).toBe('True');
    expect(virtualServices(allowed)[0].spec.http![0].route![0].destination.host).toBe('api.apps.svc.cluster.local');
  });

  it('intersects route hostnames with listener hostnames, and reports routes that share none', () => {
    expect(intersectHostnames('*.example.com', 'a.example.com')).toBe('a.example.com');
    expect(intersectHostnames('a.example.com', '*.example.com')).toBe('a.example.com');
    expect(intersectHostnames('*.example.com', 'example.com')).toBeUndefined();
    expect(intersectHostnames(undefined, 'x.org')).toBe('x.org');
    const r = convert({
      gateways: [gateway([{ name: 'wild', port: 80, protocol: 'HTTP', hostname: '*.example.com' }, { name: 'other', port: 8080, protocol: 'HTTP', hostname: 'other.org' }])],
      httpRoutes: [
        route('a', { parentRefs: [{ name: 'gw' }], hostnames: ['a.example.com', 'b.example.net'], rules: [{ backendRefs: [{ name: 'web', port: 80 }] }] }),
        route('none', { parentRefs: [{ name: 'gw', sectionName: 'wild' }], hostnames: ['x.org'], rules: [{ backendRefs: [{ name: 'web', port: 80 }] }] }),
      ],
    });
    expect(virtualServices(r).map((v) => `${v.spec.gateways![0]} ${v.spec.hosts![0]}`)).toEqual(['infra/gw-wild-gwapi a.example.com']);
    expect(r.gateways.get('infra/gw')!.listeners.map((l) => [l.name, l.attachedRoutes])).toEqual([
      ['wild', 1],
      ['other', 0],
    ]);
    expect(parentConditions(r, 'HTTPRoute/infra/none').Accepted).toMatchObject({ status: 'False', reason: 'NoMatchingListenerHostname' });
  });

  it('reports a missing Gateway, an unknown sectionName and a namespace the listener does not admit; ignores foreign Gateways', () => {
    const r = convert({
      gateways: [gateway([HTTP]), gateway([HTTP], 'theirs', 'infra', 'other'), gateway([{ ...HTTP, allowedRoutes: { namespaces: { from: 'Selector', selector: { matchLabels: { team: 'a' } } } } }], 'shared')],
      httpRoutes: [
        route('missing', { parentRefs: [{ name: 'nope' }], rules: [] }),
        route('section', { parentRefs: [{ name: 'gw', sectionName: 'https' }], rules: [] }),
        route('foreign', { parentRefs: [{ name: 'theirs' }], rules: [] }),
        route('cross', { parentRefs: [{ name: 'gw', namespace: 'infra' }], rules: [] }, 'apps'),
        route('selected', { parentRefs: [{ name: 'shared', namespace: 'infra' }], rules: [] }, 'apps'),
        route('unselected', { parentRefs: [{ name: 'shared', namespace: 'infra' }], rules: [] }, 'web'),
      ],
    });
    expect(parentConditions(r, 'HTTPRoute/infra/missing').Accepted).toMatchObject({ status: 'False', reason: 'NoMatchingParent' });
    expect(parentConditions(r, 'HTTPRoute/infra/section').Accepted).toMatchObject({ status: 'False', reason: 'NoMatchingParent' });
    expect(r.routes.has('HTTPRoute/infra/foreign')).toBe(false);
    expect(parentConditions(r, 'HTTPRoute/apps/cross').Accepted).toMatchObject({ status: 'False', reason: 'NotAllowedByListeners' });
    expect(parentConditions(r, 'HTTPRoute/apps/selected').Accepted.status).toBe('True');
    expect(parentConditions(r, 'HTTPRoute/web/unselected').Accepted.reason).toBe('NotAllowedByListeners');
  });

  it('refuses an unsupported filter without dropping the other routes', () => {
    const r = convert({
      gateways: [gateway([HTTP])],
      httpRoutes: [route('ext', { parentRefs: [{ name: 'gw' }], rules: [{ filters: [{ type: 'ExtensionRef', extensionRef: { name: 'x' } }], backendRefs: [{ name: 'web', port: 80 }] }] })],
    });
    expect(parentConditions(r, 'HTTPRoute/infra/ext').Accepted).toMatchObject({ status: 'False', reason: 'UnsupportedValue' });
    expect(virtualServices(r)).toHaveLength(0);
  });
});

describe('gateway-api conversion: GRPCRoute', () => {
  it('matches gRPC service and method as paths', () => {
    const grpc: GRPCRouteObject = {
      metadata: { name: 'g', namespace: 'infra', generation: 1 },
      spec: {
        parentRefs: [{ name: 'gw' }],
        hostnames: ['grpc.example.com'],
        rules: [
          { matches: [{ method: { service: 'shop.Cart', method: 'Add' } }, { method: { service: 'shop.Catalog' } }, { method: { method: 'Ping' } }], backendRefs: [{ name: 'web', port: 80 }] },
        ],
      },
    };
    const r = convert({ gateways: [gateway([HTTP])], grpcRoutes: [grpc] });
    const [vs] = virtualServices(r);
    expect(vs.spec.http!.map((h) => h.match![0].uri)).toEqual([{ exact: '/shop.Cart/Add' }, { prefix: '/shop.Catalog/' }, { regex: '/[^/]+/Ping' }]);
    expect(parentConditions(r, 'GRPCRoute/infra/g').Accepted.status).toBe('True');
  });
});

describe('gateway-api conversion: TCPRoute and TLSRoute', () => {
  it('routes a TCP listener to weighted backends and a TLS passthrough listener by SNI', () => {
    const l4 = (name: string, spec: L4RouteObject['spec']): L4RouteObject => ({ metadata: { name, namespace: 'infra', generation: 1 }, spec });
    const r = convert({
      gateways: [gateway([{ name: 'db', port: 5432, protocol: 'TCP' }, { name: 'tls', port: 443, protocol: 'TLS', tls: { mode: 'Passthrough' } }])],
      tcpRoutes: [l4('db', { parentRefs: [{ name: 'gw', sectionName: 'db' }], rules: [{ backendRefs: [{ name: 'web', port: 80, weight: 3 }, { name: 'web-v2', port: 80, weight: 1 }] }] })],
      tlsRoutes: [l4('sni', { parentRefs: [{ name: 'gw', sectionName: 'tls' }], hostnames: ['secure.example.com'], rules: [{ backendRefs: [{ name: 'web', port: 80 }] }] })],
      httpRoutes: [route('wrong', { parentRefs: [{ name: 'gw', sectionName: 'db' }], rules: [{ backendRefs: [{ name: 'web', port: 80 }] }] })],
    });
    const byName = new Map(virtualServices(r).map((v) => [v.meta.name, v.spec]));
    expect(byName.get('gw-db-wildcard-gwapi')!.tcp).toEqual([
      { route: [{ destination: { host: 'web.infra.svc.cluster.local', port: { number: 80 } }, weight: 75 }, { destination: { host: 'web-v2.infra.svc.cluster.local', port: { number: 80 } }, weight: 25 }] },
    ]);
    expect(byName.get('gw-tls-secure.example.com-gwapi')!.tls).toEqual([{ match: [{ sniHosts: ['secure.example.com'] }], route: [{ destination: { host: 'web.infra.svc.cluster.local', port: { number: 80 } } }] }]);
    expect(gateways(r).find((g) => g.meta.name === 'gw-tls-gwapi')!.spec.servers[0].tls).toEqual({ mode: 'PASSTHROUGH' });
    expect(parentConditions(r, 'TCPRoute/infra/db').Accepted.status).toBe('True');
    expect(parentConditions(r, 'HTTPRoute/infra/wrong').Accepted.reason).toBe('NotAllowedByListeners');
  });
});
