/**
 * The Envoy bootstrap the agent writes, from the pod the injector renders (its real templates, with
 * the downward API resolved as the kubelet does): the node id and metadata are what meshd parses,
 * the file decodes with the Envoy Bootstrap proto (src/gen), and tools/xds-validate -bootstrap
 * (strict protojson with Envoy's own Go types, protoc-gen-validate rules, references) passes it.
 * Bad settings are refused naming the variable or flag.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { envoyBootstrap, SDS_CLUSTER, XDS_CLUSTER } from '../../src/agent/bootstrap.js';
import { AgentSettingsError, agentSettings, parseDownwardMap, type AgentSettings } from '../../src/agent/settings.js';
import { DEFAULT_INJECTOR_CONFIG, parseInjectionValues, type InjectionInputs } from '../../src/inject/config.js';
import { injectPod } from '../../src/inject/inject.js';
import type { Container, Pod } from '../../src/inject/pod.js';
import { parseProxy } from '../../src/model/proxy.js';
import { Bootstrap } from '../../src/gen/envoy/config/bootstrap/v3/bootstrap.js';
import { UpstreamTlsContext } from '../../src/gen/envoy/extensions/transport_sockets/tls/v3/tls.js';
import { HttpProtocolOptions } from '../../src/gen/envoy/extensions/upstreams/http/v3/http_protocol_options.js';
import { HttpConnectionManager } from '../../src/gen/envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.js';
import { Router } from '../../src/gen/envoy/extensions/filters/http/router/v3/router.js';
import { GO_TOOL_BUILD_TIMEOUT_MS, goToolPath, validateBootstrap, type BootstrapReport } from '../support/go-tools.js';
import { kubeletArgs, kubeletEnv, proxyFlags } from '../support/injected-agent.js';

const inputs: InjectionInputs = {
  config: DEFAULT_INJECTOR_CONFIG,
  values: parseInjectionValues(JSON.stringify({ global: { hub: 'registry.example/mesh', tag: '1.2.3', meshNamespace: 'mesh-system', discoveryAddress: 'meshd.mesh-system.svc:15012' } })),
  mesh: { trustDomain: 'cluster.local' },
  revision: 'default',
  domain: 'cluster.local',
  clusterSupportsNativeSidecars: false,
  probeLocalhost: false,
  legacyFsGroup: false,
};

const pod = (annotations: Record<string, string> = {}, containers?: Container[]): Pod =>
  ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'web-0', namespace: 'shop', labels: { app: 'web', version: 'v2' }, annotations },
    spec: {
      serviceAccountName: 'web',
      containers: containers ?? [{ name: 'web', image: 'nginx', ports: [{ name: 'http', containerPort: 8080 }], readinessProbe: { httpGet: { path: '/ready', port: 'http' as unknown as number } } }],
    },
  }) as Pod;

const FACTS = { name: 'web-0', namespace: 'shop', podIP: '10.1.2.3', serviceAccount: 'web' };

/** The agent's settings for the proxy container of `p` injected with `over` inputs. */
function settingsOf(p: Pod, env: Record<string, string | undefined> = {}, over: Partial<InjectionInputs> = {}): { settings: AgentSettings; proxy: Container } {
  const { pod: out } = injectPod(p, 'shop', { ...inputs, ...over });
  const proxy = out.spec!.containers.find((c) => c.name === 'mesh-proxy') as Container;
  const kenv = { ...kubeletEnv(proxy, FACTS), ...env };
  const { type, flags } = proxyFlags(kubeletArgs(proxy, kenv as Record<string, string>));
  return { settings: agentSettings(type, flags, kenv, parseDownwardMap('app="web"\nversion="v2"\n')), proxy };
}

const ANY_TYPES: Record<string, { fromJSON(o: unknown): unknown; encode(m: never): { finish(): Uint8Array } }> = {
  'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext': UpstreamTlsContext as never,
  'type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions': HttpProtocolOptions as never,
  'type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager': HttpConnectionManager as never,
  'type.googleapis.com/envoy.extensions.filters.http.router.v3.Router': Router as never,
};

/** protojson Any nodes (`@type`) → ts-proto's Any JSON (typeUrl, base64 value of the encoded message). */
function packAnys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(packAnys);
  if (!v || typeof v !== 'object') return v;
  const o = v as Record<string, unknown>;
  const inner = Object.fromEntries(Object.entries(o).filter(([k]) => k !== '@type').map(([k, x]) => [k, packAnys(x)]));
  if (typeof o['@type'] !== 'string') return inner;
  const fns = ANY_TYPES[o['@type']];
  if (!fns) throw new Error(`test: no decoder for ${o['@type']}`);
  return { typeUrl: o['@type'], value: Buffer.from(fns.encode(fns.fromJSON(inner) as never).finish()).toString('base64') };
}

let validator: string;
let dir: string;
beforeAll(async () => {
  validator = await goToolPath('xds-validate');
  dir = await mkdtemp(join(tmpdir(), 'mesh-agent-bootstrap-'));
}, GO_TOOL_BUILD_TIMEOUT_MS);
afterAll(() => rm(dir, { recursive: true, force: true }));

const validate = (name: string, json: unknown): Promise<BootstrapReport> => validateBootstrap(validator, dir, name, json);

describe('the Envoy bootstrap of an injected sidecar', () => {
  const { settings } = settingsOf(pod());
  const socket = '/var/run/secrets/workload-spiffe-uds/socket';
  const json = envoyBootstrap(settings, socket);

  it('names the node the way meshd parses it, with the pod metadata and labels', () => {
    const node = json.node as { id: string; cluster: string; metadata: Record<string, unknown> };
    expect(node.id).toBe('sidecar~10.1.2.3~web-0.shop~shop.svc.cluster.local');
    const proxy = parseProxy(node.id, node.metadata);
    expect(proxy).toMatchObject({ type: 'sidecar', ipAddresses: ['10.1.2.3'], workloadId: 'web-0.shop', namespace: 'shop', dnsDomain: 'shop.svc.cluster.local', clusterId: 'Cluster', serviceAccount: 'web', labels: { app: 'web', version: 'v2' } });
    expect(node.metadata.APP_CONTAINERS).toBe('web');
    expect(node.metadata.WORKLOAD_NAME).toBe('web-0');
    expect(node.cluster).toBe('web-0.shop');
    expect(settings.identity).toBe('spiffe://cluster.local/ns/shop/sa/web');
  });

  it('decodes with the Envoy Bootstrap proto: ADS over TLS to meshd on 15012 with SDS secrets default and ROOTCA from the agent socket, admin on 127.0.0.1:15000', () => {
    const b = Bootstrap.decode(Bootstrap.encode(Bootstrap.fromJSON(packAnys(json))).finish());
    expect(b.admin?.address?.socketAddress).toMatchObject({ address: '127.0.0.1', portValue: 15000 });
    expect(b.dynamicResources?.adsConfig?.grpcServices[0]?.envoyGrpc?.clusterName).toBe(XDS_CLUSTER);
    const clusters = new Map(b.staticResources!.clusters.map((c) => [c.name, c]));
    const xds = clusters.get(XDS_CLUSTER)!;
    expect(xds.loadAssignment?.endpoints[0]?.lbEndpoints[0]?.endpoint?.address?.socketAddress).toMatchObject({ address: 'meshd.mesh-system.svc', portValue: 15012 });
    const tls = UpstreamTlsContext.decode(xds.transportSocket!.typedConfig!.value);
    expect(tls.sni).toBe('meshd.mesh-system.svc');
    expect(tls.commonTlsContext?.tlsCertificateSdsSecretConfigs[0]?.name).toBe('default');
    expect(tls.commonTlsContext?.tlsCertificateSdsSecretConfigs[0]?.sdsConfig?.apiConfigSource?.grpcServices[0]?.envoyGrpc?.clusterName).toBe(SDS_CLUSTER);
    expect(tls.commonTlsContext?.combinedValidationContext?.validationContextSdsSecretConfig?.name).toBe('ROOTCA');
    expect(clusters.get(SDS_CLUSTER)?.loadAssignment?.endpoints[0]?.lbEndpoints[0]?.endpoint?.address?.pipe?.path).toBe(socket);
    expect(b.staticResources!.listeners[0]?.address?.socketAddress?.portValue).toBe(15090);
  });

  it('passes Envoy validation rules and referential integrity (tools/xds-validate -bootstrap)', async () => {
    const r = await validate('sidecar', json);
    expect(r.errors ?? []).toEqual([]);
    expect(r.ok).toBe(true);
    expect(r.resources.references?.sort()).toEqual(['prometheus_stats', 'sds-grpc', 'xds-grpc']);
  });

  it('the validator catches a missing SDS cluster and an unknown field (it can fail)', async () => {
    const broken = structuredClone(json) as { staticResources: { clusters: { name: string }[] } };
    broken.staticResources.clusters = broken.staticResources.clusters.filter((c) => c.name !== SDS_CLUSTER);
    const r = await validate('broken', broken);
    expect(r.ok).toBe(false);
    expect(r.errors.map((e) => e.message).join('\n')).toContain('"sds-grpc" is named by the bootstrap but is not one of its static clusters');
    const unknown = await validate('unknown', { ...json, adminn: {} });
    expect(unknown.ok).toBe(false);
  });

  it('a gateway is a router node; proxyless gRPC is marked GENERATOR=grpc', () => {
    const gw = settingsOf(pod({ 'inject.mesh.io/templates': 'gateway' }, [{ name: 'mesh-proxy', image: 'auto' }])).settings;
    expect(gw.kind).toBe('router');
    expect((envoyBootstrap(gw, socket).node as { id: string }).id).toMatch(/^router~10\.1\.2\.3~/);
    const g = settingsOf(pod({ 'inject.mesh.io/templates': 'grpc-agent' })).settings;
    expect(g.mode).toBe('grpc');
    expect(g.metadata.GENERATOR).toBe('grpc');
  });

  it('the probes and scrape annotations the injector hands over are read', () => {
    expect(settings.appProbers['/app-health/web/readyz']).toEqual({ httpGet: { path: '/ready', port: 8080 } });
  });
});

describe('settings the agent refuses, by name', () => {
  it.each([
    [{ JWT_POLICY: 'first-party-jwt' }, /JWT_POLICY/],
    [{ POD_NAME: undefined }, /POD_NAME: is not set/],
    [{ INSTANCE_IP: 'not-an-ip' }, /INSTANCE_IP/],
    [{ PROXY_CONFIG: '{"discoveryAddress": 7}' }, /PROXY_CONFIG: discoveryAddress/],
    [{ PROXY_CONFIG: '{"tracing": {"sampling": 101}}' }, /PROXY_CONFIG.tracing.sampling: 101 is not a percentage from 0 to 100/],
    [{ PROXY_CONFIG: '{"tracing": {"zipkin": {"address": "zipkin:9411"}}}' }, /PROXY_CONFIG: tracing: Unrecognized key: "zipkin"/],
    [{ MESH_KUBE_APP_PROBERS: '{"/elsewhere": {"httpGet": {"port": 1}}}' }, /MESH_KUBE_APP_PROBERS/],
    [{ REWRITE_PROBE_LEGACY_LOCALHOST_DESTINATION: 'maybe' }, /REWRITE_PROBE_LEGACY_LOCALHOST_DESTINATION/],
  ])('%j', (env, message) => {
    expect(() => settingsOf(pod(), env)).toThrow(AgentSettingsError);
    expect(() => settingsOf(pod(), env)).toThrow(message);
  });

  it('flags: --mode, --log_output_level scopes, --secretTtl', () => {
    const env = kubeletEnv(injectPod(pod(), 'shop', inputs).pod.spec!.containers.find((c) => c.name === 'mesh-proxy')!, FACTS);
    expect(() => agentSettings('sidecar', { mode: 'ambient' }, env)).toThrow(/--mode/);
    expect(agentSettings('sidecar', {}, env).dnsCapture).toBe(false);
    expect(agentSettings('sidecar', {}, { ...env, MESH_META_DNS_CAPTURE: 'True' }).dnsCapture).toBe(true);
    expect(() => agentSettings('sidecar', {}, { ...env, MESH_META_DNS_CAPTURE: '1' })).toThrow(/MESH_META_DNS_CAPTURE: "1" is not true or false/);
    expect(() => agentSettings('sidecar', { mode: 'grpc' }, { ...env, MESH_META_DNS_CAPTURE: 'true' })).toThrow(/MESH_META_DNS_CAPTURE: the DNS proxy is the Envoy sidecar/);
    expect(() => agentSettings('sidecar', { log_output_level: 'cache:debug' }, env)).toThrow(/--log_output_level: scope "cache"/);
    expect(() => agentSettings('sidecar', { proxyComponentLogLevel: 'misc:loud' }, env)).toThrow(/--proxyComponentLogLevel: "misc:loud"/);
    expect(() => agentSettings('sidecar', { caServerName: 'ca example' }, env)).toThrow(/--caServerName/);
    expect(() => agentSettings('sidecar', { secretTtl: 'soon' }, env)).toThrow(/--secretTtl/);
    expect(() => agentSettings('waypoint', {}, env)).toThrow(/proxy type/);
    expect(agentSettings('sidecar', { log_output_level: 'default:debug' }, env).agentLogLevel).toBe('debug');
  });
});

describe('what the injector admits, the agent runs', () => {
  it('tracing defaults of the mesh (sampling, maxPathTagLength) reach meshd in the node metadata', () => {
    const mesh = { trustDomain: 'cluster.local', defaultConfig: { tracing: { sampling: 100, maxPathTagLength: 99 } } };
    const { settings } = settingsOf(pod(), {}, { mesh });
    expect(settings.proxyConfig.tracing).toEqual({ sampling: 100, maxPathTagLength: 99 });
    expect((envoyBootstrap(settings, '/s').node as { metadata: { PROXY_CONFIG: unknown } }).metadata.PROXY_CONFIG).toMatchObject({ tracing: { sampling: 100 } });
  });

  it('the agent log level of the annotation, with the init step\'s capture scope', () => {
    const { settings, proxy } = settingsOf(pod({ 'sidecar.mesh.io/agentLogLevel': 'default:debug,capture:warn' }));
    expect(proxy.args).toContain('--log_output_level=default:debug,capture:warn');
    expect(settings.agentLogLevel).toBe('debug');
  });

  it("the control plane's global.logging.level with meshd's scopes: the agent gets its default level", () => {
    const values = parseInjectionValues(JSON.stringify({ global: { logging: { level: 'default:warn,ads:debug,model:error' } } }));
    const { settings, proxy } = settingsOf(pod(), {}, { values });
    expect(proxy.args).toContain('--log_output_level=default:warn');
    expect(settings.agentLogLevel).toBe('warn');
  });

  it('a certificate service on another host: its own TLS name, meshd keeps its own', () => {
    const values = parseInjectionValues(JSON.stringify({ global: { discoveryAddress: 'meshd.mesh-system.svc:15012', caAddress: 'ca.security.svc:8060' } }));
    const { settings } = settingsOf(pod(), {}, { values });
    expect([settings.caAddress, settings.caServerName, settings.xdsServerName]).toEqual(['ca.security.svc:8060', 'ca.security.svc', 'meshd.mesh-system.svc']);
  });
});
