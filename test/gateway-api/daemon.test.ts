/**
 * The gateway-api support of a running daemon against the local API server: GatewayClass + Gateway
 * + HTTPRoute become a router proxy's listener and weighted routes, and the daemon (as leader) writes
 * their status; DISC_ENABLED_SERVICE_APIS=false reads nothing; without the CRDs the daemon still
 * becomes ready.
 */
import { Listener } from '../../src/gen/envoy/config/listener/v3/listener.js';
import { RouteConfiguration } from '../../src/gen/envoy/config/route/v3/route.js';
import type { KubeObject } from '../../src/kube/types.js';
import { xdsClientNode } from '../../e2e/support/xds-client.js';
import { TypeUrl } from '../../src/xds/types.js';
import { SotwStream } from '../support/ads-client.js';
import { hcmOf } from '../support/decode.js';
import { applyMeshCrds, createNamespace, deleteNamespace, kubeTestEnv, type KubeTestEnv } from '../kube/helpers.js';
import { installGatewayApiCrds, removeGatewayApiCrds, startClusterDaemon, type TestDaemon } from './support.js';
import { eventually } from '../support/eventually.js';

const GW_API = 'gateway.networking.k8s.io/v1';

let env: KubeTestEnv;
let ns: string;
let className: string;
let daemon: TestDaemon | undefined;
let stream: SotwStream | undefined;

interface Cond {
  type: string;
  status: string;
  reason: string;
  message: string;
  observedGeneration?: number;
  lastTransitionTime?: string;
}
interface GatewayState extends KubeObject {
  status?: { conditions?: Cond[]; listeners?: Array<{ name: string; attachedRoutes: number; conditions: Cond[] }> };
}
interface RouteState extends KubeObject {
  status?: { parents?: Array<{ controllerName: string; parentRef: { name: string }; conditions: Cond[] }> };
}

function service(name: string): KubeObject & Record<string, unknown> {
  return { apiVersion: 'v1', kind: 'Service', metadata: { name, namespace: ns }, spec: { selector: { app: name }, ports: [{ name: 'http', port: 80, targetPort: 8080 }] } };
}

function httpRoute(backends: Array<{ name: string; weight: number }>): KubeObject & Record<string, unknown> {
  return {
    apiVersion: GW_API,
    kind: 'HTTPRoute',
    metadata: { name: 'shop', namespace: ns },
    spec: {
      parentRefs: [{ name: 'edge', sectionName: 'http' }],
      hostnames: ['shop.example.com'],
      rules: [{ matches: [{ path: { type: 'PathPrefix', value: '/' } }], backendRefs: backends.map((b) => ({ name: b.name, port: 80, weight: b.weight })) }],
    },
  };
}

function routerNode(): ReturnType<typeof xdsClientNode> {
  return xdsClientNode(`router~10.0.0.9~gw-pod.${ns}~${ns}.svc.cluster.local`, {
    GENERATOR: 'envoy',
    NAMESPACE: ns,
    LABELS: { 'gateway.networking.k8s.io/gateway-name': 'edge' },
  });
}

/** LDS (wildcard) for the router proxy: the listeners it gets. */
async function routerListeners(d: TestDaemon): Promise<Listener[]> {
  stream?.close();
  stream = SotwStream.open(`127.0.0.1:${d.daemon.grpcPort}`);
  stream.sendRequest({ node: routerNode(), typeUrl: TypeUrl.Listener, resourceNames: [] });
  const lds = await stream.nextMatching((r) => r.typeUrl === TypeUrl.Listener, 10_000);
  stream.sendRequest({ typeUrl: TypeUrl.Listener, resourceNames: [], versionInfo: lds.versionInfo, responseNonce: lds.nonce });
  return lds.resources.map((a) => Listener.decode(a.value));
}

async function routeConfig(name: string): Promise<RouteConfiguration> {
  const s = stream!;
  const mark = s.responses.length;
  s.sendRequest({ typeUrl: TypeUrl.Route, resourceNames: [name] });
  const rds = await s.nextMatching((r) => r.typeUrl === TypeUrl.Route, 10_000, mark);
  s.sendRequest({ typeUrl: TypeUrl.Route, resourceNames: [name], versionInfo: rds.versionInfo, responseNonce: rds.nonce });
  return RouteConfiguration.decode(rds.resources[0].value);
}

function daemonEnv(extra: Record<string, string> = {}): Record<string, string> {
  return { POD_NAMESPACE: ns, POD_NAME: `meshd-gwapi-${process.pid}`, DISC_STATUS_UPDATE_INTERVAL: '200ms', ...extra };
}

async function stopDaemon(): Promise<void> {
  stream?.close();
  stream = undefined;
  await daemon?.stop();
  daemon = undefined;
}

beforeAll(async () => {
  env = await kubeTestEnv();
  await applyMeshCrds(env.client);
  await installGatewayApiCrds(env.client);
  ns = await createNamespace(env.client, 'gwapi');
  className = `mesh-${ns}`;
  const c = env.client;
  await c.create(service('web-v1'));
  await c.create(service('web-v2'));
  await c.create({ apiVersion: GW_API, kind: 'GatewayClass', metadata: { name: className }, spec: { controllerName: 'mesh.io/gateway-controller' } } as KubeObject);
  await c.create({
    apiVersion: GW_API,
    kind: 'Gateway',
    metadata: { name: 'edge', namespace: ns },
    spec: { gatewayClassName: className, listeners: [{ name: 'http', port: 80, protocol: 'HTTP', hostname: '*.example.com' }] },
  } as KubeObject);
  await c.create(httpRoute([{ name: 'web-v1', weight: 80 }, { name: 'web-v2', weight: 20 }]));
}, 120_000);

afterAll(async () => {
  await stopDaemon();
  if (env) {
    await env.client.delete({ apiVersion: GW_API, kind: 'GatewayClass', name: className }).catch(() => undefined);
    await deleteNamespace(env.client, ns);
    await removeGatewayApiCrds(env.client).catch(() => undefined);
  }
}, 120_000);

describe('gateway-api in the daemon', () => {
  it('serves the router proxy of a Gateway the HTTPRoute as a virtual host with weighted clusters, and writes status', async () => {
    daemon = await startClusterDaemon(env.cluster.kubeconfig, daemonEnv());
    const listeners = await routerListeners(daemon);
    expect(listeners.map((l) => l.name)).toEqual(['0.0.0.0_80']);
    const rdsName = hcmOf(listeners[0])[0]?.rds?.routeConfigName;
    expect(rdsName).toBe('http.80');
    const rc = await routeConfig(rdsName!);
    const vhost = rc.virtualHosts.find((v) => v.domains.includes('shop.example.com'));
    expect(vhost).toBeDefined();
    const weighted = vhost!.routes[0].route?.weightedClusters?.clusters.map((c) => [c.name, c.weight]);
    expect(weighted).toEqual([
      [`outbound|80||web-v1.${ns}.svc.cluster.local`, 80],
      [`outbound|80||web-v2.${ns}.svc.cluster.local`, 20],
    ]);

    const gw = await eventually(
      'the Gateway status',
      async () => {
        const g = await env.client.get<GatewayState>({ apiVersion: GW_API, kind: 'Gateway', namespace: ns, name: 'edge' });
        return g.status?.conditions?.some((c) => c.type === 'Programmed') && g.status.listeners?.length ? g : undefined;
      },
      { timeoutMs: 30_000 },
    );
    expect(gw.status!.conditions!.map((c) => [c.type, c.status, c.observedGeneration])).toEqual([
      ['Accepted', 'True', 1],
      ['Programmed', 'True', 1],
    ]);
    expect(gw.status!.conditions![0].lastTransitionTime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(gw.status!.listeners!.map((l) => [l.name, l.attachedRoutes])).toEqual([['http', 1]]);

    const route = await eventually(
      'the HTTPRoute status',
      async () => (await env.client.get<RouteState>({ apiVersion: GW_API, kind: 'HTTPRoute', namespace: ns, name: 'shop' })).status?.parents?.[0],
      { timeoutMs: 30_000 },
    );
    expect(route.controllerName).toBe('mesh.io/gateway-controller');
    expect(route.parentRef.name).toBe('edge');
    expect(route.conditions.map((c) => [c.type, c.status, c.reason, c.observedGeneration])).toEqual([
      ['Accepted', 'True', 'Accepted', 1],
      ['ResolvedRefs', 'True', 'ResolvedRefs', 1],
    ]);
    const gc = await eventually(
      'the GatewayClass status',
      async () => (await env.client.get<GatewayState>({ apiVersion: GW_API, kind: 'GatewayClass', name: className })).status?.conditions?.find((c) => c.type === 'Accepted'),
      { timeoutMs: 30_000 },
    );
    expect(gc.status).toBe('True');

    // A backend that does not exist: the route stays, its status says why, the router loses that cluster.
    await env.client.applyObject(httpRoute([{ name: 'web-v1', weight: 1 }, { name: 'missing', weight: 1 }]), { fieldManager: 'mesh-tests', force: true });
    const broken = await eventually(
      'ResolvedRefs=False on the HTTPRoute',
      async () => {
        const p = (await env.client.get<RouteState>({ apiVersion: GW_API, kind: 'HTTPRoute', namespace: ns, name: 'shop' })).status?.parents?.[0];
        return p?.conditions.find((c) => c.type === 'ResolvedRefs' && c.status === 'False' && c.observedGeneration === 2);
      },
      { timeoutMs: 30_000 },
    );
    expect(broken.reason).toBe('BackendNotFound');
    expect(broken.message).toContain(`Service ${ns}/missing not found`);
    await routerListeners(daemon);
    // The status may be written before the debounced push reaches the router: read until it has.
    const expected = `outbound|80||web-v1.${ns}.svc.cluster.local`;
    let cluster: string | undefined;
    for (const deadline = Date.now() + 25_000; Date.now() < deadline && cluster !== expected; ) {
      const after = await routeConfig('http.80').catch(() => undefined);
      cluster = after?.virtualHosts.find((v) => v.domains.includes('shop.example.com'))?.routes[0]?.route?.cluster;
      if (cluster !== expected) await new Promise((r) => setTimeout(r, 200));
    }
    expect(cluster).toBe(expected);
    await stopDaemon();
  }, 120_000);

  it('reads no gateway-api resource with DISC_ENABLED_SERVICE_APIS=false', async () => {
    daemon = await startClusterDaemon(env.cluster.kubeconfig, daemonEnv({ DISC_ENABLED_SERVICE_APIS: 'false' }));
    expect(await routerListeners(daemon)).toEqual([]);
    expect(daemon.logs()).not.toContain('gateway-api: reading');
    await stopDaemon();
  }, 60_000);

  it('becomes ready without the gateway-api CRDs and says so once', async () => {
    await removeGatewayApiCrds(env.client);
    const t0 = Date.now();
    daemon = await startClusterDaemon(env.cluster.kubeconfig, daemonEnv());
    expect(Date.now() - t0).toBeLessThan(60_000);
    expect(daemon.logs().match(/gateway-api: the API server does not serve/g)).toHaveLength(1);
    expect(await routerListeners(daemon)).toEqual([]);
    await stopDaemon();
  }, 150_000);
});
