/**
 * meshd's webhooks, called by the local plane's real API server, when their inputs change or are
 * wrong: a pod the template cannot render, an edit of the injector ConfigMap, the ConfigMap missing
 * (answered by each webhook's failurePolicy), validation warnings returned as admission warnings, the
 * cfg_validation_* metrics of `/validate`, and INJECT_ENABLED=false. One daemon (`dist/`, serving
 * certificate from openssl for `localhost`), restarted once at the end with injection off.
 *
 * The webhook configurations are those `meshctl install` renders, renamed and narrowed to this
 * file's namespaces (so a stopped daemon refuses nobody else's pods): the injection webhook twice,
 * once with failurePolicy Fail (namespace `fail`), once with Ignore (namespace `ignore`); the
 * validating webhook with Fail, for namespace `fail`.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KubeClient } from '../../src/kube/client.js';
import type { KubeObject } from '../../src/kube/types.js';
import { CLUSTER_START_TIMEOUT_MS, kubeRequest } from '../support/cluster.js';
import { freePort, startDaemon, type Daemon } from '../support/daemon.js';
import { eventually } from '../support/eventually.js';
import { ADMISSION, containerNames, endWebhookTest, injectionStatus, installObjects, localhostServingCertificate, pick, pointedAt, postToWebhook, proxyContainer, testPod, type TestPod, type WebhookConfig } from '../support/webhooks.js';
import { applyMeshCrds, createNamespace, kubeTestEnv, type KubeTestEnv } from '../kube/helpers.js';

const SUFFIX = randomBytes(3).toString('hex');
const MUTATING = `wc-injector-${SUFFIX}`;
const VALIDATING = `wc-validation-${SUFFIX}`;
const CONFIG_MAP = 'mesh-sidecar-injector';

let env: KubeTestEnv;
let client: KubeClient;
let meshNs: string;
let failNs: string;
let ignoreNs: string;
let daemon: Daemon | undefined;
let certDir: string;
let tls: { cert: string; key: string; ca: string };
let caPem: string;
let port: number;
let injectorConfigMap: KubeObject & { data: Record<string, string> };
const created: Array<{ apiVersion: string; kind: string; name: string }> = [];

const byName = (namespace: string): Record<string, unknown> => ({ matchLabels: { 'kubernetes.io/metadata.name': namespace } });

async function start(extraEnv: Record<string, string> = {}): Promise<Daemon> {
  return startDaemon({
    registries: 'Cluster',
    args: ['--clusterconfig', env.cluster.kubeconfig, '--httpsAddr', `127.0.0.1:${port}`, '--tlsCertFile', tls.cert, '--tlsKeyFile', tls.key, '--caCertFile', tls.ca],
    env: { POD_NAMESPACE: meshNs, POD_NAME: 'meshd-wc-0', INJECTION_WEBHOOK_CONFIG_NAME: MUTATING, VALIDATION_WEBHOOK_CONFIG_NAME: VALIDATING, DISC_ENABLE_STATUS: 'false', ...extraEnv },
    readyTimeoutMs: 90_000,
  });
}

/** The API server's refusal of `p`, or undefined when the pod was created. */
async function refusal(p: TestPod): Promise<string | undefined> {
  try {
    await client.create(p);
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
}

let serial = 0;
const fresh = (namespace: string, base: string, extra?: Parameters<typeof testPod>[2]): TestPod => testPod(namespace, `${base}-${++serial}`, extra);

const vs = (namespace: string, name: string, spec: Record<string, unknown>): KubeObject =>
  ({ apiVersion: 'networking.mesh.io/v1', kind: 'VirtualService', metadata: { name, namespace }, spec }) as KubeObject;

beforeAll(async () => {
  env = await kubeTestEnv();
  client = env.client;
  await applyMeshCrds(client);
  meshNs = await createNamespace(client, 'meshwc');
  failNs = await createNamespace(client, 'wc-fail');
  ignoreNs = await createNamespace(client, 'wc-ignore');
  certDir = await mkdtemp(join(tmpdir(), 'mesh-webhook-config-'));
  tls = await localhostServingCertificate(certDir);
  caPem = await readFile(tls.ca, 'utf8');
  port = await freePort();
  const objects = await installObjects(meshNs);
  injectorConfigMap = pick(objects, 'ConfigMap', CONFIG_MAP) as unknown as typeof injectorConfigMap;
  await client.create(injectorConfigMap);
  const rendered = pick(objects, 'MutatingWebhookConfiguration');
  const nsWebhook = (rendered.webhooks as Array<Record<string, unknown>>).find((w) => w.name === 'namespace.sidecar-injector.mesh.io');
  if (!nsWebhook) throw new Error('install renders no namespace.sidecar-injector.mesh.io webhook');
  const url = `https://localhost:${port}`;
  const mutating = pointedAt({ ...rendered, webhooks: [nsWebhook, nsWebhook] }, `${url}/inject`, { name: MUTATING });
  const [failing, ignoring] = (mutating as WebhookConfig).webhooks;
  Object.assign(failing, { name: 'fail.sidecar-injector.mesh.io', failurePolicy: 'Fail', namespaceSelector: byName(failNs) });
  Object.assign(ignoring, { name: 'ignore.sidecar-injector.mesh.io', failurePolicy: 'Ignore', namespaceSelector: byName(ignoreNs) });
  const validating = pointedAt(pick(objects, 'ValidatingWebhookConfiguration'), `${url}/validate`, {
    name: VALIDATING,
    edit: (w) => ({ ...w, failurePolicy: 'Fail', namespaceSelector: byName(failNs) }),
  });
  for (const c of [mutating, validating]) {
    await client.create(c);
    created.push({ apiVersion: ADMISSION, kind: c.kind ?? '', name: c.metadata?.name ?? '' });
  }
  daemon = await start();
}, CLUSTER_START_TIMEOUT_MS);

afterAll(async () => {
  await endWebhookTest({ client, daemon, configs: created, namespaces: [failNs, ignoreNs, meshNs], dir: certDir });
}, 120_000);

let firstInjected: TestPod;

describe('meshd\'s webhooks through the API server', () => {
  it('writes the caBundle of both configurations (counted in cfg_validation_config_*), then injects pods of both namespaces', async () => {
    for (const c of created) {
      await eventually(`${c.kind} ${c.name} to get the caBundle`, async () => ((await client.get(c)) as WebhookConfig).webhooks.every((w) => (w.clientConfig.caBundle ?? '') !== ''), {
        timeoutMs: 60_000,
        retryErrors: true,
      });
    }
    expect(await daemon!.metric('cfg_validation_config_load')).toBeGreaterThanOrEqual(2);
    expect(await daemon!.metric('cfg_validation_config_updates')).toBeGreaterThanOrEqual(2);
    expect(await daemon!.metric('cfg_validation_config_load_error')).toBe(0);
    expect(await daemon!.metric('cfg_validation_config_update_error')).toBe(0);
    firstInjected = await eventually('a pod created through the webhook', async () => (await client.create(fresh(failNs, 'first'))) as TestPod, { timeoutMs: 60_000, retryErrors: true });
    expect(containerNames(firstInjected)).toContain('mesh-proxy');
    const ignored = await eventually('a pod of the Ignore namespace injected', async () => {
      const p = (await client.create(fresh(ignoreNs, 'first'))) as TestPod;
      return proxyContainer(p) ? p : undefined;
    }, { timeoutMs: 30_000 });
    expect(containerNames(ignored)).toContain('mesh-proxy');
  }, 150_000);

  it('refuses a pod the template cannot render, naming the field and the reason, counted; the next pod is injected', async () => {
    const volume = injectionStatus(firstInjected)?.volumes[0];
    expect(volume).toBeTruthy();
    const before = await daemon!.metric('sidecar_injection_failure_total', { reason: 'pod' });
    const clash = fresh(failNs, 'clash');
    clash.spec.volumes = [{ name: volume!, emptyDir: {} }];
    const clashRefusal = await refusal(clash);
    expect(clashRefusal).toMatch(/denied the request/);
    expect(clashRefusal).toContain(`spec.volumes: the pod already has a volume named ${volume}`);
    const badRange = await refusal(fresh(failNs, 'range', { annotations: { 'traffic.sidecar.mesh.io/includeOutboundIPRanges': '10.0.0.0/33' } }));
    expect(badRange).toContain('metadata.annotations["traffic.sidecar.mesh.io/includeOutboundIPRanges"]: "10.0.0.0/33" is not a CIDR block');
    expect(await daemon!.metric('sidecar_injection_failure_total', { reason: 'pod' })).toBe(before + 2);
    expect(containerNames((await client.create(fresh(failNs, 'after-refusal'))) as TestPod)).toContain('mesh-proxy');
  }, 60_000);

  it('reads the injector ConfigMap again after an edit: the next pod gets the edited proxy image', async () => {
    const cm = await client.get<typeof injectorConfigMap>({ apiVersion: 'v1', kind: 'ConfigMap', namespace: meshNs, name: CONFIG_MAP });
    const values = JSON.parse(cm.data.values) as { global?: Record<string, unknown> };
    const image = `example.com/edited/proxy:${SUFFIX}`;
    values.global = { ...(values.global ?? {}), proxyImage: image };
    await client.replace({ ...cm, data: { ...cm.data, values: JSON.stringify(values) } });
    const edited = await eventually('a pod with the edited image', async () => {
      const p = (await client.create(fresh(failNs, 'edited'))) as TestPod;
      return proxyContainer(p)?.image === image ? p : undefined;
    }, { timeoutMs: 30_000, intervalMs: 500 });
    expect(proxyContainer(edited)?.image).toBe(image);
  }, 60_000);

  it('without its ConfigMap, answers by failurePolicy: Fail refuses naming the ConfigMap, Ignore admits the pod unmodified; counted; injection resumes when it is back', async () => {
    const before = await daemon!.metric('sidecar_injection_failure_total', { reason: 'config' });
    await client.delete({ apiVersion: 'v1', kind: 'ConfigMap', namespace: meshNs, name: CONFIG_MAP });
    const message = await eventually('a pod refused for the missing ConfigMap', () => refusal(fresh(failNs, 'no-config')), { timeoutMs: 30_000, intervalMs: 500 });
    expect(message).toMatch(/fail\.sidecar-injector\.mesh\.io/);
    expect(message).toContain(`the injector ConfigMap ${meshNs}/${CONFIG_MAP} does not exist`);
    const passed = (await client.create(fresh(ignoreNs, 'no-config'))) as TestPod;
    expect(containerNames(passed)).toEqual(['app']);
    expect(passed.metadata?.annotations?.['sidecar.mesh.io/status']).toBeUndefined();
    expect(await daemon!.metric('sidecar_injection_failure_total', { reason: 'config' })).toBeGreaterThanOrEqual(before + 2);

    await client.create({ ...injectorConfigMap, metadata: { name: CONFIG_MAP, namespace: meshNs, labels: injectorConfigMap.metadata?.labels } });
    const back = await eventually('a pod injected again', async () => {
      const p = (await client.create(fresh(failNs, 'config-back'))) as TestPod;
      return proxyContainer(p) ? p : undefined;
    }, { timeoutMs: 30_000, intervalMs: 500, retryErrors: true });
    expect(containerNames(back)).toContain('mesh-proxy');
  }, 90_000);

  it('returns validation warnings as admission warnings: the API server sends them in its Warning header', async () => {
    const passedBefore = await daemon!.metric('cfg_validation_passed', { resource: 'virtualservices' });
    const body = vs(failNs, 'split', { hosts: ['a'], http: [{ route: [{ destination: { host: 'a' }, weight: 30 }, { destination: { host: 'b' }, weight: 30 }] }] });
    const res = await kubeRequest(env.creds, 'POST', `/apis/networking.mesh.io/v1/namespaces/${failNs}/virtualservices`, body);
    expect(res.status).toBe(201);
    const warning = [res.headers.warning ?? []].flat().join('\n');
    expect(warning).toMatch(/weights add up to 60, not 100/);
    expect(await daemon!.metric('cfg_validation_passed', { resource: 'virtualservices' })).toBe(passedBefore + 1);
  }, 60_000);

  it('counts each cfg_validation_* outcome of /validate where it happens', async () => {
    const m = (name: string, labels?: Record<string, string>): Promise<number> => daemon!.metric(name, labels);
    // cfg_validation_failed{reason=invalid}: refused through the API server
    const invalidBefore = await m('cfg_validation_failed', { reason: 'invalid', resource: 'virtualservices' });
    const denied = await client.create(vs(failNs, 'bad', { hosts: ['a'], http: [{ route: [{ destination: { host: 'a' }, weight: -5 }] }] })).then(
      () => '',
      (err: unknown) => (err as Error).message,
    );
    expect(denied).toMatch(/denied the request.*weight/s);
    expect(await m('cfg_validation_failed', { reason: 'invalid', resource: 'virtualservices' })).toBe(invalidBefore + 1);
    // cfg_validation_failed{reason=no_object}: a mesh kind without its object
    const noObjectBefore = await m('cfg_validation_failed', { reason: 'no_object' });
    const review = { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request: { uid: 'u1', kind: { group: 'networking.mesh.io', version: 'v1', kind: 'VirtualService' }, operation: 'CREATE', namespace: failNs } };
    const noObject = await postToWebhook(port, caPem, '/validate', JSON.stringify(review));
    expect(noObject.status).toBe(200);
    expect(JSON.parse(noObject.text)).toMatchObject({ response: { uid: 'u1', allowed: false, status: { message: 'request.object: missing' } } });
    expect(await m('cfg_validation_failed', { reason: 'no_object' })).toBe(noObjectBefore + 1);
    // cfg_validation_http_error{status}: a body that is no AdmissionReview, and a GET
    const e400 = await m('cfg_validation_http_error', { status: '400' });
    const e405 = await m('cfg_validation_http_error', { status: '405' });
    expect((await postToWebhook(port, caPem, '/validate', '{"kind":')).status).toBe(400);
    expect((await postToWebhook(port, caPem, '/validate', '', 'GET')).status).toBe(405);
    expect(await m('cfg_validation_http_error', { status: '400' })).toBe(e400 + 1);
    expect(await m('cfg_validation_http_error', { status: '405' })).toBe(e405 + 1);
    // cfg_validation_passed: a valid object through the API server
    const passedBefore = await m('cfg_validation_passed');
    await client.create(vs(failNs, 'good', { hosts: ['a'], http: [{ route: [{ destination: { host: 'a' } }] }] }));
    expect(await m('cfg_validation_passed')).toBe(passedBefore + 1);
  }, 60_000);

  it('INJECT_ENABLED=false: /inject answers with an error saying so; the API server refuses by Fail, admits by Ignore; counted; validation goes on', async () => {
    await daemon!.stop();
    daemon = undefined;
    daemon = await start({ INJECT_ENABLED: 'false' });
    const direct = await postToWebhook(port, caPem, '/inject', '{}');
    expect(direct.status).toBe(500);
    expect(direct.text).toMatch(/sidecar injection is off in this meshd \(INJECT_ENABLED=false\)/);
    const message = await refusal(fresh(failNs, 'inject-off'));
    expect(message).toMatch(/failed calling webhook "fail\.sidecar-injector\.mesh\.io"/);
    expect(message).toMatch(/INJECT_ENABLED=false/);
    const passed = (await client.create(fresh(ignoreNs, 'inject-off'))) as TestPod;
    expect(containerNames(passed)).toEqual(['app']);
    expect(passed.metadata?.annotations?.['sidecar.mesh.io/status']).toBeUndefined();
    expect(await daemon.metric('sidecar_injection_failure_total', { reason: 'disabled' })).toBe(3);
    expect(await daemon.metric('sidecar_injection_success_total')).toBe(0);
    const denied = await client.create(vs(failNs, 'bad-off', { hosts: ['a'], http: [{ route: [{ destination: { host: 'a' }, weight: -5 }] }] })).then(
      () => '',
      (err: unknown) => (err as Error).message,
    );
    expect(denied).toMatch(/denied the request.*weight/s);
  }, 150_000);
});
