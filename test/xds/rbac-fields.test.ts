/**
 * AuthorizationPolicy fields → Envoy RBAC, one row per field (docs/adr/0082, 0153): every source,
 * operation and condition field of the public API, set alone in a rule, becomes the exact principal
 * or permission of the translated policy, which is encoded with the Envoy protos and decoded back
 * (proto JSON) before it is compared. `not…` fields are the negation of their positive twin; several
 * values of a field are alternatives, several fields must all match. Then: attributes a TCP port or a
 * proxyless gRPC server cannot evaluate, and `targetRefs` choosing which workloads' filters get a
 * policy in the sidecar generator's output.
 */
import type { Rule } from '../../src/gen/config/schemas.js';
import { Policy } from '../../src/gen/envoy/config/rbac/v3/rbac.js';
import { RBAC as HttpRbac } from '../../src/gen/envoy/extensions/filters/http/rbac/v3/rbac.js';
import { RbacTranslator, type RbacContext } from '../../src/xds/envoy/security/rbac.js';
import type { AuthzAction } from '../../src/model/policy/index.js';
import { modelFromYaml, sidecar, TypeUrl } from '../support/model.js';
import { hcmOf } from '../support/decode.js';

const HTTP: RbacContext = { protocol: 'http', proxyless: false, trustDomain: 'cluster.local', trustDomainAliases: [] };

/** A rule translated, encoded and decoded: its proto JSON, or undefined when the rule is dropped. */
function translate(rule: Rule, action: AuthzAction = 'ALLOW', ctx: RbacContext = HTTP): unknown {
  const shape = new RbacTranslator(ctx).rulePolicy(rule, action);
  if (!shape) return undefined;
  return Policy.toJSON(Policy.decode(Policy.encode(Policy.fromPartial(shape as never)).finish()));
}

const ANY = { any: true };
const spiffe = (m: Record<string, unknown>): Record<string, unknown> => ({ authenticated: { principalName: m } });
const jwt = (path: string[], value: Record<string, unknown>): Record<string, unknown> => ({
  metadata: { filter: 'envoy.filters.http.jwt_authn', path: ['payload', ...path].map((key) => ({ key })), value },
});
const claim = (path: string[], exact: string): Record<string, unknown> => ({
  orIds: { ids: [jwt(path, { stringMatch: { exact } }), jwt(path, { listMatch: { oneOf: { stringMatch: { exact } } } })] },
});
const issSub = (iss: string, sub: string): Record<string, unknown> => ({
  andIds: { ids: [jwt(['iss'], { stringMatch: { exact: iss } }), jwt(['sub'], { stringMatch: { exact: sub } })] },
});
const nsRegex = (ns: string): Record<string, unknown> => spiffe({ safeRegex: { regex: `spiffe://[^/]+/ns/${ns}/sa/[^/]+` } });

/** [field, values, the principal the source becomes] */
const SOURCES: Array<[string, string[], unknown]> = [
  ['principals', ['cluster.local/ns/a/sa/b'], spiffe({ exact: 'spiffe://cluster.local/ns/a/sa/b' })],
  ['principals', ['*'], spiffe({ safeRegex: { regex: '.+' } })],
  ['principals', ['cluster.local/ns/a/*'], spiffe({ prefix: 'spiffe://cluster.local/ns/a/' })],
  ['principals', ['*/sa/b'], spiffe({ suffix: '/sa/b' })],
  ['principals', ['cluster.local/ns/a/sa/b', 'cluster.local/ns/a/sa/c'], { orIds: { ids: [spiffe({ exact: 'spiffe://cluster.local/ns/a/sa/b' }), spiffe({ exact: 'spiffe://cluster.local/ns/a/sa/c' })] } }],
  ['notPrincipals', ['cluster.local/ns/a/sa/b'], { notId: spiffe({ exact: 'spiffe://cluster.local/ns/a/sa/b' }) }],
  ['requestPrincipals', ['iss/sub'], issSub('iss', 'sub')],
  ['requestPrincipals', ['*'], jwt(['iss'], { presentMatch: true })],
  ['notRequestPrincipals', ['iss/sub'], { notId: issSub('iss', 'sub') }],
  ['namespaces', ['shop'], nsRegex('shop')],
  ['namespaces', ['shop-*'], nsRegex('shop-[^/]*')],
  ['notNamespaces', ['shop'], { notId: nsRegex('shop') }],
  ['ipBlocks', ['10.0.0.0/8'], { directRemoteIp: { addressPrefix: '10.0.0.0', prefixLen: 8 } }],
  ['notIpBlocks', ['10.1.2.3'], { notId: { directRemoteIp: { addressPrefix: '10.1.2.3', prefixLen: 32 } } }],
  ['remoteIpBlocks', ['2001:db8::/32'], { remoteIp: { addressPrefix: '2001:db8::', prefixLen: 32 } }],
  ['notRemoteIpBlocks', ['192.168.0.0/16'], { notId: { remoteIp: { addressPrefix: '192.168.0.0', prefixLen: 16 } } }],
  ['serviceAccounts', ['shop/web'], spiffe({ exact: 'spiffe://cluster.local/ns/shop/sa/web' })],
  ['notServiceAccounts', ['shop/web'], { notId: spiffe({ exact: 'spiffe://cluster.local/ns/shop/sa/web' }) }],
  ['trustDomains', ['td1'], spiffe({ prefix: 'spiffe://td1/' })],
  ['notTrustDomains', ['td1'], { notId: spiffe({ prefix: 'spiffe://td1/' }) }],
];

/** [field, values, the permission the operation becomes] */
const OPERATIONS: Array<[string, string[], unknown]> = [
  ['hosts', ['example.com'], { header: { name: ':authority', stringMatch: { safeRegex: { regex: '(?i)example\\.com(:[0-9]+)?' } } } }],
  ['hosts', ['*.example.com'], { header: { name: ':authority', stringMatch: { safeRegex: { regex: '(?i).*\\.example\\.com(:[0-9]+)?' } } } }],
  ['notHosts', ['example.com'], { notRule: { header: { name: ':authority', stringMatch: { safeRegex: { regex: '(?i)example\\.com(:[0-9]+)?' } } } } }],
  ['methods', ['GET', 'HEAD'], { orRules: { rules: [{ header: { name: ':method', stringMatch: { exact: 'GET' } } }, { header: { name: ':method', stringMatch: { exact: 'HEAD' } } }] } }],
  ['notMethods', ['DELETE'], { notRule: { header: { name: ':method', stringMatch: { exact: 'DELETE' } } } }],
  ['paths', ['/api/*'], { urlPath: { path: { prefix: '/api/' } } }],
  ['paths', ['*.png'], { urlPath: { path: { suffix: '.png' } } }],
  ['paths', ['*'], { urlPath: { path: { safeRegex: { regex: '.*' } } } }],
  ['notPaths', ['/admin'], { notRule: { urlPath: { path: { exact: '/admin' } } } }],
  ['ports', ['8080'], { destinationPort: 8080 }],
  ['notPorts', ['9090'], { notRule: { destinationPort: 9090 } }],
];

/** [condition, 'principal' or 'permission', what it becomes] */
const CONDITIONS: Array<[{ key: string; values?: string[]; notValues?: string[] }, 'principal' | 'permission', unknown]> = [
  [{ key: 'source.ip', values: ['10.0.0.0/8'] }, 'principal', { directRemoteIp: { addressPrefix: '10.0.0.0', prefixLen: 8 } }],
  [{ key: 'remote.ip', values: ['10.0.0.0/8'] }, 'principal', { remoteIp: { addressPrefix: '10.0.0.0', prefixLen: 8 } }],
  [{ key: 'remote.ip', notValues: ['10.0.0.1'] }, 'principal', { notId: { remoteIp: { addressPrefix: '10.0.0.1', prefixLen: 32 } } }],
  [{ key: 'source.namespace', values: ['shop'] }, 'principal', nsRegex('shop')],
  [{ key: 'source.principal', values: ['cluster.local/ns/a/sa/b'] }, 'principal', spiffe({ exact: 'spiffe://cluster.local/ns/a/sa/b' })],
  [
    { key: 'source.principal', values: ['cluster.local/ns/a/*'], notValues: ['cluster.local/ns/a/sa/x'] },
    'principal',
    { andIds: { ids: [spiffe({ prefix: 'spiffe://cluster.local/ns/a/' }), { notId: spiffe({ exact: 'spiffe://cluster.local/ns/a/sa/x' }) }] } },
  ],
  [{ key: 'request.headers[x-tenant]', values: ['a*'] }, 'principal', { header: { name: 'x-tenant', stringMatch: { prefix: 'a' } } }],
  [{ key: 'request.headers[x-tenant]', values: ['*'] }, 'principal', { header: { name: 'x-tenant', presentMatch: true } }],
  [{ key: 'request.auth.principal', values: ['iss/sub'] }, 'principal', issSub('iss', 'sub')],
  [{ key: 'request.auth.audiences', values: ['echo'] }, 'principal', claim(['aud'], 'echo')],
  [{ key: 'request.auth.presenter', values: ['cli'] }, 'principal', claim(['azp'], 'cli')],
  [{ key: 'request.auth.claims[groups]', values: ['dev'] }, 'principal', claim(['groups'], 'dev')],
  [{ key: 'request.auth.claims[realm][role]', values: ['admin'] }, 'principal', claim(['realm', 'role'], 'admin')],
  [{ key: 'destination.ip', values: ['10.0.0.5'] }, 'permission', { destinationIp: { addressPrefix: '10.0.0.5', prefixLen: 32 } }],
  [{ key: 'destination.port', values: ['8080'] }, 'permission', { destinationPort: 8080 }],
  [{ key: 'destination.port', notValues: ['15020'] }, 'permission', { notRule: { destinationPort: 15020 } }],
  [{ key: 'connection.sni', values: ['*.example.com'] }, 'permission', { requestedServerName: { suffix: '.example.com' } }],
];

describe('RbacTranslator: each source field → its RBAC principal', () => {
  it.each(SOURCES)('from.source.%s %j', (field, values, principal) => {
    expect(translate({ from: [{ source: { [field]: values } }] })).toEqual({ permissions: [ANY], principals: [principal] });
  });

  it('several fields of a source must all match; several sources are alternatives', () => {
    expect(translate({ from: [{ source: { namespaces: ['shop'], ipBlocks: ['10.0.0.0/8'] } }, { source: { principals: ['cluster.local/ns/a/sa/b'] } }] })).toEqual({
      permissions: [ANY],
      principals: [{ orIds: { ids: [{ andIds: { ids: [nsRegex('shop'), { directRemoteIp: { addressPrefix: '10.0.0.0', prefixLen: 8 } }] } }, spiffe({ exact: 'spiffe://cluster.local/ns/a/sa/b' })] } }],
    });
  });

  it('a principal of the mesh trust domain matches its aliases too; serviceAccounts likewise', () => {
    const ctx = { ...HTTP, trustDomainAliases: ['old.td'] };
    const both = (rest: string): unknown => ({ orIds: { ids: [spiffe({ exact: `spiffe://cluster.local${rest}` }), spiffe({ exact: `spiffe://old.td${rest}` })] } });
    expect(translate({ from: [{ source: { principals: ['cluster.local/ns/a/sa/b'] } }] }, 'ALLOW', ctx)).toEqual({ permissions: [ANY], principals: [both('/ns/a/sa/b')] });
    expect(translate({ from: [{ source: { serviceAccounts: ['a/b'] } }] }, 'ALLOW', ctx)).toEqual({ permissions: [ANY], principals: [both('/ns/a/sa/b')] });
  });
});

describe('RbacTranslator: each operation field → its RBAC permission', () => {
  it.each(OPERATIONS)('to.operation.%s %j', (field, values, permission) => {
    expect(translate({ to: [{ operation: { [field]: values } }] })).toEqual({ permissions: [permission], principals: [ANY] });
  });

  it('several fields of an operation must all match', () => {
    expect(translate({ to: [{ operation: { methods: ['GET'], notPaths: ['/admin'] } }] })).toEqual({
      permissions: [{ andRules: { rules: [{ header: { name: ':method', stringMatch: { exact: 'GET' } } }, { notRule: { urlPath: { path: { exact: '/admin' } } } }] } }],
      principals: [ANY],
    });
  });
});

describe('RbacTranslator: each condition key → its RBAC principal or permission', () => {
  it.each(CONDITIONS)('when %j', (condition, side, matcher) => {
    expect(translate({ when: [condition] })).toEqual(side === 'principal' ? { permissions: [ANY], principals: [matcher] } : { permissions: [matcher], principals: [ANY] });
  });

  it('sources, operations and conditions of one rule must all match', () => {
    expect(translate({ from: [{ source: { namespaces: ['shop'] } }], to: [{ operation: { ports: ['8080'] } }], when: [{ key: 'source.ip', values: ['10.0.0.1'] }, { key: 'destination.ip', values: ['10.0.0.5'] }] })).toEqual({
      permissions: [{ andRules: { rules: [{ destinationPort: 8080 }, { destinationIp: { addressPrefix: '10.0.0.5', prefixLen: 32 } }] } }],
      principals: [{ andIds: { ids: [nsRegex('shop'), { directRemoteIp: { addressPrefix: '10.0.0.1', prefixLen: 32 } }] } }],
    });
  });
});

describe('RbacTranslator: attributes the target cannot evaluate', () => {
  const TCP: RbacContext = { ...HTTP, protocol: 'tcp' };
  const GRPC: RbacContext = { ...HTTP, proxyless: true };

  it.each([
    ['TCP', TCP, { to: [{ operation: { methods: ['GET'] } }] }],
    ['TCP', TCP, { when: [{ key: 'request.headers[x-a]', values: ['1'] }] }],
    ['TCP', TCP, { from: [{ source: { requestPrincipals: ['*'] } }] }],
    ['gRPC', GRPC, { from: [{ source: { remoteIpBlocks: ['10.0.0.0/8'] } }] }],
    ['gRPC', GRPC, { when: [{ key: 'connection.sni', values: ['a.test'] }] }],
    ['gRPC', GRPC, { when: [{ key: 'request.auth.claims[groups]', values: ['dev'] }] }],
  ] as Array<[string, RbacContext, Rule]>)('%s: an ALLOW rule with %j is dropped; a DENY rule matches without it', (_target, ctx, rule) => {
    expect(translate(rule, 'ALLOW', ctx)).toBeUndefined();
    expect(translate(rule, 'DENY', ctx)).toEqual({ permissions: [ANY], principals: [ANY] });
  });

  it('what TCP ports can see stays: ports, principals, IPs', () => {
    expect(translate({ from: [{ source: { principals: ['cluster.local/ns/a/sa/b'] } }], to: [{ operation: { ports: ['5432'] } }] }, 'ALLOW', TCP)).toEqual({
      permissions: [{ destinationPort: 5432 }],
      principals: [spiffe({ exact: 'spiffe://cluster.local/ns/a/sa/b' })],
    });
  });
});

describe('targetRefs choose the workloads whose filters carry the policy (sidecar generator output)', () => {
  const policy = (targetRefs: string): string => `
apiVersion: security.mesh.io/v1
kind: AuthorizationPolicy
metadata: { name: by-ref, namespace: default }
spec:
  targetRefs: ${targetRefs}
  action: DENY
  rules: [{ to: [{ operation: { paths: ["/admin"] } }] }]
`;
  const GW_LABEL = 'gateway.networking.k8s.io/gateway-name';

  /** The names of the RBAC policies in a workload's inbound HTTP filters. */
  function policiesOf(m: ReturnType<typeof modelFromYaml>, labels: Record<string, string>): string[] {
    const l = m.generate(sidecar('127.0.0.1', 'w-1', 'default', labels), TypeUrl.Listener).find((x) => x.name === 'virtualInbound')!;
    const names = new Set<string>();
    for (const chain of l.filterChains) {
      if (chain.filters[0]?.name !== 'envoy.filters.network.http_connection_manager') continue;
      for (const f of hcmOf({ ...l, filterChains: [chain] })[0].httpFilters) {
        if (f.name.startsWith('envoy.filters.http.rbac')) Object.keys(HttpRbac.decode(f.typedConfig!.value).rules?.policies ?? {}).forEach((n) => names.add(n));
      }
    }
    return [...names];
  }

  it.each([
    ['a Gateway by name selects its deployment', '[{ group: gateway.networking.k8s.io, kind: Gateway, name: gw }]', { app: 'echo', [GW_LABEL]: 'gw' }, true],
    ['a Gateway by name does not select another gateway', '[{ group: gateway.networking.k8s.io, kind: Gateway, name: gw }]', { app: 'echo', [GW_LABEL]: 'other' }, false],
    ['a Gateway does not select plain workloads', '[{ group: gateway.networking.k8s.io, kind: Gateway, name: gw }]', { app: 'echo' }, false],
    ['a Service targets waypoints, which this mesh does not run: nothing', '[{ kind: Service, name: echo }]', { app: 'echo' }, false],
  ])('%s', (_what, refs, labels, selected) => {
    const m = modelFromYaml(policy(refs));
    try {
      expect(policiesOf(m, labels)).toEqual(selected ? ['ns[default]-policy[by-ref]-rule[0]'] : []);
    } finally {
      m.stop();
    }
  });
});
