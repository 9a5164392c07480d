/**
 * Revisions and revision tags through the real API server: a daemon of revision R (REVISION=R, its
 * injector ConfigMap `mesh-sidecar-injector-R` and its MutatingWebhookConfiguration
 * `mesh-sidecar-injector-R`, both as `meshctl install --revision R` renders them) injects the pods
 * of namespaces labelled `mesh.io/rev=R` and the pods so labelled in unlabelled namespaces, with R's
 * template; `meshctl tag set T --revision R` (the library call) makes namespaces labelled
 * `mesh.io/rev=T` injected by R, and R's daemon keeps the tag's caBundle. The revision's name is
 * random, so its webhooks select only this file's namespaces and pods.
 *
 * INJECTION_WEBHOOK_CONFIG_NAME is not given: a daemon of revision R patches
 * `mesh-sidecar-injector-R`, the name `meshctl install --revision R` gives its configuration.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CONTENT_TYPE_JSON_PATCH, type KubeClient } from '../../src/kube/client.js';
import type { KubeObject } from '../../src/kube/types.js';
import { setTag, tagWebhookName } from '../../src/install/tags.js';
import { CLUSTER_START_TIMEOUT_MS } from '../support/cluster.js';
import { freePort, startDaemon, type Daemon } from '../support/daemon.js';
import { eventually } from '../support/eventually.js';
import { ADMISSION, containerNames, endWebhookTest, injectionStatus, installObjects, localhostServingCertificate, pick, pointedAt, proxyContainer, testPod, type TestPod, type WebhookConfig } from '../support/webhooks.js';
import { applyMeshCrds, createNamespace, kubeTestEnv, type KubeTestEnv } from '../kube/helpers.js';

const REV = `cy${randomBytes(3).toString('hex')}`;
const TAG = `tg${randomBytes(3).toString('hex')}`;
const REV_WEBHOOK = `mesh-sidecar-injector-${REV}`;

let env: KubeTestEnv;
let client: KubeClient;
let meshNs: string;
let revNs: string;
let tagNs: string;
let plainNs: string;
let daemon: Daemon | undefined;
let certDir: string;
const created: Array<{ apiVersion: string; kind: string; name: string }> = [];

async function label(namespace: string, labels: Record<string, string>): Promise<void> {
  const ns = await client.get({ apiVersion: 'v1', kind: 'Namespace', name: namespace });
  await client.replace({ ...ns, metadata: { ...ns.metadata, labels: { ...ns.metadata?.labels, ...labels } } });
}

const webhookConfig = (name: string): Promise<WebhookConfig> => client.get({ apiVersion: ADMISSION, kind: 'MutatingWebhookConfiguration', name }) as Promise<WebhookConfig>;

beforeAll(async () => {
  env = await kubeTestEnv();
  client = env.client;
  await applyMeshCrds(client);
  meshNs = await createNamespace(client, 'meshrev');
  revNs = await createNamespace(client, 'rev-ns');
  tagNs = await createNamespace(client, 'tag-ns');
  plainNs = await createNamespace(client, 'rev-plain');
  await label(revNs, { 'mesh.io/rev': REV });
  await label(tagNs, { 'mesh.io/rev': TAG });
  certDir = await mkdtemp(join(tmpdir(), 'mesh-webhook-rev-'));
  const tls = await localhostServingCertificate(certDir);
  const port = await freePort();
  const objects = await installObjects(meshNs, REV);
  await client.create(pick(objects, 'ConfigMap', `mesh-sidecar-injector-${REV}`) as KubeObject);
  const mutating = pointedAt(pick(objects, 'MutatingWebhookConfiguration', REV_WEBHOOK), `https://localhost:${port}/inject`);
  await client.create(mutating);
  created.push({ apiVersion: ADMISSION, kind: 'MutatingWebhookConfiguration', name: REV_WEBHOOK });
  daemon = await startDaemon({
    registries: 'Cluster',
    args: ['--clusterconfig', env.cluster.kubeconfig, '--httpsAddr', `127.0.0.1:${port}`, '--tlsCertFile', tls.cert, '--tlsKeyFile', tls.key, '--caCertFile', tls.ca],
    env: { POD_NAMESPACE: meshNs, POD_NAME: `meshd-${REV}-0`, REVISION: REV, VALIDATION_WEBHOOK_CONFIG_NAME: '', DISC_ENABLE_STATUS: 'false' },
    readyTimeoutMs: 90_000,
  });
}, CLUSTER_START_TIMEOUT_MS);

afterAll(async () => {
  await endWebhookTest({ client, daemon, configs: created, namespaces: [revNs, tagNs, plainNs, meshNs], dir: certDir });
}, 120_000);

describe('a revision\'s daemon', () => {
  it('writes the caBundle of mesh-sidecar-injector-<revision>, then injects the pods of a namespace labelled mesh.io/rev=<revision> with its template', async () => {
    await eventually(`${REV_WEBHOOK} to get the caBundle`, async () => (await webhookConfig(REV_WEBHOOK)).webhooks.every((w) => (w.clientConfig.caBundle ?? '') !== ''), { timeoutMs: 60_000, retryErrors: true });
    const injected = await eventually('a pod of the revision namespace', async () => (await client.create(testPod(revNs, 'app'))) as TestPod, { timeoutMs: 60_000, retryErrors: true });
    expect(containerNames(injected)).toContain('mesh-proxy');
    expect(injectionStatus(injected)?.revision).toBe(REV);
    expect(injected.metadata?.labels?.['service.mesh.io/canonical-name']).toBe('app');
    // R's values: the proxy's discovery address is R's meshd
    expect(JSON.stringify(proxyContainer(injected)?.env ?? [])).toContain(`meshd-${REV}.${meshNs}.svc:15012`);
    const optedOut = (await client.create(testPod(revNs, 'opted-out', { labels: { 'sidecar.mesh.io/inject': 'false' } }))) as TestPod;
    expect(containerNames(optedOut)).toEqual(['app']);
  }, 150_000);

  it('injects a pod labelled mesh.io/rev=<revision> in an unlabelled namespace, and leaves its neighbours alone', async () => {
    const labelled = (await client.create(testPod(plainNs, 'labelled', { labels: { 'mesh.io/rev': REV } }))) as TestPod;
    expect(injectionStatus(labelled)?.revision).toBe(REV);
    const neighbour = (await client.create(testPod(plainNs, 'neighbour'))) as TestPod;
    expect(containerNames(neighbour)).toEqual(['app']);
  }, 60_000);

  it('a revision tag: namespaces labelled with the tag get the revision\'s template, and the daemon keeps the tag\'s caBundle', async () => {
    const tag = await setTag(client, { tag: TAG, revision: REV });
    const name = tag.webhook.metadata.name;
    expect(name).toBe(tagWebhookName(TAG));
    created.push({ apiVersion: ADMISSION, kind: 'MutatingWebhookConfiguration', name });
    const injected = await eventually('a pod of the tagged namespace', async () => (await client.create(testPod(tagNs, 'tagged'))) as TestPod, { timeoutMs: 30_000, retryErrors: true });
    expect(injectionStatus(injected)?.revision).toBe(REV);

    const bundle = (await webhookConfig(name)).webhooks[0]?.clientConfig.caBundle;
    expect(bundle).toBeTruthy();
    await client.request({ method: 'PATCH', path: `/apis/${ADMISSION}/mutatingwebhookconfigurations/${name}`, body: [{ op: 'remove', path: '/webhooks/0/clientConfig/caBundle' }], contentType: CONTENT_TYPE_JSON_PATCH });
    await eventually('the tag\'s caBundle restored', async () => (await webhookConfig(name)).webhooks.every((w) => w.clientConfig.caBundle === bundle), { timeoutMs: 30_000, retryErrors: true });
  }, 90_000);
});
