/**
 * The operator controller in-process against the local control plane: a MeshOperator (profile
 * minimal, a unique revision and control-plane namespace) is reconciled to exactly the objects the
 * install engine renders for the same spec resolved like meshctl resolves a file; the status
 * reaches Healthy with observedGeneration; disabling a component prunes it; a bad spec gets phase
 * Error naming the field; deleting the resource uninstalls (finalizer) and the resource goes.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { stringify } from 'yaml';
import { installationSelector, kindsOf, identity } from '../../../src/install/apply/objects.js';
import { listLabelled } from '../../../src/install/apply/ownership.js';
import { allObjects, renderManifests, type K8sObject } from '../../../src/install/render/index.js';
import { resolveSpec } from '../../../src/install/resolve.js';
import type { KubeClient } from '../../../src/kube/client.js';
import { OPERATOR_FINALIZER } from '../../../src/install/operator-names.js';
import { CLUSTER_START_TIMEOUT_MS } from '../../support/cluster.js';
import { createNamespace, deleteNamespace, kubeTestEnv, until } from '../../kube/helpers.js';
import { applyCr, ensureCrd, getCr, hex, meshOperator, metricValue, missingFields, removeCr, specSources, startController, waitForPhase, type TestController } from './helpers.js';

let client: KubeClient;
let crNs: string;
let tc: TestController | undefined;
const revision = `op${hex()}`;
const controlNs = `mesh-op-${hex()}`;
const name = 'mesh';
const spec = { profile: 'minimal', revision, namespace: controlNs, components: { meshd: { k8s: { replicaCount: 1, env: [{ name: 'EXTRA', value: 'x' }] } } } };

/** The objects `meshctl` would render for `spec` with the resource as owner. */
async function expected(specTree: Record<string, unknown>): Promise<K8sObject[]> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mesh-op-'));
  try {
    const file = path.join(dir, 'op.yaml');
    fs.writeFileSync(file, stringify({ apiVersion: 'install.mesh.io/v1alpha1', kind: 'MeshOperator', spec: specTree }));
    const resolved = await resolveSpec({ files: [file], defaultTag: 'test' });
    return allObjects(renderManifests(resolved.spec, { owner: { name, namespace: crNs }, crds: (await specSources()).crds }));
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function owned(): Promise<K8sObject[]> {
  return (await listLabelled(client, kindsOf([]), installationSelector({ name, namespace: crNs }, revision))).filter((o) => !o.metadata.deletionTimestamp);
}

/** Every rendered object exists and holds every field the render sets (apart from metadata the server owns). */
async function compareWithCluster(want: readonly K8sObject[]): Promise<void> {
  const problems: string[] = [];
  for (const o of want) {
    const live = await client.find<K8sObject>({ apiVersion: o.apiVersion, kind: o.kind, namespace: o.metadata.namespace, name: o.metadata.name });
    if (!live) {
      problems.push(`${identity(o)}: missing`);
      continue;
    }
    const { metadata, ...body } = o;
    if (o.kind === 'CustomResourceDefinition') {
      // CRDs are cluster-wide and shared: whoever applied them last (another test) owns the labels.
      problems.push(...missingFields(body, { ...live, metadata: {} }).map((p) => `${identity(o)}: ${p}`));
      continue;
    }
    problems.push(...missingFields({ ...body, metadata: { labels: metadata.labels ?? {}, annotations: metadata.annotations ?? {} } }, { ...live, metadata: { labels: live.metadata.labels ?? {}, annotations: live.metadata.annotations ?? {} } }).map((p) => `${identity(o)}: ${p}`));
  }
  expect(problems).toEqual([]);
  // And nothing more carries the installation's labels (CRDs aside, see above).
  const notCrd = (o: K8sObject): boolean => o.kind !== 'CustomResourceDefinition';
  expect((await owned()).filter(notCrd).map(identity).sort()).toEqual(want.filter(notCrd).map(identity).sort());
}

beforeAll(async () => {
  ({ client } = await kubeTestEnv());
  crNs = await createNamespace(client, 'op-cr');
  await ensureCrd(client);
  tc = await startController(client, [crNs], revision);
}, CLUSTER_START_TIMEOUT_MS);

afterAll(async () => {
  if (!client) return;
  await removeCr(client, crNs, name);
  await removeCr(client, crNs, 'broken');
  await removeCr(client, crNs, 'unknown-profile');
  await tc?.stop();
  // In case a test failed before the uninstall: the cluster-scoped objects of the revision.
  for (const o of await owned().catch(() => [])) {
    if (o.kind === 'Namespace' || o.kind === 'CustomResourceDefinition') continue;
    await client.delete({ apiVersion: o.apiVersion, kind: o.kind, namespace: o.metadata.namespace, name: o.metadata.name }).catch(() => undefined);
  }
  await deleteNamespace(client, controlNs);
  await deleteNamespace(client, crNs);
  client.close();
}, 120_000);

describe('MeshOperator controller (in-process, real API server)', () => {
  it('reconciles a MeshOperator to the objects meshctl renders for the same spec, then reports Healthy', async () => {
    await applyCr(client, meshOperator(crNs, name, spec));
    const cr = await waitForPhase(client, crNs, name, 'Healthy', 90_000);
    expect(cr.metadata?.finalizers).toContain(OPERATOR_FINALIZER);
    expect(cr.status?.observedGeneration).toBe(cr.metadata?.generation);
    expect(cr.status?.revision).toBe(revision);
    expect(Object.keys(cr.status?.components ?? {}).sort()).toEqual(['Base', 'Meshd']);
    expect(cr.status?.components?.Meshd?.status).toBe('Healthy');
    const ready = cr.status?.conditions?.find((c) => c.type === 'Ready');
    expect(ready).toMatchObject({ status: 'True', observedGeneration: cr.metadata?.generation });
    const want = await expected(spec);
    expect(want.some((o) => o.kind === 'Deployment' && o.metadata.name === `meshd-${revision}`)).toBe(true);
    await compareWithCluster(want);
    const m = tc!.metrics;
    expect(await metricValue(m, 'render_manifest_total', { component: 'Meshd' })).toBeGreaterThanOrEqual(1);
    expect(await metricValue(m, 'resource_creation_total', { kind: 'Deployment' })).toBeGreaterThanOrEqual(1);
    expect(await metricValue(m, 'owned_resource_total')).toBe(want.length);
  }, 120_000);

  it('prunes a component that the resource disables, and says so in its status', async () => {
    const next = { ...spec, components: { meshd: { enabled: false } } };
    await applyCr(client, meshOperator(crNs, name, next));
    const cr = await waitForPhase(client, crNs, name, 'Healthy', 60_000);
    expect(cr.metadata?.generation).toBe(2);
    expect(Object.keys(cr.status?.components ?? {})).toEqual(['Base']);
    const want = await expected(next);
    expect(want.some((o) => o.kind === 'Deployment')).toBe(false);
    await until('the meshd objects to be pruned', async () => !(await owned()).some((o) => o.kind === 'Deployment' || o.kind === 'MutatingWebhookConfiguration'), 30_000);
    await compareWithCluster(want);
    expect(await metricValue(tc!.metrics, 'resource_prune_total', { kind: 'Deployment' })).toBe(1);
    expect(await metricValue(tc!.metrics, 'cache_flush_total')).toBeGreaterThanOrEqual(1);
  }, 90_000);

  it('gives a resource with a bad field phase Error naming the field, and one with an unknown profile a merge failure', async () => {
    await applyCr(client, meshOperator(crNs, 'broken', { revision, namespace: controlNs, components: { meshd: { k8s: { replicaCount: 'three' } } } }));
    const broken = await waitForPhase(client, crNs, 'broken', 'Error');
    expect(broken.status?.message).toBe('spec.components.meshd.k8s.replicaCount: expected number, got string "three"');
    expect(broken.status?.conditions?.find((c) => c.type === 'Reconciled')).toMatchObject({ status: 'False', reason: 'ValidationFailed', observedGeneration: 1 });
    expect(await metricValue(tc!.metrics, 'cr_validation_error_total')).toBe(1);

    await applyCr(client, meshOperator(crNs, 'unknown-profile', { profile: 'nope', revision, namespace: controlNs }));
    const unknown = await waitForPhase(client, crNs, 'unknown-profile', 'Error');
    expect(unknown.status?.message).toMatch(/^spec\.profile: unknown profile "nope" \(known profiles: .*minimal/);
    expect(await metricValue(tc!.metrics, 'cr_merge_failure_total')).toBe(1);
    // Nothing was installed for them.
    expect((await listLabelled(client, kindsOf([]), installationSelector({ name: 'broken', namespace: crNs }, revision))).length).toBe(0);

    // Fixing the field heals the resource (no meshd: nothing to wait for).
    await applyCr(client, meshOperator(crNs, 'broken', { profile: 'empty', revision, namespace: controlNs }));
    const fixed = await waitForPhase(client, crNs, 'broken', 'Healthy');
    expect(fixed.status?.message).toBeUndefined();
    await removeCr(client, crNs, 'broken');
    await removeCr(client, crNs, 'unknown-profile');
    await until('the broken resources to go', async () => !(await getCr(client, crNs, 'broken')) && !(await getCr(client, crNs, 'unknown-profile')), 30_000);
  }, 90_000);

  it('uninstalls when the resource is deleted (finalizer), then lets it go', async () => {
    expect((await owned()).length).toBeGreaterThan(0);
    await client.delete({ apiVersion: 'install.mesh.io/v1alpha1', kind: 'MeshOperator', namespace: crNs, name });
    await until('the resource to be gone', async () => !(await getCr(client, crNs, name)), 60_000);
    const left = (await owned()).filter((o) => o.kind !== 'Namespace' && o.kind !== 'CustomResourceDefinition');
    expect(left.map(identity)).toEqual([]);
    expect(await metricValue(tc!.metrics, 'cr_deletion_total')).toBeGreaterThanOrEqual(1);
    expect(await metricValue(tc!.metrics, 'resource_deletion_total')).toBeGreaterThan(0);
  }, 90_000);
});
