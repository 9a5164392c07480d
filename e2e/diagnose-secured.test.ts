/**
 * The xDS debug channel over TLS, as an operator reaches a meshd that serves only its secured port:
 * the daemon runs on the local plane with its built-in CA (root in mesh-ca-secret) and a secured
 * xDS port; a real ADS client holds a stream on its plaintext port so there is a proxy to list.
 *
 * - certificate mode (`--cert-dir`): a certificate the daemon's own certificate service issued for
 *   an identity of the mesh namespace reads proxy-status; one of another namespace is refused with
 *   a message naming the identity and the namespace that may;
 * - token mode (no `--cert-dir`): meshctl asks the API server for a token of the mesh namespace's
 *   default service account and takes the roots from the ConfigMap mesh-ca-root-cert;
 * - `--authority` must match the serving certificate unless `--insecure` is given.
 */
import { generateKeyPairSync } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createCertificate } from '../src/agent/ca-client.js';
import { createCsr } from '../src/ca/x509.js';
import type { KubeClient } from '../src/kube/client.js';
import { runMeshctl } from '../test/cli/run-meshctl.js';
import { applyMeshCrds, createNamespace, kubeTestEnv, tearDown } from '../test/kube/helpers.js';
import { freePort, startDaemon, type Daemon } from '../test/support/daemon.js';
import { eventually } from '../test/support/eventually.js';
import { TestProxy } from '../test/support/proxy-dump.js';

let client: KubeClient;
let kubeconfig: string;
let meshNs: string;
let appNs: string;
let daemon: Daemon;
let proxy: TestProxy;
let dir: string;
let secureAddr: string;
let rootPem: string;

const run = (argv: string[], extraEnv: Record<string, string> = {}) => runMeshctl(argv, { HOME: dir, KUBECONFIG: kubeconfig, ...extraEnv });

async function token(namespace: string, sa: string): Promise<string> {
  const res = await client.request<{ status: { token: string } }>({
    method: 'POST',
    path: `/api/v1/namespaces/${namespace}/serviceaccounts/${sa}/token`,
    body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { audiences: ['mesh-ca'], expirationSeconds: 600 } },
  });
  return res.status.token;
}

/** A --cert-dir holding a certificate the daemon's CA issued to `namespace`/`sa`, proven with its token. */
async function certDir(namespace: string, sa: string): Promise<string> {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const csr = await createCsr(privateKey, { uris: [`spiffe://cluster.local/ns/${namespace}/sa/${sa}`] });
  const chain = await createCertificate({ address: secureAddr, serverName: `meshd.${meshNs}.svc`, rootPem, timeoutMs: 10_000 }, { kind: 'token', token: await token(namespace, sa) }, csr, 3600);
  const out = path.join(dir, `certs-${namespace}-${sa}`);
  fs.mkdirSync(out);
  fs.writeFileSync(path.join(out, 'cert-chain.pem'), chain.join(''));
  fs.writeFileSync(path.join(out, 'key.pem'), privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
  fs.writeFileSync(path.join(out, 'root-cert.pem'), rootPem);
  return out;
}

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mesh-diag-tls-'));
  const env = await kubeTestEnv();
  client = env.client;
  kubeconfig = env.cluster.kubeconfig;
  await applyMeshCrds(client);
  meshNs = await createNamespace(client, 'dt-mesh');
  appNs = await createNamespace(client, 'dt-app');
  for (const [namespace, sa] of [[meshNs, 'default'], [meshNs, 'operator'], [appNs, 'reviews']]) {
    await client.create({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: sa, namespace } }).catch((err: { statusCode?: number }) => {
      if (err.statusCode !== 409) throw err; // the plane's controllers may have made `default` already
    });
  }
  secureAddr = `127.0.0.1:${await freePort()}`;
  daemon = await startDaemon({
    registries: 'Cluster',
    args: ['--clusterconfig', kubeconfig, '--secureGRPCAddr', secureAddr],
    env: { ENABLE_CA_SERVER: 'true', POD_NAMESPACE: meshNs, POD_NAME: 'meshd-0', DISC_ENABLE_STATUS: 'false' },
    readyTimeoutMs: 60_000,
  });
  const secret = await client.get<{ data: Record<string, string> } & { metadata: object }>({ apiVersion: 'v1', kind: 'Secret', namespace: meshNs, name: 'mesh-ca-secret' });
  rootPem = Buffer.from(secret.data['root-cert.pem'], 'base64').toString('utf8');
  proxy = new TestProxy(daemon.grpcAddr, { id: `sidecar~10.9.2.4~reviews-0.${appNs}~${appNs}.svc.cluster.local`, metadata: { NAMESPACE: appNs, LABELS: { app: 'reviews' } } });
  await proxy.start();
}, 180_000);

afterAll(() => tearDown({ close: [proxy], daemon, client, namespaces: [meshNs, appNs], dir }), 60_000);

describe('certificate mode (--cert-dir)', () => {
  it('an identity of the mesh namespace reads proxy-status over TLS', async () => {
    const certs = await certDir(meshNs, 'operator');
    // proxy-status takes the connection from the variables (or MESHCONFIG), x proxy-status from flags
    const r = await run(['proxy-status', '-i', meshNs], { MESHCTL_XDS_ADDRESS: secureAddr, MESHCTL_CERT_DIR: certs });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`^reviews-0\\.${appNs}\\s+sidecar\\s+SYNCED\\s+SYNCED`, 'm'));
  });

  it('an identity of another namespace is refused, naming it and the namespace that may', async () => {
    const certs = await certDir(appNs, 'reviews');
    const r = await run(['x', 'proxy-status', '--xds-address', secureAddr, '--cert-dir', certs, '-i', meshNs]);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain(`meshd ${secureAddr}: spiffe://cluster.local/ns/${appNs}/sa/reviews may not read the debug views: only identities of namespace ${meshNs} may`);
    expect(r.code).toBe(1);
  });

  it('a --cert-dir without the files names the missing one', async () => {
    const empty = path.join(dir, 'empty');
    fs.mkdirSync(empty);
    const r = await run(['x', 'proxy-status', '--xds-address', secureAddr, '--cert-dir', empty, '-i', meshNs]);
    expect(r.stderr).toMatch(/--cert-dir: cannot read .*empty\/root-cert\.pem: ENOENT/);
    expect(r.code).toBe(1);
  });
});

describe('token mode', () => {
  it("uses a TokenRequest token of the mesh namespace's default service account and the roots of mesh-ca-root-cert", async () => {
    await eventually('the leader to publish mesh-ca-root-cert', async () => (await client.find({ apiVersion: 'v1', kind: 'ConfigMap', namespace: meshNs, name: 'mesh-ca-root-cert' })) !== undefined, {
      timeoutMs: 30_000,
      diagnostics: () => daemon.logs().slice(-4000),
    });
    const r = await run(['x', 'proxy-status', '--xds-address', secureAddr, '-i', meshNs, '-o', 'json']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const entries = JSON.parse(r.stdout) as Array<{ workload: string }>;
    expect(entries.map((e) => e.workload)).toContain(`reviews-0.${appNs}`);
    // the same through the debug view that names the caller
    const version = await run(['x', 'version', '--xds-address', secureAddr, '-i', meshNs, '-o', 'json']);
    expect(version.code).toBe(0);
    expect(JSON.parse(version.stdout)).toMatchObject({ meshVersion: [expect.objectContaining({ controlPlane: 'meshd-0' })] });
  });

  it('--authority must be a name of the serving certificate; --insecure accepts any', async () => {
    const wrong = await run(['x', 'proxy-status', '--xds-address', secureAddr, '-i', meshNs, '--authority', 'meshd.elsewhere.svc']);
    expect(wrong.stderr).toMatch(new RegExp(`^error: meshd ${secureAddr}: TLS handshake failed: .*certificate.* \\(meshd's certificate was checked against the roots of ConfigMap ${meshNs}/mesh-ca-root-cert and for the name meshd\\.elsewhere\\.svc \\(--authority\\); --insecure skips both checks\\)$`, 'm'));
    expect(wrong.code).toBe(1);
    const insecure = await run(['x', 'proxy-status', '--xds-address', secureAddr, '-i', meshNs, '--authority', 'meshd.elsewhere.svc', '--insecure']);
    expect(insecure.stderr).toBe('');
    expect(insecure.code).toBe(0);
    expect(insecure.stdout).toContain(`reviews-0.${appNs}`);
  });

  it('the plaintext flag against the TLS port ends with a clear message', async () => {
    const r = await run(['x', 'proxy-status', '--xds-address', secureAddr, '--plaintext', '--timeout', '5s']);
    expect(r.stderr).toMatch(new RegExp(`^error: meshd ${secureAddr}: unreachable \\(.*\\); --plaintext speaks HTTP/2 without TLS, which a TLS port \\(15012\\) does not answer$`, 'm'));
    expect(r.code).toBe(1);
  });
});
