/**
 * Security policy on proxyless gRPC end to end (docs/adr/0103): a grpc-go server through its xDS
 * server API (`xds.NewGRPCServer`, xDS server credentials) and grpc-go clients with xDS credentials,
 * each with a bootstrap whose certificate provider is a file watcher over certificates the daemon's
 * certificate service issued (a first certificate from the CA directory of a daemon without
 * cluster, renewed over the secured port, as e2e/identity-options does). Every step edits a policy
 * file on the running daemon and waits for the running programs to behave accordingly.
 *
 * Needs `npm run build` and Go (tools/mesh-grpc, tools/mesh-workload).
 */
import { execFile } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort, makeConfigDir, startDaemon, type ConfigDir, type Daemon } from '../test/support/daemon.js';
import { eventually } from '../test/support/eventually.js';
import { GO_TOOL_BUILD_TIMEOUT_MS, goToolPath } from '../test/support/go-tools.js';
import { grpcBootstrap, startGrpcClient, startGrpcServer, type CallResult, type GrpcClient, type GrpcServer } from './support/mesh-grpc.js';
import { runWorkload } from './support/workload.js';
import { echoGrpcServiceEntry } from '../test/support/grpc-fixtures.js';

const run = promisify(execFile);
const NS = 'default';
const HOST = `echo-grpc.${NS}.svc.cluster.local`;
const id = (sa: string): string => `spiffe://cluster.local/ns/${NS}/sa/${sa}`;
const UNARY = '/grpc.testing.TestService/UnaryCall';

let grpcBin: string;
let workloadBin: string;
let tmp: string;
let config: ConfigDir;
let daemon: Daemon;
let port: number;
let server: GrpcServer;
const clients: GrpcClient[] = [];
let plaintext: GrpcClient;
let clientA: GrpcClient;
let clientB: GrpcClient;
let secure: string;

/** A certificate for `sa` from the certificate service: bootstrap from the CA directory, then renewal over the secured port. */
async function issue(sa: string, secure: string): Promise<string> {
  const first = join(tmp, `${sa}-first`);
  await run(process.execPath, ['scripts/workload-cert.mjs', '--ca-dir', join(config.path, '.mesh-ca'), '--identity', id(sa), '--out', first]);
  const dir = join(tmp, sa);
  await mkdir(dir);
  await copyFile(join(first, 'root-cert.pem'), join(dir, 'root-cert.pem'));
  const r = await runWorkload(workloadBin, [
    'cert', '-addr', secure, '-root', join(first, 'root-cert.pem'), '-cert', join(first, 'cert-chain.pem'), '-key', join(first, 'key.pem'),
    '-identity', id(sa), '-out-cert', join(dir, 'cert-chain.pem'), '-out-key', join(dir, 'key.pem'),
  ]);
  if (!r.ok) throw new Error(`certificate for ${sa}: ${JSON.stringify(r)}`);
  return dir;
}

const node = (pod: string): string => `sidecar~127.0.0.1~${pod}.${NS}~${NS}.svc.cluster.local`;

async function xdsClient(sa: string, secure: string): Promise<GrpcClient> {
  const bootstrap = grpcBootstrap({ xdsAddr: daemon.grpcAddr, nodeId: node(`${sa}-0`), namespace: NS, labels: { app: sa }, certs: { dir: await issue(sa, secure) } });
  const c = startGrpcClient(grpcBin, { target: `${HOST}:${port}`, creds: 'xds', bootstrap });
  clients.push(c);
  return c;
}

const serviceEntry = (): string => echoGrpcServiceEntry({ host: HOST, port, namespace: NS, identity: id('echo'), endpoints: `{ address: 127.0.0.1, ports: { grpc: ${port} }, labels: { app: echo-grpc } }` });

/** Mesh-wide STRICT in the root namespace; `workload` overrides it for the server (inheritance). */
const peerAuthn = (mesh: string, workload?: string): string => `
apiVersion: security.mesh.io/v1
kind: PeerAuthentication
metadata: { name: default, namespace: mesh-system }
spec: { mtls: { mode: ${mesh} } }
${workload ? `---
apiVersion: security.mesh.io/v1
kind: PeerAuthentication
metadata: { name: echo-grpc, namespace: ${NS} }
spec:
  selector: { matchLabels: { app: echo-grpc } }
  mtls: { mode: ${workload} }
` : ''}`;

const authz = (action: string, rule: string): string => `
apiVersion: security.mesh.io/v1
kind: AuthorizationPolicy
metadata: { name: echo-grpc, namespace: ${NS} }
spec:
  selector: { matchLabels: { app: echo-grpc } }
  action: ${action}
  rules: [${rule}]
`;

const diagnostics = (): string =>
  `daemon:\n${daemon.logs().slice(-3000)}\nserver:\n${server?.stderr().slice(-2000)}\n${clients.map((c, i) => `client ${i}:\n${c.stderr().slice(-1500)}`).join('\n')}`;

/** Calls until every expectation holds at once (the programs follow the daemon's push on their own time). */
async function until(what: string, checks: ReadonlyArray<[GrpcClient, 'empty' | 'unary', (r: CallResult) => boolean]>): Promise<CallResult[]> {
  let last: CallResult[] = [];
  return eventually(
    what,
    async () => {
      last = await Promise.all(checks.map(([c, m]) => c.call(m)));
      return last.every((r, i) => checks[i][2](r)) ? last : undefined;
    },
    { timeoutMs: 30_000, intervalMs: 200, diagnostics: () => `last results: ${JSON.stringify(last)}\n${diagnostics()}` },
  );
}

const served = (security?: string) => (r: CallResult): boolean => r.ok && (security === undefined || r.security === security);
const refused = (code: string) => (r: CallResult): boolean => !r.ok && r.code === code;

beforeAll(async () => {
  [grpcBin, workloadBin] = await Promise.all([goToolPath('mesh-grpc'), goToolPath('mesh-workload')]);
  tmp = await mkdtemp(join(tmpdir(), 'mesh-grpc-security-'));
  config = await makeConfigDir();
  port = await freePort();
  await config.write('service.yaml', serviceEntry());
  await config.write('peer-authn.yaml', peerAuthn('PERMISSIVE'));
  secure = `127.0.0.1:${await freePort()}`;
  daemon = await startDaemon({ configDir: config.path, args: ['--secureGRPCAddr', secure], env: { ENABLE_CA_SERVER: 'true' } });
  const serverCerts = await issue('echo', secure);
  server = await startGrpcServer(
    grpcBin,
    `127.0.0.1:${port}`,
    'echo-grpc',
    grpcBootstrap({ xdsAddr: daemon.grpcAddr, nodeId: node('echo-grpc-0'), namespace: NS, labels: { app: 'echo-grpc' }, certs: { dir: serverCerts } }),
  );
  plaintext = startGrpcClient(grpcBin, { target: `127.0.0.1:${port}`, creds: 'insecure' });
  clients.push(plaintext);
  clientA = await xdsClient('client-a', secure);
  clientB = await xdsClient('client-b', secure);
}, GO_TOOL_BUILD_TIMEOUT_MS);

afterAll(async () => {
  await Promise.all(clients.map((c) => c.stop()));
  await server?.stop();
  await daemon?.stop();
  await config?.cleanup();
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

describe('proxyless gRPC under security policy', () => {
  it('PERMISSIVE: a plaintext client and an xDS client are both served', async () => {
    await until('both clients served', [
      [plaintext, 'unary', served('insecure')],
      [clientA, 'unary', served()],
    ]);
  }, 60_000);

  it('STRICT: the plaintext client is refused, the xDS clients switch to mutual TLS and are served', async () => {
    await config.write('peer-authn.yaml', peerAuthn('STRICT'));
    const [, a] = await until('plaintext refused, mTLS served', [
      [plaintext, 'unary', refused('Unavailable')],
      [clientA, 'unary', served('tls')],
      [clientB, 'unary', served('tls')],
    ]);
    expect(a.server).toBe('echo-grpc');
  }, 60_000);

  it('PERMISSIVE for the workload over a STRICT mesh serves both again', async () => {
    await config.write('peer-authn.yaml', peerAuthn('STRICT', 'PERMISSIVE'));
    await until('both served', [
      [plaintext, 'unary', served('insecure')],
      [clientA, 'unary', served()],
    ]);
    await config.write('peer-authn.yaml', peerAuthn('STRICT'));
    await until('back to STRICT', [
      [plaintext, 'unary', refused('Unavailable')],
      [clientA, 'unary', served('tls')],
    ]);
  }, 90_000);

  it('an AuthorizationPolicy DENY on a path returns PERMISSION_DENIED for that path only', async () => {
    await config.write('authz.yaml', authz('DENY', `{ to: [{ operation: { paths: ["${UNARY}"] } }] }`));
    const [denied] = await until('UnaryCall denied, EmptyCall served', [
      [clientA, 'unary', refused('PermissionDenied')],
      [clientA, 'empty', served()],
    ]);
    expect(denied.message).toMatch(/deny policy "ns\[default\]-policy\[echo-grpc\]-rule\[0\]"/);
  }, 60_000);

  it('an ALLOW by principal admits only that identity', async () => {
    await config.write('authz.yaml', authz('ALLOW', `{ from: [{ source: { principals: ["cluster.local/ns/${NS}/sa/client-a"] } }] }`));
    await until('client-a served, client-b denied', [
      [clientA, 'unary', served('tls')],
      [clientB, 'unary', refused('PermissionDenied')],
    ]);
    await config.remove('authz.yaml');
    await until('client-b served once the policy is gone', [[clientB, 'unary', served('tls')]]);
  }, 90_000);

  it('a DestinationRule with TLS DISABLE toward the STRICT server: a client connecting afterwards fails as unavailable; removing the rule recovers', async () => {
    await config.write('dr.yaml', `
apiVersion: networking.mesh.io/v1
kind: DestinationRule
metadata: { name: echo-grpc, namespace: ${NS} }
spec: { host: ${HOST}, trafficPolicy: { tls: { mode: DISABLE } } }
`);
    // grpc-go applies a cluster's security to new connections: established mTLS connections keep
    // serving until they reconnect, so the check is a client that connects after the edit
    await eventually('the DestinationRule pushed', () => daemon.logs().includes('kinds=["DestinationRule"]'), { timeoutMs: 20_000, diagnostics });
    const late = await xdsClient('client-c', secure);
    const [failed] = await until('the new client unavailable', [[late, 'unary', refused('Unavailable')]]);
    expect(failed.message).toMatch(/connection|EOF|handshake|closed|reset/i);
    await config.remove('dr.yaml');
    await until('the new client served over mTLS once the rule is gone', [[late, 'unary', served('tls')]]);
  }, 90_000);

  it.each(['SIMPLE', 'MUTUAL'])('a DestinationRule %s toward the STRICT server: grpc-go takes the cluster (no NACK) and, presenting no certificate, is refused (ADR 0154)', async (mode) => {
    const rejectsBefore = await daemon.metric('disc_total_xds_rejects');
    await config.write('dr.yaml', `
apiVersion: networking.mesh.io/v1
kind: DestinationRule
metadata: { name: echo-grpc, namespace: ${NS} }
spec: { host: ${HOST}, trafficPolicy: { tls: { mode: ${mode}, caCertificates: /etc/ca.pem, clientCertificate: /etc/c.pem, privateKey: /etc/k.pem, subjectAltNames: ["${id('echo')}"] } } }
`.replace(mode === 'SIMPLE' ? ', clientCertificate: /etc/c.pem, privateKey: /etc/k.pem' : '', ''));
    // the snapshot with the rule is built when its line is logged; a client connecting afterwards gets it
    await eventually('the DestinationRule in the snapshot', () => daemon.logs().includes(`tls.mode ${mode}: proxyless gRPC clients cannot load certificate files or Secrets`), { timeoutMs: 20_000, diagnostics });
    const late = await xdsClient(`client-${mode.toLowerCase()}`, secure);
    await until('the new client refused by the STRICT server', [[late, 'unary', refused('Unavailable')]]);
    expect(await daemon.metric('disc_total_xds_rejects')).toBe(rejectsBefore);
    await config.remove('dr.yaml');
    await until('the new client served over mTLS once the rule is gone', [[late, 'unary', served('tls')]]);
  }, 90_000);
});
