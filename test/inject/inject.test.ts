/**
 * The injector as a library: which pods get the proxy, what the templates add, how annotations
 * change it, what a bad pod or configuration is told, and that the JSON patch, uninjection and
 * the documents of meshctl agree with the injected pod.
 */
import { parse as parseYaml } from 'yaml';
import { answerInjection, decideInjection, parseAdmissionReview, AdmissionReviewError } from '../../src/inject/admission.js';
import { DEFAULT_INJECTOR_CONFIG, InjectionConfigError, injectorConfigMapContent, parseInjectionValues, parseInjectorConfig, type InjectionInputs } from '../../src/inject/config.js';
import { InjectionError } from '../../src/inject/errors.js';
import { injectPod, workloadOf } from '../../src/inject/inject.js';
import { applyJsonPatch, jsonPatch } from '../../src/inject/json-patch.js';
import type { Container, Pod } from '../../src/inject/pod.js';
import { injectionDecision } from '../../src/inject/selection.js';
import { uninjectPod } from '../../src/inject/uninject.js';
import { injectDocuments, uninjectDocuments, DocumentError } from '../../src/inject/workloads.js';

function inputs(over: Partial<InjectionInputs> = {}): InjectionInputs {
  return {
    config: DEFAULT_INJECTOR_CONFIG,
    values: parseInjectionValues(JSON.stringify({ global: { hub: 'registry.example/mesh', tag: '1.2.3', meshNamespace: 'mesh-system', discoveryAddress: 'meshd.mesh-system.svc:15012' } })),
    mesh: { trustDomain: 'cluster.local' },
    revision: 'default',
    domain: 'cluster.local',
    clusterSupportsNativeSidecars: false,
    probeLocalhost: false,
    legacyFsGroup: true,
    ...over,
  };
}

function pod(over: { annotations?: Record<string, string>; labels?: Record<string, string>; containers?: Container[]; hostNetwork?: boolean } = {}): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: 'web-0',
      namespace: 'shop',
      labels: { app: 'web', version: 'v2', ...(over.labels ?? {}) },
      ...(over.annotations ? { annotations: over.annotations } : {}),
    },
    spec: {
      ...(over.hostNetwork ? { hostNetwork: true } : {}),
      containers: over.containers ?? [
        {
          name: 'web',
          image: 'nginx',
          ports: [{ name: 'http', containerPort: 8080 }],
          readinessProbe: { httpGet: { path: '/ready', port: 'http' as unknown as number }, periodSeconds: 5 },
          livenessProbe: { tcpSocket: { port: 8080 as unknown as never }, timeoutSeconds: 2 },
        },
      ],
    },
  } as Pod;
}

const envOf = (c: Container | undefined): Record<string, string | undefined> => Object.fromEntries((c?.env ?? []).map((e) => [e.name, e.value]));

describe('the sidecar template', () => {
  const { pod: out, status } = injectPod(pod(), 'shop', inputs());
  const proxy = out.spec!.containers.find((c) => c.name === 'mesh-proxy');
  const init = out.spec!.initContainers?.find((c) => c.name === 'mesh-init');

  it('adds mesh-init with the capture rules and mesh-proxy running the agent, both from the proxy image', () => {
    expect(out.spec!.containers.map((c) => c.name)).toEqual(['web', 'mesh-proxy']);
    expect(proxy?.image).toBe('registry.example/mesh/proxy:1.2.3');
    expect(proxy?.args?.slice(0, 2)).toEqual(['proxy', 'sidecar']);
    expect(init?.args).toEqual(['capture', '-p', '15001', '-z', '15006', '-u', '1337', '-g', '1337', '-m', 'REDIRECT', '-i', '*', '-x', '', '-b', '*', '-d', '15020,15021,15090', '--log_output_level=default:info']);
    expect(init?.securityContext?.capabilities?.add).toEqual(['NET_ADMIN', 'NET_RAW']);
    expect(proxy?.securityContext).toMatchObject({ runAsUser: 1337, runAsGroup: 1337, runAsNonRoot: true, readOnlyRootFilesystem: true });
    expect(proxy?.readinessProbe?.httpGet).toMatchObject({ path: '/healthz/ready', port: 15021 });
  });

  it('gives the agent its identity: token of audience mesh-ca, the mesh root, the SDS socket directory, pod info', () => {
    const vols = Object.fromEntries((out.spec!.volumes ?? []).map((v) => [v.name, v]));
    expect(vols['mesh-token']?.projected?.sources?.[0]?.serviceAccountToken).toMatchObject({ audience: 'mesh-ca', path: 'mesh-token' });
    expect(vols['mesh-ca-root-cert']?.configMap?.name).toBe('mesh-ca-root-cert');
    expect(vols['workload-socket']?.emptyDir).toEqual({});
    const mounts = Object.fromEntries((proxy?.volumeMounts ?? []).map((m) => [m.name, m.mountPath]));
    expect(mounts).toMatchObject({ 'workload-socket': '/var/run/secrets/workload-spiffe-uds', 'mesh-token': '/var/run/secrets/tokens', 'mesh-ca-root-cert': '/var/run/secrets/mesh', 'mesh-podinfo': '/etc/mesh/pod' });
    const env = envOf(proxy);
    expect(env.CA_ADDR).toBe('meshd.mesh-system.svc:15012');
    expect(JSON.parse(env.PROXY_CONFIG ?? '{}')).toMatchObject({ discoveryAddress: 'meshd.mesh-system.svc:15012' });
    expect(env.MESH_META_WORKLOAD_NAME).toBe('web-0');
    expect(env.MESH_META_CLUSTER_ID).toBe('Cluster');
    expect(env.TRUST_DOMAIN).toBe('cluster.local');
  });

  it('rewrites the HTTP and TCP probes through the agent, named ports resolved', () => {
    const web = out.spec!.containers[0]!;
    expect(web.readinessProbe).toEqual({ httpGet: { path: '/app-health/web/readyz', port: 15020, scheme: 'HTTP' }, periodSeconds: 5 });
    expect(web.livenessProbe).toEqual({ httpGet: { path: '/app-health/web/livez', port: 15020, scheme: 'HTTP' }, timeoutSeconds: 2 });
    expect(JSON.parse(envOf(proxy).MESH_KUBE_APP_PROBERS ?? '{}')).toEqual({
      '/app-health/web/readyz': { httpGet: { path: '/ready', port: 8080 } },
      '/app-health/web/livez': { tcpSocket: { port: 8080 }, timeoutSeconds: 2 },
    });
  });

  it('marks the pod: status annotation, labels, default container, fsGroup', () => {
    expect(status).toMatchObject({ revision: 'default', templates: ['sidecar'], initContainers: ['mesh-init'], containers: ['mesh-proxy'] });
    expect(JSON.parse(out.metadata!.annotations!['sidecar.mesh.io/status']!)).toEqual(status);
    expect(out.metadata!.labels).toMatchObject({ 'security.mesh.io/tlsMode': 'mesh', 'service.mesh.io/canonical-name': 'web', 'service.mesh.io/canonical-revision': 'v2' });
    expect(out.metadata!.annotations!['kubectl.kubernetes.io/default-container']).toBe('web');
    expect(out.spec!.securityContext?.fsGroup).toBe(1337);
    expect(injectPod(pod(), 'shop', inputs({ legacyFsGroup: false })).pod.spec!.securityContext).toBeUndefined();
  });

  it('is undone by uninjection, and the JSON patch applied to the pod gives the injected pod', () => {
    expect(uninjectPod(out)).toEqual({ ...pod(), spec: { ...pod().spec, containers: [{ ...pod().spec!.containers[0]!, readinessProbe: { httpGet: { path: '/ready', port: 8080 }, periodSeconds: 5 } }] } });
    expect(applyJsonPatch(pod(), jsonPatch(pod(), out))).toEqual(out);
  });

  it('puts the proxy first with a wait hook when the application waits for it, and as a native sidecar when the cluster has them', () => {
    const hold = injectPod(pod({ annotations: { 'proxy.mesh.io/config': 'holdApplicationUntilProxyStarts: true' } }), 'shop', inputs()).pod;
    expect(hold.spec!.containers.map((c) => c.name)).toEqual(['mesh-proxy', 'web']);
    expect(hold.spec!.containers[0]!.lifecycle?.postStart?.exec?.command?.slice(0, 2)).toEqual(['mesh-agent', 'wait']);
    const native = injectPod(pod(), 'shop', inputs({ clusterSupportsNativeSidecars: true }));
    expect(native.pod.spec!.initContainers!.map((c) => [c.name, c.restartPolicy])).toEqual([['mesh-init', undefined], ['mesh-proxy', 'Always']]);
    expect(native.pod.spec!.containers.map((c) => c.name)).toEqual(['web']);
    expect(native.status.initContainers).toEqual(['mesh-init', 'mesh-proxy']);
    const off = injectPod(pod(), 'shop', inputs({ clusterSupportsNativeSidecars: true, values: parseInjectionValues('{"global":{"nativeSidecar":false}}') }));
    expect(off.pod.spec!.containers.map((c) => c.name)).toEqual(['web', 'mesh-proxy']);
  });
});

describe('annotations', () => {
  const inject = (annotations: Record<string, string>): Pod => injectPod(pod({ annotations }), 'shop', inputs()).pod;
  const proxyOf = (p: Pod): Container => [...p.spec!.containers, ...(p.spec!.initContainers ?? [])].find((c) => c.name === 'mesh-proxy')!;
  const initOf = (p: Pod): Container | undefined => p.spec!.initContainers?.find((c) => c.name === 'mesh-init');

  it('set the image, resources, log levels and status port', () => {
    const p = inject({
      'sidecar.mesh.io/proxyImage': 'mine/proxy:dev',
      'sidecar.mesh.io/proxyCPU': '250m',
      'sidecar.mesh.io/proxyMemoryLimit': '2Gi',
      'sidecar.mesh.io/logLevel': 'debug',
      'status.sidecar.mesh.io/port': '15120',
    });
    const proxy = proxyOf(p);
    expect(proxy.image).toBe('mine/proxy:dev');
    expect(proxy.resources).toEqual({ requests: { cpu: '250m', memory: '128Mi' }, limits: { cpu: '2000m', memory: '2Gi' } });
    expect(proxy.args).toContain('--proxyLogLevel=debug');
    expect(proxy.args).toContain('--statusPort=15120');
    expect(p.spec!.containers[0]!.readinessProbe?.httpGet?.port).toBe(15120);
    expect(p.metadata!.annotations).toMatchObject({ 'prometheus.io/scrape': 'true', 'prometheus.io/port': '15120', 'prometheus.io/path': '/stats/prometheus' });
  });

  it('exclude and include ranges and ports for the capture rules; interception NONE leaves capture out', () => {
    const p = inject({
      'traffic.sidecar.mesh.io/excludeOutboundIPRanges': '10.96.0.1/32, 169.254.169.254/32',
      'traffic.sidecar.mesh.io/excludeInboundPorts': '9090',
      'traffic.sidecar.mesh.io/excludeOutboundPorts': '5432,6379',
      'traffic.sidecar.mesh.io/includeOutboundIPRanges': '10.0.0.0/8',
    });
    const args = initOf(p)!.args!;
    const flag = (f: string): string | undefined => args[args.indexOf(f) + 1];
    expect([flag('-x'), flag('-d'), flag('-o'), flag('-i')]).toEqual(['10.96.0.1/32,169.254.169.254/32', '9090,15020,15021,15090', '5432,6379', '10.0.0.0/8']);
    const none = inject({ 'sidecar.mesh.io/interceptionMode': 'NONE' });
    expect(initOf(none)).toBeUndefined();
    expect(none.spec!.containers[0]!.readinessProbe?.httpGet?.path).toBe('/ready');
  });

  it('MESH_META_DNS_CAPTURE in the proxy metadata reaches the agent and makes mesh-init redirect DNS', () => {
    const initOf = (q: Pod): Container | undefined => q.spec!.initContainers?.find((c) => c.name === 'mesh-init');
    const plain = injectPod(pod({}), 'shop', inputs()).pod;
    expect(initOf(plain)!.args).not.toContain('--redirect-dns');
    const p = injectPod(pod({ annotations: { 'proxy.mesh.io/config': 'proxyMetadata: {MESH_META_DNS_CAPTURE: "true", MESH_META_DNS_AUTO_ALLOCATE: "true"}' } }), 'shop', inputs()).pod;
    expect(initOf(p)!.args).toContain('--redirect-dns');
    const env = envOf(proxyOf(p));
    expect([env.MESH_META_DNS_CAPTURE, env.MESH_META_DNS_AUTO_ALLOCATE]).toEqual(['true', 'true']);
  });

  it('proxy.mesh.io/config is merged over the mesh defaults and reaches the agent', () => {
    const i = inputs({ mesh: { trustDomain: 'cluster.local', defaultConfig: { concurrency: 2, proxyMetadata: { A: '1' } } } });
    const p = injectPod(pod({ annotations: { 'proxy.mesh.io/config': 'concurrency: 4\nproxyMetadata: {B: "2"}\nterminationDrainDuration: 20s' } }), 'shop', i).pod;
    const env = envOf(proxyOf(p));
    expect(JSON.parse(env.PROXY_CONFIG!)).toEqual({ concurrency: 4, discoveryAddress: 'meshd.mesh-system.svc:15012', proxyMetadata: { A: '1', B: '2' }, terminationDrainDuration: '20s' });
    expect([env.A, env.B]).toEqual(['1', '2']);
  });

  it.each([
    ['sidecar.mesh.io/proxyCPU', 'lots', 'is not a Kubernetes quantity'],
    ['sidecar.mesh.io/logLevel', 'loud', 'is not one of trace, debug'],
    ['sidecar.mesh.io/interceptionMode', 'TPROXY', 'TPROXY is not supported'],
    ['traffic.sidecar.mesh.io/excludeOutboundIPRanges', '10.0.0.0/40', 'is not a CIDR block'],
    ['traffic.sidecar.mesh.io/excludeInboundPorts', '80,http', 'is not a port'],
    ['proxy.mesh.io/config', 'concurrency: many', 'concurrency'],
    ['proxy.mesh.io/config', 'nosuchfield: 1', 'nosuchfield: unknown field'],
    ['inject.mesh.io/templates', 'sidecar,spire', 'no such template'],
    ['status.sidecar.mesh.io/port', '70000', 'whole number from 0 to 65535'],
    ['sidecar.mesh.io/userVolume', '[1]', 'JSON map'],
    // what mesh-agent would refuse at start is refused at admission
    ['sidecar.mesh.io/agentLogLevel', 'default:info,ads:debug', 'scope "ads": the agent logs under default (or all), its init step under capture'],
    ['sidecar.mesh.io/agentLogLevel', 'default:loud', '"default:loud" is not <scope>:<level>'],
    ['sidecar.mesh.io/componentLogLevel', 'misc:loud', '"misc:loud" is not <component>:<level>'],
  ])('%s: %s is refused with the annotation named', (name, value, reason) => {
    let err: unknown;
    try {
      inject({ [name]: value });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(InjectionError);
    expect((err as InjectionError).path).toBe(`metadata.annotations["${name}"]`);
    expect((err as InjectionError).message).toContain(reason);
  });
});

describe('which pods are injected', () => {
  const cfg = parseInjectorConfig('policy: disabled\nneverInjectSelector: [{matchLabels: {batch: "true"}}]\nalwaysInjectSelector: [{matchExpressions: [{key: tier, operator: In, values: [front]}]}]');
  it.each([
    ['a plain pod under policy enabled', pod(), DEFAULT_INJECTOR_CONFIG, true],
    ['a pod labelled inject=false', pod({ labels: { 'sidecar.mesh.io/inject': 'false' } }), DEFAULT_INJECTOR_CONFIG, false],
    ['a pod annotated inject=false', pod({ annotations: { 'sidecar.mesh.io/inject': 'false' } }), DEFAULT_INJECTOR_CONFIG, false],
    ['a pod whose label (true) wins over its annotation (false)', pod({ labels: { 'sidecar.mesh.io/inject': 'true' }, annotations: { 'sidecar.mesh.io/inject': 'false' } }), DEFAULT_INJECTOR_CONFIG, true],
    ['a host-network pod', pod({ hostNetwork: true }), DEFAULT_INJECTOR_CONFIG, false],
    ['an injected pod', injectPod(pod(), 'shop', inputs()).pod, DEFAULT_INJECTOR_CONFIG, false],
    ['a plain pod under policy disabled', pod(), cfg, false],
    ['a pod matching alwaysInjectSelector', pod({ labels: { tier: 'front' } }), cfg, true],
    ['a pod matching neverInjectSelector and alwaysInjectSelector', pod({ labels: { tier: 'front', batch: 'true' } }), cfg, false],
    ['a pod opting in under policy disabled', pod({ labels: { 'sidecar.mesh.io/inject': 'true', batch: 'true' } }), cfg, true],
  ])('%s', (_what, p, config, want) => {
    expect(injectionDecision(p, 'shop', config).inject).toBe(want);
  });

  it('never a pod of kube-system', () => {
    expect(injectionDecision(pod({ labels: { 'sidecar.mesh.io/inject': 'true' } }), 'kube-system', DEFAULT_INJECTOR_CONFIG)).toMatchObject({ inject: false, reason: 'system_namespace' });
  });

  it('a label that is neither true nor false is a refusal naming it', () => {
    const v = decideInjection(pod({ labels: { 'sidecar.mesh.io/inject': 'maybe' } }), 'shop', inputs());
    expect(v.kind).toBe('refuse');
    expect(v.kind === 'refuse' && v.error.message).toBe('metadata.labels["sidecar.mesh.io/inject"]: "maybe" is neither true nor false');
  });
});

describe('the other templates', () => {
  it('grpc-agent: the agent in grpc mode, the application reads its bootstrap; no capture', () => {
    const p = injectPod(pod({ annotations: { 'inject.mesh.io/templates': 'grpc-agent' } }), 'shop', inputs()).pod;
    expect(p.spec!.initContainers).toBeUndefined();
    const [proxy, web] = p.spec!.containers;
    expect(proxy!.name).toBe('mesh-proxy');
    expect(proxy!.args).toContain('--mode=grpc');
    expect(envOf(proxy).MESH_META_GENERATOR).toBe('grpc');
    expect(envOf(web).GRPC_XDS_BOOTSTRAP).toBe('/etc/mesh/proxy/grpc-bootstrap.json');
    expect(web!.volumeMounts?.map((m) => [m.mountPath, m.readOnly])).toEqual([['/etc/mesh/proxy', true], ['/var/lib/mesh/data', true]]);
    expect(web!.readinessProbe?.httpGet?.path).toBe('/ready');
    expect(uninjectPod(p)).toEqual(pod({ annotations: { 'inject.mesh.io/templates': 'grpc-agent' } }));
  });

  it('grpc-simple: an init step writes a plaintext bootstrap; no agent', () => {
    const p = injectPod(pod({ annotations: { 'inject.mesh.io/templates': 'grpc-simple' } }), 'shop', inputs()).pod;
    expect(p.spec!.initContainers?.map((c) => c.name)).toEqual(['grpc-bootstrap-init']);
    expect(p.spec!.initContainers![0]!.args).toEqual(['grpc-bootstrap', '--xds-address', 'meshd.mesh-system.svc:15010', '--out', '/var/lib/grpc/data/bootstrap.json', '--domain', '$(POD_NAMESPACE).svc.cluster.local']);
    expect(p.spec!.containers.map((c) => c.name)).toEqual(['web']);
    expect(envOf(p.spec!.containers[0]).GRPC_XDS_BOOTSTRAP).toBe('/var/lib/grpc/data/bootstrap.json');
  });

  it('gateway: completes the pod\'s own mesh-proxy container with image auto', () => {
    const gw = pod({ annotations: { 'inject.mesh.io/templates': 'gateway' }, containers: [{ name: 'mesh-proxy', image: 'auto', env: [{ name: 'X', value: '1' }] }] });
    expect(injectionDecision(gw, 'shop', DEFAULT_INJECTOR_CONFIG).inject).toBe(true);
    const p = injectPod(gw, 'shop', inputs()).pod;
    expect(p.spec!.containers).toHaveLength(1);
    const c = p.spec!.containers[0]!;
    expect([c.image, c.args?.[1]]).toEqual(['registry.example/mesh/proxy:1.2.3', 'router']);
    expect(envOf(c).X).toBe('1');
    expect(p.spec!.initContainers).toBeUndefined();
  });
});

describe('configuration', () => {
  it('names the key and field of a bad config or values', () => {
    expect(() => parseInjectorConfig('policy: sometimes', 'ConfigMap mesh-system/mesh-sidecar-injector key config')).toThrow(
      'ConfigMap mesh-system/mesh-sidecar-injector key config: policy: string "sometimes" is not one of enabled, disabled',
    );
    expect(() => parseInjectorConfig('defaultTemplates: [custom]')).toThrow('defaultTemplates: "custom" is not a template (templates: sidecar, gateway, grpc-agent, grpc-simple)');
    expect(() => parseInjectorConfig('templates: {custom: "x"}')).toThrow('templates: unknown field');
    expect(() => parseInjectionValues('{"global": {"proxy": {"logLevel": 3}}}')).toThrow(InjectionConfigError);
    expect(() => injectorConfigMapContent({}, 'ConfigMap x/y')).toThrow('ConfigMap x/y: has neither key config nor key values');
  });

  it('refuses global.jwtPolicy first-party-jwt, which mesh-agent cannot run', () => {
    expect(() => parseInjectionValues('{"global": {"jwtPolicy": "first-party-jwt"}}', 'ConfigMap mesh-system/mesh-sidecar-injector key values')).toThrow(
      'ConfigMap mesh-system/mesh-sidecar-injector key values: global.jwtPolicy: only third-party-jwt is supported',
    );
    expect(parseInjectionValues('{"global": {"jwtPolicy": "third-party-jwt"}}').global?.jwtPolicy).toBe('third-party-jwt');
  });

  it("a bad default level in global.logging.level is refused naming the values key", () => {
    const values = parseInjectionValues('{"global": {"logging": {"level": "default:loud,ads:debug"}}}');
    expect(() => injectPod(pod(), 'shop', inputs({ values }))).toThrow('values.global.logging.level: "default:loud,ads:debug": its default level: "default:loud" is not <scope>:<level>');
  });
});

describe('admission reviews', () => {
  const review = (object: unknown, extra: Record<string, unknown> = {}): string =>
    JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request: { uid: 'u-1', kind: { group: '', version: 'v1', kind: 'Pod' }, operation: 'CREATE', namespace: 'shop', object, ...extra } });

  it('a pod comes back with a JSON patch that gives the injected pod', () => {
    const r = answerInjection(parseAdmissionReview(review(pod())), inputs());
    expect(r.outcome).toBe('success');
    const ops = JSON.parse(Buffer.from(r.response.patch!, 'base64').toString('utf8'));
    expect(applyJsonPatch(pod(), ops)).toEqual(injectPod(pod(), 'shop', inputs()).pod);
  });

  it.each([
    ['not JSON', '{', 'body: not JSON'],
    ['another kind', JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'Pod' }), 'kind: "Pod", expected "AdmissionReview"'],
    ['v1beta1', JSON.stringify({ apiVersion: 'admission.k8s.io/v1beta1', kind: 'AdmissionReview', request: {} }), 'apiVersion: "admission.k8s.io/v1beta1"'],
    ['no uid', JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request: { kind: { kind: 'Pod' }, operation: 'CREATE' } }), 'request.uid: missing'],
  ])('a malformed review (%s) is an error naming the field', (_what, body, message) => {
    expect(() => parseAdmissionReview(body)).toThrow(AdmissionReviewError);
    expect(() => parseAdmissionReview(body)).toThrow(message);
  });

  it('a pod the template cannot render is refused with the field', () => {
    const r = answerInjection(parseAdmissionReview(review(pod({ annotations: { 'sidecar.mesh.io/proxyMemory': 'much' } }))), inputs());
    expect(r).toMatchObject({ outcome: 'failure', response: { allowed: false, status: { code: 400, message: 'sidecar injection: metadata.annotations["sidecar.mesh.io/proxyMemory"]: "much" is not a Kubernetes quantity (like 100m, 0.5, 128Mi)' } } });
  });

  it('updates and other kinds pass unchanged', () => {
    expect(answerInjection(parseAdmissionReview(review(pod(), { operation: 'UPDATE' })), inputs())).toMatchObject({ outcome: 'skip', response: { allowed: true } });
    expect(answerInjection(parseAdmissionReview(review({}, { kind: { group: 'apps', version: 'v1', kind: 'Deployment' } })), inputs()).response.patch).toBeUndefined();
  });
});

describe('documents', () => {
  const manifest = parseYaml(`
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx}]
`) as Record<string, unknown>;
  const service = { apiVersion: 'v1', kind: 'Service', metadata: { name: 'web' }, spec: { ports: [{ port: 80 }] } };

  it('injects pod templates with the workload named after the document, passes other kinds through, and uninjects', () => {
    const r = injectDocuments([manifest, service, { apiVersion: 'v1', kind: 'List', items: [pod()] }], inputs());
    expect(r.results.map((x) => [x.kind, x.outcome])).toEqual([['Deployment', 'injected'], ['Service', 'unsupported'], ['Pod', 'injected']]);
    expect(r.docs[1]).toBe(service);
    const tpl = (r.docs[0] as { spec: { template: Pod } }).spec.template;
    expect(envOf(tpl.spec!.containers.find((c) => c.name === 'mesh-proxy')).MESH_META_OWNER).toBe('kubernetes://apis/apps/v1/namespaces/shop/deployments/web');
    expect(uninjectDocuments(r.docs).docs).toEqual([manifest, service, { apiVersion: 'v1', kind: 'List', items: [uninjectPod((r.docs[2] as { items: Pod[] }).items[0]!)] }]);
    expect(uninjectDocuments([manifest]).results[0]!.outcome).toBe('skipped');
  });

  it('a document the injector must refuse names itself', () => {
    const bad = { ...pod({ annotations: { 'sidecar.mesh.io/proxyCPU': 'x' } }) };
    expect(() => injectDocuments([bad], inputs())).toThrow(DocumentError);
    expect(() => injectDocuments([bad], inputs())).toThrow('Pod shop/web-0: metadata.annotations["sidecar.mesh.io/proxyCPU"]');
  });
});

describe('workload names', () => {
  it('a ReplicaSet pod belongs to its Deployment', () => {
    const p = { metadata: { labels: { 'pod-template-hash': '5d4f8' }, ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web-5d4f8', controller: true, uid: 'x' }] } } as Pod;
    expect(workloadOf(p, 'shop')).toEqual({ name: 'web', owner: 'kubernetes://apis/apps/v1/namespaces/shop/deployments/web' });
  });
});
