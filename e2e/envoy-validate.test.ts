/**
 * The configuration an Envoy sidecar or gateway receives passes Envoy's own proto validation rules
 * and is referentially complete, checked by the Go program tools/xds-validate (built from
 * go-control-plane's generated validators) acting as an Envoy-shaped ADS client.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { GO_TOOL_BUILD_TIMEOUT_MS, goToolPath, runXdsValidate } from '../test/support/go-tools.js';
import { makeConfigDir, REPO_ROOT, startDaemon, type ConfigDir, type Daemon } from '../test/support/daemon.js';


interface Report {
  ok: boolean;
  counts: { clusters: number; endpoints: number; listeners: number; routes: number };
  errors: Array<{ type: string; name: string; message: string }>;
  resources: Record<string, string[]>;
}

const GATEWAY = `
apiVersion: networking.mesh.io/v1
kind: Gateway
metadata: { name: public, namespace: mesh-system }
spec:
  selector: { app: mesh-ingressgateway }
  servers:
    - port: { number: 8080, name: http, protocol: HTTP }
      hosts: ["*/echo.example.com", "*/ratings.example.com"]
      tls: { httpsRedirect: false }
    - port: { number: 8443, name: https, protocol: HTTPS }
      hosts: ["*/echo.example.com"]
      tls: { mode: SIMPLE, serverCertificate: /etc/certs/tls.crt, privateKey: /etc/certs/tls.key, minProtocolVersion: TLSV1_2, cipherSuites: [ECDHE-ECDSA-AES128-GCM-SHA256] }
    - port: { number: 9443, name: https-mutual, protocol: HTTPS }
      hosts: ["*/echo.example.com"]
      tls:
        mode: MUTUAL
        serverCertificate: /etc/certs/tls.crt
        privateKey: /etc/certs/tls.key
        caCertificates: /etc/certs/ca.crt
        subjectAltNames: [client.example.com]
        verifyCertificateSpki: [NvqYIYSbgK2vCJpQhObf77vv+bQWtc5ek5RIOwPiC9A=]
    - port: { number: 8444, name: tls-passthrough, protocol: TLS }
      hosts: ["*/tls.example.com"]
      tls: { mode: PASSTHROUGH }
    - port: { number: 15443, name: tls-auto, protocol: TLS }
      hosts: ["*.local"]
      tls: { mode: AUTO_PASSTHROUGH }
    # no Secret source without a cluster: a credential never arrives, so this server has no chain
    - port: { number: 8445, name: https-credential, protocol: HTTPS }
      hosts: ["*/echo.example.com"]
      tls: { mode: SIMPLE, credentialName: echo-cert }
---
apiVersion: networking.mesh.io/v1
kind: VirtualService
metadata: { name: passthrough, namespace: default }
spec:
  hosts: [tls.example.com]
  gateways: [mesh-system/public]
  tls: [{ match: [{ sniHosts: [tls.example.com] }], route: [{ destination: { host: ratings.default.svc.cluster.local, port: { number: 9080 } } }] }]
---
apiVersion: networking.mesh.io/v1
kind: VirtualService
metadata: { name: public, namespace: default }
spec:
  hosts: [echo.example.com, ratings.example.com]
  gateways: [mesh-system/public]
  http:
    - match: [{ uri: { prefix: /ratings }, authority: { exact: ratings.example.com } }]
      route: [{ destination: { host: ratings.default.svc.cluster.local, port: { number: 9080 } } }]
      corsPolicy: { allowOrigins: [{ exact: "https://example.com" }], allowMethods: [GET], maxAge: 24h }
    - match: [{ uri: { regex: "/echo/.*" } }]
      rewrite: { uri: /, authority: echo.internal }
      route: [{ destination: { host: echo.default.svc.cluster.local, subset: v1 } }]
      fault: { delay: { percentage: { value: 10 }, fixedDelay: 50ms } }
      mirror: { host: echo.default.svc.cluster.local, subset: v2 }
      mirrorPercentage: { value: 5 }
      headers: { request: { set: { x-from: gateway } }, response: { remove: [server] } }
    - redirect: { uri: /echo/, redirectCode: 302 }
---
apiVersion: networking.mesh.io/v1
kind: ServiceEntry
metadata: { name: external-api, namespace: default }
spec:
  hosts: [api.example.org]
  location: MESH_EXTERNAL
  resolution: DNS
  ports: [{ number: 443, name: tls, protocol: TLS }]
---
apiVersion: networking.mesh.io/v1
kind: DestinationRule
metadata: { name: ratings, namespace: default }
spec:
  host: ratings
  trafficPolicy:
    connectionPool: { tcp: { maxConnections: 100, connectTimeout: 2s }, http: { http1MaxPendingRequests: 10, maxRequestsPerConnection: 5, idleTimeout: 30s } }
    outlierDetection: { consecutive5xxErrors: 3, interval: 5s, baseEjectionTime: 30s, maxEjectionPercent: 50 }
    tls: { mode: MESH_MUTUAL }
`;

describe('generated Envoy config passes Envoy validation and integrity checks', () => {
  let validator: string;
  let dir: ConfigDir;
  let daemon: Daemon;

  beforeAll(async () => {
    validator = await goToolPath('xds-validate');
    dir = await makeConfigDir();
    await dir.write('routing.yaml', await readFile(join(REPO_ROOT, 'examples/config/routing.yaml'), 'utf8'));
    await dir.write('gateway.yaml', GATEWAY);
    daemon = await startDaemon({ configDir: dir.path, env: { MESH_DELTA_XDS: 'true' } });
  }, GO_TOOL_BUILD_TIMEOUT_MS);

  afterAll(async () => {
    await daemon?.stop();
    await dir?.cleanup();
  });

  async function validate(nodeId: string, metadata: object, extra: string[] = []): Promise<Report> {
    const args = ['-addr', daemon.grpcAddr, '-node-id', nodeId, '-metadata', JSON.stringify(metadata), '-timeout', '15s', ...extra];
    return runXdsValidate<Report>(validator, args);
  }

  it.each([
    ['state of the world', []],
    ['delta', ['-delta']],
  ])('a sidecar (%s) gets valid, complete config', async (_mode, extra) => {
    const report = await validate(
      'sidecar~127.0.0.1~echo-v1-abc.default~default.svc.cluster.local',
      { NAMESPACE: 'default', LABELS: { app: 'echo', version: 'v1' }, CLUSTER_ID: 'Cluster' },
      extra,
    );
    expect(report.errors).toEqual([]);
    expect(report.ok).toBe(true);
    expect(report.counts.clusters).toBeGreaterThan(8);
    expect(report.counts.listeners).toBeGreaterThan(4);
    expect(report.counts.routes).toBeGreaterThanOrEqual(2);
    // services with a VIP have their own route configuration (a filter chain per VIP), the rest share `<port>`
    expect(report.resources['type.googleapis.com/envoy.config.route.v3.RouteConfiguration']).toEqual(
      expect.arrayContaining(['echo.default.svc.cluster.local:7070', '7070']),
    );
    expect(report.counts.endpoints).toBeGreaterThanOrEqual(5);
  }, 60_000);

  it('a gateway gets valid, complete config with its bound routes', async () => {
    const report = await validate('router~127.0.0.1~gw-1.mesh-system~mesh-system.svc.cluster.local', { NAMESPACE: 'mesh-system', LABELS: { app: 'mesh-ingressgateway' } });
    expect(report.errors).toEqual([]);
    expect(report.ok).toBe(true);
    const listeners = report.resources['type.googleapis.com/envoy.config.listener.v3.Listener'];
    expect(listeners).toEqual(['0.0.0.0_15443', '0.0.0.0_8080', '0.0.0.0_8443', '0.0.0.0_8444', '0.0.0.0_9443']);
    // AUTO_PASSTHROUGH's SNI-DNAT clusters, under the names mesh clients put in their SNI
    expect(report.resources['type.googleapis.com/envoy.config.cluster.v3.Cluster']).toContain('outbound_.9080_._.ratings.default.svc.cluster.local');
    expect(report.resources['type.googleapis.com/envoy.config.route.v3.RouteConfiguration']).toContain('http.8080');
  }, 60_000);

  it('no proxy NACKed anything the daemon sent', async () => {
    expect(await daemon.metric('disc_total_xds_rejects')).toBe(0);
  });
});
