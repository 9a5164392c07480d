/**
 * Rendering: every profile renders what it promises, output is deterministic and ordered, every
 * object carries the ownership labels, revisions rename what they must, the daemon's own parsers
 * accept its arguments, environment and mesh config, RBAC covers the config kinds, and overlays
 * patch objects by path.
 */
import fs from 'node:fs';
import path from 'node:path';
import { CONFIG_KINDS } from '../../src/config/kinds.js';
import { parseDiscoveryArgs } from '../../src/config/discovery-flags.js';
import { parseMeshConfig } from '../../src/bootstrap/mesh-config.js';
import { COMPONENT_LABEL, OWNING_RESOURCE_LABEL, OWNING_RESOURCE_NAMESPACE_LABEL, REVISION_LABEL } from '../../src/install/labels.js';
import { KIND_ORDER } from '../../src/install/render/order.js';
import { generateManifests } from '../../src/install/generate.js';
import { BUILTIN_MANIFESTS_DIR } from '../../src/install/sources.js';
import type { ComponentManifest, K8sObject } from '../../src/install/render/index.js';
import { toYamlDocuments } from '../../src/install/yaml-io.js';
import { tmpDir } from './helpers.js';

async function render(sets: string[] = [], extra: { files?: string[]; manifests?: string } = {}): Promise<ComponentManifest[]> {
  return (await generateManifests({ sets, ...extra })).manifests;
}

function find(ms: readonly ComponentManifest[], kind: string, name: string): K8sObject {
  const hit = ms.flatMap((m) => m.objects).find((o) => o.kind === kind && o.metadata.name === name);
  if (!hit) throw new Error(`no ${kind} ${name}`);
  return hit;
}

function names(ms: readonly ComponentManifest[], kind: string): string[] {
  return ms.flatMap((m) => m.objects).filter((o) => o.kind === kind).map((o) => o.metadata.name);
}

type Container = { name: string; args: string[]; command?: string[]; env: Array<{ name: string; value?: string; valueFrom?: unknown }>; readinessProbe: unknown; livenessProbe?: unknown; resources?: { requests?: Record<string, string>; limits?: Record<string, string> }; ports: Array<{ containerPort: number }> };

function container(d: K8sObject, name: string): Container {
  const spec = d.spec as { template: { spec: { containers: Container[] } } };
  const c = spec.template.spec.containers.find((x) => x.name === name);
  if (!c) throw new Error(`no container ${name}`);
  return c;
}

describe('profiles', () => {
  it('default: base, meshd and the ingress gateway', async () => {
    const ms = await render();
    expect(ms.map((m) => m.component)).toEqual(['Base', 'Meshd', 'IngressGateways']);
    expect(names(ms, 'Deployment')).toEqual(['meshd', 'mesh-ingressgateway']);
    expect(names(ms, 'CustomResourceDefinition')).toHaveLength(CONFIG_KINDS.length);
    expect(names(ms, 'ServiceAccount')).toEqual(['mesh-reader-service-account', 'meshd-service-account', 'mesh-ingressgateway-service-account']);
    expect(names(ms, 'ValidatingWebhookConfiguration')).toEqual(['mesh-mesh-system']);
    expect(names(ms, 'MutatingWebhookConfiguration')).toEqual(['mesh-sidecar-injector']);
    expect(names(ms, 'ConfigMap')).toEqual(['mesh', 'mesh-sidecar-injector']);
    expect((find(ms, 'Service', 'mesh-ingressgateway').spec as { type: string }).type).toBe('LoadBalancer');
  });

  it('demo adds the egress gateway with small resources; minimal has no gateways; empty has nothing', async () => {
    const demo = await render(['profile=demo']);
    expect(demo.map((m) => m.component)).toEqual(['Base', 'Meshd', 'IngressGateways', 'EgressGateways']);
    const egress = find(demo, 'Deployment', 'mesh-egressgateway');
    expect(egress.metadata.labels?.[COMPONENT_LABEL]).toBe('EgressGateways');
    expect((find(demo, 'Service', 'mesh-egressgateway').spec as { type: string }).type).toBe('ClusterIP');
    const mesh = parseMeshConfig((find(demo, 'ConfigMap', 'mesh').data as { mesh: string }).mesh, 'demo');
    expect(mesh).toMatchObject({ enableTracing: true, accessLogFile: '/dev/stdout', defaultConfig: { tracing: { sampling: 100 } } });
    expect((await render(['profile=minimal'])).map((m) => m.component)).toEqual(['Base', 'Meshd']);
    expect(await render(['profile=empty'])).toEqual([]);
  });

  it('remote has no control plane; with an address its webhooks call the remote meshd', async () => {
    const plain = await render(['profile=remote']);
    expect(plain.map((m) => m.component)).toEqual(['Base']);
    expect(names(plain, 'Deployment')).toEqual([]);
    const remote = await render(['profile=remote', 'values.global.remoteMeshdAddress=meshd.primary.example']);
    const inject = find(remote, 'MutatingWebhookConfiguration', 'mesh-sidecar-injector').webhooks as Array<{ clientConfig: unknown }>;
    expect(inject[0].clientConfig).toEqual({ url: 'https://meshd.primary.example:15017/inject' });
    const validate = find(remote, 'ValidatingWebhookConfiguration', 'mesh-mesh-system').webhooks as Array<{ clientConfig: unknown }>;
    expect(validate[0].clientConfig).toEqual({ url: 'https://meshd.primary.example:15017/validate' });
  });

  it('preview turns on preview features in meshd and the proxies', async () => {
    const ms = await render(['profile=preview']);
    const env = container(find(ms, 'Deployment', 'meshd'), 'discovery').env;
    expect(env).toEqual(expect.arrayContaining([{ name: 'MESH_DELTA_XDS', value: 'true' }, { name: 'DISC_ENABLE_STATUS', value: 'true' }]));
    const mesh = parseMeshConfig((find(ms, 'ConfigMap', 'mesh').data as { mesh: string }).mesh, 'preview');
    expect(mesh.defaultConfig?.proxyMetadata).toMatchObject({ MESH_DELTA_XDS: 'true' });
  });

  it('reads profiles (and CRDs) from another manifests directory with -d', async () => {
    const t = tmpDir();
    try {
      fs.cpSync(path.join(BUILTIN_MANIFESTS_DIR, 'profiles', 'default.yaml'), path.join(t.dir, 'profiles', 'default.yaml'));
      t.write('profiles/tiny.yaml', 'apiVersion: install.mesh.io/v1alpha1\nkind: MeshOperator\nspec:\n  components:\n    ingressGateways: []\n');
      t.write('crds/one.yaml', 'apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: things.example.io\nspec: {}\n');
      const ms = await render(['profile=tiny'], { manifests: t.dir });
      expect(ms.map((m) => m.component)).toEqual(['Base', 'Meshd']);
      expect(names(ms, 'CustomResourceDefinition')).toEqual(['things.example.io']);
      await expect(render(['profile=demo'], { manifests: t.dir })).rejects.toThrow('unknown profile "demo" (known profiles: default, tiny)');
      await expect(render([], { manifests: path.join(t.dir, 'crds') })).rejects.toThrow(`--manifests ${path.join(t.dir, 'crds')}: no profiles/ folder`);
    } finally {
      t.cleanup();
    }
  });
});

describe('output', () => {
  it('is byte-identical across runs', async () => {
    for (const sets of [[], ['profile=demo', 'revision=canary']]) {
      const a = toYamlDocuments((await render(sets)).flatMap((m) => m.objects));
      const b = toYamlDocuments((await render(sets)).flatMap((m) => m.objects));
      expect(a).toBe(b);
      expect(a.length).toBeGreaterThan(10_000);
    }
  });

  it('writes the same ConfigMap text whatever order the spec maps come in (the API server hands the operator sorted keys)', async () => {
    const tmp = tmpDir();
    const file = (name: string, body: string): string => tmp.write(name, `apiVersion: install.mesh.io/v1alpha1\nkind: MeshOperator\nspec:\n${body}`);
    const forward = file('forward.yaml', '  meshConfig:\n    trustDomain: example.org\n    accessLogFile: /dev/stdout\n  values:\n    zeta: {b: 1, a: 2}\n    alpha: true\n');
    const backward = file('backward.yaml', '  values:\n    alpha: true\n    zeta: {a: 2, b: 1}\n  meshConfig:\n    accessLogFile: /dev/stdout\n    trustDomain: example.org\n');
    const data = async (f: string) =>
      (await render([], { files: [f] }))
        .flatMap((m) => m.objects)
        .filter((o) => o.kind === 'ConfigMap')
        .map((o) => [o.metadata.name, (o as K8sObject & { data?: unknown }).data]);
    const a = await data(forward);
    expect(a.length).toBeGreaterThanOrEqual(2);
    expect(JSON.stringify(a)).toContain('example.org');
    expect(await data(backward)).toEqual(a);
    tmp.cleanup();
  });

  it('orders each component by kind, then namespace and name', async () => {
    for (const m of await render(['profile=demo'])) {
      const ranks = m.objects.map((o) => KIND_ORDER.indexOf(o.kind));
      expect(ranks.every((r) => r >= 0)).toBe(true);
      expect([...ranks].sort((x, y) => x - y)).toEqual(ranks);
    }
  });

  it('labels every object with its owner, component and revision', async () => {
    for (const [sets, owner, rev] of [
      [[], 'installed-state', 'default'],
      [['revision=canary', 'namespace=mesh-canary'], 'installed-state-canary', 'canary'],
    ] as const) {
      const ms = await render([...sets]);
      const ns = sets.length ? 'mesh-canary' : 'mesh-system';
      for (const m of ms) {
        for (const o of m.objects) {
          expect([o.kind, o.metadata.name, o.metadata.labels]).toEqual([
            o.kind,
            o.metadata.name,
            expect.objectContaining({ [OWNING_RESOURCE_LABEL]: owner, [OWNING_RESOURCE_NAMESPACE_LABEL]: ns, [COMPONENT_LABEL]: m.component, [REVISION_LABEL]: rev }),
          ]);
        }
      }
    }
  });
});

describe('revisions', () => {
  it('suffix the daemon, its config maps and the injection webhook, and select by mesh.io/rev', async () => {
    const ms = await render(['revision=canary']);
    expect(names(ms, 'Deployment')).toEqual(['meshd-canary', 'mesh-ingressgateway']);
    expect(names(ms, 'Service')).toEqual(['meshd-canary', 'mesh-ingressgateway']);
    expect(names(ms, 'ConfigMap')).toEqual(['mesh-canary', 'mesh-sidecar-injector-canary']);
    expect(names(ms, 'MutatingWebhookConfiguration')).toEqual(['mesh-sidecar-injector-canary']);
    expect(names(ms, 'ClusterRole')).toContain('meshd-clusterrole-canary-mesh-system');
    const d = find(ms, 'Deployment', 'meshd-canary');
    expect((d.spec as { selector: unknown }).selector).toEqual({ matchLabels: { app: 'meshd', 'mesh.io/rev': 'canary' } });
    const env = container(d, 'discovery').env;
    expect(env).toEqual(expect.arrayContaining([{ name: 'REVISION', value: 'canary' }, { name: 'INJECTION_WEBHOOK_CONFIG_NAME', value: 'mesh-sidecar-injector-canary' }, { name: 'VALIDATION_WEBHOOK_CONFIG_NAME', value: '' }]));
    const hooks = find(ms, 'MutatingWebhookConfiguration', 'mesh-sidecar-injector-canary').webhooks as Array<{ name: string; namespaceSelector: unknown; clientConfig: { service: { name: string } } }>;
    expect(hooks.map((h) => h.name)).toEqual(['rev.namespace.sidecar-injector.mesh.io', 'rev.object.sidecar-injector.mesh.io']);
    expect(hooks[0].namespaceSelector).toEqual({
      matchExpressions: [
        { key: 'mesh.io/rev', operator: 'In', values: ['canary'] },
        { key: 'mesh-injection', operator: 'DoesNotExist' },
        { key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: ['kube-system', 'kube-public', 'kube-node-lease', 'mesh-system'] },
      ],
    });
    expect(hooks[0].clientConfig.service.name).toBe('meshd-canary');
    // "default" is the default revision: no suffix.
    expect(names(await render(['revision=default']), 'Deployment')).toEqual(['meshd', 'mesh-ingressgateway']);
  });
});

describe('meshd', () => {
  it('runs mesh-discovery discovery with flags and environment that the daemon accepts', async () => {
    const ms = await render(['namespace=mesh-x', 'values.global.logAsJson=true', 'components.meshd.k8s.env[0].name=DISC_PUSH_THROTTLE', 'components.meshd.k8s.env[0].value=50']);
    const c = container(find(ms, 'Deployment', 'meshd'), 'discovery');
    expect(c.command).toEqual(['mesh-discovery']);
    expect(c.args[0]).toBe('discovery');
    const env: Record<string, string> = { POD_NAME: 'meshd-abc', POD_NAMESPACE: 'mesh-x' };
    for (const e of c.env) if (e.value !== undefined) env[e.name] = e.value;
    const { options, env: daemonEnv } = parseDiscoveryArgs(c.args.slice(1), env);
    expect([options.grpcAddr?.port, options.secureGRPCAddr?.port, options.monitoringAddr?.port, options.httpsAddr?.port, options.httpAddr?.port]).toEqual([15010, 15012, 15014, 15017, 8080]);
    expect(options.meshConfig).toBe('/etc/mesh/config/mesh');
    expect(options.log.asJson).toBe(true);
    expect(daemonEnv.DISC_PUSH_THROTTLE).toBe(50);
    // The allocator settings the push path was measured with (src/install/render/runtime-env.ts).
    expect(env.MALLOC_MMAP_THRESHOLD_).toBe('131072');
    expect(env.MALLOC_ARENA_MAX).toBe('2');
    expect(env.NODE_OPTIONS).toBe('--max-semi-space-size=16');
    expect(daemonEnv.INJECTION_WEBHOOK_CONFIG_NAME).toBe('mesh-sidecar-injector');
    expect(daemonEnv.VALIDATION_WEBHOOK_CONFIG_NAME).toBe('mesh-mesh-x');
    expect(c.readinessProbe).toMatchObject({ httpGet: { path: '/ready', port: 8080 } });
    // Liveness on --httpAddr too, on a path served whatever ENABLE_DEBUG_ON_HTTP says.
    expect(c.livenessProbe).toMatchObject({ httpGet: { path: '/healthz', port: 8080 } });
    // Sized from the measured footprint (ADR 0112): idle RSS about 130 MB, bench peaks up to 750 MB.
    expect(c.resources).toEqual({ requests: { cpu: '500m', memory: '256Mi' }, limits: { memory: '2Gi' } });
    expect(c.ports.map((p) => p.containerPort)).toEqual([8080, 15010, 15012, 15014, 15017]);
  });

  it('writes the mesh config the daemon reads, with namespace defaults', async () => {
    const ms = await render(['namespace=mesh-x', 'meshConfig.trustDomain=corp.example', 'meshConfig.defaultConfig.proxyMetadata.foo\\.bar=1']);
    const cm = find(ms, 'ConfigMap', 'mesh');
    expect(cm.metadata.namespace).toBe('mesh-x');
    const mesh = parseMeshConfig((cm.data as { mesh: string }).mesh, 'mesh');
    expect(mesh).toMatchObject({ rootNamespace: 'mesh-x', trustDomain: 'corp.example', defaultConfig: { discoveryAddress: 'meshd.mesh-x.svc:15012', proxyMetadata: { 'foo.bar': '1' } } });
    const injector = find(ms, 'ConfigMap', 'mesh-sidecar-injector').data as { config: string; values: string };
    expect(Object.keys(injector)).toEqual(['config', 'values']);
    expect(JSON.parse(injector.values).global).toMatchObject({ meshNamespace: 'mesh-x', proxyImage: expect.stringMatching(/^docker\.io\/meshproject\/proxy:/) });
  });

  it('may read every config kind, patch its validating configuration by name and the injector configurations (its own and its tags)', async () => {
    const ms = await render();
    const rules = find(ms, 'ClusterRole', 'meshd-clusterrole-mesh-system').rules as Array<{ apiGroups: string[]; resources: string[]; verbs: string[]; resourceNames?: string[] }>;
    for (const k of CONFIG_KINDS) {
      expect(rules.some((r) => r.apiGroups.includes(k.group) && r.resources.includes(k.plural) && r.verbs.includes('watch'))).toBe(true);
    }
    const webhookWrites = rules.filter((r) => r.apiGroups.includes('admissionregistration.k8s.io') && r.verbs.includes('patch'));
    expect(webhookWrites.map((r) => [r.resources, r.resourceNames])).toEqual([
      [['mutatingwebhookconfigurations'], undefined],
      [['validatingwebhookconfigurations'], ['mesh-mesh-system']],
    ]);
    expect(rules.some((r) => r.resources.includes('secrets'))).toBe(false); // secrets only in its namespace (Role)
    const role = find(ms, 'Role', 'meshd');
    expect(role.metadata.namespace).toBe('mesh-system');
    expect(role.rules).toContainEqual(expect.objectContaining({ resources: ['secrets'] }));
  });

  it('may write CertificateSigningRequests only with EXTERNAL_CA=MESHD_RA_CLUSTER_API, and approve only for CLUSTER_SIGNER', async () => {
    type Rule = { apiGroups: string[]; resources: string[]; verbs: string[]; resourceNames?: string[] };
    const csrRules = (ms: readonly ComponentManifest[]): Rule[] =>
      (find(ms, 'ClusterRole', 'meshd-clusterrole-mesh-system').rules as Rule[]).filter((r) => r.apiGroups.includes('certificates.k8s.io'));
    expect(csrRules(await render())).toEqual([]);
    const env = (i: number, name: string, value: string): string[] => [`components.meshd.k8s.env[${i}].name=${name}`, `components.meshd.k8s.env[${i}].value=${value}`];
    const rules = csrRules(await render([...env(0, 'EXTERNAL_CA', 'MESHD_RA_CLUSTER_API'), ...env(1, 'CLUSTER_SIGNER', 'example.com/mesh')]));
    expect(rules).toEqual([
      { apiGroups: ['certificates.k8s.io'], resources: ['certificatesigningrequests'], verbs: ['create', 'get', 'delete'] },
      { apiGroups: ['certificates.k8s.io'], resources: ['certificatesigningrequests/approval'], verbs: ['update'] },
      { apiGroups: ['certificates.k8s.io'], resources: ['signers'], verbs: ['approve'], resourceNames: ['example.com/mesh'] },
    ]);
  });

  it('drops the autoscaler when hpaSpec is removed, and then runs one replica', async () => {
    const ms = await render(['components.meshd.k8s.hpaSpec=null']);
    expect(names(ms, 'HorizontalPodAutoscaler')).toEqual(['mesh-ingressgateway']);
    expect((find(ms, 'Deployment', 'meshd').spec as { replicas?: number }).replicas).toBe(1);
    expect((find(await render(), 'Deployment', 'meshd').spec as { replicas?: number }).replicas).toBeUndefined();
  });
});

describe('gateways', () => {
  it('render per gateway, with its namespace, labels and service settings', async () => {
    const ms = await render([
      'components.ingressGateways[1].name=edge-gw',
      'components.ingressGateways[1].namespace=edge',
      'components.ingressGateways[1].label.mesh=edge',
      'components.ingressGateways[1].k8s.service.type=NodePort',
      'components.ingressGateways[1].k8s.service.ports[0].name=http',
      'components.ingressGateways[1].k8s.service.ports[0].port=80',
      'components.ingressGateways[1].k8s.service.ports[0].targetPort=8080',
    ]);
    const ingress = ms.find((m) => m.component === 'IngressGateways');
    expect(ingress?.objects.map((o) => `${o.kind}:${o.metadata.namespace ?? ''}:${o.metadata.name}`)).toEqual([
      'Namespace::edge',
      'ServiceAccount:edge:edge-gw-service-account',
      'ServiceAccount:mesh-system:mesh-ingressgateway-service-account',
      'Role:edge:edge-gw-sds',
      'Role:mesh-system:mesh-ingressgateway-sds',
      'RoleBinding:edge:edge-gw-sds',
      'RoleBinding:mesh-system:mesh-ingressgateway-sds',
      'Service:edge:edge-gw',
      'Service:mesh-system:mesh-ingressgateway',
      'Deployment:edge:edge-gw',
      'Deployment:mesh-system:mesh-ingressgateway',
      'HorizontalPodAutoscaler:mesh-system:mesh-ingressgateway',
    ]);
    const svc = find(ms, 'Service', 'edge-gw').spec as { type: string; selector: unknown; ports: unknown[] };
    expect(svc).toMatchObject({ type: 'NodePort', selector: { app: 'edge-gw', mesh: 'edge' }, ports: [{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP' }] });
    const c = container(find(ms, 'Deployment', 'edge-gw'), 'mesh-proxy');
    expect(c.ports.map((p) => p.containerPort)).toEqual([15021, 15090, 8080]);
    // the agent reads meshd's address from PROXY_CONFIG (there is no DISCOVERY_ADDRESS variable)
    expect(JSON.parse(c.env.find((e) => e.name === 'PROXY_CONFIG')?.value ?? '{}')).toMatchObject({ discoveryAddress: 'meshd.mesh-system.svc:15012' });
    expect(c.env).toContainEqual({ name: 'CA_ADDR', value: 'meshd.mesh-system.svc:15012' });
    expect(c.env.map((e) => e.name)).not.toContain('DISCOVERY_ADDRESS');
    // meshd reads the credential Secrets of a gateway's namespace (it serves them over SDS), and
    // Secrets nowhere else beyond its own namespace
    const subjects = (name: string): unknown => (find(ms, 'RoleBinding', name) as unknown as { subjects: unknown[] }).subjects;
    expect(subjects('edge-gw-sds')).toEqual([
      { kind: 'ServiceAccount', name: 'edge-gw-service-account', namespace: 'edge' },
      { kind: 'ServiceAccount', name: 'meshd-service-account', namespace: 'mesh-system' },
    ]);
    expect(subjects('mesh-ingressgateway-sds')).toEqual([{ kind: 'ServiceAccount', name: 'mesh-ingressgateway-service-account', namespace: 'mesh-system' }]);
  });
});

describe('overlays', () => {
  const overlay = (i: number, path: string, value?: string) => [`components.meshd.k8s.overlays[0].patches[${i}].path=${path}`, ...(value === undefined ? [] : [`components.meshd.k8s.overlays[0].patches[${i}].value=${value}`])];
  const target = ['components.meshd.k8s.overlays[0].kind=Deployment', 'components.meshd.k8s.overlays[0].name=meshd'];

  it('set, append and delete by path, selecting list items by index or [key:value]', async () => {
    const ms = await render([
      ...target,
      ...overlay(0, 'spec.template.spec.containers.[name:discovery].args.[10]', '--log_output_level=default:debug'),
      ...overlay(1, 'spec.template.spec.containers.[name:discovery].args.[11]', '--clusterApiQPS=20'),
      ...overlay(2, 'spec.template.spec.containers[0].env.[name:ROOT_CA_DIR]'),
      ...overlay(3, 'metadata.labels.team', 'mesh'),
      ...overlay(4, 'spec.template.metadata.annotations.prometheus\\.io/scrape'),
    ]);
    const d = find(ms, 'Deployment', 'meshd');
    const c = container(d, 'discovery');
    expect(c.args.slice(10)).toEqual(['--log_output_level=default:debug', '--clusterApiQPS=20']);
    expect(c.env.map((e) => e.name)).not.toContain('ROOT_CA_DIR');
    expect(d.metadata.labels?.team).toBe('mesh');
    expect((d.spec as { template: { metadata: { annotations: Record<string, string> } } }).template.metadata.annotations).toEqual({ 'prometheus.io/port': '15014' });
    // Other objects are untouched.
    expect(find(ms, 'Service', 'meshd').metadata.labels).not.toHaveProperty('team');
  });

  it('apply to the gateway they belong to', async () => {
    const ms = await render(['components.ingressGateways[0].k8s.overlays[0].kind=Service', 'components.ingressGateways[0].k8s.overlays[0].name=mesh-ingressgateway', 'components.ingressGateways[0].k8s.overlays[0].patches[0].path=spec.ports.[name:https].port', 'components.ingressGateways[0].k8s.overlays[0].patches[0].value=8443']);
    expect((find(ms, 'Service', 'mesh-ingressgateway').spec as { ports: Array<{ name: string; port: number }> }).ports.find((p) => p.name === 'https')?.port).toBe(8443);
  });

  it('name the overlay that cannot be applied', async () => {
    await expect(render(['components.meshd.k8s.overlays[0].kind=Deployment', 'components.meshd.k8s.overlays[0].name=meshd-typo', 'components.meshd.k8s.overlays[0].patches=[]'])).rejects.toThrow(
      'spec.components.meshd.k8s.overlays[0]: component Meshd has no Deployment named "meshd-typo" (Deployment objects: meshd)',
    );
    await expect(render([...target, ...overlay(0, 'spec.template.spec.containers.[name:proxy].args[0]', 'x')])).rejects.toThrow(
      'spec.components.meshd.k8s.overlays[0].patches[0]: path "spec.template.spec.containers.[name:proxy].args[0]" of Deployment meshd: spec.template.spec.containers: no list item with name=proxy (name values: discovery)',
    );
    await expect(render([...target, ...overlay(0, 'spec.template.spec.containers[0].args[30]', 'x')])).rejects.toThrow('index out of range (the list has 11 items; use [11] to append)');
    await expect(render([...target, ...overlay(0, 'metadata.labels.nothere')])).rejects.toThrow('metadata.labels.nothere: nothing to delete there');
  });
});
