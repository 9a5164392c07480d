/**
 * The installation reconciler (src/controllers/installation/installation.ts over the apply engine
 * src/install/apply/engine.ts) as the operator controller calls it, against the local
 * kube-apiserver: its own owner and field manager, a readiness timeout of 0 (check once, report
 * Reconciling), progress events in dependency order, pruning that respects other owners and
 * shared Base objects, verification naming missing objects, and uninstall by owner. One namespace
 * and one revision of its own; everything is removed afterwards.
 */
import { randomBytes } from 'node:crypto';
import { planInstallation, reconcileInstallation, uninstall, type Installation } from '../../../src/controllers/installation/installation.js';
import { verifyInstallation, type ProgressEvent } from '../../../src/install/apply/engine.js';
import { resolveSpec } from '../../../src/install/resolve.js';
import { readCrds } from '../../../src/install/sources.js';
import { KubeClient } from '../../../src/kube/client.js';
import { CLUSTER_START_TIMEOUT_MS, ensureCluster, kubeRequest, readKubeconfig, type KubeconfigCredentials } from '../../support/cluster.js';

const id = randomBytes(3).toString('hex');
const ns = `engine-${id}`;
const revision = `e${id}`;
const owner = { name: `op-${id}`, namespace: ns };
const OWNER_NS = 'install.mesh.io/owning-resource-namespace';

let client: KubeClient;
let creds: KubeconfigCredentials;
let installation: Installation;
/** The same, with meshd pods that no node takes: never ready. */
let unschedulable: Installation;

async function status(path: string): Promise<number> {
  return (await kubeRequest(creds, 'GET', path)).status;
}

beforeAll(async () => {
  const cluster = await ensureCluster();
  creds = await readKubeconfig(cluster.kubeconfig);
  client = (await KubeClient.create({ kubeconfig: cluster.kubeconfig })).client;
  const resolved = await resolveSpec({ sets: [`namespace=${ns}`, 'profile=minimal'], revision });
  const crds = await readCrds(resolved.source);
  installation = planInstallation(resolved.spec, owner, crds);
  const pending = await resolveSpec({ sets: [`namespace=${ns}`, 'profile=minimal', 'components.meshd.k8s.nodeSelector.no-such-node=x'], revision });
  unschedulable = planInstallation(pending.spec, owner, crds);
}, CLUSTER_START_TIMEOUT_MS);

afterAll(async () => {
  if (!client) return;
  await uninstall(client, { owner, revision }).catch(() => undefined);
  for (const path of ['/apis/rbac.authorization.k8s.io/v1/clusterroles', '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations', '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations']) {
    const res = await kubeRequest(creds, 'GET', `${path}?labelSelector=${encodeURIComponent(`${OWNER_NS}=${ns}`)}`);
    for (const item of ((res.body as { items?: Array<{ metadata: { name: string } }> }).items ?? [])) await kubeRequest(creds, 'DELETE', `${path}/${item.metadata.name}`);
  }
  await kubeRequest(creds, 'DELETE', `/api/v1/namespaces/${ns}`);
  client.close();
}, 60_000);

describe('the installation reconciler, as the operator calls it', () => {
  it('applies in dependency order with its field manager; timeout 0 reports Reconciling, a fixed pass Healthy', async () => {
    const events: ProgressEvent[] = [];
    const first = await reconcileInstallation(client, unschedulable, { readinessTimeoutMs: 0, fieldManager: 'mesh-operator', progress: (e) => events.push(e) });
    expect(first.components.map((c) => c.component)).toEqual(['Base', 'Meshd']);
    expect(first.components[0].status).toBe('Healthy');
    expect(first.components[1].status).toBe('Reconciling');
    // How far the rollout got depends on the controllers' timing; it never gets available.
    expect(first.components[1].notReady).toEqual([
      expect.stringMatching(new RegExp(`^Deployment ${ns}/meshd-${revision}: (0/1 replicas (updated|available)|the rollout has not been observed by the controller yet)$`)),
    ]);
    expect(first.ok).toBe(false);

    // Base is done before Meshd starts; the CRDs come before the namespace.
    const starts = events.filter((e) => e.type === 'component-start').map((e) => (e as { component: string }).component);
    expect(starts).toEqual(['Base', 'Meshd']);
    const objects = events.filter((e): e is Extract<ProgressEvent, { type: 'object' }> => e.type === 'object').map((e) => e.object);
    expect(objects.indexOf(`Namespace ${ns}`)).toBeGreaterThan(objects.findIndex((o) => o.startsWith('CustomResourceDefinition ')));
    const baseDone = events.findIndex((e) => e.type === 'component-done' && e.component === 'Base');
    const meshdFirst = events.findIndex((e) => e.type === 'object' && e.component === 'Meshd');
    expect(baseDone).toBeLessThan(meshdFirst);

    const dep = await kubeRequest(creds, 'GET', `/apis/apps/v1/namespaces/${ns}/deployments/meshd-${revision}`);
    const managers = (dep.body as { metadata: { managedFields: Array<{ manager: string; operation: string }> } }).metadata.managedFields;
    expect(managers).toEqual(expect.arrayContaining([expect.objectContaining({ manager: 'mesh-operator', operation: 'Apply' })]));

    const second = await reconcileInstallation(client, installation, { readinessTimeoutMs: 60_000, fieldManager: 'mesh-operator' });
    expect(second.ok).toBe(true);
    expect(second.components.map((c) => c.status)).toEqual(['Healthy', 'Healthy']);
    expect(second.counts.created).toBe(0);
    expect(second.components.flatMap((c) => c.updated).filter((u) => !u.startsWith('CustomResourceDefinition '))).toEqual([`Deployment ${ns}/meshd-${revision}`]);
  });

  it('prunes only its own objects and keeps Base while another installation shares the namespace', async () => {
    // Another owner's object in the same namespace and revision.
    const other = await kubeRequest(creds, 'POST', `/api/v1/namespaces/${ns}/configmaps`, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'other-owner', labels: { 'mesh.io/rev': revision, 'install.mesh.io/owning-resource': 'other', [OWNER_NS]: ns, 'operator.mesh.io/component': 'Meshd' } },
    });
    expect(other.status).toBe(201);

    // The render now holds nothing: every owned object is stale.
    const r = await reconcileInstallation(client, { ...installation, manifests: [] }, { readinessTimeoutMs: 0, fieldManager: 'mesh-operator' });
    const meshd = r.components.find((c) => c.component === 'Meshd');
    expect(meshd?.pruned).toEqual(expect.arrayContaining([`Deployment ${ns}/meshd-${revision}`, `ConfigMap ${ns}/mesh-${revision}`, `MutatingWebhookConfiguration mesh-sidecar-injector-${revision}`]));
    expect(r.kept).toEqual(expect.arrayContaining([{ object: `ServiceAccount ${ns}/meshd-service-account`, reason: `shared with other (revision ${revision})` }]));
    expect(r.kept.some((k) => k.object.startsWith('CustomResourceDefinition') || k.object.startsWith('Namespace'))).toBe(false);
    expect(await status(`/api/v1/namespaces/${ns}/configmaps/other-owner`)).toBe(200);
    expect(await status(`/api/v1/namespaces/${ns}/serviceaccounts/meshd-service-account`)).toBe(200);
    expect(await status('/apis/apiextensions.k8s.io/v1/customresourcedefinitions/virtualservices.networking.mesh.io')).toBe(200);

    const v = await verifyInstallation(client, installation.manifests);
    expect(v.ok).toBe(false);
    expect(v.objects.find((o) => o.name === `Deployment ${ns}/meshd-${revision}`)).toMatchObject({ ready: false, reason: 'not found', component: 'Meshd' });
    expect(v.objects.find((o) => o.name === `ServiceAccount ${ns}/meshd-service-account`)).toMatchObject({ ready: true, reason: '' });
  });

  it('uninstalls by owner: Base stays while shared, goes with the last installation', async () => {
    const shared = await uninstall(client, { owner, revision });
    expect(shared.errors).toEqual([]);
    expect(shared.kept.map((k) => k.object)).toEqual(expect.arrayContaining([`ServiceAccount ${ns}/meshd-service-account`]));
    expect(await status(`/api/v1/namespaces/${ns}/configmaps/other-owner`)).toBe(200);

    await kubeRequest(creds, 'DELETE', `/api/v1/namespaces/${ns}/configmaps/other-owner`);
    const plan = await uninstall(client, { owner, revision, dryRun: true });
    expect(plan.deleted).toEqual(expect.arrayContaining([`ServiceAccount ${ns}/meshd-service-account`, `ValidatingWebhookConfiguration mesh-${ns}`]));
    expect(await status(`/api/v1/namespaces/${ns}/serviceaccounts/meshd-service-account`)).toBe(200);

    const last = await uninstall(client, { owner, revision });
    expect(last.deleted).toEqual(plan.deleted);
    expect(await status(`/api/v1/namespaces/${ns}/serviceaccounts/meshd-service-account`)).toBe(404);
    expect(await status(`/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/mesh-${ns}`)).toBe(404);
    expect(await status(`/api/v1/namespaces/${ns}`)).toBe(200);
  });

  it('refuses to take over a gateway another installation owns, naming it, and writes nothing of that component', async () => {
    const other = await kubeRequest(creds, 'POST', `/api/v1/namespaces/${ns}/services`, {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'mesh-ingressgateway', labels: { 'mesh.io/rev': 'default', 'install.mesh.io/owning-resource': 'installed-state', [OWNER_NS]: ns, 'operator.mesh.io/component': 'IngressGateways' } },
      spec: { selector: { app: 'mesh-ingressgateway' }, ports: [{ name: 'http2', port: 80 }] },
    });
    expect(other.status).toBe(201);
    const resolved = await resolveSpec({ sets: [`namespace=${ns}`, 'profile=default'], revision });
    const withGateway = planInstallation(resolved.spec, owner, await readCrds(resolved.source));
    const r = await reconcileInstallation(client, withGateway, { readinessTimeoutMs: 0, fieldManager: 'mesh-operator', prune: false });
    const gw = r.components.find((c) => c.component === 'IngressGateways');
    expect(gw?.status).toBe('Error');
    expect(gw?.errors).toEqual([`Service ${ns}/mesh-ingressgateway belongs to installation ${ns}/installed-state (revision default); give this gateway another name or namespace, or disable it in this installation`]);
    // Nothing of the component was written, and the other installation's Service is as it was.
    expect(await status(`/apis/apps/v1/namespaces/${ns}/deployments/mesh-ingressgateway`)).toBe(404);
    const svc = await kubeRequest(creds, 'GET', `/api/v1/namespaces/${ns}/services/mesh-ingressgateway`);
    expect((svc.body as { metadata: { labels: Record<string, string> } }).metadata.labels['install.mesh.io/owning-resource']).toBe('installed-state');
    await kubeRequest(creds, 'DELETE', `/api/v1/namespaces/${ns}/services/mesh-ingressgateway`);
  });
});
