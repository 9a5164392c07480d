/**
 * The analyzers as a table: for each message code, files an operator could give `meshctl analyze
 * --use-cluster=false` that produce the finding (`invalid`), the same files fixed (`valid`), and
 * the exact finding. test/analysis/catalogue.test.ts runs every case through the command;
 * docs/analysis.md is generated from this table and the message catalogue.
 */

export interface AnalyzerCase {
  readonly code: string;
  /** What the case shows, one line. */
  readonly title: string;
  /** Documents (YAML) that produce the finding. */
  readonly invalid: string;
  /** The same documents fixed: no finding of this code about `resource`. */
  readonly valid: string;
  readonly resource: { readonly kind: string; readonly namespace: string; readonly name: string };
  readonly path?: string;
  readonly message: string;
}

const ns = (name: string, labels = 'mesh-injection: enabled') => `apiVersion: v1
kind: Namespace
metadata:
  name: ${name}
  labels: {${labels}}
`;

const pod = (name: string, namespace: string, labels: string, extra = '') => `apiVersion: v1
kind: Pod
metadata:
  name: ${name}
  namespace: ${namespace}
  labels: {${labels}}
${extra}spec:
  containers:
    - name: app
      image: example/app:1
    - name: mesh-proxy
      image: docker.io/meshproject/proxy:1.0.0
`;

const service = (name: string, namespace: string, selector: string, ports: string) => `apiVersion: v1
kind: Service
metadata: {name: ${name}, namespace: ${namespace}}
spec:
  selector: {${selector}}
  ports: ${ports}
`;

const gateway = (name: string, namespace: string, servers: string, selector = 'app: ingress') => `apiVersion: networking.mesh.io/v1
kind: Gateway
metadata: {name: ${name}, namespace: ${namespace}}
spec:
  selector: {${selector}}
  servers: ${servers}
`;

const vs = (name: string, namespace: string, spec: string) => `apiVersion: networking.mesh.io/v1
kind: VirtualService
metadata: {name: ${name}, namespace: ${namespace}}
spec:
${spec}`;

const docs = (...d: string[]): string => d.join('---\n');

const INGRESS_POD = pod('ingress-1', 'edge', 'app: ingress');
const REVIEWS = service('reviews', 'shop', 'app: reviews', '[{name: http, port: 9080}]');

export const ANALYZER_CASES: ReadonlyArray<AnalyzerCase> = [
  {
    code: 'MESH0101',
    title: 'a VirtualService names a Gateway that exists neither as a mesh Gateway nor as a gateway-api Gateway',
    invalid: vs('web', 'shop', '  hosts: [web.example.com]\n  gateways: [edge/public]\n  http:\n    - route: [{destination: {host: web.shop.svc.cluster.local}}]\n'),
    valid: docs(
      vs('web', 'shop', '  hosts: [web.example.com]\n  gateways: [edge/public]\n  http:\n    - route: [{destination: {host: web.shop.svc.cluster.local}}]\n'),
      'apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: public, namespace: edge}\nspec:\n  gatewayClassName: mesh\n  listeners: [{name: http, port: 80, protocol: HTTP}]\n',
    ),
    resource: { kind: 'VirtualService', namespace: 'shop', name: 'web' },
    path: 'spec.gateways[0]',
    message: 'Gateway edge/public does not exist',
  },
  {
    code: 'MESH0102',
    title: 'a route names a host whose ServiceEntry is not exported to the route\'s namespace',
    invalid: docs(
      'apiVersion: networking.mesh.io/v1\nkind: ServiceEntry\nmetadata: {name: payments, namespace: billing}\nspec:\n  hosts: [pay.example.com]\n  ports: [{number: 443, name: tls, protocol: TLS}]\n  resolution: DNS\n  exportTo: [.]\n',
      vs('shop', 'shop', '  hosts: [shop.shop.svc.cluster.local]\n  tls:\n    - match: [{sniHosts: [shop.shop.svc.cluster.local]}]\n      route: [{destination: {host: pay.example.com}}]\n'),
    ),
    valid: docs(
      'apiVersion: networking.mesh.io/v1\nkind: ServiceEntry\nmetadata: {name: payments, namespace: billing}\nspec:\n  hosts: [pay.example.com]\n  ports: [{number: 443, name: tls, protocol: TLS}]\n  resolution: DNS\n  exportTo: [., shop]\n',
      vs('shop', 'shop', '  hosts: [shop.shop.svc.cluster.local]\n  tls:\n    - match: [{sniHosts: [shop.shop.svc.cluster.local]}]\n      route: [{destination: {host: pay.example.com}}]\n'),
    ),
    resource: { kind: 'VirtualService', namespace: 'shop', name: 'shop' },
    path: 'spec.tls[0].route[0].destination.host',
    message: 'host pay.example.com is not exported to namespace shop (exportTo)',
  },
  {
    code: 'MESH0103',
    title: 'a route names a subset the DestinationRule does not define',
    invalid: docs(
      REVIEWS,
      'apiVersion: networking.mesh.io/v1\nkind: DestinationRule\nmetadata: {name: reviews, namespace: shop}\nspec:\n  host: reviews\n  subsets: [{name: v1, labels: {version: v1}}]\n',
      vs('reviews', 'shop', '  hosts: [reviews]\n  http:\n    - route: [{destination: {host: reviews, subset: v2}}]\n'),
    ),
    valid: docs(
      REVIEWS,
      'apiVersion: networking.mesh.io/v1\nkind: DestinationRule\nmetadata: {name: reviews, namespace: shop}\nspec:\n  host: reviews\n  subsets: [{name: v1, labels: {version: v1}}, {name: v2, labels: {version: v2}}]\n',
      vs('reviews', 'shop', '  hosts: [reviews]\n  http:\n    - route: [{destination: {host: reviews, subset: v2}}]\n'),
    ),
    resource: { kind: 'VirtualService', namespace: 'shop', name: 'reviews' },
    path: 'spec.http[0].route[0].destination.subset',
    message: 'subset "v2" of host reviews.shop.svc.cluster.local is not defined by DestinationRule shop/reviews (its subsets: v1)',
  },
  {
    code: 'MESH0104',
    title: 'a Gateway selects no workload',
    invalid: docs(INGRESS_POD, gateway('public', 'edge', '[{port: {number: 80, name: http, protocol: HTTP}, hosts: ["*"]}]', 'app: ingres')),
    valid: docs(INGRESS_POD, gateway('public', 'edge', '[{port: {number: 80, name: http, protocol: HTTP}, hosts: ["*"]}]')),
    resource: { kind: 'Gateway', namespace: 'edge', name: 'public' },
    path: 'spec.selector',
    message: 'selector app=ingres matches no workload',
  },
  {
    code: 'MESH0105',
    title: 'two DestinationRules of a namespace apply to one host',
    invalid: docs(
      'apiVersion: networking.mesh.io/v1\nkind: DestinationRule\nmetadata: {name: a, namespace: shop}\nspec: {host: reviews, trafficPolicy: {loadBalancer: {simple: RANDOM}}}\n',
      'apiVersion: networking.mesh.io/v1\nkind: DestinationRule\nmetadata: {name: b, namespace: shop}\nspec: {host: reviews.shop.svc.cluster.local, subsets: [{name: v1, labels: {version: v1}}]}\n',
    ),
    valid: 'apiVersion: networking.mesh.io/v1\nkind: DestinationRule\nmetadata: {name: b, namespace: shop}\nspec: {host: reviews.shop.svc.cluster.local, trafficPolicy: {loadBalancer: {simple: RANDOM}}, subsets: [{name: v1, labels: {version: v1}}]}\n',
    resource: { kind: 'DestinationRule', namespace: 'shop', name: 'b' },
    path: 'spec.host',
    message: 'DestinationRules a, b of namespace shop all apply to host reviews.shop.svc.cluster.local; only a (the oldest) takes effect',
  },
  {
    code: 'MESH0106',
    title: 'a ServiceEntry declares no ports',
    invalid: 'apiVersion: networking.mesh.io/v1\nkind: ServiceEntry\nmetadata: {name: ext, namespace: shop}\nspec: {hosts: [api.example.com], resolution: DNS}\n',
    valid: 'apiVersion: networking.mesh.io/v1\nkind: ServiceEntry\nmetadata: {name: ext, namespace: shop}\nspec: {hosts: [api.example.com], resolution: DNS, ports: [{number: 443, name: https, protocol: HTTPS}]}\n',
    resource: { kind: 'ServiceEntry', namespace: 'shop', name: 'ext' },
    path: 'spec.ports',
    message: 'ServiceEntry declares no ports: proxies get no listener or cluster for api.example.com',
  },
  {
    code: 'MESH0107',
    title: 'a document does not pass validation (it is still analysed for the rest)',
    invalid: vs('reviews', 'shop', '  hosts: [reviews]\n  http:\n    - route: [{destination: {host: reviews}}]\n      timeout: 10us\n'),
    valid: vs('reviews', 'shop', '  hosts: [reviews]\n  http:\n    - route: [{destination: {host: reviews}}]\n      timeout: 10ms\n'),
    resource: { kind: 'VirtualService', namespace: 'shop', name: 'reviews' },
    path: 'spec.http[0].timeout',
    message: 'FILE#0: duration 10us is finer than a millisecond, the finest precision supported',
  },
  {
    code: 'MESH0108',
    title: 'an annotation of the mesh domain the mesh does not know',
    invalid: pod('web-1', 'shop', 'app: web', '  annotations: {sidecar.mesh.io/proxyImg: example/proxy:2}\n'),
    valid: pod('web-1', 'shop', 'app: web', '  annotations: {sidecar.mesh.io/proxyImage: example/proxy:2}\n'),
    resource: { kind: 'Pod', namespace: 'shop', name: 'web-1' },
    path: 'metadata.annotations["sidecar.mesh.io/proxyImg"]',
    message: 'unknown annotation sidecar.mesh.io/proxyImg',
  },
  {
    code: 'MESH0109',
    title: 'a pod annotation on a Service',
    invalid: `${REVIEWS.replace('metadata: {name: reviews, namespace: shop}', 'metadata: {name: reviews, namespace: shop, annotations: {sidecar.mesh.io/proxyCPU: 100m}}')}`,
    valid: REVIEWS,
    resource: { kind: 'Service', namespace: 'shop', name: 'reviews' },
    path: 'metadata.annotations["sidecar.mesh.io/proxyCPU"]',
    message: 'sidecar.mesh.io/proxyCPU applies to Pod, not to Service',
  },
  {
    code: 'MESH0110',
    title: 'an annotation value the mesh cannot read',
    invalid: pod('web-1', 'shop', 'app: web', '  annotations: {sidecar.mesh.io/interceptionMode: SIDEWAYS}\n'),
    valid: pod('web-1', 'shop', 'app: web', '  annotations: {sidecar.mesh.io/interceptionMode: TPROXY}\n'),
    resource: { kind: 'Pod', namespace: 'shop', name: 'web-1' },
    path: 'metadata.annotations["sidecar.mesh.io/interceptionMode"]',
    message: 'sidecar.mesh.io/interceptionMode: "SIDEWAYS" is not one of REDIRECT, TPROXY, NONE',
  },
  {
    code: 'MESH0111',
    title: 'a deprecated annotation',
    invalid: pod('web-1', 'shop', 'app: web', '  annotations: {sidecar.mesh.io/inject: "false"}\n'),
    valid: pod('web-1', 'shop', 'app: web, sidecar.mesh.io/inject: "false"'),
    resource: { kind: 'Pod', namespace: 'shop', name: 'web-1' },
    path: 'metadata.annotations["sidecar.mesh.io/inject"]',
    message: 'sidecar.mesh.io/inject is deprecated: use the sidecar.mesh.io/inject label',
  },
  {
    code: 'MESH0112',
    title: 'a Gateway\'s credential Secret is not in the gateway workload\'s namespace',
    invalid: docs(
      INGRESS_POD,
      gateway('public', 'shop', '[{port: {number: 443, name: https, protocol: HTTPS}, hosts: ["*.example.com"], tls: {mode: SIMPLE, credentialName: web-cert}}]'),
      'apiVersion: v1\nkind: Secret\nmetadata: {name: web-cert, namespace: shop}\ntype: kubernetes.io/tls\ndata: {tls.crt: Y2VydA==, tls.key: a2V5}\n',
    ),
    valid: docs(
      INGRESS_POD,
      gateway('public', 'shop', '[{port: {number: 443, name: https, protocol: HTTPS}, hosts: ["*.example.com"], tls: {mode: SIMPLE, credentialName: web-cert}}]'),
      'apiVersion: v1\nkind: Secret\nmetadata: {name: web-cert, namespace: edge}\ntype: kubernetes.io/tls\ndata: {tls.crt: Y2VydA==, tls.key: a2V5}\n',
    ),
    resource: { kind: 'Gateway', namespace: 'shop', name: 'public' },
    path: 'spec.servers[0].tls.credentialName',
    message: 'Secret edge/web-cert does not exist (credentials are read from the gateway workload\'s namespace)',
  },
  {
    code: 'MESH0113',
    title: 'two Gateways of the same workloads declare one port and host',
    invalid: docs(
      gateway('a', 'edge', '[{port: {number: 80, name: http, protocol: HTTP}, hosts: [shop.example.com]}]'),
      gateway('b', 'edge', '[{port: {number: 80, name: http, protocol: HTTP}, hosts: [shop.example.com]}]'),
    ),
    valid: docs(
      gateway('a', 'edge', '[{port: {number: 80, name: http, protocol: HTTP}, hosts: [shop.example.com]}]'),
      gateway('b', 'edge', '[{port: {number: 80, name: http, protocol: HTTP}, hosts: [blog.example.com]}]'),
    ),
    resource: { kind: 'Gateway', namespace: 'edge', name: 'b' },
    path: 'spec.servers[0].hosts[0]',
    message: 'port 80 host shop.example.com is also declared by Gateway edge/a, which selects the same workloads (app=ingress)',
  },
  {
    code: 'MESH0114',
    title: 'two Gateways serve one certificate for different hosts',
    invalid: docs(
      gateway('a', 'edge', '[{port: {number: 443, name: https, protocol: HTTPS}, hosts: [shop.example.com], tls: {mode: SIMPLE, credentialName: wildcard}}]'),
      gateway('b', 'edge', '[{port: {number: 443, name: https, protocol: HTTPS}, hosts: [blog.example.com], tls: {mode: SIMPLE, credentialName: wildcard}}]', 'app: other'),
    ),
    valid: docs(
      gateway('a', 'edge', '[{port: {number: 443, name: https, protocol: HTTPS}, hosts: [shop.example.com, blog.example.com], tls: {mode: SIMPLE, credentialName: wildcard}}]'),
    ),
    resource: { kind: 'Gateway', namespace: 'edge', name: 'a' },
    path: 'spec.servers[0].tls.credentialName',
    message: 'certificate wildcard is also served by Gateway edge/b for other hosts',
  },
  {
    code: 'MESH0115',
    title: 'a Gateway port the gateway\'s Service does not expose',
    invalid: docs(INGRESS_POD, service('ingress', 'edge', 'app: ingress', '[{name: http, port: 80, targetPort: 8080}]'), gateway('public', 'edge', '[{port: {number: 8443, name: https, protocol: HTTPS}, hosts: ["*"], tls: {mode: SIMPLE, credentialName: c}}]')),
    valid: docs(INGRESS_POD, service('ingress', 'edge', 'app: ingress', '[{name: http, port: 80, targetPort: 8080}, {name: https, port: 443, targetPort: 8443}]'), gateway('public', 'edge', '[{port: {number: 8443, name: https, protocol: HTTPS}, hosts: ["*"], tls: {mode: SIMPLE, credentialName: c}}]')),
    resource: { kind: 'Gateway', namespace: 'edge', name: 'public' },
    path: 'spec.servers[0].port.number',
    message: 'port 8443 is not a port of Service edge/ingress in front of the gateway workloads',
  },
  {
    code: 'MESH0116',
    title: 'a namespace not labelled for injection',
    invalid: ns('shop', 'team: retail'),
    valid: ns('shop', 'team: retail, mesh-injection: enabled'),
    resource: { kind: 'Namespace', namespace: '', name: 'shop' },
    path: 'metadata.labels',
    message: 'namespace is not enabled for proxy injection: label it mesh-injection=enabled (or mesh-injection=disabled to say so)',
  },
  {
    code: 'MESH0117',
    title: 'a pod of an injected namespace without the proxy',
    invalid: docs(ns('shop'), 'apiVersion: v1\nkind: Pod\nmetadata: {name: web-1, namespace: shop, labels: {app: web}}\nspec:\n  containers: [{name: app, image: example/app:1}]\n'),
    valid: docs(ns('shop'), pod('web-1', 'shop', 'app: web')),
    resource: { kind: 'Pod', namespace: 'shop', name: 'web-1' },
    path: 'spec.containers',
    message: 'pod runs without the mesh-proxy container although namespace shop is injected: restart it',
  },
  {
    code: 'MESH0118',
    title: 'a namespace with both injection labels',
    invalid: ns('shop', 'mesh-injection: enabled, mesh.io/rev: canary'),
    valid: ns('shop', 'mesh.io/rev: canary'),
    resource: { kind: 'Namespace', namespace: '', name: 'shop' },
    path: 'metadata.labels',
    message: 'namespace has both mesh-injection=enabled and mesh.io/rev=canary; mesh-injection wins: remove one',
  },
  {
    code: 'MESH0119',
    title: 'a pod whose proxy image is not the one injected now',
    invalid: docs(
      'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: mesh-sidecar-injector, namespace: mesh-system}\ndata:\n  values: \'{"global": {"proxyImage": "docker.io/meshproject/proxy:1.1.0"}}\'\n',
      pod('web-1', 'shop', 'app: web'),
    ),
    valid: docs(
      'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: mesh-sidecar-injector, namespace: mesh-system}\ndata:\n  values: \'{"global": {"proxyImage": "docker.io/meshproject/proxy:1.0.0"}}\'\n',
      pod('web-1', 'shop', 'app: web'),
    ),
    resource: { kind: 'Pod', namespace: 'shop', name: 'web-1' },
    path: 'spec.containers',
    message: 'proxy image docker.io/meshproject/proxy:1.0.0 is not the injected image docker.io/meshproject/proxy:1.1.0: restart the pod to update its proxy',
  },
  {
    code: 'MESH0120',
    title: 'a Service port that does not declare its protocol',
    invalid: service('web', 'shop', 'app: web', '[{name: web, port: 8080}]'),
    valid: service('web', 'shop', 'app: web', '[{name: http-web, port: 8080}]'),
    resource: { kind: 'Service', namespace: 'shop', name: 'web' },
    path: 'spec.ports[0].name',
    message: 'port 8080 (web) does not follow the naming convention <protocol>[-<suffix>] and has no appProtocol: the proxy has to detect its protocol',
  },
  {
    code: 'MESH0121',
    title: 'a Sidecar selects no workload',
    invalid: docs(pod('web-1', 'shop', 'app: web'), 'apiVersion: networking.mesh.io/v1\nkind: Sidecar\nmetadata: {name: web, namespace: shop}\nspec:\n  workloadSelector: {labels: {app: wbe}}\n  egress: [{hosts: ["./*"]}]\n'),
    valid: docs(pod('web-1', 'shop', 'app: web'), 'apiVersion: networking.mesh.io/v1\nkind: Sidecar\nmetadata: {name: web, namespace: shop}\nspec:\n  workloadSelector: {labels: {app: web}}\n  egress: [{hosts: ["./*"]}]\n'),
    resource: { kind: 'Sidecar', namespace: 'shop', name: 'web' },
    path: 'spec.workloadSelector.labels',
    message: 'workload selector app=wbe matches no workload in namespace shop',
  },
  {
    code: 'MESH0122',
    title: 'two Sidecars select one workload',
    invalid: docs(
      pod('web-1', 'shop', 'app: web, tier: front'),
      'apiVersion: networking.mesh.io/v1\nkind: Sidecar\nmetadata: {name: a, namespace: shop}\nspec:\n  workloadSelector: {labels: {app: web}}\n  egress: [{hosts: ["./*"]}]\n',
      'apiVersion: networking.mesh.io/v1\nkind: Sidecar\nmetadata: {name: b, namespace: shop}\nspec:\n  workloadSelector: {labels: {tier: front}}\n  egress: [{hosts: ["*/*"]}]\n',
    ),
    valid: docs(pod('web-1', 'shop', 'app: web, tier: front'), 'apiVersion: networking.mesh.io/v1\nkind: Sidecar\nmetadata: {name: a, namespace: shop}\nspec:\n  workloadSelector: {labels: {app: web}}\n  egress: [{hosts: ["./*"]}]\n'),
    resource: { kind: 'Sidecar', namespace: 'shop', name: 'a' },
    path: 'spec.workloadSelector.labels',
    message: 'workload web-1 is selected by Sidecars a, b; only one may select it',
  },
  {
    code: 'MESH0123',
    title: 'two Sidecars of a namespace without selector',
    invalid: docs(
      'apiVersion: networking.mesh.io/v1\nkind: Sidecar\nmetadata: {name: a, namespace: shop}\nspec:\n  egress: [{hosts: ["./*"]}]\n',
      'apiVersion: networking.mesh.io/v1\nkind: Sidecar\nmetadata: {name: b, namespace: shop}\nspec:\n  egress: [{hosts: ["*/*"]}]\n',
    ),
    valid: 'apiVersion: networking.mesh.io/v1\nkind: Sidecar\nmetadata: {name: a, namespace: shop}\nspec:\n  egress: [{hosts: ["./*"]}]\n',
    resource: { kind: 'Sidecar', namespace: 'shop', name: 'a' },
    message: 'Sidecars a, b of namespace shop have no workload selector; only one may',
  },
  {
    code: 'MESH0124',
    title: 'a gateway route to a service of several ports without a port',
    invalid: docs(
      service('web', 'shop', 'app: web', '[{name: http, port: 80}, {name: http-admin, port: 8080}]'),
      gateway('public', 'shop', '[{port: {number: 80, name: http, protocol: HTTP}, hosts: ["*"]}]'),
      vs('web', 'shop', '  hosts: [web.example.com]\n  gateways: [public]\n  http:\n    - route: [{destination: {host: web}}]\n'),
    ),
    valid: docs(
      service('web', 'shop', 'app: web', '[{name: http, port: 80}, {name: http-admin, port: 8080}]'),
      gateway('public', 'shop', '[{port: {number: 80, name: http, protocol: HTTP}, hosts: ["*"]}]'),
      vs('web', 'shop', '  hosts: [web.example.com]\n  gateways: [public]\n  http:\n    - route: [{destination: {host: web, port: {number: 80}}}]\n'),
    ),
    resource: { kind: 'VirtualService', namespace: 'shop', name: 'web' },
    path: 'spec.http[0].route[0].destination.port',
    message: 'host web.shop.svc.cluster.local has several ports (80, 8080): a gateway route must name one in destination.port',
  },
  {
    code: 'MESH0125',
    title: 'a VirtualService host its Gateway does not serve',
    invalid: docs(
      gateway('public', 'shop', '[{port: {number: 80, name: http, protocol: HTTP}, hosts: ["*.example.com"]}]'),
      vs('web', 'shop', '  hosts: [web.example.org]\n  gateways: [public]\n  http:\n    - route: [{destination: {host: web}}]\n'),
    ),
    valid: docs(
      gateway('public', 'shop', '[{port: {number: 80, name: http, protocol: HTTP}, hosts: ["*.example.com"]}]'),
      vs('web', 'shop', '  hosts: [web.example.com]\n  gateways: [public]\n  http:\n    - route: [{destination: {host: web}}]\n'),
    ),
    resource: { kind: 'VirtualService', namespace: 'shop', name: 'web' },
    path: 'spec.hosts[0]',
    message: 'host web.example.org is not among the hosts Gateway shop/public serves to namespace shop',
  },
  {
    code: 'MESH0126',
    title: 'two mesh-gateway VirtualServices for one host',
    invalid: docs(
      vs('a', 'shop', '  hosts: [reviews]\n  http:\n    - route: [{destination: {host: reviews}}]\n'),
      vs('b', 'shop', '  hosts: [reviews.shop.svc.cluster.local]\n  http:\n    - route: [{destination: {host: reviews}}]\n'),
    ),
    valid: docs(
      vs('a', 'shop', '  hosts: [reviews]\n  exportTo: [.]\n  http:\n    - route: [{destination: {host: reviews}}]\n'),
      vs('b', 'shop', '  hosts: [reviews.shop.svc.cluster.local]\n  exportTo: [other]\n  http:\n    - route: [{destination: {host: reviews}}]\n'),
    ),
    resource: { kind: 'VirtualService', namespace: 'shop', name: 'a' },
    path: 'spec.hosts[0]',
    message: 'host reviews.shop.svc.cluster.local is also defined for the mesh gateway by VirtualService shop/b: merge them into one',
  },
  {
    code: 'MESH0127',
    title: 'a route after a catch-all route',
    invalid: vs('reviews', 'shop', '  hosts: [reviews]\n  http:\n    - route: [{destination: {host: reviews, subset: v1}}]\n    - name: canary\n      match: [{headers: {x-canary: {exact: "1"}}}]\n      route: [{destination: {host: reviews, subset: v2}}]\n'),
    valid: vs('reviews', 'shop', '  hosts: [reviews]\n  http:\n    - name: canary\n      match: [{headers: {x-canary: {exact: "1"}}}]\n      route: [{destination: {host: reviews, subset: v2}}]\n    - route: [{destination: {host: reviews, subset: v1}}]\n'),
    resource: { kind: 'VirtualService', namespace: 'shop', name: 'reviews' },
    path: 'spec.http[1]',
    message: 'route "canary" is never used: route 0 before it matches every request',
  },
  {
    code: 'MESH0128',
    title: 'a match repeated from an earlier route',
    invalid: vs('reviews', 'shop', '  hosts: [reviews]\n  http:\n    - match: [{uri: {prefix: /api}}]\n      route: [{destination: {host: reviews}}]\n    - match: [{uri: {prefix: /api}}, {uri: {prefix: /v2}}]\n      route: [{destination: {host: ratings}}]\n'),
    valid: vs('reviews', 'shop', '  hosts: [reviews]\n  http:\n    - match: [{uri: {prefix: /api}}]\n      route: [{destination: {host: reviews}}]\n    - match: [{uri: {prefix: /v2}}]\n      route: [{destination: {host: ratings}}]\n'),
    resource: { kind: 'VirtualService', namespace: 'shop', name: 'reviews' },
    path: 'spec.http[1].match[0]',
    message: 'match 0 repeats a match of route 0: it never takes effect',
  },
  {
    code: 'MESH0129',
    title: 'a route on JWT claims without a RequestAuthentication for the gateway',
    invalid: docs(
      INGRESS_POD,
      gateway('public', 'edge', '[{port: {number: 80, name: http, protocol: HTTP}, hosts: ["*"]}]'),
      vs('web', 'edge', '  hosts: [web.example.com]\n  gateways: [public]\n  http:\n    - match: [{headers: {"@request.auth.claims.group": {exact: admin}}}]\n      route: [{destination: {host: admin.shop.svc.cluster.local}}]\n'),
    ),
    valid: docs(
      INGRESS_POD,
      gateway('public', 'edge', '[{port: {number: 80, name: http, protocol: HTTP}, hosts: ["*"]}]'),
      vs('web', 'edge', '  hosts: [web.example.com]\n  gateways: [public]\n  http:\n    - match: [{headers: {"@request.auth.claims.group": {exact: admin}}}]\n      route: [{destination: {host: admin.shop.svc.cluster.local}}]\n'),
      'apiVersion: security.mesh.io/v1\nkind: RequestAuthentication\nmetadata: {name: jwt, namespace: edge}\nspec:\n  selector: {matchLabels: {app: ingress}}\n  jwtRules: [{issuer: "https://issuer.example.com"}]\n',
    ),
    resource: { kind: 'VirtualService', namespace: 'edge', name: 'web' },
    path: 'spec.http[0].match[0].headers["@request.auth.claims.group"]',
    message:
      'the route matches JWT claim header @request.auth.claims.group, but no RequestAuthentication applies to the workloads of Gateway edge/public: tokens are not validated and the match never succeeds',
  },
  {
    code: 'MESH0130',
    title: 'a VirtualService names a Gateway derived from a gateway-api Gateway',
    invalid: docs(
      gateway('public-http-gwapi', 'edge', '[{port: {number: 80, name: http, protocol: HTTP}, hosts: ["*"]}]'),
      vs('web', 'edge', '  hosts: [web.example.com]\n  gateways: [public-http-gwapi]\n  http:\n    - route: [{destination: {host: web.shop.svc.cluster.local}}]\n'),
    ),
    valid: docs(
      'apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: public, namespace: edge}\nspec:\n  gatewayClassName: mesh\n  listeners: [{name: http, port: 80, protocol: HTTP}]\n',
      vs('web', 'edge', '  hosts: [web.example.com]\n  gateways: [public]\n  http:\n    - route: [{destination: {host: web.shop.svc.cluster.local}}]\n'),
    ),
    resource: { kind: 'VirtualService', namespace: 'edge', name: 'web' },
    path: 'spec.gateways[0]',
    message: 'Gateway edge/public-http-gwapi is derived from a gateway-api Gateway: name that Gateway instead',
  },
  {
    code: 'MESH0131',
    title: 'a Deployment behind two Services that disagree on a port\'s protocol',
    invalid: docs(
      'apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: shop}\nspec:\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec: {containers: [{name: app, image: example/app:1}]}\n',
      service('web', 'shop', 'app: web', '[{name: http, port: 8080}]'),
      service('web-grpc', 'shop', 'app: web', '[{name: grpc, port: 8080}]'),
    ),
    valid: docs(
      'apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: shop}\nspec:\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec: {containers: [{name: app, image: example/app:1}]}\n',
      service('web', 'shop', 'app: web', '[{name: http, port: 8080}]'),
      service('web-grpc', 'shop', 'app: web', '[{name: grpc, port: 9090}]'),
    ),
    resource: { kind: 'Deployment', namespace: 'shop', name: 'web' },
    path: 'spec.template.metadata.labels',
    message: 'port 8080 of the pods is served by Services with different protocols: web (HTTP); web-grpc (GRPC)',
  },
  {
    code: 'MESH0132',
    title: 'an application container running as uid 1337',
    invalid: 'apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: shop}\nspec:\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      securityContext: {runAsUser: 1337}\n      containers: [{name: app, image: example/app:1}]\n',
    valid: 'apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: shop}\nspec:\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      securityContext: {runAsUser: 1000}\n      containers: [{name: app, image: example/app:1}]\n',
    resource: { kind: 'Deployment', namespace: 'shop', name: 'web' },
    path: 'spec.template.spec.containers[0].securityContext.runAsUser',
    message: 'container app runs as uid 1337, the proxy\'s uid: its traffic is not captured by the proxy',
  },
  {
    code: 'MESH0133',
    title: 'TLS origination without CA certificates',
    invalid: 'apiVersion: networking.mesh.io/v1\nkind: DestinationRule\nmetadata: {name: ext, namespace: shop}\nspec:\n  host: api.example.com\n  trafficPolicy: {tls: {mode: SIMPLE, sni: api.example.com}}\n',
    valid: 'apiVersion: networking.mesh.io/v1\nkind: DestinationRule\nmetadata: {name: ext, namespace: shop}\nspec:\n  host: api.example.com\n  trafficPolicy: {tls: {mode: SIMPLE, sni: api.example.com, caCertificates: /etc/ssl/certs/ca-certificates.crt}}\n',
    resource: { kind: 'DestinationRule', namespace: 'shop', name: 'ext' },
    path: 'spec.trafficPolicy.tls.caCertificates',
    message: 'SIMPLE TLS to api.example.com has no caCertificates (nor credentialName): the server certificate is not verified',
  },
  {
    code: 'MESH0134',
    title: 'a TCP ServiceEntry without addresses',
    invalid: 'apiVersion: networking.mesh.io/v1\nkind: ServiceEntry\nmetadata: {name: db, namespace: shop}\nspec: {hosts: [db.example.com], ports: [{number: 5432, name: tcp-pg, protocol: TCP}], resolution: DNS}\n',
    valid: 'apiVersion: networking.mesh.io/v1\nkind: ServiceEntry\nmetadata: {name: db, namespace: shop}\nspec: {hosts: [db.example.com], addresses: [192.0.2.10], ports: [{number: 5432, name: tcp-pg, protocol: TCP}], resolution: DNS}\n',
    resource: { kind: 'ServiceEntry', namespace: 'shop', name: 'db' },
    path: 'spec.ports[0].protocol',
    message: 'port 5432 (TCP) is matched by address only, but the ServiceEntry has no addresses: its traffic mixes with any other to port 5432',
  },
  {
    code: 'MESH0135',
    title: 'a ServiceEntry gives a Service\'s port another protocol',
    invalid: docs(REVIEWS, 'apiVersion: networking.mesh.io/v1\nkind: ServiceEntry\nmetadata: {name: reviews-ext, namespace: shop}\nspec: {hosts: [reviews.shop.svc.cluster.local], addresses: [10.0.0.9], ports: [{number: 9080, name: tcp, protocol: TCP}], location: MESH_INTERNAL, resolution: STATIC, endpoints: [{address: 10.0.0.9}]}\n'),
    valid: docs(REVIEWS, 'apiVersion: networking.mesh.io/v1\nkind: ServiceEntry\nmetadata: {name: reviews-ext, namespace: shop}\nspec: {hosts: [reviews.shop.svc.cluster.local], addresses: [10.0.0.9], ports: [{number: 9080, name: http, protocol: HTTP}], location: MESH_INTERNAL, resolution: STATIC, endpoints: [{address: 10.0.0.9}]}\n'),
    resource: { kind: 'ServiceEntry', namespace: 'shop', name: 'reviews-ext' },
    path: 'spec.ports[0].protocol',
    message: 'port 9080 of reviews.shop.svc.cluster.local is TCP here but HTTP in Service shop/reviews',
  },
  {
    code: 'MESH0136',
    title: 'an EnvoyFilter inserting relative to a filter without priority',
    invalid: 'apiVersion: networking.mesh.io/v1\nkind: EnvoyFilter\nmetadata: {name: lua, namespace: shop}\nspec:\n  configPatches:\n    - applyTo: HTTP_FILTER\n      match: {listener: {filterChain: {filter: {name: envoy.filters.network.http_connection_manager, subFilter: {name: envoy.filters.http.router}}}}}\n      patch: {operation: INSERT_BEFORE, value: {name: envoy.lua}}\n',
    valid: 'apiVersion: networking.mesh.io/v1\nkind: EnvoyFilter\nmetadata: {name: lua, namespace: shop}\nspec:\n  priority: 10\n  configPatches:\n    - applyTo: HTTP_FILTER\n      match: {listener: {filterChain: {filter: {name: envoy.filters.network.http_connection_manager, subFilter: {name: envoy.filters.http.router}}}}}\n      patch: {operation: INSERT_BEFORE, value: {name: envoy.lua}}\n',
    resource: { kind: 'EnvoyFilter', namespace: 'shop', name: 'lua' },
    path: 'spec.configPatches[0].patch.operation',
    message: 'INSERT_BEFORE is relative to another filter: set spec.priority so the order in which EnvoyFilters apply is defined',
  },
  {
    code: 'MESH0137',
    title: 'an EnvoyFilter operation without effect on what it applies to',
    invalid: 'apiVersion: networking.mesh.io/v1\nkind: EnvoyFilter\nmetadata: {name: routes, namespace: shop}\nspec:\n  configPatches:\n    - applyTo: ROUTE_CONFIGURATION\n      patch: {operation: ADD, value: {name: extra}}\n',
    valid: 'apiVersion: networking.mesh.io/v1\nkind: EnvoyFilter\nmetadata: {name: routes, namespace: shop}\nspec:\n  configPatches:\n    - applyTo: ROUTE_CONFIGURATION\n      patch: {operation: MERGE, value: {validate_clusters: false}}\n',
    resource: { kind: 'EnvoyFilter', namespace: 'shop', name: 'routes' },
    path: 'spec.configPatches[0].patch.operation',
    message: 'ADD has no effect with applyTo ROUTE_CONFIGURATION',
  },
  {
    code: 'MESH0138',
    title: 'a Telemetry without provider where the mesh has no default',
    invalid: 'apiVersion: telemetry.mesh.io/v1\nkind: Telemetry\nmetadata: {name: tracing, namespace: shop}\nspec:\n  tracing: [{randomSamplingPercentage: 10}]\n',
    valid: 'apiVersion: telemetry.mesh.io/v1\nkind: Telemetry\nmetadata: {name: tracing, namespace: shop}\nspec:\n  tracing: [{providers: [{name: zipkin}], randomSamplingPercentage: 10}]\n',
    resource: { kind: 'Telemetry', namespace: 'shop', name: 'tracing' },
    path: 'spec.tracing[0].providers',
    message: 'tracing names no provider and the mesh config has no default tracing provider: this entry has no effect',
  },
  {
    code: 'MESH0139',
    title: 'two Telemetries of a namespace without selector',
    invalid: docs(
      'apiVersion: telemetry.mesh.io/v1\nkind: Telemetry\nmetadata: {name: a, namespace: shop}\nspec:\n  accessLogging: [{providers: [{name: envoy}]}]\n',
      'apiVersion: telemetry.mesh.io/v1\nkind: Telemetry\nmetadata: {name: b, namespace: shop}\nspec:\n  tracing: [{providers: [{name: zipkin}]}]\n',
    ),
    valid: 'apiVersion: telemetry.mesh.io/v1\nkind: Telemetry\nmetadata: {name: a, namespace: shop}\nspec:\n  accessLogging: [{providers: [{name: envoy}]}]\n  tracing: [{providers: [{name: zipkin}]}]\n',
    resource: { kind: 'Telemetry', namespace: 'shop', name: 'a' },
    message: 'Telemetries a, b of namespace shop have no selector; only one may',
  },
  {
    code: 'MESH0140',
    title: 'a selector that picks gateway-api gateway pods',
    invalid: docs(
      pod('public-abc', 'edge', 'gateway.networking.k8s.io/gateway-name: public'),
      'apiVersion: security.mesh.io/v1\nkind: AuthorizationPolicy\nmetadata: {name: deny-admin, namespace: edge}\nspec:\n  selector: {matchLabels: {gateway.networking.k8s.io/gateway-name: public}}\n  action: DENY\n  rules: [{to: [{operation: {paths: [/admin]}}]}]\n',
    ),
    valid: docs(
      pod('public-abc', 'edge', 'gateway.networking.k8s.io/gateway-name: public'),
      'apiVersion: security.mesh.io/v1\nkind: AuthorizationPolicy\nmetadata: {name: deny-admin, namespace: edge}\nspec:\n  targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: public}]\n  action: DENY\n  rules: [{to: [{operation: {paths: [/admin]}}]}]\n',
    ),
    resource: { kind: 'AuthorizationPolicy', namespace: 'edge', name: 'deny-admin' },
    path: 'spec.selector.matchLabels',
    message: 'selector gateway.networking.k8s.io/gateway-name=public picks the pods of gateway-api Gateway public, which a selector does not reach: use targetRefs',
  },
  {
    code: 'MESH0141',
    title: 'an ALLOW rule of negative conditions only',
    invalid: 'apiVersion: security.mesh.io/v1\nkind: AuthorizationPolicy\nmetadata: {name: allow, namespace: shop}\nspec:\n  rules: [{from: [{source: {notNamespaces: [untrusted]}}]}]\n',
    valid: 'apiVersion: security.mesh.io/v1\nkind: AuthorizationPolicy\nmetadata: {name: allow, namespace: shop}\nspec:\n  action: DENY\n  rules: [{from: [{source: {namespaces: [untrusted]}}]}]\n',
    resource: { kind: 'AuthorizationPolicy', namespace: 'shop', name: 'allow' },
    path: 'spec.rules[0].from[0].source',
    message: 'an ALLOW rule with only notNamespaces allows every other source, unauthenticated ones included: add a positive condition or use a DENY policy',
  },
];
