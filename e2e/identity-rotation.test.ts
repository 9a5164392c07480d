/**
 * Root rotation on one running daemon against the local control plane (issue 12, "rotation with
 * shortened lifetimes"): the daemon runs with `--registries Cluster`, its self-signed root in the
 * Secret mesh-ca-secret, a root lifetime of a minute and a check every second. Nothing restarts it:
 * inside the grace period it makes a new root on its own, keeps the old one in the trust bundle,
 * and the leader's ca-root-cert controller writes old and new roots into `mesh-ca-root-cert` of
 * every namespace. A workload certificate issued under the old root (for a token from the real
 * TokenRequest API) keeps verifying with openssl against each namespace's bundle, and a new one
 * chains to the new root.
 *
 * The namespaces checked are this test's own (the daemon's and two application namespaces): the
 * plane is shared, and other tests' daemons write their own bundles into the namespaces they find.
 *
 * Needs `npm run build` (the daemon runs from dist/) and Go (tools/mesh-workload).
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureCluster, kubeRequest, readKubeconfig, type KubeconfigCredentials } from '../test/support/cluster.js';
import { freePort, startDaemon, type Daemon } from '../test/support/daemon.js';
import { GO_TOOL_BUILD_TIMEOUT_MS, goToolPath } from '../test/support/go-tools.js';
import { opensslWorkspace, pemCertificates, type OpensslWorkspace } from '../test/support/openssl.js';
import { apply, applyCrds, createNamespace, deleteNamespace } from './support/kube.js';
import { eventually } from '../test/support/eventually.js';
import { requestToken, runWorkload } from './support/workload.js';

const suffix = randomBytes(3).toString('hex');
const meshNs = `mesh-rot-${suffix}`;
const appNs = [`app-rot-a-${suffix}`, `app-rot-b-${suffix}`];
const ID = `spiffe://cluster.local/ns/${appNs[0]}/sa/echo`;
/** CA_SELF_SIGNED_CA_CERT_TTL; with a grace period of 50 % the root is rotated after about half of it. */
const ROOT_TTL_S = 60;

let creds: KubeconfigCredentials;
let daemon: Daemon | undefined;
let bin: string;
let dir: string;
let ws: OpensslWorkspace;
let secureAddr: string;

async function secretRoots(): Promise<string> {
  const res = await kubeRequest(creds, 'GET', `/api/v1/namespaces/${meshNs}/secrets/mesh-ca-secret`);
  if (res.status !== 200) throw new Error(`mesh-ca-secret: HTTP ${res.status}`);
  return Buffer.from((res.body as { data: Record<string, string> }).data['root-cert.pem'], 'base64').toString('utf8');
}

async function mapBundle(ns: string): Promise<string | undefined> {
  const res = await kubeRequest(creds, 'GET', `/api/v1/namespaces/${ns}/configmaps/mesh-ca-root-cert`);
  return res.status === 200 ? (res.body as { data?: Record<string, string> }).data?.['root-cert.pem'] : undefined;
}

beforeAll(async () => {
  bin = await goToolPath('mesh-workload');
  const cluster = await ensureCluster();
  creds = await readKubeconfig(cluster.kubeconfig);
  dir = await mkdtemp(join(tmpdir(), 'mesh-rotation-e2e-'));
  ws = await opensslWorkspace();
  await applyCrds(creds);
  for (const ns of [meshNs, ...appNs]) await createNamespace(creds, ns);
  await apply(creds, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'echo', namespace: appNs[0] } });
  secureAddr = `127.0.0.1:${await freePort()}`;
  daemon = await startDaemon({
    registries: 'Cluster',
    args: ['--clusterconfig', cluster.kubeconfig, '--secureGRPCAddr', secureAddr],
    env: {
      ENABLE_CA_SERVER: 'true',
      POD_NAMESPACE: meshNs,
      DISC_ENABLE_STATUS: 'false',
      CA_SELF_SIGNED_CA_CERT_TTL: `${ROOT_TTL_S}s`,
      CA_SELF_SIGNED_ROOT_CERT_CHECK_INTERVAL: '1s',
      CA_SELF_SIGNED_ROOT_CERT_GRACE_PERIOD_PERCENTILE: '50',
      CA_ENABLE_JITTER_FOR_ROOT_CERT_ROTATOR: 'false',
    },
    readyTimeoutMs: 60_000,
  });
}, GO_TOOL_BUILD_TIMEOUT_MS);

afterAll(async () => {
  await daemon?.stop();
  await ws?.cleanup();
  if (dir) await rm(dir, { recursive: true, force: true });
  if (creds) for (const ns of [...appNs, meshNs]) await deleteNamespace(creds, ns);
}, 60_000);

const diagnostics = (): string => (daemon ? daemon.logs().slice(-6000) : '');

it('the running daemon rotates its root: every namespace carries old and new roots, and a certificate of the old root keeps verifying against each', async () => {
  const first = await secretRoots();
  expect(pemCertificates(first)).toHaveLength(1); // not rotated yet: the daemon started within the first half of the root's life
  const [oldRoot] = pemCertificates(first);
  await writeFile(join(dir, 'old-root.pem'), oldRoot);

  // a workload certificate under the old root, for a token of the TokenRequest API
  const token = join(dir, 'token');
  await writeFile(token, await requestToken(creds, appNs[0], 'echo', ['mesh-ca']), { mode: 0o600 });
  const oldCert = join(dir, 'old-chain.pem');
  const base = ['-addr', secureAddr, '-server-name', `meshd.${meshNs}.svc`, '-root', join(dir, 'old-root.pem'), '-token-file', token];
  expect(await runWorkload(bin, ['cert', ...base, '-identity', ID, '-out-cert', oldCert])).toMatchObject({ ok: true, chain: 2 });
  const oldChain = await readFile(oldCert, 'utf8');
  expect(pemCertificates(oldChain)[1]).toBe(oldRoot);

  // the daemon rotates on its own: a new root first, the old one kept
  const rotated = await eventually(
    'a second root in mesh-ca-secret',
    async () => {
      const b = await secretRoots();
      return pemCertificates(b).length === 2 ? b : undefined;
    },
    { timeoutMs: ROOT_TTL_S * 1000, intervalMs: 500, retryErrors: true, diagnostics },
  );
  const [newRoot, kept] = pemCertificates(rotated);
  expect(kept).toBe(oldRoot);
  expect(newRoot).not.toBe(oldRoot);
  expect((await ws.verify(oldChain, newRoot)).code).not.toBe(0); // the old certificate is the old root's

  // every namespace's map carries both, and the old certificate verifies against each
  for (const ns of [meshNs, ...appNs]) {
    const bundle = await eventually(`mesh-ca-root-cert of ${ns} with old and new roots`, async () => ((await mapBundle(ns)) === rotated ? rotated : undefined), {
      timeoutMs: 20_000,
      intervalMs: 250,
      diagnostics,
    });
    expect(pemCertificates(bundle)).toEqual([newRoot, oldRoot]);
    const v = await ws.verify(oldChain, bundle, { purpose: 'sslclient' });
    expect(v.stderr).toBe('');
    expect(v.code).toBe(0);
  }

  // a new certificate chains to the new root, and the served chain is accepted by the same bundle
  const newCert = join(dir, 'new-chain.pem');
  await writeFile(join(dir, 'bundle.pem'), rotated);
  expect(await runWorkload(bin, ['cert', ...base.map((a) => (a === join(dir, 'old-root.pem') ? join(dir, 'bundle.pem') : a)), '-identity', ID, '-out-cert', newCert])).toMatchObject({ ok: true, chain: 2 });
  const newChain = await readFile(newCert, 'utf8');
  expect(pemCertificates(newChain)[1]).toBe(newRoot);
  expect((await ws.verify(newChain, (await mapBundle(appNs[1]))!)).code).toBe(0);
  expect(await daemon!.metric('ca_server_root_cert_expiry_timestamp')).toBe(Math.floor(Date.parse((await ws.text(newRoot)).match(/Not After : (.*)/)![1]) / 1000));
}, 180_000);
