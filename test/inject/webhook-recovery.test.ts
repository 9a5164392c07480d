/**
 * meshd's webhook certificate comes from its built-in CA (ENABLE_CA_SERVER, root in the Secret
 * mesh-ca-secret of its namespace; MESHD_CUSTOM_HOST=localhost because the local plane's API server
 * calls the webhook by URL). Deleting that Secret and restarting meshd recovers: the new daemon
 * makes a new root, serves a certificate from it, writes the new caBundle, and the real API server
 * injects pods through it again. The webhook configuration made here selects only this test's
 * namespace, so a daemon that is down refuses no one else's pods.
 */
import { randomBytes } from 'node:crypto';
import type { KubeClient } from '../../src/kube/client.js';
import type { KubeObject } from '../../src/kube/types.js';
import { CLUSTER_START_TIMEOUT_MS } from '../support/cluster.js';
import { freePort, startDaemon, type Daemon } from '../support/daemon.js';
import { eventually } from '../support/eventually.js';
import { ADMISSION, containerNames as names, endWebhookTest, installObjects, onlyNamespace, pick, pointedAt, testPod, type TestPod as Pod, type WebhookConfig as Hook } from '../support/webhooks.js';
import { applyMeshCrds, createNamespace, kubeTestEnv, type KubeTestEnv } from '../kube/helpers.js';

const WEBHOOK = `capt-recovery-${randomBytes(3).toString('hex')}`;

let env: KubeTestEnv;
let client: KubeClient;
let meshNs: string;
let appNs: string;
let port: number;
let daemon: Daemon | undefined;
let created = false;

const pod = (name: string): Pod => testPod(appNs, name);

async function start(): Promise<Daemon> {
  return startDaemon({
    registries: 'Cluster',
    args: ['--clusterconfig', env.cluster.kubeconfig, '--httpsAddr', `127.0.0.1:${port}`, '--secureGRPCAddr', `127.0.0.1:${await freePort()}`],
    env: { ENABLE_CA_SERVER: 'true', MESHD_CUSTOM_HOST: 'localhost', POD_NAMESPACE: meshNs, POD_NAME: 'meshd-recovery-0', INJECTION_WEBHOOK_CONFIG_NAME: WEBHOOK, DISC_ENABLE_STATUS: 'false' },
    readyTimeoutMs: 90_000,
  });
}

async function caBundle(): Promise<string> {
  const o = (await client.get({ apiVersion: ADMISSION, kind: 'MutatingWebhookConfiguration', name: WEBHOOK })) as Hook;
  return o.webhooks[0]?.clientConfig.caBundle ?? '';
}

async function rootOfSecret(): Promise<string> {
  const s = await client.get<KubeObject & { data?: Record<string, string> }>({ apiVersion: 'v1', kind: 'Secret', namespace: meshNs, name: 'mesh-ca-secret' });
  return s.data?.['root-cert.pem'] ?? '';
}

beforeAll(async () => {
  env = await kubeTestEnv();
  client = env.client;
  await applyMeshCrds(client);
  meshNs = await createNamespace(client, 'meshrc');
  appNs = await createNamespace(client, 'inj-rc');
  port = await freePort();
  const objects = await installObjects(meshNs);
  await client.create(pick(objects, 'ConfigMap', 'mesh-sidecar-injector') as KubeObject);
  // the rendered webhooks, by URL, selecting only this test's namespace (failurePolicy Fail as rendered)
  await client.create(
    pointedAt(pick(objects, 'MutatingWebhookConfiguration'), `https://localhost:${port}/inject`, {
      name: WEBHOOK,
      edit: onlyNamespace(appNs),
    }),
  );
  created = true;
  daemon = await start();
}, CLUSTER_START_TIMEOUT_MS);

afterAll(async () => {
  const configs = created ? [{ apiVersion: ADMISSION, kind: 'MutatingWebhookConfiguration', name: WEBHOOK }] : [];
  await endWebhookTest({ client, daemon, configs, namespaces: [appNs, meshNs] });
}, 120_000);

describe('meshd\'s webhook certificate', () => {
  it('comes from the CA whose root is in mesh-ca-secret; the API server injects through it', async () => {
    await eventually('the caBundle written', async () => (await caBundle()) !== '', { timeoutMs: 60_000, retryErrors: true });
    expect(Buffer.from(await caBundle(), 'base64').toString('utf8')).toContain(Buffer.from(await rootOfSecret(), 'base64').toString('utf8').trim());
    const injected = await eventually('a pod created through the webhook', async () => (await client.create(pod('before'))) as Pod, { timeoutMs: 60_000, retryErrors: true });
    expect(names(injected)).toEqual(['app', 'mesh-init', 'mesh-proxy']);
  }, 150_000);

  it('deleted with its CA Secret while meshd is down: the restarted meshd makes a new root, writes the new caBundle, and injection works again', async () => {
    const oldBundle = await caBundle();
    const oldRoot = await rootOfSecret();
    await daemon!.stop();
    daemon = undefined;
    await client.delete({ apiVersion: 'v1', kind: 'Secret', namespace: meshNs, name: 'mesh-ca-secret' });
    // with meshd down and failurePolicy Fail, the namespace's pods are refused
    await expect(client.create(pod('while-down'))).rejects.toThrow(/failed calling webhook|connection refused|context deadline/i);

    daemon = await start();
    const newRoot = await eventually('a new mesh-ca-secret', async () => {
      const r = await rootOfSecret().catch(() => '');
      return r !== '' ? r : undefined;
    }, { timeoutMs: 60_000, retryErrors: true });
    expect(newRoot).not.toBe(oldRoot);
    await eventually('the new caBundle written', async () => {
      const b = await caBundle();
      return b !== oldBundle && Buffer.from(b, 'base64').toString('utf8').includes(Buffer.from(newRoot, 'base64').toString('utf8').trim());
    }, { timeoutMs: 60_000, retryErrors: true });
    const injected = await eventually('a pod created through the recovered webhook', async () => (await client.create(pod('after'))) as Pod, { timeoutMs: 60_000, retryErrors: true });
    expect(names(injected)).toEqual(['app', 'mesh-init', 'mesh-proxy']);
    expect(await daemon.metric('sidecar_injection_success_total')).toBeGreaterThanOrEqual(1);
  }, 240_000);
});
