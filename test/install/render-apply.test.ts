/**
 * The rendered manifests are accepted by a real API server: every object of the `default` and
 * `demo` profiles, a revision, and the `remote` profile's URL webhooks is server-side applied with
 * dryRun=All and fieldValidation=Strict (an unknown or duplicate field is refused) to the local
 * control plane. CRDs go first; the control-plane namespace is a real, per-file namespace.
 */
import { randomBytes } from 'node:crypto';
import { allObjects, renderManifests, type K8sObject } from '../../src/install/render/index.js';
import { resolveSpec } from '../../src/install/resolve.js';
import { readCrds } from '../../src/install/sources.js';
import { CLUSTER_START_TIMEOUT_MS, ensureCluster, kubeRequest, readKubeconfig, type KubeconfigCredentials } from '../support/cluster.js';

const ns = `mesh-install-${randomBytes(3).toString('hex')}`;
let creds: KubeconfigCredentials;
const plurals = new Map<string, { plural: string; namespaced: boolean }>();

interface ApiResourceList {
  resources: Array<{ name: string; kind: string; namespaced: boolean }>;
}

/** The REST path of an object, found through the API server's discovery documents. */
async function pathOf(o: K8sObject): Promise<string> {
  const key = `${o.apiVersion}/${o.kind}`;
  if (!plurals.has(key)) {
    const base = o.apiVersion.includes('/') ? `/apis/${o.apiVersion}` : `/api/${o.apiVersion}`;
    const res = await kubeRequest(creds, 'GET', base);
    if (res.status !== 200) throw new Error(`discovery of ${o.apiVersion}: ${res.status} ${JSON.stringify(res.body)}`);
    for (const r of (res.body as ApiResourceList).resources) {
      if (!r.name.includes('/')) plurals.set(`${o.apiVersion}/${r.kind}`, { plural: r.name, namespaced: r.namespaced });
    }
  }
  const hit = plurals.get(key);
  if (!hit) throw new Error(`the API server does not serve ${key}`);
  const base = o.apiVersion.includes('/') ? `/apis/${o.apiVersion}` : `/api/${o.apiVersion}`;
  const nsPart = hit.namespaced ? `/namespaces/${o.metadata.namespace ?? 'default'}` : '';
  return `${base}${nsPart}/${hit.plural}/${o.metadata.name}`;
}

async function dryRunApply(objects: readonly K8sObject[]): Promise<string[]> {
  const failures: string[] = [];
  for (const o of objects) {
    const path = `${await pathOf(o)}?fieldManager=meshctl-test&force=true&dryRun=All&fieldValidation=Strict`;
    const res = await kubeRequest(creds, 'PATCH', path, o, { contentType: 'application/apply-patch+yaml' });
    if (res.status !== 200 && res.status !== 201) {
      failures.push(`${o.kind} ${o.metadata.namespace ?? ''}/${o.metadata.name}: ${res.status} ${(res.body as { message?: string }).message ?? JSON.stringify(res.body)}`);
    }
  }
  return failures;
}

async function render(sets: string[]): Promise<K8sObject[]> {
  const resolved = await resolveSpec({ sets: [`namespace=${ns}`, ...sets] });
  const crds = await readCrds(resolved.source);
  return allObjects(renderManifests(resolved.spec, { owner: { name: 'installed-state', namespace: ns }, crds }));
}

beforeAll(async () => {
  const cluster = await ensureCluster();
  creds = await readKubeconfig(cluster.kubeconfig);
  const res = await kubeRequest(creds, 'POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  if (res.status !== 201) throw new Error(`cannot create namespace ${ns}: ${res.status} ${JSON.stringify(res.body)}`);
}, CLUSTER_START_TIMEOUT_MS);

afterAll(async () => {
  if (creds) await kubeRequest(creds, 'DELETE', `/api/v1/namespaces/${ns}`);
});

describe('rendered manifests on a real API server (server-side apply, dry run)', () => {
  it('accepts every object of the default profile, CRDs first', async () => {
    const objects = await render([]);
    const kinds = new Set(objects.map((o) => o.kind));
    expect([...kinds]).toEqual(
      expect.arrayContaining(['CustomResourceDefinition', 'Namespace', 'ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding', 'ConfigMap', 'Service', 'Deployment', 'HorizontalPodAutoscaler', 'PodDisruptionBudget', 'MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration']),
    );
    expect(objects[0].kind).toBe('CustomResourceDefinition');
    expect(await dryRunApply(objects)).toEqual([]);
  });

  it('accepts the demo profile (egress gateway), a revision, and the remote profile with URL webhooks', async () => {
    const demo = (await render(['profile=demo'])).filter((o) => o.kind !== 'CustomResourceDefinition');
    expect(demo.some((o) => o.kind === 'Deployment' && o.metadata.name === 'mesh-egressgateway')).toBe(true);
    const canary = (await render(['revision=canary', 'components.base.enabled=false']));
    const remote = (await render(['profile=remote', 'values.global.remoteMeshdAddress=meshd.example.com'])).filter((o) => o.kind !== 'CustomResourceDefinition');
    expect(remote.some((o) => o.kind === 'MutatingWebhookConfiguration')).toBe(true);
    expect(await dryRunApply([...demo, ...canary, ...remote])).toEqual([]);
  });

  it('refuses an object that an overlay broke, so the check can fail', async () => {
    const objects = await render(['components.meshd.k8s.overlays[0].kind=Deployment', 'components.meshd.k8s.overlays[0].name=meshd', 'components.meshd.k8s.overlays[0].patches[0].path=spec.template.spec.containers.[name:discovery].bogusField', 'components.meshd.k8s.overlays[0].patches[0].value=1']);
    const failures = await dryRunApply(objects.filter((o) => o.kind === 'Deployment' && o.metadata.name === 'meshd'));
    expect(failures).toHaveLength(1);
    expect(failures[0]).toMatch(/bogusField/);
  });
});
