/**
 * meshd's webhooks called by the real API server of the local plane. The daemon is the built one
 * (`dist/`), started with `--registries Cluster`, its webhook port served with a certificate from
 * `--tlsCertFile`/`--tlsKeyFile`/`--caCertFile` (openssl, DNS name `localhost`). The webhook
 * configurations and the injector ConfigMap are those `meshctl install` renders, with one change:
 * the API server of the local plane cannot reach a Service, so `clientConfig` is the URL of the
 * daemon's port and no caBundle is given — the daemon's webhook-ca-bundle controller must write it
 * before the API server can call the webhook at all.
 */
import { readFile, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CONTENT_TYPE_JSON_PATCH, type KubeClient } from '../../src/kube/client.js';
import type { KubeObject } from '../../src/kube/types.js';
import { CLUSTER_START_TIMEOUT_MS } from '../support/cluster.js';
import { freePort, startDaemon, type Daemon } from '../support/daemon.js';
import { eventually } from '../support/eventually.js';
import { ADMISSION, containerNames as names, endWebhookTest, installObjects, localhostServingCertificate, pick, pointedAt, postToWebhook, testPod as pod, type TestPod as Pod } from '../support/webhooks.js';
import { applyMeshCrds, createNamespace, kubeTestEnv, type KubeTestEnv } from '../kube/helpers.js';

let env: KubeTestEnv;
let client: KubeClient;
let meshNs: string;
let enabledNs: string;
let plainNs: string;
let daemon: Daemon | undefined;
let certDir: string;
let caPem: string;
let webhookPort: number;
const created: Array<{ apiVersion: string; kind: string; name: string }> = [];

beforeAll(async () => {
  env = await kubeTestEnv();
  client = env.client;
  await applyMeshCrds(client);
  meshNs = await createNamespace(client, 'meshwh');
  enabledNs = await createNamespace(client, 'inj-on');
  plainNs = await createNamespace(client, 'inj-off');
  const nsObj = await client.get({ apiVersion: 'v1', kind: 'Namespace', name: enabledNs });
  await client.replace({ ...nsObj, metadata: { ...nsObj.metadata, labels: { ...nsObj.metadata?.labels, 'mesh-injection': 'enabled' } } });

  certDir = await mkdtemp(join(tmpdir(), 'mesh-webhook-'));
  const tls = await localhostServingCertificate(certDir);
  caPem = await readFile(tls.ca, 'utf8');
  const port = await freePort();
  webhookPort = port;
  const objects = await installObjects(meshNs);
  await client.create(pick(objects, 'ConfigMap', 'mesh-sidecar-injector') as KubeObject);
  const mutating = pointedAt(pick(objects, 'MutatingWebhookConfiguration'), `https://localhost:${port}/inject`);
  const validating = pointedAt(pick(objects, 'ValidatingWebhookConfiguration'), `https://localhost:${port}/validate`);
  for (const c of [mutating, validating]) {
    await client.create(c);
    created.push({ apiVersion: ADMISSION, kind: c.kind ?? '', name: c.metadata?.name ?? '' });
  }
  daemon = await startDaemon({
    registries: 'Cluster',
    args: ['--clusterconfig', env.cluster.kubeconfig, '--httpsAddr', `127.0.0.1:${port}`, '--tlsCertFile', tls.cert, '--tlsKeyFile', tls.key, '--caCertFile', tls.ca],
    env: {
      POD_NAMESPACE: meshNs,
      POD_NAME: 'meshd-webhook-0',
      INJECTION_WEBHOOK_CONFIG_NAME: mutating.metadata?.name,
      VALIDATION_WEBHOOK_CONFIG_NAME: validating.metadata?.name,
    },
    readyTimeoutMs: 90_000,
  });
}, CLUSTER_START_TIMEOUT_MS);

afterAll(async () => {
  await endWebhookTest({ client, daemon, configs: created, namespaces: [enabledNs, plainNs, meshNs], dir: certDir });
}, 120_000);

describe('the API server calls meshd over TLS', () => {
  it('writes the caBundle into both configurations, after which a pod of an enabled namespace comes back injected', async () => {
    for (const c of created) {
      await eventually(`${c.kind} ${c.name} to get the caBundle`, async () => {
        const o = (await client.get(c)) as KubeObject & { webhooks: Array<{ clientConfig: { caBundle?: string } }> };
        return o.webhooks.every((w) => (w.clientConfig.caBundle ?? '') !== '');
      }, { timeoutMs: 60_000, retryErrors: true });
    }
    // The API server may take a moment to see the new configuration; with failurePolicy Fail a
    // refused call is retried until the pod is created.
    const injected = await eventually('the pod created through the webhook', async () => (await client.create(pod(enabledNs, 'app'))) as Pod, { timeoutMs: 60_000, retryErrors: true });
    expect(names(injected)).toEqual(['app', 'mesh-init', 'mesh-proxy']);
    expect(injected.metadata?.annotations?.['sidecar.mesh.io/status']).toBeDefined();
    expect(await daemon!.metric('sidecar_injection_success_total')).toBeGreaterThanOrEqual(1);
  }, 150_000);

  it('a Deployment of an enabled namespace gets injected pods: the controller manager creates them through the webhook', async () => {
    const template = pod(enabledNs, 'web');
    const deployment = {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web', namespace: enabledNs },
      spec: { replicas: 1, selector: { matchLabels: { app: 'web' } }, template: { metadata: { labels: { app: 'web' } }, spec: template.spec } },
    };
    await client.create(deployment as KubeObject);
    const created = await eventually(
      "the Deployment's pod",
      async () => (await client.list<Pod & KubeObject>('v1', 'Pod', { namespace: enabledNs, labelSelector: 'app=web' })).items[0],
      { timeoutMs: 90_000, retryErrors: true },
    );
    expect(names(created)).toEqual(['app', 'mesh-init', 'mesh-proxy']);
    expect(created.metadata?.annotations?.['sidecar.mesh.io/status']).toBeDefined();
  }, 120_000);

  it('leaves alone a pod of a namespace without the label, an opted-out pod, and an already injected pod', async () => {
    const plain = (await client.create(pod(plainNs, 'plain'))) as Pod;
    expect(names(plain)).toEqual(['app']);
    const optedOut = (await client.create(pod(enabledNs, 'opted-out', { labels: { 'sidecar.mesh.io/inject': 'false' } }))) as Pod;
    expect(names(optedOut)).toEqual(['app']);
    const skipsBefore = await daemon!.metric('sidecar_injection_skip_total');
    const already = (await client.create(pod(enabledNs, 'already', { annotations: { 'sidecar.mesh.io/status': '{"containers":["mesh-proxy"]}' } }))) as Pod;
    expect(names(already)).toEqual(['app']);
    expect(await daemon!.metric('sidecar_injection_skip_total')).toBe(skipsBefore + 1);
  }, 60_000);

  it('writes the caBundle again when someone clears it', async () => {
    const mutating = created.find((c) => c.kind === 'MutatingWebhookConfiguration')!;
    const path = `/apis/${ADMISSION}/mutatingwebhookconfigurations/${mutating.name}`;
    const before = (await client.get(mutating)) as KubeObject & { webhooks: Array<{ clientConfig: { caBundle?: string } }> };
    const bundle = before.webhooks[0]?.clientConfig.caBundle;
    expect(bundle).toBeTruthy();
    await client.request({ method: 'PATCH', path, body: [{ op: 'remove', path: '/webhooks/0/clientConfig/caBundle' }], contentType: CONTENT_TYPE_JSON_PATCH });
    await eventually('the caBundle restored', async () => {
      const o = (await client.get(mutating)) as typeof before;
      return o.webhooks[0]?.clientConfig.caBundle === bundle;
    }, { timeoutMs: 30_000, retryErrors: true });
  }, 60_000);

  it('refuses an invalid VirtualService with the field named, and admits a valid one', async () => {
    const vs = (name: string, spec: Record<string, unknown>): KubeObject => ({ apiVersion: 'networking.mesh.io/v1', kind: 'VirtualService', metadata: { name, namespace: enabledNs }, spec } as KubeObject);
    const failedBefore = await daemon!.metric('cfg_validation_failed');
    let refusal = '';
    try {
      await client.create(vs('bad', { hosts: ['a'], http: [{ route: [{ destination: { host: 'a' }, weight: -5 }] }] }));
    } catch (err) {
      refusal = (err as Error).message;
    }
    expect(refusal).toMatch(/denied the request/);
    expect(refusal).toMatch(/weight/);
    expect(await daemon!.metric('cfg_validation_failed')).toBe(failedBefore + 1);
    const ok = await client.create(vs('good', { hosts: ['a'], http: [{ route: [{ destination: { host: 'a' } }] }] }));
    expect(ok.metadata?.name).toBe('good');
  }, 60_000);
});

const post = (path: string, body: string): Promise<{ status: number; text: string }> => postToWebhook(webhookPort, caPem, path, body);

describe('bad input on the webhook port', () => {
  it('a malformed AdmissionReview is a 400 naming what is wrong, counted; the server keeps serving', async () => {
    const failuresBefore = await daemon!.metric('sidecar_injection_failure_total');
    const notJson = await post('/inject', '{"kind":');
    expect(notJson.status).toBe(400);
    const noRequest = await post('/inject', JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview' }));
    expect(noRequest.status).toBe(400);
    expect(noRequest.text).toMatch(/request/);
    expect(await daemon!.metric('sidecar_injection_failure_total')).toBe(failuresBefore + 2);
    const after = (await client.create(pod(enabledNs, 'after-bad-input'))) as Pod;
    expect(names(after)).toContain('mesh-proxy');
  }, 60_000);
});
