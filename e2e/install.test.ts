/**
 * End-to-end on the local control plane (test/support/cluster.ts): `meshctl install`, `upgrade`,
 * `verify-install`, `x uninstall` and `x precheck` run in this process (src/cli/meshctl.ts `main`)
 * against the real kube-apiserver; kwok makes the meshd pods Ready, so readiness waits are real.
 * What the tests check in the cluster they read with the test's own client (kubeRequest), not the
 * product's.
 *
 * Everything lives in one namespace per run and in revisions named after it, so that cluster-wide
 * objects (webhook configurations, cluster roles) never collide with other test files. The mesh
 * CRDs are shared with other tests: installs re-apply them (they are the project's own), and the
 * purge test runs with --dry-run only, so no test deletes them. Everything created is removed in
 * afterAll.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { main } from '../src/cli/meshctl.js';
import type { CliIO } from '../src/cli/runner.js';
import { getBuildInfo } from '../src/version/build-info.js';
import { CLUSTER_START_TIMEOUT_MS, ensureCluster, kubeRequest, readKubeconfig, type KubeconfigCredentials } from '../test/support/cluster.js';

const id = randomBytes(3).toString('hex');
const ns = `e2e-install-${id}`;
/** Namespaces that must never come to exist (bad input, dry run, refused installs). */
const nsUntouched = `e2e-install-${id}-none`;
const rev1 = `a${id}`;
const rev2 = `b${id}`;
const rev3 = `c${id}`;
const OWNER_NS_LABEL = 'install.mesh.io/owning-resource-namespace';

let creds: KubeconfigCredentials;
let kubeconfig: string;
let tmp: string;
let nobodyKubeconfig: string;
const clusterScoped: string[] = [];

interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** `meshctl -c <admin kubeconfig> <argv>` in this process; `answer` is typed at a confirmation prompt. */
async function meshctl(argv: readonly string[], opts: { answer?: string; kubeconfig?: string } = {}): Promise<Run> {
  const out: string[] = [];
  const err: string[] = [];
  const prompts: string[] = [];
  const io: CliIO = {
    out: (t) => void out.push(t),
    err: (t) => void err.push(t),
    env: {},
    readLine:
      opts.answer === undefined
        ? undefined
        : async (prompt) => {
            prompts.push(prompt);
            return opts.answer as string;
          },
  };
  const code = await main(['-c', opts.kubeconfig ?? kubeconfig, ...argv], io);
  return { code, stdout: out.join('') + prompts.join(''), stderr: err.join('') };
}

const target = (rev: string, ...more: string[]) => ['--set', `namespace=${ns}`, '--set', 'profile=minimal', '-r', rev, ...more];
const install = (rev: string, ...more: string[]) => meshctl(['install', '-y', '--readiness-timeout', '90s', ...target(rev, ...more)]);

async function get(apiPath: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await kubeRequest(creds, 'GET', apiPath);
  return { status: res.status, body: res.body as Record<string, unknown> };
}

async function exists(apiPath: string): Promise<boolean> {
  const { status } = await get(apiPath);
  if (status !== 200 && status !== 404) throw new Error(`GET ${apiPath}: ${status}`);
  return status === 200;
}

async function names(apiPath: string, selector: string): Promise<string[]> {
  const { status, body } = await get(`${apiPath}?labelSelector=${encodeURIComponent(selector)}`);
  if (status !== 200) throw new Error(`list ${apiPath}: ${status} ${JSON.stringify(body).slice(0, 300)}`);
  return ((body.items ?? []) as Array<{ metadata: { name: string } }>).map((i) => i.metadata.name).sort();
}

/** The lines under `Title:` in meshctl's summary (indented by two spaces). */
function block(stdout: string, title: string): string[] {
  const lines = stdout.split('\n');
  const start = lines.indexOf(`${title}:`);
  if (start < 0) return [];
  const out: string[] = [];
  for (const l of lines.slice(start + 1)) {
    if (!l.startsWith('  ')) break;
    out.push(l.trim());
  }
  return out;
}

const crdPath = (name: string) => `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`;

/**
 * The CRDs whose ownership labels another installation changed since ours applied them. CRDs are
 * shared by the whole cluster: another test file installing meanwhile relabels them, and then our
 * next apply rightly updates them again.
 */
async function crdsRelabelled(rev: string): Promise<Set<string>> {
  const { body } = await get(`/apis/apiextensions.k8s.io/v1/customresourcedefinitions?labelSelector=${encodeURIComponent('install.mesh.io/owning-resource')}`);
  const out = new Set<string>();
  for (const c of (body.items ?? []) as Array<{ metadata: { name: string; labels: Record<string, string> } }>) {
    const l = c.metadata.labels;
    if (l[OWNER_NS_LABEL] !== ns || l['mesh.io/rev'] !== rev) out.add(`CustomResourceDefinition ${c.metadata.name}`);
  }
  return out;
}

async function deploymentOf(name: string): Promise<{ replicas: number; resourceVersion: string } | undefined> {
  const { status, body } = await get(`/apis/apps/v1/namespaces/${ns}/deployments/${name}`);
  if (status === 404) return undefined;
  return { replicas: (body.spec as { replicas: number }).replicas, resourceVersion: (body.metadata as { resourceVersion: string }).resourceVersion };
}

async function post(apiPath: string, body: unknown): Promise<Record<string, unknown>> {
  const res = await kubeRequest(creds, 'POST', apiPath, body);
  if (res.status !== 201 && res.status !== 200) throw new Error(`POST ${apiPath}: ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
  return res.body as Record<string, unknown>;
}

/** A kubeconfig for a ServiceAccount of `ns` without any role: a short-lived TokenRequest token. */
async function kubeconfigWithoutRights(sa: string): Promise<string> {
  await post(`/api/v1/namespaces/${ns}/serviceaccounts`, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: sa } });
  const tr = await post(`/api/v1/namespaces/${ns}/serviceaccounts/${sa}/token`, { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 1800 } });
  const token = (tr.status as { token: string }).token;
  const file = path.join(tmp, `${sa}.kubeconfig`);
  fs.writeFileSync(
    file,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'local', cluster: { server: creds.server, 'certificate-authority-data': creds.ca?.toString('base64') } }],
      users: [{ name: sa, user: { token } }],
      contexts: [{ name: sa, context: { cluster: 'local', user: sa } }],
      'current-context': sa,
    }),
  );
  return file;
}

beforeAll(async () => {
  const cluster = await ensureCluster();
  kubeconfig = cluster.kubeconfig;
  creds = await readKubeconfig(kubeconfig);
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'e2e-install-'));
}, CLUSTER_START_TIMEOUT_MS);

afterAll(async () => {
  if (!creds) return;
  // Everything of this run: the revisions' cluster-scoped objects, then the namespace.
  for (const rev of [rev1, rev2, rev3]) await meshctl(['x', 'uninstall', '-y', '-i', ns, '-r', rev]).catch(() => undefined);
  for (const p of clusterScoped) await kubeRequest(creds, 'DELETE', p);
  for (const kind of ['clusterroles', 'clusterrolebindings']) {
    for (const n of await names(`/apis/rbac.authorization.k8s.io/v1/${kind}`, `${OWNER_NS_LABEL}=${ns}`)) await kubeRequest(creds, 'DELETE', `/apis/rbac.authorization.k8s.io/v1/${kind}/${n}`);
  }
  for (const kind of ['mutatingwebhookconfigurations', 'validatingwebhookconfigurations']) {
    for (const n of await names(`/apis/admissionregistration.k8s.io/v1/${kind}`, `${OWNER_NS_LABEL}=${ns}`)) await kubeRequest(creds, 'DELETE', `/apis/admissionregistration.k8s.io/v1/${kind}/${n}`);
  }
  await kubeRequest(creds, 'DELETE', `/api/v1/namespaces/${ns}`);
  fs.rmSync(tmp, { recursive: true, force: true });
}, 120_000);

describe('meshctl install against a real API server', () => {
  it('refuses bad input with a clear error and applies nothing', async () => {
    const unknownProfile = await meshctl(['install', '-y', '--set', `namespace=${nsUntouched}`, '--set', 'profile=nope']);
    expect(unknownProfile.code).toBe(1);
    expect(unknownProfile.stderr).toMatch(/unknown profile "nope" \(known profiles: .*minimal/);

    const badPath = await meshctl(['install', '-y', '--set', `namespace=${nsUntouched}`, '--set', 'components.meshd.k8s.replicaCont=2']);
    expect(badPath.code).toBe(1);
    expect(badPath.stderr).toContain('spec.components.meshd.k8s.replicaCont: unknown field');

    const file = path.join(tmp, 'broken.yaml');
    fs.writeFileSync(file, 'apiVersion: install.mesh.io/v1alpha1\nkind: MeshOperator\nspec:\n  namespace: [oops\n');
    const malformed = await meshctl(['install', '-y', '-f', file, '--set', `namespace=${nsUntouched}`]);
    expect(malformed.code).toBe(1);
    expect(malformed.stderr).toMatch(new RegExp(`${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:\\d+:\\d+: invalid YAML`));

    const badTimeout = await meshctl(['install', '-y', '--readiness-timeout', 'soon', '--set', `namespace=${nsUntouched}`]);
    expect(badTimeout.code).toBe(1);
    expect(badTimeout.stderr).toContain('--readiness-timeout');

    // Without -y and without a terminal to ask on, nothing happens.
    const noTty = await meshctl(['install', '--set', `namespace=${nsUntouched}`, '--set', 'profile=minimal']);
    expect(noTty.code).toBe(1);
    expect(noTty.stderr).toContain('pass -y (--skip-confirmation)');
    // Answered "n" at the prompt.
    const declined = await meshctl(['install', '--set', `namespace=${nsUntouched}`, '--set', 'profile=minimal', '-r', rev1], { answer: 'n' });
    expect(declined.code).toBe(0);
    expect(declined.stdout).toContain('Cancelled: nothing was changed.');
    expect(declined.stdout).toContain(`This will install the mesh profile "minimal" (revision "${rev1}" in namespace "${nsUntouched}")`);

    expect(await exists(`/api/v1/namespaces/${nsUntouched}`)).toBe(false);
  });

  it('--dry-run has the API server check everything and changes nothing', async () => {
    const r = await meshctl(['install', '--dry-run', '--set', `namespace=${nsUntouched}`, '--set', 'profile=minimal', '-r', rev1]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const wouldCreate = block(r.stdout, 'Would create');
    expect(wouldCreate).toEqual(expect.arrayContaining([`Namespace ${nsUntouched}`, `Deployment ${nsUntouched}/meshd-${rev1}`, `MutatingWebhookConfiguration mesh-sidecar-injector-${rev1}`]));
    expect(r.stdout).toContain('nothing was changed');
    expect(await exists(`/api/v1/namespaces/${nsUntouched}`)).toBe(false);
    expect(await exists(`/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/mesh-sidecar-injector-${rev1}`)).toBe(false);
  });

  it('installs the minimal profile, labelled and recorded, and verify-install passes', async () => {
    const r = await install(rev1);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('✔ Base installed');
    expect(r.stdout).toContain('✔ Meshd installed');
    expect(r.stdout).toContain(`✔ Installation complete: revision "${rev1}" in namespace "${ns}"`);

    const dep = await get(`/apis/apps/v1/namespaces/${ns}/deployments/meshd-${rev1}`);
    expect(dep.status).toBe(200);
    const meta = dep.body.metadata as { labels: Record<string, string>; managedFields: Array<{ manager: string; operation: string }> };
    expect(meta.labels).toMatchObject({ 'mesh.io/rev': rev1, 'install.mesh.io/owning-resource': `installed-state-${rev1}`, [OWNER_NS_LABEL]: ns, 'operator.mesh.io/component': 'Meshd' });
    expect(meta.managedFields).toEqual(expect.arrayContaining([expect.objectContaining({ manager: 'meshctl', operation: 'Apply' })]));
    const status = dep.body.status as { availableReplicas?: number };
    expect(status.availableReplicas).toBe(1);

    const state = await get(`/apis/install.mesh.io/v1alpha1/namespaces/${ns}/meshoperators/installed-state-${rev1}`);
    expect(state.status).toBe(200);
    expect((state.body.metadata as { annotations: Record<string, string> }).annotations['install.mesh.io/meshctl-version']).toBe(getBuildInfo().version);
    expect(state.body.spec).toMatchObject({ profile: 'minimal', revision: rev1, namespace: ns });

    const fromState = await meshctl(['verify-install', '-i', ns, '-r', rev1]);
    expect(fromState.stderr).toBe('');
    expect(fromState.code).toBe(0);
    expect(fromState.stdout).toContain(`✔ Deployment ${ns}/meshd-${rev1}`);
    expect(fromState.stdout).toContain(`of MeshOperator ${ns}/installed-state-${rev1} are ready`);

    const file = path.join(tmp, 'mesh.yaml');
    fs.writeFileSync(file, `apiVersion: install.mesh.io/v1alpha1\nkind: MeshOperator\nspec:\n  profile: minimal\n  namespace: ${ns}\n  revision: ${rev1}\n`);
    const fromFile = await meshctl(['verify-install', '-f', file]);
    expect(fromFile.code).toBe(0);
    expect(fromFile.stdout).toContain(`are ready`);
  });

  it('re-installing with nothing changed changes nothing (manifest apply alias)', async () => {
    const relabelled = await crdsRelabelled(rev1);
    const before = await deploymentOf(`meshd-${rev1}`);
    const r = await meshctl(['manifest', 'apply', '-y', ...target(rev1)]);
    expect(r.code).toBe(0);
    // Only CRDs that another installation relabelled meanwhile may be applied again.
    const updated = block(r.stdout, 'Updated');
    expect(updated.filter((u) => !relabelled.has(u))).toEqual([]);
    expect(r.stdout).toMatch(new RegExp(`Objects: 0 created, ${updated.length} updated, \\d+ unchanged, 0 pruned`));
    expect((await deploymentOf(`meshd-${rev1}`))?.resourceVersion).toBe(before?.resourceVersion);
  });

  it('a changed value updates exactly the objects it changes', async () => {
    const relabelled = await crdsRelabelled(rev1);
    const r = await install(rev1, '--set', 'components.meshd.k8s.replicaCount=2');
    expect(r.code).toBe(0);
    expect(block(r.stdout, 'Updated').filter((u) => !relabelled.has(u))).toEqual([`Deployment ${ns}/meshd-${rev1}`]);
    expect(r.stdout).toMatch(/Objects: 0 created, \d+ updated/);
    expect((await deploymentOf(`meshd-${rev1}`))?.replicas).toBe(2);
    // The wait covered both replicas.
    const dep = await get(`/apis/apps/v1/namespaces/${ns}/deployments/meshd-${rev1}`);
    expect((dep.body.status as { availableReplicas?: number }).availableReplicas).toBe(2);
  });

  it('--dry-run on an installation reports the update and leaves the object alone', async () => {
    const before = await deploymentOf(`meshd-${rev1}`);
    const r = await meshctl(['install', '--dry-run', ...target(rev1, '--set', 'components.meshd.k8s.replicaCount=4')]);
    expect(r.code).toBe(0);
    expect(block(r.stdout, 'Would update')).toContain(`Deployment ${ns}/meshd-${rev1}`);
    expect(await deploymentOf(`meshd-${rev1}`)).toEqual(before);
  });

  it('prunes a disabled component, never unlabelled objects or another revision\'s', async () => {
    const withGateway = await install(rev1, '--set', 'components.meshd.k8s.replicaCount=2', '--set', 'components.ingressGateways[0].enabled=true');
    expect(withGateway.code).toBe(0);
    expect(await exists(`/apis/apps/v1/namespaces/${ns}/deployments/mesh-ingressgateway`)).toBe(true);

    // A user's ConfigMap without labels, and one labelled by another revision of the same namespace.
    await post(`/api/v1/namespaces/${ns}/configmaps`, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'user-config' }, data: { a: 'b' } });
    await post(`/api/v1/namespaces/${ns}/configmaps`, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {
        name: 'other-revision',
        labels: { 'mesh.io/rev': 'zz', 'install.mesh.io/owning-resource': 'installed-state-zz', [OWNER_NS_LABEL]: ns, 'operator.mesh.io/component': 'IngressGateways' },
      },
    });

    const r = await install(rev1, '--set', 'components.meshd.k8s.replicaCount=2');
    expect(r.code).toBe(0);
    const pruned = block(r.stdout, 'Pruned');
    expect(pruned).toEqual(expect.arrayContaining([`Deployment ${ns}/mesh-ingressgateway`, `Service ${ns}/mesh-ingressgateway`, `ServiceAccount ${ns}/mesh-ingressgateway-service-account`]));
    expect(pruned.every((p) => p.includes('ingressgateway'))).toBe(true);
    expect(await exists(`/apis/apps/v1/namespaces/${ns}/deployments/mesh-ingressgateway`)).toBe(false);
    expect(await exists(`/api/v1/namespaces/${ns}/configmaps/user-config`)).toBe(true);
    expect(await exists(`/api/v1/namespaces/${ns}/configmaps/other-revision`)).toBe(true);
    await kubeRequest(creds, 'DELETE', `/api/v1/namespaces/${ns}/configmaps/other-revision`);
  });

  it('fails on objects that do not get ready, naming each, and verify-install does too', async () => {
    const r = await meshctl(['install', '-y', '--readiness-timeout', '3s', ...target(rev3, '--set', 'components.meshd.k8s.nodeSelector.no-such-label=x')]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`Meshd: not ready: Deployment ${ns}/meshd-${rev3}: 0/1 replicas available`);
    expect(r.stdout).toContain('✘ Meshd');
    const v = await meshctl(['verify-install', '-i', ns, '-r', rev3]);
    expect(v.code).toBe(1);
    expect(v.stderr).toMatch(new RegExp(`1 of \\d+ objects of revision "${rev3}" in namespace "${ns}" are not ready:\\n  Deployment ${ns}/meshd-${rev3}: 0/1 replicas available`));
    const gone = await meshctl(['x', 'uninstall', '-y', '-i', ns, '-r', rev3]);
    expect(gone.code).toBe(0);
    expect(await deploymentOf(`meshd-${rev3}`)).toBeUndefined();
  });

  it('a second revision installs beside the first; removing it leaves the first working', async () => {
    const r = await install(rev2);
    expect(r.code).toBe(0);
    expect(await deploymentOf(`meshd-${rev1}`)).toBeDefined();
    expect(await deploymentOf(`meshd-${rev2}`)).toBeDefined();
    expect((await meshctl(['verify-install', '-i', ns, '-r', rev2])).code).toBe(0);

    const precheck = await meshctl(['x', 'precheck', '-i', ns, '-r', rev2]);
    expect(precheck.code).toBe(0);
    expect(precheck.stdout).toContain(`revision "${rev1}" in namespace "${ns}" (installed by meshctl ${getBuildInfo().version})`);
    expect(precheck.stdout).toContain(`revision "${rev2}" in namespace "${ns}" is already installed`);

    const u = await meshctl(['x', 'uninstall', '-y', '-v', '-i', ns, '-r', rev2]);
    expect(u.stderr).toBe('');
    expect(u.code).toBe(0);
    expect(block(u.stdout, 'Kept')).toEqual(expect.arrayContaining([`ServiceAccount ${ns}/meshd-service-account: shared with installed-state-${rev1} (revision ${rev1})`]));
    expect(await deploymentOf(`meshd-${rev2}`)).toBeUndefined();
    expect(await exists(`/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/mesh-sidecar-injector-${rev2}`)).toBe(false);
    expect(await exists(`/apis/install.mesh.io/v1alpha1/namespaces/${ns}/meshoperators/installed-state-${rev2}`)).toBe(false);
    expect(await deploymentOf(`meshd-${rev1}`)).toBeDefined();
    expect(await exists(`/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/mesh-${ns}`)).toBe(true);
    const v = await meshctl(['verify-install', '-i', ns, '-r', rev1]);
    expect(v.stderr).toBe('');
    expect(v.code).toBe(0);
  });

  it('upgrade refuses what it cannot upgrade in place', async () => {
    const nothing = await meshctl(['upgrade', '-y', '--set', `namespace=${nsUntouched}`, '--set', 'profile=minimal']);
    expect(nothing.code).toBe(1);
    expect(nothing.stderr).toContain(`no control plane is installed in namespace "${nsUntouched}"`);

    const mismatch = await meshctl(['upgrade', '-y', ...target('zz')]);
    expect(mismatch.code).toBe(1);
    expect(mismatch.stderr).toContain(`revision mismatch: namespace "${ns}" has revision(s) ${rev1} installed, not "zz"`);

    const statePath = `/apis/install.mesh.io/v1alpha1/namespaces/${ns}/meshoperators/installed-state-${rev1}`;
    const res = await kubeRequest(creds, 'PATCH', statePath, { metadata: { annotations: { 'install.mesh.io/meshctl-version': '7.3.0' } } }, { contentType: 'application/merge-patch+json' });
    expect(res.status).toBe(200);
    const skew = await meshctl(['upgrade', '-y', ...target(rev1, '--set', 'components.meshd.k8s.replicaCount=2')]);
    expect(skew.code).toBe(1);
    expect(skew.stderr).toContain(`the installed control plane is version 7.3.0 and this meshctl is ${getBuildInfo().version}: more than one minor version apart`);

    const forced = await meshctl(['upgrade', '-y', '--force', ...target(rev1, '--set', 'components.meshd.k8s.replicaCount=2')]);
    expect(forced.code).toBe(0);
    expect(forced.stderr).toContain('(ignored: --force)');
    expect(forced.stdout).toContain('No changes');
    const state = await get(statePath);
    expect((state.body.metadata as { annotations: Record<string, string> }).annotations['install.mesh.io/meshctl-version']).toBe(getBuildInfo().version);
  });

  it('upgrade shows the changes, asks, and applies them', async () => {
    const args = ['upgrade', ...target(rev1, '--set', 'components.meshd.k8s.replicaCount=3')];
    const noTty = await meshctl(args);
    expect(noTty.code).toBe(1);
    expect(noTty.stderr).toContain('pass -y');
    expect(noTty.stdout).toContain(`Object Deployment:${ns}:meshd-${rev1} has diffs:\n  spec.replicas: 2 -> 3`);
    const declined = await meshctl(args, { answer: 'no' });
    expect(declined.stdout).toContain('Cancelled');
    expect((await deploymentOf(`meshd-${rev1}`))?.replicas).toBe(2);

    const r = await meshctl([...args, '--verify'], { answer: 'y' });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`Upgrade the control plane (revision "${rev1}" in namespace "${ns}")`);
    expect(r.stdout).toMatch(/✔ Verified: all \d+ objects are ready/);
    expect(r.stdout).toContain('✔ Upgrade complete');
    expect((await deploymentOf(`meshd-${rev1}`))?.replicas).toBe(3);
  });

  it('a user without permissions: precheck names what is missing, install fails cleanly', async () => {
    nobodyKubeconfig = await kubeconfigWithoutRights('nobody');
    const pre = await meshctl(['x', 'precheck', '-i', nsUntouched], { kubeconfig: nobodyKubeconfig });
    expect(pre.code).toBe(1);
    expect(pre.stdout).toContain('✔ Kubernetes version');
    expect(pre.stdout).toContain('cannot get, create, patch, delete customresourcedefinitions.apiextensions.k8s.io (cluster-scoped)');
    expect(pre.stdout).toContain(`cannot get, create, patch, delete deployments.apps in namespace ${nsUntouched}`);
    expect(pre.stdout).toContain('cannot list deployments.apps in all namespaces');
    expect(pre.stderr).toContain('1 blocker found');

    const r = await meshctl(['install', '-y', '--set', `namespace=${nsUntouched}`, '--set', 'profile=minimal'], { kubeconfig: nobodyKubeconfig });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('cannot apply CustomResourceDefinition meshoperators.install.mesh.io: Forbidden');
    expect(r.stderr).toContain(`system:serviceaccount:${ns}:nobody`);
    expect(r.stderr).toContain('nothing was applied');

    // Allowed to manage CRDs but nothing else: Base stops at the first forbidden object, Meshd is not applied.
    const role = `e2e-install-${id}-crds`;
    clusterScoped.push(`/apis/rbac.authorization.k8s.io/v1/clusterroles/${role}`, `/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/${role}`);
    await post('/apis/rbac.authorization.k8s.io/v1/clusterroles', {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: role },
      rules: [{ apiGroups: ['apiextensions.k8s.io'], resources: ['customresourcedefinitions'], verbs: ['get', 'create', 'patch'] }],
    });
    await post('/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: role },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
      subjects: [{ kind: 'ServiceAccount', name: 'nobody', namespace: ns }],
    });
    let partial: Run | undefined;
    for (let i = 0; i < 20; i++) {
      // RBAC changes reach the authorizer within moments.
      partial = await meshctl(['install', '-y', '--set', `namespace=${nsUntouched}`, '--set', 'profile=minimal', '-r', rev1], { kubeconfig: nobodyKubeconfig });
      if (!partial.stderr.includes('meshoperators.install.mesh.io')) break;
      await new Promise((res) => setTimeout(res, 250));
    }
    expect(partial?.code).toBe(1);
    expect(partial?.stderr).toContain(`Base: Namespace ${nsUntouched}: Forbidden: namespaces "${nsUntouched}" is forbidden`);
    expect(partial?.stderr).toContain('Meshd: not applied: component Base failed');
    expect(partial?.stdout).toContain(`✘ Base: Namespace ${nsUntouched}: Forbidden`);
    expect(await exists(`/api/v1/namespaces/${nsUntouched}`)).toBe(false);
  });

  it('x uninstall --purge --dry-run lists everything, CRDs included, and removes nothing', async () => {
    const none = await meshctl(['x', 'uninstall', '-y']);
    expect(none.code).toBe(1);
    expect(none.stderr).toContain('name what to remove: --revision <revision>');

    const r = await meshctl(['x', 'uninstall', '--purge', '--dry-run']);
    expect(r.code).toBe(0);
    const listed = block(r.stdout, 'Objects to remove (every revision in every namespace (purge))');
    expect(listed).toEqual(expect.arrayContaining(['CustomResourceDefinition virtualservices.networking.mesh.io', `Deployment ${ns}/meshd-${rev1}`, `MeshOperator ${ns}/installed-state-${rev1}`]));
    expect(listed.indexOf('CustomResourceDefinition virtualservices.networking.mesh.io')).toBeGreaterThan(listed.indexOf(`Deployment ${ns}/meshd-${rev1}`));
    expect(r.stdout).toContain('Dry run: nothing was removed.');
    expect(await exists(crdPath('virtualservices.networking.mesh.io'))).toBe(true);
    expect(await deploymentOf(`meshd-${rev1}`)).toBeDefined();
  });

  it('uninstalling the last revision removes every labelled object but the namespace and the CRDs', async () => {
    const dry = await meshctl(['x', 'uninstall', '--dry-run', '-i', ns, '-r', rev1]);
    expect(dry.code).toBe(0);
    expect(await deploymentOf(`meshd-${rev1}`)).toBeDefined();

    const r = await meshctl(['x', 'uninstall', '-i', ns, '-r', rev1], { answer: 'yes' });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/✔ Removed \d+ objects/);
    const selector = `${OWNER_NS_LABEL}=${ns}`;
    expect(await names(`/apis/apps/v1/namespaces/${ns}/deployments`, selector)).toEqual([]);
    expect(await names(`/api/v1/namespaces/${ns}/serviceaccounts`, selector)).toEqual([]);
    expect(await names(`/api/v1/namespaces/${ns}/configmaps`, selector)).toEqual([]);
    expect(await names('/apis/rbac.authorization.k8s.io/v1/clusterroles', selector)).toEqual([]);
    expect(await names('/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations', selector)).toEqual([]);
    expect(await names('/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations', selector)).toEqual([]);
    expect(await exists(`/apis/install.mesh.io/v1alpha1/namespaces/${ns}/meshoperators/installed-state-${rev1}`)).toBe(false);
    expect(await exists(`/api/v1/namespaces/${ns}`)).toBe(true);
    expect(await exists(`/api/v1/namespaces/${ns}/configmaps/user-config`)).toBe(true);
    expect(await exists(crdPath('virtualservices.networking.mesh.io'))).toBe(true);
  });
});
