/**
 * The sidecar agent's certificate client (src/agent/certificates.ts) against a real meshd on the
 * local plane: the daemon's built-in CA serves the certificate service on its secured port, the
 * agent proves who it is with a service-account token from the real TokenRequest API (audience
 * mesh-ca), verifies meshd with the mesh root from mesh-ca-root-cert, gets an ECDSA P-256
 * certificate that openssl verifies, and renews it before it expires with the certificate it holds.
 * Failures are retried a bounded number of times; refusals are not retried and name the status.
 * Then the agent's SDS server serves that certificate on a Unix socket to a real gRPC client
 * (grpc-js, Envoy's SecretDiscoveryService protocol, state of the world and delta), which decodes
 * the Secret protos and receives the renewed certificate without asking again. Last, the mesh-agent
 * process as the sidecar template runs it: the certificate and root it serves over SDS, with the
 * node id of the bootstrap it wrote, open an ADS stream on meshd's secured port (grpc-go,
 * tools/mesh-workload); Envoy itself is a stand-in for the process-supervision parts only.
 *
 * Needs `npm run build` (the daemon runs from dist/).
 */
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import * as grpc from '@grpc/grpc-js';
import pino from 'pino';
import { SDS_SERVICE_DEFINITION, SECRET_TYPE_URL, SdsServer } from '../src/agent/sds.js';
import { Secret } from '../src/gen/envoy/extensions/transport_sockets/tls/v3/secret.js';
import { DeltaDiscoveryRequest, DeltaDiscoveryResponse, DiscoveryRequest, DiscoveryResponse } from '../src/gen/envoy/service/discovery/v3/discovery.js';
import { CertificateManager, type CertificateManagerOptions, type WorkloadCertificate } from '../src/agent/certificates.js';
import { parseCertificatePem } from '../src/ca/x509.js';
import { fetchText } from '../src/agent/status.js';
import { DEFAULT_INJECTOR_CONFIG, parseInjectionValues } from '../src/inject/config.js';
import { injectPod } from '../src/inject/inject.js';
import type { Container, Pod } from '../src/inject/pod.js';
import { kubeletArgs, kubeletEnv } from '../test/support/injected-agent.js';
import { ensureCluster, kubeRequest, readKubeconfig, type KubeconfigCredentials } from '../test/support/cluster.js';
import { freePort, REPO_ROOT, startDaemon, type Daemon } from '../test/support/daemon.js';
import { eventually } from '../test/support/eventually.js';
import { openssl, opensslWorkspace, type OpensslWorkspace } from '../test/support/openssl.js';
import { applyCrds, createNamespace, deleteNamespace, apply } from './support/kube.js';
import { requestToken, runWorkload } from './support/workload.js';
import { GO_TOOL_BUILD_TIMEOUT_MS, goToolPath } from '../test/support/go-tools.js';

const suffix = randomBytes(3).toString('hex');
const meshNs = `mesh-agca-${suffix}`;
const appNs = `app-agca-${suffix}`;
const ID = `spiffe://cluster.local/ns/${appNs}/sa/echo`;

let creds: KubeconfigCredentials;
let daemon: Daemon | undefined;
let dir: string;
let ws: OpensslWorkspace;
let secureAddr: string;
let rootPem: string;
let tokenPath: string;
const managers: CertificateManager[] = [];
const log = pino({ level: 'silent' });

const options = (over: Partial<CertificateManagerOptions> = {}): CertificateManagerOptions => ({
  ca: { address: secureAddr, serverName: `meshd.${meshNs}.svc`, timeoutMs: 10_000 },
  identity: ID,
  readToken: () => readFile(tokenPath, 'utf8'),
  readRoots: async () => rootPem,
  ttlSeconds: 3600,
  graceRatio: 0.5,
  jitterRatio: 0.1,
  retry: { attempts: 3, initialDelayMs: 100, maxDelayMs: 400 },
  rootPollMs: 60_000,
  log,
  ...over,
});

const manager = (over: Partial<CertificateManagerOptions> = {}): CertificateManager => {
  const m = new CertificateManager(options(over));
  managers.push(m);
  return m;
};

beforeAll(async () => {
  const cluster = await ensureCluster();
  creds = await readKubeconfig(cluster.kubeconfig);
  dir = await mkdtemp(join(tmpdir(), 'mesh-agent-ca-'));
  ws = await opensslWorkspace();
  await applyCrds(creds);
  await createNamespace(creds, meshNs);
  await createNamespace(creds, appNs);
  await apply(creds, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'echo', namespace: appNs } });
  secureAddr = `127.0.0.1:${await freePort()}`;
  daemon = await startDaemon({
    registries: 'Cluster',
    args: ['--clusterconfig', cluster.kubeconfig, '--secureGRPCAddr', secureAddr],
    env: { ENABLE_CA_SERVER: 'true', POD_NAMESPACE: meshNs, DEFAULT_WORKLOAD_CERT_TTL: '1h', MAX_WORKLOAD_CERT_TTL: '2h', DISC_ENABLE_STATUS: 'false' },
    readyTimeoutMs: 60_000,
  });
  // The root as a pod sees it: the mesh-ca-root-cert ConfigMap the daemon keeps in the app namespace.
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
}, 120_000);

afterAll(async () => {
  for (const m of managers) m.stop();
  await daemon?.stop();
  await ws?.cleanup();
  if (dir) await rm(dir, { recursive: true, force: true });
  if (creds) {
    await deleteNamespace(creds, appNs);
    await deleteNamespace(creds, meshNs);
  }
}, 60_000);

const diagnostics = (): string => (daemon ? daemon.logs().slice(-4000) : '');

describe('the agent certificate client', () => {
  it('gets an ECDSA P-256 certificate for the pod identity with the projected token; openssl verifies it against the mesh root', async () => {
    const vias: string[] = [];
    const m = manager({ onRenewal: (result, via) => vias.push(`${result}:${via}`) });
    const cert = await m.start();
    expect(vias).toEqual(['success:token']);
    const leaf = parseCertificatePem(cert.certChainPem);
    expect(leaf.altNames.uris).toEqual([ID]);
    expect(leaf.x509.publicKey.asymmetricKeyDetails?.namedCurve).toBe('prime256v1');
    expect(Math.abs(cert.notAfter.getTime() - Date.now() - 3600_000)).toBeLessThan(60_000);
    const v = await ws.verify(cert.certChainPem, cert.rootPem, { purpose: 'sslclient' });
    expect(v.stderr).toBe('');
    expect(v.code).toBe(0);
    // The key matches the leaf, and the served chain leaves out the root.
    expect(cert.keyPem).toContain('BEGIN PRIVATE KEY');
    expect(cert.certChainPem).not.toContain(rootPem.trim());
  });

  it('renews before expiry (at the grace ratio of the lifetime, with jitter) using the certificate it holds', async () => {
    const vias: string[] = [];
    const m = manager({ ttlSeconds: 6, graceRatio: 0.5, jitterRatio: 0.1, onRenewal: (result, via) => vias.push(`${result}:${via}`) });
    const seen: WorkloadCertificate[] = [];
    m.onChange((c) => seen.push(c));
    const first = await m.start();
    // The CA backdates notBefore; the lifetime counts from receipt.
    const lifetime = first.notAfter.getTime() - first.receivedAt.getTime();
    expect(lifetime).toBeLessThanOrEqual(6_000 + 1_000);
    expect(lifetime).toBeGreaterThan(3_000);
    await eventually('a renewed certificate', async () => seen.find((c) => c.version > first.version), { timeoutMs: 15_000, intervalMs: 100, diagnostics });
    const renewed = seen.find((c) => c.version > first.version) as WorkloadCertificate;
    // Renewed after 40 % of the lifetime (grace 0.5, jitter 0.1) and while the first was still valid.
    expect(renewed.receivedAt.getTime() - first.receivedAt.getTime()).toBeGreaterThanOrEqual(0.4 * lifetime - 100);
    expect(renewed.receivedAt.getTime()).toBeLessThan(first.notAfter.getTime());
    expect(renewed.notAfter.getTime()).toBeGreaterThan(first.notAfter.getTime());
    expect(parseCertificatePem(renewed.certChainPem).serialHex).not.toBe(parseCertificatePem(first.certChainPem).serialHex);
    expect(renewed.keyPem).not.toBe(first.keyPem);
    expect(vias.slice(0, 2)).toEqual(['success:token', 'success:certificate']);
    expect((await ws.verify(renewed.certChainPem, rootPem, { purpose: 'sslclient' })).code).toBe(0);
  }, 30_000);

  it('a refusal (token for another audience) is not retried and names the status, never the token', async () => {
    const wrong = join(dir, 'wrong-aud');
    const token = await requestToken(creds, appNs, 'echo', ['not-mesh']);
    await writeFile(wrong, token);
    let attempts = 0;
    const m = manager({ readToken: () => readFile(wrong, 'utf8'), onRenewal: () => attempts++ });
    const err = (await m.start().catch((e: unknown) => e)) as Error;
    expect(err).toBeInstanceOf(Error);
    expect(err.message).toMatch(/UNAUTHENTICATED/);
    expect(err.message).not.toContain(token);
    expect(attempts).toBe(1);
  });

  it('meshd away: a bounded number of attempts with backoff, then a clear error', async () => {
    const closed = `127.0.0.1:${await freePort()}`;
    let attempts = 0;
    const started = Date.now();
    const m = manager({ ca: { address: closed, serverName: `meshd.${meshNs}.svc`, timeoutMs: 2_000 }, retry: { attempts: 3, initialDelayMs: 200, maxDelayMs: 1_000 }, onRenewal: () => attempts++ });
    const err = (await m.start().catch((e: unknown) => e)) as Error;
    expect(err.message).toMatch(/UNAVAILABLE/);
    expect(attempts).toBe(3);
    expect(Date.now() - started).toBeGreaterThanOrEqual(200 + 400);
  });

  it('a server certificate that does not chain to the mesh root is not trusted', async () => {
    const key = join(ws.dir, 'other.key');
    const crt = join(ws.dir, 'other.pem');
    const made = await openssl(['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-subj', '/O=other', '-days', '1', '-keyout', key, '-out', crt]);
    expect(made.code).toBe(0);
    const other = await readFile(crt, 'utf8');
    const m = manager({ readRoots: async () => other, retry: { attempts: 1, initialDelayMs: 10, maxDelayMs: 10 } });
    const err = (await m.start().catch((e: unknown) => e)) as Error;
    expect(err.message).toMatch(/UNAVAILABLE|certificate/i);
  });
});

type Stream<Req, Res> = grpc.ClientDuplexStream<Req, Res>;

/** A grpc-js client of the agent's SDS socket; `responses` collects each stream's answers. */
function sdsClient(socket: string): grpc.Client & Record<string, (...a: unknown[]) => unknown> {
  const Ctor = grpc.makeGenericClientConstructor(SDS_SERVICE_DEFINITION, 'SecretDiscoveryService');
  return new Ctor(`unix:${socket}`, grpc.credentials.createInsecure()) as unknown as grpc.Client & Record<string, (...a: unknown[]) => unknown>;
}

const decodeSecrets = (r: { resources: { typeUrl: string; value: Uint8Array }[] }): Secret[] =>
  r.resources.map((a) => {
    expect(a.typeUrl).toBe(SECRET_TYPE_URL);
    return Secret.decode(a.value);
  });

const leafSerial = (s: Secret): string => new X509Certificate(Buffer.from(s.tlsCertificate?.certificateChain?.inlineBytes ?? Buffer.alloc(0))).serialNumber;

describe('the agent SDS server', () => {
  let server: SdsServer;
  let socket: string;
  let m: CertificateManager;
  const clients: grpc.Client[] = [];

  beforeAll(async () => {
    socket = join(dir, 'sds', 'socket');
    m = manager({ ttlSeconds: 6, graceRatio: 0.5, jitterRatio: 0.1 });
    await m.start();
    server = new SdsServer({ socketPath: socket, log, current: () => m.current(), onChange: (l) => m.onChange(l) });
    await server.start();
  });

  afterAll(async () => {
    for (const c of clients) c.close();
    await server?.stop();
  });

  it('StreamSecrets: default (chain and matching key) and ROOTCA (the mesh root) on their own streams; a renewal is pushed to the open stream; a NACK is not answered again', async () => {
    const client = sdsClient(socket);
    clients.push(client);
    const open = (name: string): { stream: Stream<DiscoveryRequest, DiscoveryResponse>; got: DiscoveryResponse[] } => {
      const stream = client.StreamSecrets() as Stream<DiscoveryRequest, DiscoveryResponse>;
      const got: DiscoveryResponse[] = [];
      stream.on('data', (r: DiscoveryResponse) => {
        got.push(r);
        // ACK like Envoy.
        stream.write(DiscoveryRequest.fromPartial({ typeUrl: SECRET_TYPE_URL, resourceNames: [name], versionInfo: r.versionInfo, responseNonce: r.nonce, node: { id: 'sidecar~10.0.0.1~a.b~b.svc.cluster.local' } }));
      });
      stream.on('error', () => undefined);
      stream.write(DiscoveryRequest.fromPartial({ typeUrl: SECRET_TYPE_URL, resourceNames: [name], node: { id: 'sidecar~10.0.0.1~a.b~b.svc.cluster.local' } }));
      return { stream, got };
    };
    const def = open('default');
    const root = open('ROOTCA');
    await eventually('both secrets', async () => def.got.length > 0 && root.got.length > 0, { timeoutMs: 10_000, intervalMs: 50 });
    const [secret] = decodeSecrets(def.got[0] as never);
    expect(secret?.name).toBe('default');
    const chain = Buffer.from(secret?.tlsCertificate?.certificateChain?.inlineBytes ?? Buffer.alloc(0)).toString();
    const leaf = new X509Certificate(chain);
    expect(leaf.subjectAltName).toContain(ID);
    expect(leaf.checkPrivateKey(createPrivateKey(Buffer.from(secret?.tlsCertificate?.privateKey?.inlineBytes ?? Buffer.alloc(0))))).toBe(true);
    const [rootSecret] = decodeSecrets(root.got[0] as never);
    expect(rootSecret?.name).toBe('ROOTCA');
    expect(Buffer.from(rootSecret?.validationContext?.trustedCa?.inlineBytes ?? Buffer.alloc(0)).toString()).toBe(rootPem);
    expect(leaf.verify(new X509Certificate(rootPem).publicKey) || leaf.checkIssued(new X509Certificate(rootPem))).toBe(true);
    // The ACK is not answered; the renewal (ttl 6 s, grace 0.5) is pushed.
    const firstSerial = leafSerial(secret as Secret);
    await eventually('a pushed renewal', async () => def.got.length >= 2, { timeoutMs: 15_000, intervalMs: 100 });
    const renewed = decodeSecrets(def.got[1] as never)[0] as Secret;
    expect(leafSerial(renewed)).not.toBe(firstSerial);
    expect(Number(def.got[1]?.versionInfo)).toBeGreaterThan(Number(def.got[0]?.versionInfo));
    // A NACK of the next push gets no answer.
    const before = def.got.length;
    def.stream.removeAllListeners('data');
    def.stream.on('data', (r: DiscoveryResponse) => {
      def.got.push(r);
      def.stream.write(DiscoveryRequest.fromPartial({ typeUrl: SECRET_TYPE_URL, resourceNames: ['default'], versionInfo: def.got[before - 1]?.versionInfo, responseNonce: r.nonce, errorDetail: { code: 3, message: 'test: rejected' } }));
    });
    await m.renewNow();
    await eventually('the push after renewNow', async () => def.got.length === before + 1, { timeoutMs: 10_000, intervalMs: 50 });
    await new Promise((r) => setTimeout(r, 300));
    expect(def.got.length).toBe(before + 1);
    expect(server.streamCount).toBeGreaterThanOrEqual(2);
    def.stream.end();
    root.stream.end();
  }, 40_000);

  it('DeltaSecrets: subscribe to both, get both; a renewal sends default again', async () => {
    const client = sdsClient(socket);
    clients.push(client);
    const stream = client.DeltaSecrets() as Stream<DeltaDiscoveryRequest, DeltaDiscoveryResponse>;
    const got: DeltaDiscoveryResponse[] = [];
    stream.on('data', (r: DeltaDiscoveryResponse) => {
      got.push(r);
      stream.write(DeltaDiscoveryRequest.fromPartial({ typeUrl: SECRET_TYPE_URL, responseNonce: r.nonce }));
    });
    stream.on('error', () => undefined);
    stream.write(DeltaDiscoveryRequest.fromPartial({ typeUrl: SECRET_TYPE_URL, resourceNamesSubscribe: ['default', 'ROOTCA'] }));
    await eventually('the first delta', async () => got.length > 0, { timeoutMs: 10_000, intervalMs: 50 });
    expect(got[0]?.resources.map((r) => r.name).sort()).toEqual(['ROOTCA', 'default']);
    await m.renewNow();
    await eventually('the renewal delta', async () => got.length > 1, { timeoutMs: 10_000, intervalMs: 50 });
    const names = got[1]?.resources.map((r) => r.name) ?? [];
    expect(names).toContain('default');
    const s = Secret.decode(got[1]?.resources.find((r) => r.name === 'default')?.resource?.value ?? new Uint8Array());
    expect(s.tlsCertificate?.privateKey?.inlineBytes?.length).toBeGreaterThan(0);
    stream.end();
  }, 30_000);

  it('a request for another type is refused with INVALID_ARGUMENT', async () => {
    const client = sdsClient(socket);
    clients.push(client);
    const stream = client.StreamSecrets() as Stream<DiscoveryRequest, DiscoveryResponse>;
    const status = new Promise<grpc.ServiceError>((resolve) => stream.on('error', resolve));
    stream.on('data', () => undefined);
    stream.write(DiscoveryRequest.fromPartial({ typeUrl: 'type.googleapis.com/envoy.config.cluster.v3.Cluster', resourceNames: ['default'] }));
    const err = await status;
    expect(err.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(err.details).toMatch(/type_url/);
  });
});

describe('the mesh-agent process (proxy sidecar), as the injector runs it', () => {
  // the bundle, as the proxy image runs it (images/proxy.Dockerfile, ADR 0214)
  const AGENT_CLI = join(REPO_ROOT, 'dist', 'bin', 'mesh-agent.js');
  let app: Server;
  let appPort: number;
  let appHealthy = true;

  let workloadBin: string;

  beforeAll(async () => {
    workloadBin = await goToolPath('mesh-workload');
    app = createServer((req, res) => {
      if (req.url === '/metrics') res.writeHead(200).end('app_requests_total 7\n');
      else res.writeHead(req.url === '/ready' && appHealthy ? 200 : 500).end();
    });
    appPort = await freePort();
    await new Promise<void>((r) => app.listen(appPort, '127.0.0.1', r));
  }, GO_TOOL_BUILD_TIMEOUT_MS);
  afterAll(() => new Promise<void>((r) => app.close(() => r())));

  interface Agent {
    readonly child: ChildProcess;
    readonly exit: Promise<number>;
    readonly healthPort: number;
    readonly statusPort: number;
    readonly adminPort: number;
    readonly socket: string;
    readonly configDir: string;
    readonly record: string;
    stderr(): string;
  }

  /** Starts dist/bin/mesh-agent.js with the proxy container's args and env from the real sidecar template. */
  async function startAgent(name: string, standInEnv: Record<string, string> = {}, proxyConfig: Record<string, unknown> = {}, extraArgs: string[] = []): Promise<Agent> {
    const work = join(dir, name);
    await mkdir(join(work, 'pod'), { recursive: true });
    await writeFile(join(work, 'pod', 'labels'), 'app="echo"\nversion="v1"\n');
    const envoy = join(work, 'envoy');
    await writeFile(envoy, `#!/bin/sh\nexec "${process.execPath}" "${join(REPO_ROOT, 'e2e', 'support', 'envoy-stand-in.mjs')}" "$@"\n`, { mode: 0o755 });
    const [healthPort, statusPort, adminPort] = [await freePort(), await freePort(), await freePort()];
    const p = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'echo-0', namespace: appNs, labels: { app: 'echo' }, annotations: { 'prometheus.io/port': String(appPort), 'prometheus.io/path': '/metrics' } },
      spec: { serviceAccountName: 'echo', containers: [{ name: 'echo', image: 'echo', readinessProbe: { httpGet: { path: '/ready', port: appPort } } }] },
    } as unknown as Pod;
    const injected = injectPod(p, appNs, {
      config: DEFAULT_INJECTOR_CONFIG,
      values: parseInjectionValues(JSON.stringify({ global: { meshNamespace: meshNs, discoveryAddress: `meshd.${meshNs}.svc:15012` } })),
      mesh: { trustDomain: 'cluster.local', defaultConfig: { discoveryAddress: secureAddr, proxyAdminPort: adminPort, terminationDrainDuration: '1s' } },
      revision: 'default',
      domain: 'cluster.local',
      clusterSupportsNativeSidecars: false,
      probeLocalhost: false,
      legacyFsGroup: false,
    }).pod;
    const proxy = injected.spec!.containers.find((c) => c.name === 'mesh-proxy') as Container;
    const env: Record<string, string> = { ...kubeletEnv(proxy, { name: 'echo-0', namespace: appNs, podIP: '127.0.0.1', serviceAccount: 'echo' }), CA_ADDR: secureAddr };
    if (Object.keys(proxyConfig).length > 0) env.PROXY_CONFIG = JSON.stringify({ ...(JSON.parse(env.PROXY_CONFIG ?? '{}') as object), ...proxyConfig });
    const socket = join(work, 'sds', 'socket');
    const configDir = join(work, 'proxy');
    const record = join(work, 'envoy-record.jsonl');
    const args = [
      ...kubeletArgs(proxy, env),
      // Paths and ports of a local process instead of the pod's mounts (the flags exist for this).
      '--envoyBinary', envoy, '--tokenPath', tokenPath, '--rootCertPath', join(work, 'root-cert.pem'), '--sdsSocket', socket,
      '--configDir', configDir, '--podInfoDir', join(work, 'pod'), '--xdsServerName', `meshd.${meshNs}.svc`,
      '--statusPort', String(statusPort), '--healthPort', String(healthPort), ...extraArgs,
    ];
    await writeFile(join(work, 'root-cert.pem'), rootPem);
    const child = spawn(process.execPath, [AGENT_CLI, ...args], { env: { PATH: process.env.PATH ?? '', ...env, STAND_IN_RECORD: record, ...standInEnv }, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr!.setEncoding('utf8').on('data', (c: string) => (stderr = (stderr + c).slice(-20_000)));
    const exit = new Promise<number>((r) => child.once('exit', (code, sig) => r(code ?? (sig ? 128 : 1))));
    return { child, exit, healthPort, statusPort, adminPort, socket, configDir, record, stderr: () => stderr };
  }

  /** SIGTERM: the agent drains and stops its Envoy (a SIGKILL would leave the stand-in running); SIGKILL after 10 s. */
  const stop = async (a: Agent): Promise<void> => {
    a.child.kill('SIGTERM');
    const timer = setTimeout(() => a.child.kill('SIGKILL'), 10_000);
    await a.exit;
    clearTimeout(timer);
  };

  const get = (port: number, path: string): Promise<{ status: number; body: string }> => fetchText('127.0.0.1', port, path, 3_000);
  const events = async (file: string): Promise<{ event: string; url?: string; node?: string; args?: string[] }[]> =>
    (await readFile(file, 'utf8').catch(() => '')).split('\n').filter(Boolean).map((l) => JSON.parse(l) as { event: string });

  it('gets the certificate, serves it over SDS, writes the bootstrap, starts Envoy, answers readiness, merged metrics and the rewritten probe, and drains on SIGTERM', async () => {
    const a = await startAgent('run');
    const diag = (): string => `agent stderr:\n${a.stderr()}\n${diagnostics()}`;
    try {
      // Not ready before Envoy is LIVE; ready after.
      const ready = await eventually('readiness 200', async () => {
        const r = await get(a.healthPort, '/healthz/ready').catch(() => undefined);
        return r?.status === 200 ? r : undefined;
      }, { timeoutMs: 30_000, intervalMs: 100, diagnostics: diag });
      expect(ready.body).toContain('envoy: LIVE');
      const started = (await events(a.record)).find((e) => e.event === 'start');
      expect(started?.node).toBe(`sidecar~127.0.0.1~echo-0.${appNs}~${appNs}.svc.cluster.local`);
      expect(started?.args).toEqual(expect.arrayContaining(['-c', join(a.configDir, 'envoy-rev.json'), '-l', 'warning']));
      const boot = JSON.parse(await readFile(join(a.configDir, 'envoy-rev.json'), 'utf8')) as { node: { metadata: { LABELS: Record<string, string> } } };
      expect(boot.node.metadata.LABELS).toEqual({ app: 'echo', version: 'v1' });

      // SDS on the socket: the real certificate meshd issued for the pod's service account.
      const client = sdsClient(a.socket);
      const res = await new Promise<DiscoveryResponse>((resolve, reject) =>
        (client.FetchSecrets as (r: DiscoveryRequest, cb: (e: Error | null, r: DiscoveryResponse) => void) => void)(DiscoveryRequest.fromPartial({ typeUrl: SECRET_TYPE_URL, resourceNames: ['default', 'ROOTCA'] }), (e, r) => (e ? reject(e) : resolve(r))),
      );
      client.close();
      const [def, rootSecret] = decodeSecrets(res as never);
      const chainPem = Buffer.from(def?.tlsCertificate?.certificateChain?.inlineBytes ?? Buffer.alloc(0)).toString();
      expect(new X509Certificate(chainPem).subjectAltName).toContain(ID);

      // What Envoy would do with this bootstrap and these secrets: ADS on meshd's secured port with
      // the SDS client certificate, the ROOTCA bundle and the bootstrap's node id (grpc-go client).
      const files = join(dir, 'run', 'ads');
      await mkdir(files, { recursive: true });
      await writeFile(join(files, 'chain.pem'), chainPem);
      await writeFile(join(files, 'key.pem'), Buffer.from(def?.tlsCertificate?.privateKey?.inlineBytes ?? Buffer.alloc(0)), { mode: 0o600 });
      await writeFile(join(files, 'root.pem'), Buffer.from(rootSecret?.validationContext?.trustedCa?.inlineBytes ?? Buffer.alloc(0)));
      const ads = await runWorkload(workloadBin, [
        'xds', '-addr', secureAddr, '-server-name', `meshd.${meshNs}.svc`, '-root', join(files, 'root.pem'),
        '-cert', join(files, 'chain.pem'), '-key', join(files, 'key.pem'), '-node-id', started?.node ?? '',
      ]);
      expect(ads).toMatchObject({ ok: true });
      expect(ads.resources?.clusters ?? 0).toBeGreaterThan(0);

      // Merged metrics: the agent's own, Envoy's, the application's.
      const m = await get(a.statusPort, '/stats/prometheus');
      expect(m.status).toBe(200);
      expect(m.body).toMatch(/^mesh_agent_certificate_expiry_timestamp_seconds \d+/m);
      expect(m.body).toContain('mesh_agent_certificate_requests_total{result="success",credential="token"} 1');
      expect(m.body).toContain('envoy_server_live 1');
      expect(m.body).toContain('app_requests_total 7');

      // The rewritten readiness probe reaches the application.
      expect((await get(a.statusPort, '/app-health/echo/readyz')).status).toBe(200);
      appHealthy = false;
      expect((await get(a.statusPort, '/app-health/echo/readyz')).status).toBe(500);
      appHealthy = true;
      expect((await get(a.statusPort, '/app-health/other/readyz')).status).toBe(404);

      // SIGTERM: listeners drained, exit 0 after the drain duration (terminationDrainDuration 1s).
      const t0 = Date.now();
      a.child.kill('SIGTERM');
      expect(await a.exit).toBe(0);
      expect(Date.now() - t0).toBeGreaterThanOrEqual(1_000);
      const ev = await events(a.record);
      expect(ev.map((e) => e.event)).toEqual(['start', 'drain', 'sigterm']);
      expect(ev[1]?.url).toContain('graceful');
      // Nothing secret in the agent's log.
      expect(a.stderr()).toContain('workload certificate issued');
      expect(a.stderr()).not.toContain('PRIVATE KEY');
      expect(a.stderr()).not.toContain((await readFile(tokenPath, 'utf8')).trim());
    } finally {
      a.child.kill('SIGKILL');
    }
  }, 60_000);

  it('with DNS captured, the agent is not ready until meshd sent its name table (readiness names what is missing), ready once it arrived', async () => {
    // meshd's xDS address closed at first: certificate and Envoy are fine, the name table is missing
    const closed = `127.0.0.1:${await freePort()}`;
    const away = await startAgent('dns-away', { MESH_META_DNS_CAPTURE: 'true', MESH_META_DNS_AUTO_ALLOCATE: 'true' }, { discoveryAddress: closed });
    try {
      const waiting = await eventually('readiness naming the missing name table', async () => {
        const r = await get(away.healthPort, '/healthz/ready').catch(() => undefined);
        return r && /name table/.test(r.body) ? r : undefined;
      }, { timeoutMs: 30_000, intervalMs: 100, diagnostics: () => away.stderr() });
      expect(waiting.status).toBe(503);
    } finally {
      await stop(away);
    }
    const a = await startAgent('dns', { MESH_META_DNS_CAPTURE: 'true', MESH_META_DNS_AUTO_ALLOCATE: 'true' });
    try {
      const ready = await eventually('readiness 200 with the name table', async () => {
        const r = await get(a.healthPort, '/healthz/ready').catch(() => undefined);
        return r?.status === 200 ? r : undefined;
      }, { timeoutMs: 30_000, intervalMs: 100, diagnostics: () => `agent stderr:\n${a.stderr()}\n${diagnostics()}` });
      expect(ready.body).toContain('envoy: LIVE');
      expect(a.stderr()).toContain('name table received');
    } finally {
      await stop(a);
    }
  }, 90_000);

  it('Envoy exiting on its own ends the agent with a failure code; readiness says so until then', async () => {
    const a = await startAgent('crash', { STAND_IN_LIVE_AFTER_MS: '60000', STAND_IN_EXIT_AFTER_MS: '6000' });
    try {
      // Envoy up but not LIVE: 503 with its state.
      const notReady = await eventually('Envoy state in the readiness answer', async () => {
        const r = await get(a.healthPort, '/healthz/ready').catch(() => undefined);
        return r && /PRE_INITIALIZING/.test(r.body) ? r : undefined;
      }, { timeoutMs: 30_000, intervalMs: 50 });
      expect(notReady.status).toBe(503);
      expect(await a.exit).toBe(3);
    } finally {
      a.child.kill('SIGKILL');
    }
  }, 60_000);

  it('gives start-up memory back once Envoy runs: its resident size drops', async () => {
    const a = await startAgent('settle', {}, {}, ['--log_output_level', 'default:debug']);
    try {
      const line = await eventually('the start-up memory release', async () => a.stderr().split('\n').find((l) => l.includes('"start-up memory released"')), {
        timeoutMs: 30_000,
        intervalMs: 100,
        diagnostics: () => `agent stderr:\n${a.stderr()}\n${diagnostics()}`,
      });
      const { rssBeforeMB, rssAfterMB } = JSON.parse(line) as { rssBeforeMB: number; rssAfterMB: number };
      expect(rssAfterMB).toBeLessThan(rssBeforeMB);
      // still serving after it
      expect((await get(a.healthPort, '/healthz/ready')).status).toBe(200);
    } finally {
      await stop(a);
    }
  }, 60_000);

  it('an Envoy binary that is not there is an error naming the flag', async () => {
    const a = await startAgent('nobinary');
    await rm(join(dir, 'nobinary', 'envoy'));
    // The binary is checked after the certificate is had; the agent exits non-zero naming it.
    const code = await a.exit;
    expect(code).not.toBe(0);
    expect(a.stderr()).toMatch(/--envoyBinary .*envoy: not an executable file/);
  }, 60_000);
});
