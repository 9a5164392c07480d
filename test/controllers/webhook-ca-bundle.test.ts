/**
 * The webhook-ca-bundle controller against the local plane's API server, as clients whose RBAC
 * withholds one verb: without `get` the read of a configuration fails (cfg_validation_config_load_error),
 * without `patch` the write fails (cfg_validation_config_update_error); with both the caBundle is
 * written (cfg_validation_config_load, cfg_validation_config_updates). The counters are the daemon's
 * own (createMetrics), read by their spec names. The configuration made here selects no namespace.
 */
import { randomBytes } from 'node:crypto';
import pino from 'pino';
import { KubeClient } from '../../src/kube/client.js';
import type { KubeObject } from '../../src/kube/types.js';
import { WebhookCaBundleController } from '../../src/controllers/webhook-ca-bundle/controller.js';
import { createMetrics } from '../../src/metrics/metrics.js';
import { CLUSTER_START_TIMEOUT_MS, kubeRequest } from '../support/cluster.js';
import { eventually } from '../support/eventually.js';
import { metricValue } from '../support/metrics-text.js';
import { ADMISSION, type WebhookConfig } from '../support/webhooks.js';
import { createNamespace, deleteNamespace, kubeTestEnv, type KubeTestEnv } from '../kube/helpers.js';

const SUFFIX = randomBytes(3).toString('hex');
const CONFIG = `wcb-${SUFFIX}`;
const RBAC = 'rbac.authorization.k8s.io/v1';

let env: KubeTestEnv;
let ns: string;
/** A real certificate as the bundle: the plane's cluster CA. */
let BUNDLE: string;
const cleanup: Array<{ apiVersion: string; kind: string; name: string }> = [];

/** A client acting as a service account that may do `verbs` on webhook configurations only. */
async function clientWith(name: string, verbs: string[]): Promise<KubeClient> {
  const sa = `${name}-${SUFFIX}`;
  await env.client.create({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: sa, namespace: ns } });
  await env.client.create({ apiVersion: RBAC, kind: 'ClusterRole', metadata: { name: sa }, rules: [{ apiGroups: ['admissionregistration.k8s.io'], resources: ['mutatingwebhookconfigurations', 'validatingwebhookconfigurations'], verbs }] } as KubeObject);
  await env.client.create({
    apiVersion: RBAC,
    kind: 'ClusterRoleBinding',
    metadata: { name: sa },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: sa },
    subjects: [{ kind: 'ServiceAccount', name: sa, namespace: ns }],
  } as KubeObject);
  cleanup.push({ apiVersion: RBAC, kind: 'ClusterRoleBinding', name: sa }, { apiVersion: RBAC, kind: 'ClusterRole', name: sa });
  const res = await kubeRequest(env.creds, 'POST', `/api/v1/namespaces/${ns}/serviceaccounts/${sa}/token`, { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 600 } });
  if (res.status !== 201) throw new Error(`TokenRequest ${sa}: HTTP ${res.status}`);
  const token = (res.body as { status: { token: string } }).status.token;
  const kubeconfigText = JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'c', cluster: { server: env.creds.server, 'certificate-authority-data': env.creds.ca?.toString('base64') } }],
    users: [{ name: 'u', user: { token } }],
    contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
    'current-context': 'x',
  });
  return (await KubeClient.create({ kubeconfigText, qps: 0 })).client;
}

/** Runs the controller as `client` until `done` holds for the metrics; returns their text. */
async function runUntil(client: KubeClient, what: string, done: (text: string) => boolean): Promise<string> {
  const metrics = createMetrics({ defaultMetrics: false });
  const controller = new WebhookCaBundleController({
    client,
    source: { bundle: () => BUNDLE, onChange: () => () => undefined },
    mutatingName: CONFIG,
    validatingName: '',
    revision: 'default',
    log: pino({ level: 'silent' }),
    metrics: { load: metrics.webhookConfigLoad, loadError: metrics.webhookConfigLoadError, updates: metrics.webhookConfigUpdates, updateError: metrics.webhookConfigUpdateError },
  });
  const abort = new AbortController();
  const running = controller.run(abort.signal);
  try {
    return await eventually(what, async () => {
      const text = await metrics.registry.metrics();
      return done(text) ? text : undefined;
    }, { timeoutMs: 30_000, intervalMs: 100 });
  } finally {
    abort.abort();
    await running;
  }
}

const value = (text: string, name: string): number => metricValue(text, name);

beforeAll(async () => {
  env = await kubeTestEnv();
  ns = await createNamespace(env.client, 'wcb');
  BUNDLE = env.creds.ca?.toString('utf8') ?? '';
  if (!BUNDLE.includes('BEGIN CERTIFICATE')) throw new Error('the kubeconfig has no cluster CA');
  await env.client.create({
    apiVersion: ADMISSION,
    kind: 'MutatingWebhookConfiguration',
    metadata: { name: CONFIG },
    webhooks: [
      {
        name: 'never.wcb.mesh.io',
        clientConfig: { url: 'https://localhost:1/inject' },
        rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }],
        namespaceSelector: { matchLabels: { 'mesh.io/test-never': SUFFIX } },
        failurePolicy: 'Ignore',
        sideEffects: 'None',
        admissionReviewVersions: ['v1'],
      },
    ],
  } as KubeObject);
  cleanup.push({ apiVersion: ADMISSION, kind: 'MutatingWebhookConfiguration', name: CONFIG });
}, CLUSTER_START_TIMEOUT_MS);

afterAll(async () => {
  for (const c of cleanup) await env?.client.delete(c).catch(() => undefined);
  await deleteNamespace(env?.client, ns);
  env?.client.close();
}, 60_000);

describe('cfg_validation_config_* of the webhook caBundle controller', () => {
  it('a read the API server refuses counts in cfg_validation_config_load_error', async () => {
    const client = await clientWith('noget', ['list', 'watch']);
    const text = await runUntil(client, 'a load error counted', (t) => value(t, 'cfg_validation_config_load_error') >= 1);
    expect(value(text, 'cfg_validation_config_load')).toBe(0);
    expect(value(text, 'cfg_validation_config_updates')).toBe(0);
    client.close();
  }, 60_000);

  it('a write the API server refuses counts in cfg_validation_config_update_error', async () => {
    const client = await clientWith('nopatch', ['get', 'list', 'watch']);
    const text = await runUntil(client, 'an update error counted', (t) => value(t, 'cfg_validation_config_update_error') >= 1);
    expect(value(text, 'cfg_validation_config_load')).toBeGreaterThanOrEqual(1);
    expect(value(text, 'cfg_validation_config_updates')).toBe(0);
    client.close();
  }, 60_000);

  it('with get and patch, the caBundle is written: cfg_validation_config_load and cfg_validation_config_updates', async () => {
    const client = await clientWith('full', ['get', 'list', 'watch', 'patch']);
    const text = await runUntil(client, 'an update counted', (t) => value(t, 'cfg_validation_config_updates') >= 1);
    expect(value(text, 'cfg_validation_config_load')).toBeGreaterThanOrEqual(1);
    expect(value(text, 'cfg_validation_config_update_error')).toBe(0);
    const o = (await env.client.get({ apiVersion: ADMISSION, kind: 'MutatingWebhookConfiguration', name: CONFIG })) as WebhookConfig;
    expect(Buffer.from(o.webhooks[0]?.clientConfig.caBundle ?? '', 'base64').toString('utf8')).toBe(BUNDLE);
    client.close();
  }, 60_000);
});
