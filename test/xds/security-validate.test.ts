/**
 * Security policy as a sidecar receives it from a running daemon, checked by xds-validate (the Go
 * ADS client that decodes every resource and every packed config with the Envoy protos and applies
 * Envoy's validation rules and filter chain checks): STRICT and PERMISSIVE inbound chains, RBAC
 * filters, client TLS on clusters. The policy is edited on the running daemon and the next
 * subscription sees the change.
 */
import { execFile } from 'node:child_process';
import { readFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeConfigDir, startDaemon, type ConfigDir, type Daemon } from '../support/daemon.js';
import { eventually } from '../support/eventually.js';
import { goToolPath, GO_TOOL_BUILD_TIMEOUT_MS, echoSidecarValidateArgs } from '../support/go-tools.js';

const LISTENER = 'type.googleapis.com/envoy.config.listener.v3.Listener';
const CLUSTER = 'type.googleapis.com/envoy.config.cluster.v3.Cluster';

interface Report {
  ok: boolean;
  errors: Array<{ type: string; name: string; message: string }>;
  dump?: Record<string, Record<string, unknown>>;
}

const POLICIES = (mode: string): string => `
apiVersion: security.mesh.io/v1
kind: PeerAuthentication
metadata: { name: default, namespace: mesh-system }
spec:
  mtls: { mode: ${mode} }
---
apiVersion: security.mesh.io/v1
kind: PeerAuthentication
metadata: { name: echo, namespace: default }
spec:
  selector: { matchLabels: { app: echo } }
  portLevelMtls:
    17071: { mode: DISABLE }
---
apiVersion: security.mesh.io/v1
kind: AuthorizationPolicy
metadata: { name: allow-frontend, namespace: default }
spec:
  selector: { matchLabels: { app: echo } }
  rules:
    - from: [{ source: { principals: ["cluster.local/ns/web/sa/*"], namespaces: [web] } }]
      to: [{ operation: { methods: [GET], paths: ["/api/*"], ports: ["19080"] } }]
      when: [{ key: "request.headers[x-team]", values: [blue] }, { key: source.ip, notValues: [10.0.0.0/8] }]
---
apiVersion: security.mesh.io/v1
kind: AuthorizationPolicy
metadata: { name: deny-admin, namespace: default, annotations: { "mesh.io/dry-run": "false" } }
spec:
  selector: { matchLabels: { app: echo } }
  action: DENY
  rules:
    - to: [{ operation: { paths: ["/admin/*"], hosts: ["*.example.com"] } }]
    - from: [{ source: { ipBlocks: [192.168.0.0/16], notServiceAccounts: [default/echo] } }]
---
apiVersion: security.mesh.io/v1
kind: AuthorizationPolicy
metadata: { name: audit, namespace: mesh-system }
spec:
  action: AUDIT
  rules: [{ to: [{ operation: { methods: [DELETE] } }] }]
---
apiVersion: networking.mesh.io/v1
kind: DestinationRule
metadata: { name: echo, namespace: default }
spec:
  host: echo.default.svc.cluster.local
  trafficPolicy: { tls: { mode: MESH_MUTUAL } }
  subsets: [{ name: v1, labels: { version: v1 } }]
---
apiVersion: networking.mesh.io/v1
kind: DestinationRule
metadata: { name: ratings, namespace: default }
spec:
  host: ratings.default.svc.cluster.local
  trafficPolicy: { tls: { mode: MUTUAL, clientCertificate: /etc/c.pem, privateKey: /etc/k.pem, caCertificates: /etc/ca.pem, subjectAltNames: [ratings.example.com] } }
`;

describe('security policy through a running daemon, validated as Envoy would', () => {
  let bin: string;
  let config: ConfigDir;
  let daemon: Daemon;
  let work: string;

  beforeAll(async () => {
    bin = await goToolPath('xds-validate');
    work = await mkdtemp(join(tmpdir(), 'mesh-security-validate-'));
    config = await makeConfigDir();
    await config.write('policies.yaml', POLICIES('STRICT'));
    daemon = await startDaemon({ configDir: config.path });
  }, GO_TOOL_BUILD_TIMEOUT_MS);

  afterAll(async () => {
    await daemon?.stop();
    await config?.cleanup();
    if (work) await rm(work, { recursive: true, force: true });
  });

  async function validate(): Promise<Report> {
    const out = join(work, `report-${Date.now()}.json`);
    const args = echoSidecarValidateArgs(daemon.grpcAddr, ['-out', out]);
    await new Promise<void>((resolve) => execFile(bin, args, { timeout: 60_000 }, () => resolve()));
    return JSON.parse(await readFile(out, 'utf8')) as Report;
  }

  type Chain = { name?: string; filter_chain_match?: { destination_port?: number; transport_protocol?: string }; transport_socket?: { name: string } };
  const inboundOf = (r: Report): { filter_chains: Chain[]; default_filter_chain: Chain; listener_filters: Array<{ name: string }> } =>
    r.dump![LISTENER].virtualInbound as never;

  it('serves STRICT inbound TLS, RBAC filters and client TLS that pass Envoy validation', async () => {
    const report = await validate();
    expect(report.errors).toEqual([]);
    expect(report.ok).toBe(true);
    const inbound = inboundOf(report);
    const port = (p: number): Chain[] => inbound.filter_chains.filter((c) => c.filter_chain_match?.destination_port === p);
    expect(port(17070).map((c) => c.transport_socket?.name)).toEqual(['envoy.transport_sockets.tls']);
    expect(port(17071).map((c) => c.transport_socket?.name)).toEqual([undefined]); // port-level DISABLE
    expect(inbound.default_filter_chain.transport_socket?.name).toBe('envoy.transport_sockets.tls');
    const text = JSON.stringify(inbound);
    expect(text).toContain('envoy.filters.http.rbac.allow');
    expect(text).toContain('envoy.filters.network.rbac.deny');
    expect(text).toContain('envoy.filters.http.rbac.audit');
    const clusters = report.dump![CLUSTER];
    expect(JSON.stringify(clusters['outbound|7070|v1|echo.default.svc.cluster.local'])).toContain('outbound_.7070_.v1_.echo.default.svc.cluster.local');
    expect(JSON.stringify(clusters['outbound|9080||ratings.default.svc.cluster.local'])).toContain('/etc/c.pem');
    // what the translation changes is logged: the ALLOW rule needs HTTP attributes, so TCP ports drop it
    expect(daemon.logs()).toContain('policy: AuthorizationPolicy default/allow-frontend: rule 0 uses HTTP-only attributes (to.methods, to.paths, when[request.headers[x-team]]): on TCP ports the rule is dropped');
  }, 120_000);

  it('turns to PERMISSIVE when the mesh-wide policy is edited, still valid', async () => {
    await config.write('policies.yaml', POLICIES('PERMISSIVE'));
    const report = await eventually(
      'port 17070 of the inbound listener to have the three PERMISSIVE chains',
      async () => {
        const r = await validate();
        const chains = inboundOf(r).filter_chains.filter((c) => c.filter_chain_match?.destination_port === 17070);
        return chains.length === 3 ? r : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 500, diagnostics: () => daemon.logs().slice(-4000) },
    );
    expect(report.errors).toEqual([]);
    expect(report.ok).toBe(true);
    const inbound = inboundOf(report);
    expect(inbound.listener_filters.map((f) => f.name)).toContain('envoy.filters.listener.tls_inspector');
    expect(inbound.default_filter_chain.transport_socket).toBeUndefined();
  }, 120_000);

  it('leaves authorization out with --plugins naming no authz, and refuses an unknown plugin by name', async () => {
    const bare = await startDaemon({ configDir: config.path, args: ['--plugins=authn,ext_authz'] });
    try {
      const saved = daemon;
      daemon = bare;
      try {
        const report = await validate();
        expect(report.ok).toBe(true);
        expect(JSON.stringify(inboundOf(report))).not.toContain('rbac');
      } finally {
        daemon = saved;
      }
    } finally {
      await bare.stop();
    }
    await expect(startDaemon({ configDir: config.path, args: ['--plugins=authz,opa'] })).rejects.toThrow(/--plugins: unknown plugin opa \(known: ext_authz, authn, authz\)/);
  }, 120_000);
});
