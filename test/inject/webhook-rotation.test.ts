/**
 * The webhook's certificate through a root rotation while meshd keeps running: meshd's built-in CA
 * (root in the Secret mesh-ca-secret, ENABLE_CA_SERVER; MESHD_CUSTOM_HOST=localhost because the local
 * plane's API server calls the webhook by URL) with lifetimes shortened the way
 * e2e/identity-options does it (CA_SELF_SIGNED_CA_CERT_TTL, a 1 s check interval, rotation at half
 * the lifetime, no jitter). The root rotates, later the old root expires and leaves the trust
 * bundle; meshd rewrites the caBundle each time, never serves a certificate from a root the caBundle
 * does not hold yet (docs/adr/0147), and the real API server, called all along with dry-run pod
 * creations, keeps injecting. The webhook configuration selects only this file's
 * namespace.
 */
import { randomBytes, X509Certificate } from 'node:crypto';
import { connect } from 'node:tls';
import type { KubeClient } from '../../src/kube/client.js';
import type { KubeObject } from '../../src/kube/types.js';
import { CLUSTER_START_TIMEOUT_MS } from '../support/cluster.js';
import { freePort, startDaemon, type Daemon } from '../support/daemon.js';
import { delay, eventually } from '../support/eventually.js';
import { pemCertificates } from '../support/openssl.js';
import { ADMISSION, endWebhookTest, installObjects, pick, pointedAt, proxyContainer, testPod, type TestPod, type WebhookConfig } from '../support/webhooks.js';
import { applyMeshCrds, createNamespace, kubeTestEnv, type KubeTestEnv } from '../kube/helpers.js';

const WEBHOOK = `rot-injector-${randomBytes(3).toString('hex')}`;
const ROOT_TTL_S = 20;

let env: KubeTestEnv;
let client: KubeClient;
let meshNs: string;
let appNs: string;
let daemon: Daemon | undefined;
let created = false;
let port: number;

async function bundleRoots(): Promise<string[]> {
  const o = (await client.get({ apiVersion: ADMISSION, kind: 'MutatingWebhookConfiguration', name: WEBHOOK })) as WebhookConfig;
  const b64 = o.webhooks[0]?.clientConfig.caBundle ?? '';
  return pemCertificates(Buffer.from(b64, 'base64').toString('utf8'));
}

/** The certificate the webhook port serves now (not verified here). */
function servedLeaf(): Promise<X509Certificate> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, servername: 'localhost', rejectUnauthorized: false }, () => {
      const raw = socket.getPeerCertificate().raw;
      socket.end();
      resolve(new X509Certificate(raw));
    });
    socket.on('error', reject);
  });
}

const signedByOneOf = (leaf: X509Certificate, roots: readonly string[]): boolean => roots.some((r) => leaf.verify(new X509Certificate(r).publicKey));

beforeAll(async () => {
  env = await kubeTestEnv();
  client = env.client;
  await applyMeshCrds(client);
  meshNs = await createNamespace(client, 'meshrot');
  appNs = await createNamespace(client, 'rot-app');
  port = await freePort();
  const objects = await installObjects(meshNs);
  await client.create(pick(objects, 'ConfigMap', 'mesh-sidecar-injector') as KubeObject);
  const mutating = pointedAt(pick(objects, 'MutatingWebhookConfiguration'), `https://localhost:${port}/inject`, {
    name: WEBHOOK,
    edit: (w) => ({ ...w, namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': appNs } }, objectSelector: undefined }),
  });
  await client.create(mutating);
  created = true;
  daemon = await startDaemon({
    registries: 'Cluster',
    args: ['--clusterconfig', env.cluster.kubeconfig, '--httpsAddr', `127.0.0.1:${port}`, '--secureGRPCAddr', `127.0.0.1:${await freePort()}`],
    env: {
      ENABLE_CA_SERVER: 'true',
      MESHD_CUSTOM_HOST: 'localhost',
      POD_NAMESPACE: meshNs,
      POD_NAME: 'meshd-rotation-0',
      INJECTION_WEBHOOK_CONFIG_NAME: WEBHOOK,
      VALIDATION_WEBHOOK_CONFIG_NAME: '',
      DISC_ENABLE_STATUS: 'false',
      CA_SELF_SIGNED_CA_CERT_TTL: `${ROOT_TTL_S}s`,
      CA_SELF_SIGNED_ROOT_CERT_CHECK_INTERVAL: '1s',
      CA_SELF_SIGNED_ROOT_CERT_GRACE_PERIOD_PERCENTILE: '50',
      CA_ENABLE_JITTER_FOR_ROOT_CERT_ROTATOR: 'false',
    },
    readyTimeoutMs: 90_000,
  });
}, CLUSTER_START_TIMEOUT_MS);

afterAll(async () => {
  const configs = created ? [{ apiVersion: ADMISSION, kind: 'MutatingWebhookConfiguration', name: WEBHOOK }] : [];
  await endWebhookTest({ client, daemon, configs, namespaces: [appNs, meshNs] });
}, 120_000);

describe('a root rotation while meshd runs', () => {
  it('rewrites the caBundle with the new root, then without the expired one, and the API server injects throughout', async () => {
    const first = await eventually('the caBundle written', async () => {
      const roots = await bundleRoots();
      return roots.length > 0 ? roots : undefined;
    }, { timeoutMs: 60_000, retryErrors: true });
    const firstExpiry = Math.max(...first.map((r) => new X509Certificate(r).validToDate.getTime()));
    // Until every root of the first bundle has left it, every 300 ms: the served certificate chains
    // to a root of the caBundle read just before, and a dry-run pod creation is injected.
    const outcomes: Array<{ at: number; roots: number; error?: string }> = [];
    const untrusted: number[] = [];
    const seen = new Set(first);
    let rotated = false;
    const deadline = firstExpiry + 30_000;
    for (;;) {
      const roots = await bundleRoots();
      for (const r of roots) if (!seen.has(r)) rotated = true;
      roots.forEach((r) => seen.add(r));
      if (!signedByOneOf(await servedLeaf(), roots)) untrusted.push(Date.now());
      try {
        const p = (await client.create(testPod(appNs, `probe-${outcomes.length}`), { dryRun: true })) as TestPod;
        outcomes.push({ at: Date.now(), roots: roots.length, ...(proxyContainer(p) ? {} : { error: 'not injected' }) });
      } catch (err) {
        outcomes.push({ at: Date.now(), roots: roots.length, error: (err as Error).message });
      }
      if (rotated && first.every((r) => !roots.includes(r))) break;
      if (Date.now() > deadline) throw new Error(`the first root did not leave the caBundle by its expiry + 30 s (rotated: ${rotated}; bundle: ${roots.length} roots)`);
      await delay(300);
    }
    expect(rotated).toBe(true);
    expect(Date.now()).toBeGreaterThan(firstExpiry);
    expect(untrusted).toEqual([]);
    const failed = outcomes.filter((o) => o.error);
    expect({ calls: outcomes.length, failed }).toEqual({ calls: outcomes.length, failed: [] });
    // and after the old root's expiry, a real pod
    const pod = (await client.create(testPod(appNs, 'after-rotation'))) as TestPod;
    expect(proxyContainer(pod)).toBeDefined();
    expect(await daemon!.metric('cfg_validation_config_updates')).toBeGreaterThanOrEqual(3);
  }, 150_000);
});
