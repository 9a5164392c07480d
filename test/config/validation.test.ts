import { expectIssue, issuesOf } from './helpers.js';

const dest = (host: string, extra: Record<string, unknown> = {}) => ({ destination: { host, ...extra } });
const vs = (http: unknown[], extra: Record<string, unknown> = {}) => ({ hosts: ['echo.default.svc.cluster.local'], http, ...extra });

describe('VirtualService rules', () => {
  it('accepts a well-formed spec', () => {
    expect(
      issuesOf(
        'VirtualService',
        vs([
          {
            match: [{ uri: { prefix: '/api' }, headers: { 'x-canary': { exact: 'true' } } }],
            route: [dest('a', { subset: 'v1' }), dest('b')].map((d, i) => ({ ...d, weight: i === 0 ? 80 : 20 })),
            retries: { attempts: 3, perTryTimeout: '2s', retryOn: '5xx,503' },
            fault: { abort: { httpStatus: 503, percentage: { value: 10 } } },
          },
        ]),
      ),
    ).toEqual([]);
  });

  it('needs hosts unless it is a delegate with http routes', () => {
    expectIssue(issuesOf('VirtualService', { tcp: [{ route: [dest('a')] }] }), 'spec.hosts', 'at least one host is required');
    expect(issuesOf('VirtualService', { http: [{ route: [dest('a')] }] })).toEqual([]);
    expectIssue(issuesOf('VirtualService', { gateways: ['gw'], http: [{ route: [dest('a')] }] }), 'spec.gateways', 'delegate');
    expectIssue(issuesOf('VirtualService', { http: [{ delegate: { name: 'x' } }] }), 'spec.http[0].delegate', 'cannot delegate further');
  });

  it('checks host names', () => {
    expectIssue(issuesOf('VirtualService', vs([{ route: [dest('a')] }], { hosts: ['bad_host!'] })), 'spec.hosts[0]', 'not a valid DNS name');
    expectIssue(issuesOf('VirtualService', vs([{ route: [dest('a')] }], { hosts: ['a', 'a'] })), 'spec.hosts[1]', 'duplicate host');
  });

  it('keeps weights non-negative, refuses several that add up to 0 and warns when they do not add up to 100', () => {
    const w = (...weights: number[]) => issuesOf('VirtualService', vs([{ route: weights.map((weight, i) => ({ ...dest(`h${i}`), weight })) }]));
    expect(w(80, 20)).toEqual([]);
    expect(w(100)).toEqual([]);
    expect(expectIssue(w(70, 20), 'spec.http[0].route', 'weights add up to 90, not 100').level).toBe('warning');
    expectIssue(w(0, 0), 'spec.http[0].route', 'add up to 0');
    expectIssue(w(120, -20), 'spec.http[0].route[1].weight', 'must not be negative');
  });

  it('requires a destination host', () => {
    expectIssue(issuesOf('VirtualService', vs([{ route: [{ destination: { subset: 'v1' } }] }])), 'spec.http[0].route[0].destination.host', 'required field is missing');
    expectIssue(issuesOf('VirtualService', vs([{ route: [{ destination: { host: 'a', subset: 'V_1' } }] }])), 'spec.http[0].route[0].destination.subset', 'DNS-1123 label');
  });

  it('compiles regular expressions', () => {
    expectIssue(issuesOf('VirtualService', vs([{ match: [{ uri: { regex: '/api/(' } }], route: [dest('a')] }])), 'spec.http[0].match[0].uri.regex', 'does not compile');
    expectIssue(issuesOf('VirtualService', vs([{ match: [{ headers: { 'x-v': { regex: '(?<=a)b' } } }], route: [dest('a')] }])), 'spec.http[0].match[0].headers["x-v"].regex', 'RE2');
    expectIssue(issuesOf('VirtualService', vs([{ match: [{ uri: {} }], route: [dest('a')] }])), 'spec.http[0].match[0].uri', 'one of exact, prefix or regex');
  });

  it('checks retries and faults', () => {
    const r = (http: Record<string, unknown>) => issuesOf('VirtualService', vs([{ route: [dest('a')], ...http }]));
    expectIssue(r({ retries: { attempts: -1 } }), 'spec.http[0].retries.attempts', 'must not be negative');
    expectIssue(r({ retries: { attempts: 1, retryOn: '5xx,,reset' } }), 'spec.http[0].retries.retryOn', 'empty entry');
    expectIssue(r({ fault: { delay: { fixedDelay: '1s', percentage: { value: 150 } } } }), 'spec.http[0].fault.delay.percentage.value', 'outside 0..100');
    expectIssue(r({ fault: { abort: { httpStatus: 700 } } }), 'spec.http[0].fault.abort.httpStatus', 'outside 200..599');
    expectIssue(r({ fault: { abort: { grpcStatus: 'NOPE' } } }), 'spec.http[0].fault.abort.grpcStatus', 'unknown gRPC status');
    expectIssue(r({ fault: { delay: { percentage: { value: 5 } } } }), 'spec.http[0].fault.delay.fixedDelay', 'needs fixedDelay');
    expectIssue(r({ mirrorPercentage: { value: -1 } }), 'spec.http[0].mirrorPercentage.value', 'outside 0..100');
  });

  it('keeps redirect, direct response, route and delegate mutually exclusive', () => {
    expectIssue(issuesOf('VirtualService', vs([{ route: [dest('a')], redirect: { uri: '/b' } }])), 'spec.http[0]', 'route, redirect are mutually exclusive');
    expectIssue(issuesOf('VirtualService', vs([{ redirect: { uri: '/b' }, delegate: { name: 'd' } }])), 'spec.http[0]', 'redirect, delegate are mutually exclusive');
    expectIssue(issuesOf('VirtualService', vs([{ match: [{ uri: { prefix: '/' } }] }])), 'spec.http[0]', 'one of route, redirect, directResponse or delegate');
    expectIssue(issuesOf('VirtualService', vs([{ redirect: { uri: '/b', redirectCode: 200 } }])), 'spec.http[0].redirect.redirectCode', 'not one of 301');
    expectIssue(issuesOf('VirtualService', vs([{ directResponse: { status: 99 } }])), 'spec.http[0].directResponse.status', 'outside 200..599');
  });

  it('needs destinations on tcp routes and checks subnets', () => {
    expectIssue(issuesOf('VirtualService', { hosts: ['a'], tcp: [{ match: [{ port: 5432 }] }] }), 'spec.tcp[0].route', 'at least one destination');
    expectIssue(issuesOf('VirtualService', { hosts: ['a'], tcp: [{ match: [{ destinationSubnets: ['10.0.0.0/33'] }], route: [dest('a')] }] }), 'spec.tcp[0].match[0].destinationSubnets[0]', 'CIDR');
  });

  it('checks exportTo', () => {
    expectIssue(issuesOf('VirtualService', vs([{ route: [dest('a')] }], { exportTo: ['*', 'prod'] })), 'spec.exportTo', 'cannot be combined');
    expectIssue(issuesOf('VirtualService', vs([{ route: [dest('a')] }], { exportTo: ['Prod'] })), 'spec.exportTo[0]', 'namespace name');
  });
});

describe('DestinationRule rules', () => {
  it('accepts subsets with DNS-1123 names', () => {
    expect(issuesOf('DestinationRule', { host: 'echo', subsets: [{ name: 'v1', labels: { version: 'v1' } }] })).toEqual([]);
  });

  it('needs unique DNS-1123 subset names', () => {
    const issues = issuesOf('DestinationRule', { host: 'echo', subsets: [{ name: 'v1' }, { name: 'v1' }, { name: 'V2' }] });
    expectIssue(issues, 'spec.subsets[1]', 'duplicate subset name "v1"');
    expectIssue(issues, 'spec.subsets[2].name', 'not a DNS-1123 label');
  });

  it('needs exactly one consistent-hash key', () => {
    expectIssue(issuesOf('DestinationRule', { host: 'a', trafficPolicy: { loadBalancer: { consistentHash: {} } } }), 'spec.trafficPolicy.loadBalancer.consistentHash', 'one hash key is required');
    const two = issuesOf('DestinationRule', { host: 'a', trafficPolicy: { loadBalancer: { consistentHash: { httpHeaderName: 'x-user', useSourceIp: true } } } });
    expectIssue(two, 'spec.trafficPolicy.loadBalancer.consistentHash.useSourceIp', 'oneof "hash_key"');
  });

  it('checks client TLS credentials by mode', () => {
    const tls = (t: Record<string, unknown>) => issuesOf('DestinationRule', { host: 'a', trafficPolicy: { tls: t } });
    expect(tls({ mode: 'MESH_MUTUAL' })).toEqual([]);
    expectIssue(tls({ mode: 'MUTUAL' }), 'spec.trafficPolicy.tls', 'MUTUAL mode needs credentialName');
    expectIssue(tls({ mode: 'MESH_MUTUAL', credentialName: 'c' }), 'spec.trafficPolicy.tls', 'MESH_MUTUAL uses the mesh certificates');
    expect(expectIssue(tls({ mode: 'SIMPLE', credentialName: 'c', caCertificates: '/x' }), 'spec.trafficPolicy.tls.credentialName', 'are ignored').level).toBe('warning');
  });

  it('checks outlier detection, connection pool and locality settings', () => {
    const tp = (t: Record<string, unknown>) => issuesOf('DestinationRule', { host: 'a', trafficPolicy: t });
    expectIssue(tp({ outlierDetection: { maxEjectionPercent: 101 } }), 'spec.trafficPolicy.outlierDetection.maxEjectionPercent', 'outside 0..100');
    expectIssue(tp({ connectionPool: { http: { maxRetries: -2 } } }), 'spec.trafficPolicy.connectionPool.http.maxRetries', 'must not be negative');
    expectIssue(
      tp({ loadBalancer: { simple: 'ROUND_ROBIN', localityLbSetting: { distribute: [{ from: 'r1/*', to: { 'r1/*': 60, 'r2/*': 30 } }] } } }),
      'spec.trafficPolicy.loadBalancer.localityLbSetting.distribute[0].to',
      'add up to 90',
    );
    expectIssue(tp({ portLevelSettings: [{ port: { number: 80 } }, { port: { number: 80 } }] }), 'spec.trafficPolicy.portLevelSettings[1]', 'duplicate port');
  });
});

describe('Gateway rules', () => {
  const gw = (servers: unknown[]) => issuesOf('Gateway', { selector: { app: 'ingress' }, servers });

  it('accepts HTTP and HTTPS servers', () => {
    expect(
      gw([
        { port: { number: 80, protocol: 'HTTP', name: 'http' }, hosts: ['*'], tls: { httpsRedirect: true } },
        { port: { number: 443, protocol: 'HTTPS', name: 'https' }, hosts: ['prod/*.example.com'], tls: { mode: 'SIMPLE', credentialName: 'cert' } },
      ]),
    ).toEqual([]);
  });

  it('needs port and hosts', () => {
    expectIssue(gw([{ port: { number: 80, protocol: 'HTTP' } }]), 'spec.servers[0].hosts', 'required field is missing');
    expectIssue(gw([{ port: { number: 70000, protocol: 'HTTP' }, hosts: ['*'] }]), 'spec.servers[0].port.number', 'outside 1..65535');
    expectIssue(gw([{ port: { number: 80, protocol: 'HTTP' }, hosts: ['a/b/c'] }]), 'spec.servers[0].hosts[0]', 'more than one "/"');
    expectIssue(gw([{ port: { number: 80, protocol: 'SMTP' }, hosts: ['*'] }]), 'spec.servers[0].port.protocol', 'unknown protocol');
  });

  it('applies the TLS credential rules', () => {
    const https = (tls?: Record<string, unknown>) => gw([{ port: { number: 443, protocol: 'HTTPS' }, hosts: ['*'], tls }]);
    expectIssue(https(), 'spec.servers[0].tls', 'a HTTPS server needs tls settings');
    expectIssue(https({ mode: 'SIMPLE' }), 'spec.servers[0].tls', 'SIMPLE mode needs credentialName');
    expectIssue(https({ mode: 'MUTUAL', serverCertificate: '/c', privateKey: '/k' }), 'spec.servers[0].tls.caCertificates', 'needs caCertificates');
    expect(expectIssue(https({ mode: 'SIMPLE', credentialName: 'a', serverCertificate: '/c' }), 'spec.servers[0].tls.credentialName', 'are ignored').level).toBe('warning');
    expectIssue(https({ mode: 'PASSTHROUGH', credentialName: 'a' }), 'spec.servers[0].tls', 'PASSTHROUGH mode does not use certificates');
    expectIssue(https({ mode: 'AUTO_PASSTHROUGH' }), 'spec.servers[0].tls.mode', 'needs protocol TLS');
    expectIssue(gw([{ port: { number: 80, protocol: 'HTTP' }, hosts: ['*'], tls: { mode: 'SIMPLE', credentialName: 'x' } }]), 'spec.servers[0].tls', 'only accepts tls.httpsRedirect');
  });

  it('rejects conflicting protocols on one port and duplicate server names', () => {
    const issues = gw([
      { name: 's', port: { number: 8080, protocol: 'HTTP' }, hosts: ['a.example.com'] },
      { name: 's', port: { number: 8080, protocol: 'TCP' }, hosts: ['b.example.com'] },
    ]);
    expectIssue(issues, 'spec.servers[1].port.protocol', 'already declared with protocol HTTP');
    expectIssue(issues, 'spec.servers[1]', 'duplicate server name');
  });
});

describe('ServiceEntry rules', () => {
  const se = (spec: Record<string, unknown>) =>
    issuesOf('ServiceEntry', { hosts: ['api.example.com'], ports: [{ number: 443, name: 'https', protocol: 'TLS' }], ...spec });

  it('accepts the common shapes', () => {
    expect(se({ location: 'MESH_EXTERNAL', resolution: 'DNS' })).toEqual([]);
    expect(se({ resolution: 'STATIC', endpoints: [{ address: '10.0.0.1', ports: { https: 8443 } }] })).toEqual([]);
    expect(se({ resolution: 'STATIC', workloadSelector: { labels: { app: 'vm' } } })).toEqual([]);
  });

  it('needs unique port numbers and names', () => {
    const issues = se({ ports: [{ number: 80, name: 'http' }, { number: 80, name: 'http' }] });
    expectIssue(issues, 'spec.ports[1]', 'duplicate port number "80"');
    expectIssue(issues, 'spec.ports[1]', 'duplicate port name "http"');
  });

  it('needs endpoints or a workload selector, not both, for STATIC', () => {
    expectIssue(se({ resolution: 'STATIC' }), 'spec', 'resolution STATIC needs endpoints or a workloadSelector');
    expectIssue(se({ resolution: 'STATIC', endpoints: [{ address: '10.0.0.1' }], workloadSelector: { labels: { a: 'b' } } }), 'spec.workloadSelector', 'mutually exclusive');
    expectIssue(se({ resolution: 'STATIC', endpoints: [{ address: 'vm.example.com' }] }), 'spec.endpoints[0].address', 'needs IP addresses');
  });

  it('applies the DNS and NONE rules', () => {
    expectIssue(se({ hosts: ['*.example.com'], resolution: 'DNS' }), 'spec.hosts[0]', 'cannot be resolved with DNS');
    expectIssue(se({ resolution: 'DNS', addresses: ['10.0.0.0/24'] }), 'spec.addresses[0]', 'only allowed with resolution NONE or STATIC');
    expectIssue(se({ resolution: 'DNS_ROUND_ROBIN', endpoints: [{ address: 'a.example.com' }, { address: 'b.example.com' }] }), 'spec.endpoints', 'at most one endpoint');
    expectIssue(se({ resolution: 'NONE', endpoints: [{ address: '10.0.0.1' }] }), 'spec.endpoints', 'endpoints are not allowed');
    expect(se({ hosts: ['*.example.com'], resolution: 'NONE', addresses: ['10.0.0.0/24'] })).toEqual([]);
  });

  it('checks endpoint port names against the declared ports', () => {
    expectIssue(se({ resolution: 'STATIC', endpoints: [{ address: '10.0.0.1', ports: { http: 8080 } }] }), 'spec.endpoints[0].ports.http', 'not declared');
  });
});

describe('WorkloadEntry and WorkloadGroup rules', () => {
  it('needs an address unless a network is given', () => {
    expectIssue(issuesOf('WorkloadEntry', { labels: { app: 'vm' } }), 'spec.address', 'an address is required');
    expect(issuesOf('WorkloadEntry', { network: 'vpc-1' })).toEqual([]);
    expect(issuesOf('WorkloadEntry', { address: 'unix:///var/run/app.sock' })).toEqual([]);
    expectIssue(issuesOf('WorkloadEntry', { address: 'not an address' }), 'spec.address', 'neither an IP address');
    expectIssue(issuesOf('WorkloadEntry', { address: '10.0.0.1', ports: { http: 0 } }), 'spec.ports.http', 'outside 1..65535');
  });

  it('keeps addresses out of a group template and needs one probe method', () => {
    expectIssue(issuesOf('WorkloadGroup', { template: { address: '10.0.0.1' } }), 'spec.template.address', 'must not set an address');
    expectIssue(issuesOf('WorkloadGroup', { template: {}, probe: { periodSeconds: 5 } }), 'spec.probe', 'one of httpGet, tcpSocket or exec');
    expectIssue(issuesOf('WorkloadGroup', { template: {}, probe: { httpGet: { port: 80 }, tcpSocket: { port: 80 } } }), 'spec.probe.tcpSocket', 'oneof "health_check_method"');
  });
});

describe('Sidecar rules', () => {
  it('needs egress hosts of the form namespace/host', () => {
    expect(issuesOf('Sidecar', { egress: [{ hosts: ['./*', 'mesh-system/*', '*/api.example.com'] }] })).toEqual([]);
    expectIssue(issuesOf('Sidecar', { egress: [{ hosts: ['api.example.com'] }] }), 'spec.egress[0].hosts[0]', 'namespace/host');
    expectIssue(issuesOf('Sidecar', { egress: [{ hosts: ['Bad_NS/*'] }] }), 'spec.egress[0].hosts[0]', 'namespace "Bad_NS"');
  });

  it('puts the catch-all egress listener last and checks ingress endpoints', () => {
    expectIssue(
      issuesOf('Sidecar', { egress: [{ hosts: ['./*'] }, { port: { number: 80, protocol: 'HTTP' }, hosts: ['./*'] }] }),
      'spec.egress[0]',
      'must be the last one',
    );
    expectIssue(issuesOf('Sidecar', { ingress: [{ port: { number: 80, protocol: 'HTTP' }, defaultEndpoint: '10.1.1.1:8080' }] }), 'spec.ingress[0].defaultEndpoint', 'must be 127.0.0.1:PORT');
    expect(issuesOf('Sidecar', { ingress: [{ port: { number: 80, protocol: 'HTTP' }, defaultEndpoint: '127.0.0.1:8080' }] })).toEqual([]);
  });
});

describe('security and telemetry rules', () => {
  it('checks AuthorizationPolicy actions and rules', () => {
    expect(issuesOf('AuthorizationPolicy', { action: 'DENY', rules: [{ to: [{ operation: { methods: ['DELETE'], ports: ['8080'] } }] }] })).toEqual([]);
    expectIssue(issuesOf('AuthorizationPolicy', { action: 'CUSTOM' }), 'spec.provider', 'needs provider.name');
    expectIssue(issuesOf('AuthorizationPolicy', { rules: [{ from: [{ source: {} }] }] }), 'spec.rules[0].from[0].source', 'no conditions');
    expectIssue(issuesOf('AuthorizationPolicy', { rules: [{ to: [{ operation: { ports: ['http'] } }] }] }), 'spec.rules[0].to[0].operation.ports[0]', 'not a number');
    expectIssue(issuesOf('AuthorizationPolicy', { selector: { matchLabels: { a: 'b' } }, targetRef: { kind: 'Gateway', name: 'gw' } }), 'spec.selector', 'mutually exclusive');
  });

  it('checks PeerAuthentication port-level settings and RequestAuthentication rules', () => {
    expectIssue(issuesOf('PeerAuthentication', { portLevelMtls: { '8080': { mode: 'DISABLE' } } }), 'spec.portLevelMtls', 'need a selector');
    expectIssue(issuesOf('RequestAuthentication', { jwtRules: [{ issuer: 'a', jwksUri: 'ftp://x' }] }), 'spec.jwtRules[0].jwksUri', 'not an http(s) URL');
    expectIssue(issuesOf('RequestAuthentication', { jwtRules: [{ issuer: 'a' }, { issuer: 'a' }] }), 'spec.jwtRules[1]', 'duplicate issuer');
  });

  it('checks Telemetry sampling and tag overrides', () => {
    expectIssue(issuesOf('Telemetry', { tracing: [{ randomSamplingPercentage: 120 }] }), 'spec.tracing[0].randomSamplingPercentage', 'outside 0..100');
    expectIssue(
      issuesOf('Telemetry', { metrics: [{ overrides: [{ tagOverrides: { x: { operation: 'REMOVE', value: 'y' } } }] }] }),
      'spec.metrics[0].overrides[0].tagOverrides.x',
      'REMOVE takes no value',
    );
  });

  it('checks EnvoyFilter patches', () => {
    expectIssue(issuesOf('EnvoyFilter', { configPatches: [{ patch: { operation: 'MERGE', value: {} } }] }), 'spec.configPatches[0].applyTo', 'applyTo is required');
    expectIssue(issuesOf('EnvoyFilter', { configPatches: [{ applyTo: 'CLUSTER', patch: { operation: 'ADD' } }] }), 'spec.configPatches[0].patch.value', 'needs a value');
    expectIssue(
      issuesOf('EnvoyFilter', { configPatches: [{ applyTo: 'CLUSTER', match: { listener: { portNumber: 80 } }, patch: { operation: 'REMOVE' } }] }),
      'spec.configPatches[0].match.listener',
      'does not fit applyTo CLUSTER',
    );
  });
});
