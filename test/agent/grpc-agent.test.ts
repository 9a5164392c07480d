/**
 * Proxyless gRPC mode of the agent (`proxy sidecar --mode grpc`, the grpc-agent template): the gRPC
 * xDS bootstrap it writes from the pod the injector renders (TLS channel credentials and the
 * `default` file_watcher provider over the certificate files the template mounts in the
 * application, the node id meshd parses, the server listener template), and the certificate files
 * themselves (written whole under their names, the key 0600, rewritten on renewal).
 */
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GRPC_SERVER_LISTENER_TEMPLATE, grpcAgentBootstrap, grpcCertPaths, writeGrpcCertFiles } from '../../src/agent/grpc-agent.js';
import { CERT_OUTPUT_DIR, GRPC_BOOTSTRAP_PATH, GRPC_XDS_BOOTSTRAP_ENV } from '../../src/agent/names.js';
import { grpcBootstrapPath, writeFileAtomic } from '../../src/agent/run.js';
import type { WorkloadCertificate } from '../../src/agent/certificates.js';
import { agentSettings, parseDownwardMap } from '../../src/agent/settings.js';
import { DEFAULT_INJECTOR_CONFIG, parseInjectionValues, type InjectionInputs } from '../../src/inject/config.js';
import { injectPod } from '../../src/inject/inject.js';
import type { Container, Pod } from '../../src/inject/pod.js';
import { parseProxy } from '../../src/model/proxy.js';
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

const POD: Pod = {
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'greeter-0', namespace: 'shop', labels: { app: 'greeter' }, annotations: { 'inject.mesh.io/templates': 'grpc-agent' } },
  spec: { serviceAccountName: 'greeter', containers: [{ name: 'app', image: 'greeter', ports: [{ containerPort: 50051 }] }] },
} as Pod;

function injected(): { settings: ReturnType<typeof agentSettings>; proxy: Container; app: Container } {
  const { pod } = injectPod(POD, 'shop', inputs);
  const proxy = pod.spec!.containers.find((c) => c.name === 'mesh-proxy') as Container;
  const app = pod.spec!.containers.find((c) => c.name === 'app') as Container;
  const env = kubeletEnv(proxy, { name: 'greeter-0', namespace: 'shop', podIP: '10.1.2.9', serviceAccount: 'greeter' });
  const { type, flags } = proxyFlags(kubeletArgs(proxy, env));
  return { settings: agentSettings(type, flags, env, parseDownwardMap('app="greeter"\n')), proxy, app };
}

describe('the gRPC xDS bootstrap of --mode grpc', () => {
  it('points at meshd 15012 over TLS with the certificate files the application mounts, and names them as provider default', () => {
    const { settings, app } = injected();
    expect(settings.mode).toBe('grpc');
    // The application reads the bootstrap where the agent writes it, and the files the agent writes.
    expect(app.env?.find((e) => e.name === GRPC_XDS_BOOTSTRAP_ENV)?.value).toBe(GRPC_BOOTSTRAP_PATH);
    expect(grpcBootstrapPath(settings)).toBe(GRPC_BOOTSTRAP_PATH);
    expect(app.volumeMounts?.map((m) => m.mountPath)).toEqual(expect.arrayContaining([CERT_OUTPUT_DIR]));
    const files = grpcCertPaths(settings.paths.certDir);
    const b = JSON.parse(JSON.stringify(grpcAgentBootstrap(settings, files))) as { xds_servers: unknown; certificate_providers: unknown; server_listener_resource_name_template: string; node: { id: string; metadata: Record<string, unknown> } };
    const fileConfig = {
      certificate_file: `${CERT_OUTPUT_DIR}/cert-chain.pem`,
      private_key_file: `${CERT_OUTPUT_DIR}/key.pem`,
      ca_certificate_file: `${CERT_OUTPUT_DIR}/root-cert.pem`,
      refresh_interval: '300s',
    };
    expect(b.xds_servers).toEqual([{ server_uri: 'meshd.mesh-system.svc:15012', channel_creds: [{ type: 'tls', config: fileConfig }], server_features: ['xds_v3'] }]);
    expect(b.certificate_providers).toEqual({ default: { plugin_name: 'file_watcher', config: fileConfig } });
    expect(b.server_listener_resource_name_template).toBe('grpc/server?xds.resource.listening_address=%s');
    expect(GRPC_SERVER_LISTENER_TEMPLATE).toContain('%s');
    // The node as meshd parses it: a proxyless gRPC client of this pod.
    const proxy = parseProxy(b.node.id, b.node.metadata);
    expect(proxy).toMatchObject({ type: 'grpc', ipAddresses: ['10.1.2.9'], workloadId: 'greeter-0.shop', namespace: 'shop', dnsDomain: 'shop.svc.cluster.local', serviceAccount: 'greeter' });
    expect(b.node.metadata).toMatchObject({ GENERATOR: 'grpc', NAMESPACE: 'shop', NAME: 'greeter-0', SERVICE_ACCOUNT: 'greeter', LABELS: { app: 'greeter' } });
  });
});

describe('the certificate files of --mode grpc', () => {
  let dir: string;
  beforeEach(async () => (dir = await mkdtemp(join(tmpdir(), 'grpc-agent-'))));
  afterEach(() => rm(dir, { recursive: true, force: true }));

  const cert = (n: number): WorkloadCertificate => ({
    certChainPem: `-----BEGIN CERTIFICATE-----\nchain${n}\n-----END CERTIFICATE-----\n`,
    keyPem: `-----BEGIN PRIVATE KEY-----\nkey${n}\n-----END PRIVATE KEY-----\n`,
    rootPem: `-----BEGIN CERTIFICATE-----\nroot${n}\n-----END CERTIFICATE-----\n`,
    notBefore: new Date(),
    notAfter: new Date(Date.now() + 3600_000),
    receivedAt: new Date(),
    identity: 'spiffe://cluster.local/ns/shop/sa/greeter',
    version: n,
  });

  it('writes chain, key (mode 0600) and root under their names, nothing else left behind, and replaces them on renewal', async () => {
    const files = grpcCertPaths(dir);
    await writeGrpcCertFiles(files, cert(1), writeFileAtomic);
    expect((await readdir(dir)).sort()).toEqual(['cert-chain.pem', 'key.pem', 'root-cert.pem']);
    expect(await readFile(files.chain, 'utf8')).toContain('chain1');
    expect(await readFile(files.key, 'utf8')).toContain('key1');
    expect(await readFile(files.root, 'utf8')).toContain('root1');
    expect((await stat(files.key)).mode & 0o777).toBe(0o600);
    const inodeBefore = (await stat(files.key)).ino;
    await writeGrpcCertFiles(files, cert(2), writeFileAtomic);
    expect(await readFile(files.chain, 'utf8')).toContain('chain2');
    expect(await readFile(files.key, 'utf8')).toContain('key2');
    expect(await readFile(files.root, 'utf8')).toContain('root2');
    // Replaced by rename (a new file), not rewritten in place, and still 0600.
    expect((await stat(files.key)).ino).not.toBe(inodeBefore);
    expect((await stat(files.key)).mode & 0o777).toBe(0o600);
    expect((await readdir(dir)).sort()).toEqual(['cert-chain.pem', 'key.pem', 'root-cert.pem']);
  });
});
