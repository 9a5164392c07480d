/**
 * The validation rules as a table: for each rule a document the rule accepts, one it refuses (or
 * warns about), and the exact field and message. The same table runs through the kind validators
 * (test/config/rules.test.ts) and through every entry point — the daemon's file source,
 * `meshctl validate` and the webhook's verdict function (test/config/rules-entry-points.test.ts).
 */
import type { ConfigKindName } from '../../src/config/kinds.js';

export interface RuleCase {
  /** What the rule says, as a test title. */
  readonly rule: string;
  readonly kind: ConfigKindName;
  readonly valid: Record<string, unknown>;
  readonly invalid: Record<string, unknown>;
  /** Field of the issue the invalid spec gets. */
  readonly path: string;
  /** The message, exactly. */
  readonly message: string;
  /** `warning`: the invalid spec is accepted with this warning. */
  readonly level: 'error' | 'warning';
  /** Annotations of the invalid document (and of the valid one when `validAnnotations` is absent). */
  readonly annotations?: Record<string, string>;
  readonly validAnnotations?: Record<string, string>;
}

const route = (host: string, extra: Record<string, unknown> = {}) => ({ destination: { host }, ...extra });
const vs = (http: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({ hosts: ['echo.default.svc.cluster.local'], gateways: ['gw'], http: [{ route: [route('echo')], ...http }], ...extra });
const dr = (trafficPolicy: Record<string, unknown>) => ({ host: 'echo', trafficPolicy });
const gw = (tls: Record<string, unknown>, protocol = 'HTTPS') => ({ selector: { app: 'gw' }, servers: [{ port: { number: 443, name: 'https', protocol }, hosts: ['*.example.com'], tls }] });
const ap = (source: Record<string, unknown>) => ({ rules: [{ from: [{ source }] }] });
const apTo = (operation: Record<string, unknown>) => ({ rules: [{ to: [{ operation }] }] });
const apWhen = (condition: Record<string, unknown>) => ({ rules: [{ when: [condition] }] });
const sidecarIn = (ingress: Record<string, unknown>) => ({ ingress: [{ port: { number: 9080, protocol: 'HTTP', name: 'http' }, defaultEndpoint: '127.0.0.1:8080', ...ingress }] });
const se = (extra: Record<string, unknown>) => ({ hosts: ['api.example.com'], ports: [{ number: 443, name: 'tls', protocol: 'TLS' }], ...extra });

export const RULE_CASES: ReadonlyArray<RuleCase> = [
  // VirtualService
  {
    rule: 'weights that do not add up to 100 split traffic in proportion, with a warning',
    kind: 'VirtualService',
    valid: vs({ route: [route('a', { weight: 80 }), route('b', { weight: 20 })] }),
    invalid: vs({ route: [route('a', { weight: 50 }), route('b', { weight: 30 })] }),
    path: 'spec.http[0].route',
    message: 'weights add up to 80, not 100: traffic is split in proportion to them',
    level: 'warning',
  },
  {
    rule: 'several destinations cannot all have weight 0',
    kind: 'VirtualService',
    valid: vs({ route: [route('a', { weight: 0 }), route('b', { weight: 100 })] }),
    invalid: vs({ route: [route('a', { weight: 0 }), route('b', { weight: 0 })] }),
    path: 'spec.http[0].route',
    message: 'the weights of several destinations add up to 0: give at least one a weight',
    level: 'error',
  },
  {
    rule: 'redirectCode 0 means the default, other codes must be redirects',
    kind: 'VirtualService',
    valid: vs({ route: undefined, redirect: { uri: '/new', redirectCode: 0 } }),
    invalid: vs({ route: undefined, redirect: { uri: '/new', redirectCode: 200 } }),
    path: 'spec.http[0].redirect.redirectCode',
    message: 'redirect code 200 is not one of 301, 302, 303, 307, 308',
    level: 'error',
  },
  {
    rule: 'redirect prefixRewrite needs prefix uri matches',
    kind: 'VirtualService',
    valid: vs({ route: undefined, match: [{ uri: { prefix: '/foo/' } }], redirect: { authority: 'foo.example.com', prefixRewrite: '/' } }),
    invalid: vs({ route: undefined, match: [{ uri: { exact: '/foo/' } }], redirect: { prefixRewrite: '/' } }),
    path: 'spec.http[0].match[0].uri',
    message: 'with redirect.prefixRewrite every uri match must be a prefix match',
    level: 'error',
  },
  {
    rule: 'redirect prefixRewrite and uri are mutually exclusive',
    kind: 'VirtualService',
    valid: vs({ route: undefined, redirect: { prefixRewrite: '/baz' } }),
    invalid: vs({ route: undefined, redirect: { prefixRewrite: '/baz', uri: '/x' } }),
    path: 'spec.http[0].redirect.prefixRewrite',
    message: 'prefixRewrite and uri are mutually exclusive',
    level: 'error',
  },
  {
    rule: ':authority may be set, other pseudo-headers not',
    kind: 'VirtualService',
    valid: vs({ headers: { request: { set: { ':authority': 'other.example.com' } } } }),
    invalid: vs({ headers: { request: { set: { ':path': '/x' } } } }),
    path: 'spec.http[0].headers.request.set[":path"]',
    message: '":path" is not a valid header name (only :authority may be set among the pseudo-headers)',
    level: 'error',
  },
  {
    rule: 'header values use the proxy header syntax',
    kind: 'VirtualService',
    valid: vs({ headers: { request: { add: { 'x-id': '%REQ(x-request-id)% 100%%' } } } }),
    invalid: vs({ headers: { request: { add: { 'x-id': '100% sure' } } } }),
    path: 'spec.http[0].headers.request.add["x-id"]',
    message: 'header value "100% sure" has a "%" that starts no formatter operator: write %% for a literal %, or %OPERATOR%',
    level: 'error',
  },
  {
    rule: 'partial wildcard hosts are allowed; a wildcard elsewhere is not',
    kind: 'VirtualService',
    valid: vs({}, { hosts: ['*foo.example.com'] }),
    invalid: vs({}, { hosts: ['foo.*.example.com'] }),
    path: 'spec.hosts[0]',
    message: 'host "foo.*.example.com": a wildcard is only allowed at the start of the first label ("*.example.com")',
    level: 'error',
  },
  {
    rule: 'hosts of one VirtualService must not overlap',
    kind: 'VirtualService',
    valid: vs({}, { hosts: ['a.example.com', 'b.example.com'] }),
    invalid: vs({}, { hosts: ['a.example.com', '*.example.com'] }),
    path: 'spec.hosts[0]',
    message: 'host "a.example.com" overlaps host "*.example.com" of the same VirtualService',
    level: 'error',
  },
  {
    rule: '"*" is not a host of the mesh gateway',
    kind: 'VirtualService',
    valid: vs({}, { hosts: ['*'], gateways: ['gw'] }),
    invalid: vs({}, { hosts: ['*'], gateways: ['mesh'] }),
    path: 'spec.hosts[0]',
    message: 'wildcard host "*" is not allowed for a VirtualService bound to the mesh gateway: it would capture all traffic of every sidecar',
    level: 'error',
  },
  {
    rule: 'retryOn names the proxy\'s retry conditions or status codes',
    kind: 'VirtualService',
    valid: vs({ retries: { attempts: 2, retryOn: 'gateway-error,connect-failure,503,unavailable' } }),
    invalid: vs({ retries: { attempts: 2, retryOn: '5xx,timeout' } }),
    path: 'spec.http[0].retries.retryOn',
    message:
      '"timeout" is not a retry condition (known: 5xx, gateway-error, reset, reset-before-request, connect-failure, envoy-ratelimited, retriable-4xx, refused-stream, retriable-status-codes, retriable-headers, http3-post-connect-failure, cancelled, deadline-exceeded, internal, resource-exhausted, unavailable, or an HTTP status code)',
    level: 'error',
  },
  {
    rule: 'retries with 0 attempts take no other settings',
    kind: 'VirtualService',
    valid: vs({ retries: { attempts: 0 } }),
    invalid: vs({ retries: { attempts: 0, perTryTimeout: '2s' } }),
    path: 'spec.http[0].retries.attempts',
    message: 'retries are off with 0 attempts, yet other retry settings are given: set attempts or remove the settings',
    level: 'error',
  },
  {
    rule: 'durations are whole milliseconds',
    kind: 'VirtualService',
    valid: vs({ timeout: '1.5s' }),
    invalid: vs({ timeout: '1500us' }),
    path: 'spec.http[0].timeout',
    message: 'duration 1500us is finer than a millisecond, the finest precision supported',
    level: 'error',
  },
  {
    rule: 'mirrorPercent is deprecated',
    kind: 'VirtualService',
    valid: vs({ mirror: { host: 'shadow' }, mirrorPercentage: { value: 5 } }),
    invalid: vs({ mirror: { host: 'shadow' }, mirrorPercent: 5 }),
    path: 'spec.http[0].mirrorPercent',
    message: 'mirrorPercent is deprecated: use mirrorPercentage',
    level: 'warning',
  },
  // DestinationRule
  {
    rule: 'a trafficPolicy has at least one field',
    kind: 'DestinationRule',
    valid: dr({ loadBalancer: { simple: 'ROUND_ROBIN' } }),
    invalid: dr({}),
    path: 'spec.trafficPolicy',
    message: 'trafficPolicy must have at least one field',
    level: 'error',
  },
  {
    rule: 'a connectionPool has tcp or http',
    kind: 'DestinationRule',
    valid: dr({ connectionPool: { tcp: { maxConnections: 10 } } }),
    invalid: dr({ connectionPool: {} }),
    path: 'spec.trafficPolicy.connectionPool',
    message: 'connectionPool must have at least one of tcp or http',
    level: 'error',
  },
  {
    rule: 'insecureSkipVerify takes no CA certificates',
    kind: 'DestinationRule',
    valid: dr({ tls: { mode: 'SIMPLE', insecureSkipVerify: true } }),
    invalid: dr({ tls: { mode: 'SIMPLE', insecureSkipVerify: true, caCertificates: '/etc/ca.pem' } }),
    path: 'spec.trafficPolicy.tls.caCertificates',
    message: 'caCertificates cannot be set when insecureSkipVerify is true',
    level: 'error',
  },
  {
    rule: 'credentialName beside certificate files wins, with a warning',
    kind: 'DestinationRule',
    valid: dr({ tls: { mode: 'MUTUAL', credentialName: 'client-cert' } }),
    invalid: dr({ tls: { mode: 'MUTUAL', credentialName: 'client-cert', privateKey: '/etc/key.pem' } }),
    path: 'spec.trafficPolicy.tls.credentialName',
    message: 'credentialName is used: clientCertificate, privateKey and caCertificates are ignored',
    level: 'warning',
  },
  {
    rule: 'warmup aggression is at least 1',
    kind: 'DestinationRule',
    valid: dr({ loadBalancer: { simple: 'ROUND_ROBIN', warmup: { duration: '60s', minimumPercent: 10, aggression: 2 } } }),
    invalid: dr({ loadBalancer: { simple: 'ROUND_ROBIN', warmup: { duration: '60s', aggression: 0.5 } } }),
    path: 'spec.trafficPolicy.loadBalancer.warmup.aggression',
    message: 'aggression 0.5 must be at least 1 (1 is linear)',
    level: 'error',
  },
  {
    rule: 'zone-aware and locality load balancing are mutually exclusive',
    kind: 'DestinationRule',
    valid: dr({ loadBalancer: { zoneAwareLbSetting: { enabled: true, failoverPriority: ['mesh.io/rack'] } } }),
    invalid: dr({ loadBalancer: { zoneAwareLbSetting: { enabled: true }, localityLbSetting: { failover: [{ from: 'us', to: 'eu' }] } } }),
    path: 'spec.trafficPolicy.loadBalancer.zoneAwareLbSetting',
    message: 'zoneAwareLbSetting and localityLbSetting are mutually exclusive',
    level: 'error',
  },
  {
    rule: 'cookie attributes have token names',
    kind: 'DestinationRule',
    valid: dr({ loadBalancer: { consistentHash: { httpCookie: { name: 'user', ttl: '0s', attributes: [{ name: 'SameSite', value: 'Strict' }, { name: 'Secure' }] } } } }),
    invalid: dr({ loadBalancer: { consistentHash: { httpCookie: { name: 'user', attributes: [{ name: 'Same Site', value: 'Strict' }] } } } }),
    path: 'spec.trafficPolicy.loadBalancer.consistentHash.httpCookie.attributes[0].name',
    message: '"Same Site" is not a cookie attribute name',
    level: 'error',
  },
  {
    rule: 'HTTP/2 keepalive needs an interval',
    kind: 'DestinationRule',
    valid: dr({ connectionPool: { http: { http2KeepAlive: { interval: '30s', timeout: '5s' } } } }),
    invalid: dr({ connectionPool: { http: { http2KeepAlive: { timeout: '5s' } } } }),
    path: 'spec.trafficPolicy.connectionPool.http.http2KeepAlive.interval',
    message: 'HTTP/2 keepalive needs an interval',
    level: 'error',
  },
  {
    rule: 'consecutiveErrors is deprecated',
    kind: 'DestinationRule',
    valid: dr({ outlierDetection: { consecutive5xxErrors: 5 } }),
    invalid: dr({ outlierDetection: { consecutiveErrors: 5 } }),
    path: 'spec.trafficPolicy.outlierDetection.consecutiveErrors',
    message: 'consecutiveErrors is deprecated: use consecutive5xxErrors',
    level: 'warning',
  },
  {
    rule: 'a port-level setting sets something',
    kind: 'DestinationRule',
    valid: dr({ portLevelSettings: [{ port: { number: 80 }, loadBalancer: { simple: 'RANDOM' } }] }),
    invalid: dr({ portLevelSettings: [{ port: { number: 80 } }] }),
    path: 'spec.trafficPolicy.portLevelSettings[0]',
    message: 'a port-level setting must have at least one of loadBalancer, connectionPool, outlierDetection or tls',
    level: 'error',
  },
  // Gateway
  {
    rule: 'credentialName beside a private key wins, with a warning',
    kind: 'Gateway',
    valid: gw({ mode: 'SIMPLE', credentialName: 'cert' }),
    invalid: gw({ mode: 'SIMPLE', credentialName: 'cert', privateKey: '/etc/key.pem' }),
    path: 'spec.servers[0].tls.credentialName',
    message: 'credentialName is used: serverCertificate, privateKey and caCertificates are ignored',
    level: 'warning',
  },
  {
    rule: 'tlsCertificates each have a certificate and a key',
    kind: 'Gateway',
    valid: gw({ mode: 'SIMPLE', tlsCertificates: [{ serverCertificate: '/rsa.pem', privateKey: '/rsa.key' }, { serverCertificate: '/ec.pem', privateKey: '/ec.key' }] }),
    invalid: gw({ mode: 'SIMPLE', tlsCertificates: [{ serverCertificate: '/rsa.pem' }] }),
    path: 'spec.servers[0].tls.tlsCertificates[0].privateKey',
    message: 'a private key file is required',
    level: 'error',
  },
  // ServiceEntry
  {
    rule: 'a workloadSelector may go with resolution DNS',
    kind: 'ServiceEntry',
    valid: se({ resolution: 'DNS', workloadSelector: { labels: { app: 'vm' } } }),
    invalid: se({ resolution: 'DNS', workloadSelector: { labels: { app: 'vm' } }, endpoints: [{ address: 'a.example.com' }] }),
    path: 'spec.workloadSelector',
    message: 'endpoints and workloadSelector are mutually exclusive',
    level: 'error',
  },
  {
    rule: 'DYNAMIC_DNS is for wildcard hosts',
    kind: 'ServiceEntry',
    valid: se({ hosts: ['*.example.com'], resolution: 'DYNAMIC_DNS' }),
    invalid: se({ hosts: ['api.example.com'], resolution: 'DYNAMIC_DNS' }),
    path: 'spec.hosts[0]',
    message: 'resolution DYNAMIC_DNS is for wildcard hosts ("*.example.com"), not "api.example.com"',
    level: 'error',
  },
  // Sidecar
  {
    rule: 'a listener bound to a Unix socket may have port 0',
    kind: 'Sidecar',
    valid: { egress: [{ port: { number: 0, protocol: 'HTTP', name: 'uds' }, bind: 'unix:///var/run/app.sock', hosts: ['./*'] }] },
    invalid: { egress: [{ port: { number: 0, protocol: 'HTTP', name: 'uds' }, bind: '127.0.0.1', hosts: ['./*'] }] },
    path: 'spec.egress[0].port.number',
    message: 'port 0 is outside 1..65535',
    level: 'error',
  },
  {
    rule: '"~ns/*" is accepted but imports nothing',
    kind: 'Sidecar',
    valid: { egress: [{ hosts: ['~/*', 'istio-system/*'] }] },
    invalid: { egress: [{ hosts: ['~prod/*'] }] },
    path: 'spec.egress[0].hosts[0]',
    message: '"~prod" is no namespace: "~" alone means no namespace, so this entry imports nothing (did you mean "prod/*"?)',
    level: 'warning',
  },
  {
    rule: 'Sidecar ingress TLS is SIMPLE or MUTUAL with files',
    kind: 'Sidecar',
    valid: sidecarIn({ tls: { mode: 'SIMPLE', serverCertificate: '/etc/cert.pem', privateKey: '/etc/key.pem' } }),
    invalid: sidecarIn({ tls: { mode: 'SIMPLE', credentialName: 'cert' } }),
    path: 'spec.ingress[0].tls.credentialName',
    message: 'credentialName is not supported on a Sidecar ingress listener: give certificate files',
    level: 'error',
  },
  // Security
  {
    rule: 'principals are not empty',
    kind: 'AuthorizationPolicy',
    valid: ap({ principals: ['cluster.local/ns/shop/sa/web'] }),
    invalid: ap({ principals: [''] }),
    path: 'spec.rules[0].from[0].source.principals[0]',
    message: 'empty value is not allowed',
    level: 'error',
  },
  {
    rule: 'namespaces are not empty',
    kind: 'AuthorizationPolicy',
    valid: ap({ namespaces: ['shop'] }),
    invalid: ap({ notNamespaces: [''] }),
    path: 'spec.rules[0].from[0].source.notNamespaces[0]',
    message: 'empty value is not allowed',
    level: 'error',
  },
  {
    rule: 'serviceAccounts are namespace/name',
    kind: 'AuthorizationPolicy',
    valid: ap({ serviceAccounts: ['shop/web'], trustDomains: ['cluster.local'] }),
    invalid: ap({ serviceAccounts: ['web'] }),
    path: 'spec.rules[0].from[0].source.serviceAccounts[0]',
    message: '"web" is not <namespace>/<service-account>',
    level: 'error',
  },
  {
    rule: 'hosts, paths and methods are not empty',
    kind: 'AuthorizationPolicy',
    valid: apTo({ hosts: ['a.example.com'], paths: ['/api/*'], methods: ['GET'] }),
    invalid: apTo({ paths: ['/api', ''] }),
    path: 'spec.rules[0].to[0].operation.paths[1]',
    message: 'empty value is not allowed',
    level: 'error',
  },
  {
    rule: 'conditions have a key and non-empty values',
    kind: 'AuthorizationPolicy',
    valid: apWhen({ key: 'request.headers[x-tenant]', values: ['a'] }),
    invalid: apWhen({ key: '', values: ['a'] }),
    path: 'spec.rules[0].when[0].key',
    message: 'must not be empty',
    level: 'error',
  },
  {
    rule: 'IP conditions hold addresses',
    kind: 'AuthorizationPolicy',
    valid: apWhen({ key: 'source.ip', values: ['10.0.0.0/8'] }),
    invalid: apWhen({ key: 'source.ip', values: ['ten'] }),
    path: 'spec.rules[0].when[0].values[0]',
    message: '"ten" is neither an IP address nor a CIDR block',
    level: 'error',
  },
  {
    rule: 'targetRef kinds need their group',
    kind: 'AuthorizationPolicy',
    valid: { targetRefs: [{ group: 'gateway.networking.k8s.io', kind: 'Gateway', name: 'gw' }, { kind: 'Service', name: 'web' }] },
    invalid: { targetRefs: [{ group: 'networking.mesh.io', kind: 'Gateway', name: 'gw' }] },
    path: 'spec.targetRefs[0].group',
    message: 'kind Gateway needs group "gateway.networking.k8s.io", got "networking.mesh.io"',
    level: 'error',
  },
  {
    rule: 'targetRef stays in the policy\'s namespace',
    kind: 'RequestAuthentication',
    valid: { targetRef: { group: 'gateway.networking.k8s.io', kind: 'Gateway', name: 'gw', namespace: 'default' } },
    invalid: { targetRef: { group: 'gateway.networking.k8s.io', kind: 'Gateway', name: 'gw', namespace: 'other' } },
    path: 'spec.targetRef.namespace',
    message: 'namespace "other" is not the policy\'s own (default): cross-namespace references are not supported',
    level: 'error',
  },
  {
    rule: 'targetRef kinds are the ones a policy can attach to',
    kind: 'Telemetry',
    valid: { targetRefs: [{ group: 'networking.mesh.io', kind: 'ServiceEntry', name: 'ext' }] },
    invalid: { targetRefs: [{ group: 'apps', kind: 'Deployment', name: 'web' }] },
    path: 'spec.targetRefs[0].kind',
    message: 'kind "Deployment" cannot be targeted here (allowed: Gateway, GatewayClass, Service, ServiceEntry)',
    level: 'error',
  },
  {
    rule: 'spaceDelimitedClaims are not empty',
    kind: 'RequestAuthentication',
    valid: { jwtRules: [{ issuer: 'https://issuer.example.com', spaceDelimitedClaims: ['scope', 'permissions'] }] },
    invalid: { jwtRules: [{ issuer: 'https://issuer.example.com', spaceDelimitedClaims: [''] }] },
    path: 'spec.jwtRules[0].spaceDelimitedClaims[0]',
    message: 'empty value is not allowed',
    level: 'error',
  },
  {
    rule: 'a port-level mTLS setting sets its mode',
    kind: 'PeerAuthentication',
    valid: { selector: { matchLabels: { app: 'web' } }, portLevelMtls: { 8080: { mode: 'DISABLE' } } },
    invalid: { selector: { matchLabels: { app: 'web' } }, portLevelMtls: { 8080: {} } },
    path: 'spec.portLevelMtls["8080"]',
    message: 'a port-level setting must set mode',
    level: 'error',
  },
  {
    rule: 'mesh.io/dry-run is a boolean',
    kind: 'AuthorizationPolicy',
    valid: { action: 'DENY', rules: [{}] },
    invalid: { action: 'DENY', rules: [{}] },
    validAnnotations: { 'mesh.io/dry-run': 'true' },
    annotations: { 'mesh.io/dry-run': 'maybe' },
    path: 'metadata.annotations["mesh.io/dry-run"]',
    message: '"maybe" is not a boolean (true or false)',
    level: 'error',
  },
  // EnvoyFilter
  {
    rule: 'MERGE_AND_REPLACE_LIST needs a value; WAYPOINT is a context',
    kind: 'EnvoyFilter',
    valid: { configPatches: [{ applyTo: 'CLUSTER', match: { context: 'WAYPOINT' }, patch: { operation: 'MERGE_AND_REPLACE_LIST', value: { connect_timeout: '1s' } } }] },
    invalid: { configPatches: [{ applyTo: 'CLUSTER', match: { context: 'WAYPOINT' }, patch: { operation: 'MERGE_AND_REPLACE_LIST' } }] },
    path: 'spec.configPatches[0].patch.value',
    message: 'operation MERGE_AND_REPLACE_LIST needs a value',
    level: 'error',
  },
];

/** The case as a YAML-free document object (`default` namespace). */
export function caseDocument(c: RuleCase, which: 'valid' | 'invalid', name: string): Record<string, unknown> {
  const group = c.kind === 'AuthorizationPolicy' || c.kind === 'PeerAuthentication' || c.kind === 'RequestAuthentication' ? 'security' : c.kind === 'Telemetry' ? 'telemetry' : 'networking';
  const annotations = which === 'valid' ? (c.validAnnotations ?? c.annotations) : c.annotations;
  return {
    apiVersion: `${group}.mesh.io/v1`,
    kind: c.kind,
    metadata: { name, namespace: 'default', ...(annotations ? { annotations } : {}) },
    spec: c[which],
  };
}
