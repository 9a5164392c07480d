/**
 * Security policy for proxyless gRPC (docs/adr/0103), decoded with the Envoy protos: server
 * listeners for `xds.NewGRPCServer` under PeerAuthentication (STRICT / PERMISSIVE / DISABLE, with
 * inheritance and port-level settings), the RBAC HTTP filters of AuthorizationPolicies, automatic
 * mutual TLS of proxyless clusters, and the shared encoding of identical listeners. A running daemon's
 * output for a proxyless client and server then passes xds-validate (Envoy's rules).
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { modelFromYaml, TypeUrl, type TestModel } from '../support/model.js';
import { hcmOf } from '../support/decode.js';
import { makeConfigDir, startDaemon, type ConfigDir, type Daemon } from '../support/daemon.js';
import { eventually } from '../support/eventually.js';
import { goToolPath, GO_TOOL_BUILD_TIMEOUT_MS } from '../support/go-tools.js';
import { echoGrpcServiceEntry, grpcProxy } from '../support/grpc-fixtures.js';
import { parseServerListenerName } from '../../src/xds/generators/grpc-server.js';
import { DownstreamTlsContext, UpstreamTlsContext } from '../../src/gen/envoy/extensions/transport_sockets/tls/v3/tls.js';
import { RBAC as HttpRbac } from '../../src/gen/envoy/extensions/filters/http/rbac/v3/rbac.js';
import { RBAC_Action } from '../../src/gen/envoy/config/rbac/v3/rbac.js';
import type { Listener } from '../../src/gen/envoy/config/listener/v3/listener.js';
import type { Cluster } from '../../src/gen/envoy/config/cluster/v3/cluster.js';

const HOST = 'echo-grpc.default.svc.cluster.local';
const PORT = 7070;
const serverName = (addr: string): string => `grpc/server?xds.resource.listening_address=${addr}`;

const server = grpcProxy('echo-grpc-0', '10.0.0.5', { app: 'echo-grpc' });
const client = grpcProxy('client-0', '10.0.0.9', { app: 'client' });

const serviceEntry = (endpoints: string): string => echoGrpcServiceEntry({ host: HOST, port: PORT, identity: 'spiffe://cluster.local/ns/default/sa/echo', endpoints });
const ONE_ENDPOINT = `{ address: 10.0.0.5, ports: { grpc: ${PORT} }, labels: { app: echo-grpc } }`;

const pa = (ns: string, name: string, spec: string): string => `
apiVersion: security.mesh.io/v1
kind: PeerAuthentication
metadata: { name: ${name}, namespace: ${ns} }
spec:
${spec}
`;
const ap = (name: string, spec: string): string => `
apiVersion: security.mesh.io/v1
kind: AuthorizationPolicy
metadata: { name: ${name}, namespace: default }
spec:
${spec}
`;
const docs = (...d: string[]): string => d.join('---');

function serverListener(m: TestModel, addr = `10.0.0.5:${PORT}`, proxy = server): Listener | undefined {
  return m.generate(proxy, TypeUrl.Listener, [serverName(addr)])[0];
}

function chainMode(l: Listener): string {
  expect(l.filterChains).toHaveLength(1);
  const ts = l.filterChains[0].transportSocket;
  if (!ts) return 'plaintext';
  const tls = DownstreamTlsContext.decode(ts.typedConfig!.value);
  expect(tls.requireClientCertificate).toBe(true);
  expect(tls.commonTlsContext?.tlsCertificateProviderInstance).toEqual({ instanceName: 'default', certificateName: 'default' });
  expect(tls.commonTlsContext?.validationContext?.caCertificateProviderInstance).toEqual({ instanceName: 'default', certificateName: 'ROOTCA' });
  return 'mtls';
}

function rbacFilters(l: Listener): Array<{ name: string; config: HttpRbac }> {
  return hcmOf(l)[0]
    .httpFilters.filter((f) => f.name.startsWith('envoy.filters.http.rbac'))
    .map((f) => ({ name: f.name, config: HttpRbac.decode(f.typedConfig!.value) }));
}

function clusterTls(c: Cluster): UpstreamTlsContext | undefined {
  return c.transportSocket?.typedConfig ? UpstreamTlsContext.decode(c.transportSocket.typedConfig.value) : undefined;
}

describe('server listener names', () => {
  it.each([
    ['grpc/server?xds.resource.listening_address=0.0.0.0:8080', { address: '0.0.0.0', port: 8080 }],
    ['grpc/server?xds.resource.listening_address=[::]:80', { address: '::', port: 80 }],
    ['grpc/server?xds.resource.listening_address=10.1.2.3:70000', undefined],
    ['grpc/server?xds.resource.listening_address=host:80', undefined],
    ['echo:80', undefined],
  ])('%s', (name, want) => expect(parseServerListenerName(name)).toEqual(want));
});

describe('proxyless gRPC server listeners', () => {
  it('listen where the server does, with an inline non-forwarding route and only server-side filters', () => {
    const m = modelFromYaml(serviceEntry(ONE_ENDPOINT), { mock: false });
    try {
      const l = serverListener(m)!;
      expect(l.name).toBe(serverName(`10.0.0.5:${PORT}`));
      expect(l.address?.socketAddress).toMatchObject({ address: '10.0.0.5', portValue: PORT });
      expect(l.listenerFilters).toEqual([]);
      expect(l.filterChains[0].filterChainMatch).toBeUndefined();
      const hcm = hcmOf(l)[0];
      expect(hcm.httpFilters.map((f) => f.name)).toEqual(['envoy.filters.http.router']);
      const route = hcm.routeConfig!.virtualHosts[0].routes[0];
      expect(route.nonForwardingAction).toBeDefined();
      expect(route.route).toBeUndefined();
      // nothing set: PERMISSIVE, which a gRPC server takes as plaintext
      expect(chainMode(l)).toBe('plaintext');
      // a name that is no server listener and no service is not answered
      expect(m.generate(server, TypeUrl.Listener, ['grpc/server?xds.resource.listening_address=nonsense'])).toEqual([]);
    } finally {
      m.stop();
    }
  });

  it('follow PeerAuthentication: mesh STRICT inherited, a namespace UNSET keeps it, the workload and a port override it', () => {
    const m = modelFromYaml(docs(serviceEntry(ONE_ENDPOINT), pa('mesh-system', 'default', '  mtls: { mode: STRICT }'), pa('default', 'default', '  mtls: { mode: UNSET }')), { mock: false });
    try {
      expect(chainMode(serverListener(m)!)).toBe('mtls');
      m.apply('workload.yaml', pa('default', 'echo', '  selector: { matchLabels: { app: echo-grpc } }\n  mtls: { mode: DISABLE }'));
      expect(chainMode(serverListener(m)!)).toBe('plaintext');
      m.apply('workload.yaml', pa('default', 'echo', `  selector: { matchLabels: { app: echo-grpc } }\n  portLevelMtls: { ${PORT + 1}: { mode: DISABLE } }`));
      expect(chainMode(serverListener(m)!)).toBe('mtls');
      expect(chainMode(serverListener(m, `10.0.0.5:${PORT + 1}`)!)).toBe('plaintext');
      // another workload of the namespace is not selected
      expect(chainMode(serverListener(m, `10.0.0.6:${PORT + 1}`, grpcProxy('other-0', '10.0.0.6', { app: 'other' }))!)).toBe('mtls');
    } finally {
      m.stop();
    }
  });

  it('carry AuthorizationPolicies as RBAC HTTP filters: DENY before ALLOW, paths and SPIFFE principals', () => {
    const m = modelFromYaml(
      docs(
        serviceEntry(ONE_ENDPOINT),
        ap('deny-unary', '  selector: { matchLabels: { app: echo-grpc } }\n  action: DENY\n  rules: [{ to: [{ operation: { paths: ["/grpc.testing.TestService/UnaryCall"] } }] }]'),
        ap('allow-a', '  selector: { matchLabels: { app: echo-grpc } }\n  rules: [{ from: [{ source: { principals: ["cluster.local/ns/default/sa/client-a"] } }] }]'),
        ap('other', '  selector: { matchLabels: { app: other } }\n  action: DENY\n  rules: [{}]'),
      ),
      { mock: false },
    );
    try {
      const l = serverListener(m)!;
      expect(hcmOf(l)[0].httpFilters.map((f) => f.name)).toEqual(['envoy.filters.http.rbac.deny', 'envoy.filters.http.rbac.allow', 'envoy.filters.http.router']);
      const [deny, allow] = rbacFilters(l);
      expect(deny.config.rules?.action).toBe(RBAC_Action.DENY);
      expect(Object.keys(deny.config.rules!.policies)).toEqual(['ns[default]-policy[deny-unary]-rule[0]']);
      expect(JSON.stringify(deny.config.rules!.policies)).toContain('/grpc.testing.TestService/UnaryCall');
      expect(allow.config.rules?.action).toBe(RBAC_Action.ALLOW);
      expect(JSON.stringify(allow.config.rules!.policies)).toContain('spiffe://cluster.local/ns/default/sa/client-a');
    } finally {
      m.stop();
    }
  });

  it('are encoded once for servers with the same listening address and the same policy', () => {
    const m = modelFromYaml(docs(serviceEntry(ONE_ENDPOINT), pa('mesh-system', 'default', '  mtls: { mode: STRICT }')), { mock: false });
    try {
      const names = [serverName(`0.0.0.0:${PORT}`)];
      const a = m.generateRaw(server, TypeUrl.Listener, names);
      const b = m.generateRaw(grpcProxy('echo-grpc-1', '10.0.0.6', { app: 'echo-grpc' }), TypeUrl.Listener, names);
      expect(a).toHaveLength(1);
      expect(b[0]).toBe(a[0]);
      const other = m.generateRaw(grpcProxy('x-0', '10.0.0.7', { app: 'x' }), TypeUrl.Listener, names);
      expect(other[0].any).toEqual(a[0].any); // same mode, no policies: the same bytes
    } finally {
      m.stop();
    }
  });
});

describe('proxyless gRPC clients: automatic mutual TLS per cluster', () => {
  const cluster = (m: TestModel): Cluster => m.generate(client, TypeUrl.Cluster).find((c) => c.name === `outbound|${PORT}||${HOST}`)!;

  it('mesh TLS from the certificate providers when every endpoint is STRICT, plaintext otherwise', () => {
    const m = modelFromYaml(docs(serviceEntry(ONE_ENDPOINT), pa('default', 'echo', '  selector: { matchLabels: { app: echo-grpc } }\n  mtls: { mode: STRICT }')), { mock: false });
    try {
      const tls = clusterTls(cluster(m))!;
      expect(tls.sni).toBe(`outbound_.${PORT}_._.${HOST}`);
      expect(tls.commonTlsContext?.tlsCertificateProviderInstance).toEqual({ instanceName: 'default', certificateName: 'default' });
      expect(tls.commonTlsContext?.validationContext?.matchSubjectAltNames.map((s) => s.exact)).toEqual(['spiffe://cluster.local/ns/default/sa/echo']);
      // a second endpoint whose workload is not STRICT: gRPC cannot choose per endpoint, plaintext for all
      m.apply('test.yaml', docs(serviceEntry(`${ONE_ENDPOINT}, { address: 10.0.0.6, ports: { grpc: ${PORT} }, labels: { app: legacy } }`), pa('default', 'echo', '  selector: { matchLabels: { app: echo-grpc } }\n  mtls: { mode: STRICT }')));
      expect(cluster(m).transportSocket).toBeUndefined();
      // PERMISSIVE: plaintext, which sidecars and gRPC servers both accept
      m.apply('test.yaml', docs(serviceEntry(ONE_ENDPOINT), pa('default', 'echo', '  selector: { matchLabels: { app: echo-grpc } }\n  mtls: { mode: PERMISSIVE }')));
      expect(cluster(m).transportSocket).toBeUndefined();
    } finally {
      m.stop();
    }
  });

  it('a DestinationRule decides over automatic mutual TLS; enableAutoMtls false turns it off', () => {
    const strict = pa('mesh-system', 'default', '  mtls: { mode: STRICT }');
    const dr = (mode: string): string => `
apiVersion: networking.mesh.io/v1
kind: DestinationRule
metadata: { name: echo-grpc, namespace: default }
spec: { host: ${HOST}, trafficPolicy: { tls: { mode: ${mode} } } }
`;
    const m = modelFromYaml(docs(serviceEntry(ONE_ENDPOINT), strict, dr('DISABLE')), { mock: false });
    try {
      expect(cluster(m).transportSocket).toBeUndefined();
      m.apply('test.yaml', docs(serviceEntry(ONE_ENDPOINT), strict, dr('MESH_MUTUAL')));
      expect(clusterTls(cluster(m))?.commonTlsContext?.tlsCertificateProviderInstance?.instanceName).toBe('default');
    } finally {
      m.stop();
    }
    const off = modelFromYaml(docs(serviceEntry(ONE_ENDPOINT), strict), { mock: false, mesh: { enableAutoMtls: false } });
    try {
      expect(cluster(off).transportSocket).toBeUndefined();
    } finally {
      off.stop();
    }
  });
});

interface Report {
  ok: boolean;
  errors: Array<{ type: string; name: string; message: string }>;
  dump?: Record<string, Record<string, unknown>>;
}

describe('a running daemon serves proxyless security that passes Envoy validation', () => {
  let bin: string;
  let config: ConfigDir;
  let daemon: Daemon;
  let work: string;

  beforeAll(async () => {
    bin = await goToolPath('xds-validate');
    work = await mkdtemp(join(tmpdir(), 'mesh-grpc-validate-'));
    config = await makeConfigDir();
    await config.write(
      'policies.yaml',
      docs(
        serviceEntry(ONE_ENDPOINT),
        pa('mesh-system', 'default', '  mtls: { mode: STRICT }'),
        ap('deny-unary', '  selector: { matchLabels: { app: echo-grpc } }\n  action: DENY\n  rules: [{ to: [{ operation: { paths: ["/grpc.testing.TestService/UnaryCall"] } }] }]'),
        ap('allow-a', '  selector: { matchLabels: { app: echo-grpc } }\n  rules: [{ from: [{ source: { principals: ["cluster.local/ns/default/sa/client-a"], namespaces: [default] } }] }]'),
      ),
    );
    daemon = await startDaemon({ configDir: config.path });
  }, GO_TOOL_BUILD_TIMEOUT_MS);

  afterAll(async () => {
    await daemon?.stop();
    await config?.cleanup();
    if (work) await rm(work, { recursive: true, force: true });
  });

  async function validate(): Promise<Report> {
    const out = join(work, `report-${Date.now()}.json`);
    const args = [
      ...['-addr', daemon.grpcAddr, '-node-id', 'sidecar~10.0.0.5~echo-grpc-0.default~default.svc.cluster.local'],
      ...['-metadata', JSON.stringify({ GENERATOR: 'grpc', NAMESPACE: 'default', LABELS: { app: 'echo-grpc' } })],
      ...['-listeners', `${HOST}:${PORT},${serverName(`10.0.0.5:${PORT}`)}`, '-timeout', '30s', '-dump', '-out', out],
    ];
    await new Promise<void>((resolve) => execFile(bin, args, { timeout: 60_000 }, () => resolve()));
    return JSON.parse(await readFile(out, 'utf8')) as Report;
  }

  it('client listener, route and mTLS cluster, and the STRICT server listener with its RBAC filters', async () => {
    const report = await eventually('a report with the server listener', async () => {
      const r = await validate();
      return r.dump?.['type.googleapis.com/envoy.config.listener.v3.Listener']?.[serverName(`10.0.0.5:${PORT}`)] ? r : undefined;
    }, { timeoutMs: 60_000, intervalMs: 500, diagnostics: () => daemon.logs().slice(-3000) });
    expect(report.errors).toEqual([]);
    expect(report.ok).toBe(true);
    const listeners = report.dump!['type.googleapis.com/envoy.config.listener.v3.Listener'];
    expect(Object.keys(listeners).sort()).toEqual([`${HOST}:${PORT}`, serverName(`10.0.0.5:${PORT}`)]);
    const text = JSON.stringify(listeners[serverName(`10.0.0.5:${PORT}`)]);
    expect(text).toContain('envoy.filters.http.rbac.deny');
    expect(text).toContain('envoy.filters.http.rbac.allow');
    expect(text).toContain('ca_certificate_provider_instance');
    const cluster = JSON.stringify(report.dump!['type.googleapis.com/envoy.config.cluster.v3.Cluster'][`outbound|${PORT}||${HOST}`]);
    expect(cluster).toContain('tls_certificate_provider_instance');
    expect(cluster).toContain('spiffe://cluster.local/ns/default/sa/echo');
  }, 120_000);
});
