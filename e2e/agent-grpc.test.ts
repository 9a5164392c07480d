/**
 * The agent's proxyless gRPC mode (`mesh-agent proxy sidecar --mode grpc`, the grpc-agent template;
 * docs/adr/0091) against a real meshd on the local plane: the agent process, with the args and
 * variables the injector renders and a service-account token from the real TokenRequest API, gets
 * the workload certificate from meshd's certificate service, writes chain, key (0600) and root and
 * the gRPC xDS bootstrap, answers readiness, and writes the files again when the certificate is
 * renewed. A grpc-go server and client (tools/mesh-grpc) started with nothing but that bootstrap
 * file reach meshd's secured port over TLS with those files, get their listener and routes, and a
 * call goes through; SIGTERM stops the agent with code 0.
 *
 * Needs `npm run build` (the daemon and the agent run from dist/) and Go.
 */
import { createPrivateKey, randomBytes, X509Certificate } from 'node:crypto';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fetchText } from '../src/agent/status.js';
import { DEFAULT_INJECTOR_CONFIG, parseInjectionValues } from '../src/inject/config.js';
import { injectPod } from '../src/inject/inject.js';
import type { Container, Pod } from '../src/inject/pod.js';
import { ensureCluster, kubeRequest, readKubeconfig, type KubeconfigCredentials } from '../test/support/cluster.js';
import { freePort, REPO_ROOT, startDaemon, type Daemon } from '../test/support/daemon.js';
import { eventually } from '../test/support/eventually.js';
import { GO_TOOL_BUILD_TIMEOUT_MS, goToolPath } from '../test/support/go-tools.js';
import { kubeletArgs, kubeletEnv } from '../test/support/injected-agent.js';
import { apply, applyCrds, createNamespace, deleteNamespace } from './support/kube.js';
import { startGrpcClient, type GrpcClient } from './support/mesh-grpc.js';
import { requestToken } from './support/workload.js';

const suffix = randomBytes(3).toString('hex');
const meshNs = `mesh-aggr-${suffix}`;
const appNs = `app-aggr-${suffix}`;
const ID = `spiffe://cluster.local/ns/${appNs}/sa/echo`;
// the bundle, as the proxy image runs it (images/proxy.Dockerfile, ADR 0214)
const AGENT_CLI = join(REPO_ROOT, 'dist', 'bin', 'mesh-agent.js');

let creds: KubeconfigCredentials;
let daemon: Daemon | undefined;
let dir: string;
let grpcBin: string;
let secureAddr: string;
let rootPem: string;
let tokenPath: string;
let appPort: number;
const children: ChildProcess[] = [];
const clients: GrpcClient[] = [];

beforeAll(async () => {
  grpcBin = await goToolPath('mesh-grpc');
  const cluster = await ensureCluster();
  creds = await readKubeconfig(cluster.kubeconfig);
  dir = await mkdtemp(join(tmpdir(), 'mesh-agent-grpc-'));
  await applyCrds(creds);
  await createNamespace(creds, meshNs);
  await createNamespace(creds, appNs);
  await apply(creds, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'echo', namespace: appNs } });
  appPort = await freePort();
  // The service the proxyless server serves and the client calls: this process's loopback address.
  await apply(creds, {
    apiVersion: 'networking.mesh.io/v1',
    kind: 'ServiceEntry',
    metadata: { name: 'echo-grpc', namespace: appNs },
    spec: {
      hosts: [`echo-grpc.${appNs}.svc.cluster.local`],
      location: 'MESH_INTERNAL',
      resolution: 'STATIC',
      ports: [{ number: appPort, name: 'grpc', protocol: 'GRPC' }],
      endpoints: [{ address: '127.0.0.1', ports: { grpc: appPort }, labels: { app: 'echo-grpc' } }],
    },
  });
  const port = await freePort();
  secureAddr = `127.0.0.1:${port}`;
  daemon = await startDaemon({
    registries: 'Cluster',
    args: ['--clusterconfig', cluster.kubeconfig, '--secureGRPCAddr', secureAddr],
    // gRPC checks meshd's certificate for the host of its server_uri: `localhost` here.
    env: { ENABLE_CA_SERVER: 'true', POD_NAMESPACE: meshNs, MESHD_CUSTOM_HOST: 'localhost', DEFAULT_WORKLOAD_CERT_TTL: '1h', MAX_WORKLOAD_CERT_TTL: '2h', DISC_ENABLE_STATUS: 'false' },
    readyTimeoutMs: 60_000,
  });
  rootPem = await eventually(
    'mesh-ca-root-cert in the app namespace',
    async () => {
      const res = await kubeRequest(creds, 'GET', `/api/v1/namespaces/${appNs}/configmaps/mesh-ca-root-cert`);
      return res.status === 200 ? (res.body as { data?: Record<string, string> }).data?.['root-cert.pem'] : undefined;
    },
    { timeoutMs: 30_000, intervalMs: 200 },
  );
  tokenPath = join(dir, 'mesh-token');
  await writeFile(tokenPath, await requestToken(creds, appNs, 'echo', ['mesh-ca']), { mode: 0o600 });
}, Math.max(GO_TOOL_BUILD_TIMEOUT_MS, 180_000));

afterAll(async () => {
  await Promise.all(clients.map((c) => c.stop()));
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await daemon?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
  if (creds) {
    await deleteNamespace(creds, appNs);
    await deleteNamespace(creds, meshNs);
  }
}, 60_000);

const diagnostics = (): string => (daemon ? daemon.logs().slice(-4000) : '');

interface Agent {
  readonly child: ChildProcess;
  readonly exit: Promise<number>;
  readonly healthPort: number;
  readonly configDir: string;
  readonly certDir: string;
  stderr(): string;
}

/** dist/bin/mesh-agent.js with the proxy container's args and env from the real grpc-agent template. */
async function startAgent(name: string, labels: Record<string, string>, extraArgs: string[] = []): Promise<Agent> {
  const work = join(dir, name);
  await mkdir(join(work, 'pod'), { recursive: true });
  await writeFile(join(work, 'pod', 'labels'), Object.entries(labels).map(([k, v]) => `${k}="${v}"\n`).join(''));
  await writeFile(join(work, 'root-cert.pem'), rootPem);
  const [healthPort, statusPort] = [await freePort(), await freePort()];
  const p = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: `${name}-0`, namespace: appNs, labels, annotations: { 'inject.mesh.io/templates': 'grpc-agent' } },
    spec: { serviceAccountName: 'echo', containers: [{ name: 'app', image: 'app' }] },
  } as unknown as Pod;
  const discovery = `localhost:${secureAddr.split(':')[1]}`;
  const injected = injectPod(p, appNs, {
    config: DEFAULT_INJECTOR_CONFIG,
    values: parseInjectionValues(JSON.stringify({ global: { meshNamespace: meshNs, discoveryAddress: `meshd.${meshNs}.svc:15012` } })),
    mesh: { trustDomain: 'cluster.local', defaultConfig: { discoveryAddress: discovery, terminationDrainDuration: '1s' } },
    revision: 'default',
    domain: 'cluster.local',
    clusterSupportsNativeSidecars: false,
    probeLocalhost: false,
    legacyFsGroup: false,
  }).pod;
  const proxy = injected.spec!.containers.find((c) => c.name === 'mesh-proxy') as Container;
  const env = { ...kubeletEnv(proxy, { name: `${name}-0`, namespace: appNs, podIP: '127.0.0.1', serviceAccount: 'echo' }), CA_ADDR: discovery };
  const args = kubeletArgs(proxy, env);
  expect(args.slice(0, 3)).toEqual(['proxy', 'sidecar', '--mode=grpc']);
  const configDir = join(work, 'proxy');
  const certDir = join(work, 'data');
  const child = spawn(
    process.execPath,
    [
      AGENT_CLI, ...args,
      // Paths and ports of a local process instead of the pod's mounts.
      '--tokenPath', tokenPath, '--rootCertPath', join(work, 'root-cert.pem'), '--configDir', configDir, '--certDir', certDir,
      '--podInfoDir', join(work, 'pod'), '--statusPort', String(statusPort), '--healthPort', String(healthPort), ...extraArgs,
    ],
    { env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  children.push(child);
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (c: string) => (stderr = (stderr + c).slice(-20_000)));
  const exit = new Promise<number>((r) => child.once('exit', (code, sig) => r(code ?? (sig ? 128 : 1))));
  return { child, exit, healthPort, configDir, certDir, stderr: () => stderr };
}

const ready = (a: Agent): Promise<unknown> =>
  eventually(
    'agent ready',
    async () => {
      const r = await fetchText('127.0.0.1', a.healthPort, '/healthz/ready', 3_000).catch(() => undefined);
      return r?.status === 200 ? r : undefined;
    },
    { timeoutMs: 30_000, intervalMs: 100, diagnostics: () => `agent:\n${a.stderr()}\n${diagnostics()}` },
  );

describe('mesh-agent proxy sidecar --mode grpc', () => {
  it('writes the certificate files and the bootstrap; grpc-go reaches meshd on the secured port with them, gets its configuration and calls through it; SIGTERM stops it', async () => {
    const server = await startAgent('echo-grpc', { app: 'echo-grpc' });
    const client = await startAgent('caller', { app: 'caller' });
    await Promise.all([ready(server), ready(client)]);

    const leaf = new X509Certificate(await readFile(join(server.certDir, 'cert-chain.pem'), 'utf8'));
    expect(leaf.subjectAltName).toContain(ID);
    expect(leaf.checkIssued(new X509Certificate(rootPem))).toBe(true);
    expect(leaf.checkPrivateKey(createPrivateKey(await readFile(join(server.certDir, 'key.pem'), 'utf8')))).toBe(true);
    expect(await readFile(join(server.certDir, 'root-cert.pem'), 'utf8')).toBe(rootPem);
    expect((await stat(join(server.certDir, 'key.pem'))).mode & 0o777).toBe(0o600);
    const bootstrapFile = join(server.configDir, 'grpc-bootstrap.json');
    const boot = JSON.parse(await readFile(bootstrapFile, 'utf8')) as { xds_servers: { server_uri: string; channel_creds: { type: string }[] }[] };
    expect(boot.xds_servers[0]?.channel_creds[0]?.type).toBe('tls');

    // A grpc-go xDS server with only the agent's bootstrap: its listener comes from meshd over TLS.
    const srv = spawn(grpcBin, ['server', '-listen', `127.0.0.1:${appPort}`, '-name', 'echo-grpc'], { env: { PATH: process.env.PATH ?? '', GRPC_XDS_BOOTSTRAP: bootstrapFile }, stdio: ['ignore', 'ignore', 'pipe'] });
    children.push(srv);
    let srvErr = '';
    srv.stderr!.setEncoding('utf8').on('data', (c: string) => (srvErr = (srvErr + c).slice(-20_000)));
    await eventually('server serving by meshd\'s listener', async () => (/^SERVING /m.test(srvErr) ? true : undefined), {
      timeoutMs: 30_000,
      intervalMs: 200,
      diagnostics: () => `server:\n${srvErr}\n${diagnostics()}`,
    });

    // meshd saw the stream on its secured port with the workload certificate the agent wrote.
    expect(daemon!.logs()).toMatch(new RegExp(`ADS: new connection.*conn=sidecar~127\\.0\\.0\\.1~echo-grpc-0\\.${appNs}~.*type=grpc.*identity=${ID.replace(/[.]/g, '\\.')}`));

    // A grpc-go xDS client with the other agent's bootstrap file resolves the service through meshd and is served.
    const env = process.env.GRPC_XDS_BOOTSTRAP;
    process.env.GRPC_XDS_BOOTSTRAP = join(client.configDir, 'grpc-bootstrap.json');
    let c: GrpcClient;
    try {
      c = startGrpcClient(grpcBin, { target: `echo-grpc.${appNs}.svc.cluster.local:${appPort}`, creds: 'xds' });
    } finally {
      if (env === undefined) delete process.env.GRPC_XDS_BOOTSTRAP;
      else process.env.GRPC_XDS_BOOTSTRAP = env;
    }
    clients.push(c);
    const r = await eventually('a call through xDS served', async () => {
      const res = await c.call('unary');
      return res.ok ? res : undefined;
    }, { timeoutMs: 30_000, intervalMs: 300, diagnostics: () => `client:\n${c.stderr()}\nserver:\n${srvErr}\n${diagnostics()}` });
    expect(r.server).toBe('echo-grpc');

    srv.kill('SIGTERM');
    for (const a of [server, client]) {
      a.child.kill('SIGTERM');
      expect(await a.exit).toBe(0);
    }
  }, 120_000);

  it('writes the files again when the certificate is renewed', async () => {
    const a = await startAgent('renew', { app: 'renew' }, ['--secretTtl', '8s', '--secretGracePeriodRatio', '0.5']);
    await ready(a);
    const chain = join(a.certDir, 'cert-chain.pem');
    const first = new X509Certificate(await readFile(chain, 'utf8'));
    const firstKey = await readFile(join(a.certDir, 'key.pem'), 'utf8');
    // The chain is renamed into place last: once it is new, the key beside it is its key.
    const renewed = await eventually('a renewed certificate file', async () => {
      const now = new X509Certificate(await readFile(chain, 'utf8'));
      const key = await readFile(join(a.certDir, 'key.pem'), 'utf8');
      return now.serialNumber !== first.serialNumber && now.checkPrivateKey(createPrivateKey(key)) ? { now, key } : undefined;
    }, { timeoutMs: 20_000, intervalMs: 200, diagnostics: () => `agent:\n${a.stderr()}\n${diagnostics()}` });
    expect(renewed.now.subjectAltName).toContain(ID);
    expect(renewed.key).not.toBe(firstKey);
    expect((await stat(join(a.certDir, 'key.pem'))).mode & 0o777).toBe(0o600);
    a.child.kill('SIGTERM');
    expect(await a.exit).toBe(0);
  }, 60_000);
});
