/**
 * The operator controller end to end, from the built programs in dist/: `meshctl operator init`
 * applies the controller manifest (its Deployment gets available on the simulated nodes); the
 * controller then runs as a local `mesh-operator server` process against the cluster, with the
 * credentials of the ServiceAccount that init created (a token from the TokenRequest API), so the
 * dumped RBAC must be enough for a real installation. A MeshOperator is installed to Healthy and
 * uninstalled when deleted; `meshctl operator remove` refuses while it exists and removes the
 * controller afterwards. Revision tags are set, listed, repointed and removed with meshctl.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { CLUSTER_START_TIMEOUT_MS, ensureCluster, kubeRequest, readKubeconfig, type KubeconfigCredentials } from '../test/support/cluster.js';
import { REPO_ROOT, metricValue } from '../test/support/daemon.js';
import { apply, createNamespace, deleteNamespace, objectPath, remove } from './support/kube.js';
import { pollUntil, tail } from './support/wait.js';

const MESHCTL = join(REPO_ROOT, 'dist', 'cli', 'meshctl.js');
const OPERATOR = join(REPO_ROOT, 'dist', 'cli', 'mesh-operator.js');
const id = randomBytes(3).toString('hex');
const revision = `e2e${id}`;
const opNs = `mesh-operator-${id}`;
const watchedNs = `mesh-watched-${id}`;
const controlNs = `mesh-cp-${id}`;
const operatorName = `mesh-operator-${revision}`;

let kubeconfig: string;
let creds: KubeconfigCredentials;
let dir: string;
let operator: ChildProcess | undefined;
let operatorLog = '';

interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

function run(file: string, args: readonly string[], timeoutMs = 180_000): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [file, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? -1, stdout, stderr });
    });
  });
}

const meshctl = (...args: string[]): Promise<Run> => run(MESHCTL, ['--clusterconfig', kubeconfig, ...args]);

async function get(path: string): Promise<Record<string, unknown> | undefined> {
  const res = await kubeRequest(creds, 'GET', path);
  if (res.status === 404) return undefined;
  if (res.status !== 200) throw new Error(`GET ${path}: ${res.status} ${JSON.stringify(res.body).slice(0, 400)}`);
  return res.body as Record<string, unknown>;
}

const crPath = (name = 'mesh') => objectPath('install.mesh.io/v1alpha1', 'MeshOperator', watchedNs, name);

/** A kubeconfig holding a token of the operator's ServiceAccount. */
async function serviceAccountKubeconfig(): Promise<string> {
  const res = await kubeRequest(creds, 'POST', `/api/v1/namespaces/${opNs}/serviceaccounts/${operatorName}/token`, {
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'TokenRequest',
    spec: { expirationSeconds: 3600 },
  });
  if (res.status !== 201) throw new Error(`TokenRequest: ${res.status} ${JSON.stringify(res.body)}`);
  const token = (res.body as { status: { token: string } }).status.token;
  const file = join(dir, 'operator.kubeconfig');
  writeFileSync(
    file,
    stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'local', cluster: { server: creds.server, 'certificate-authority-data': creds.ca?.toString('base64') } }],
      users: [{ name: 'operator', user: { token } }],
      contexts: [{ name: 'operator', context: { cluster: 'local', user: 'operator' } }],
      'current-context': 'operator',
    }),
  );
  return file;
}

beforeAll(async () => {
  if (!existsSync(MESHCTL) || !existsSync(OPERATOR)) throw new Error('dist/cli/meshctl.js or dist/cli/mesh-operator.js is missing: run `npx tsc -p tsconfig.json` first');
  const cluster = await ensureCluster();
  kubeconfig = cluster.kubeconfig;
  creds = await readKubeconfig(kubeconfig);
  dir = mkdtempSync(join(tmpdir(), 'mesh-operator-e2e-'));
  await createNamespace(creds, watchedNs);
}, CLUSTER_START_TIMEOUT_MS);

afterAll(async () => {
  if (operator && operator.exitCode === null) operator.kill('SIGKILL');
  if (!creds) return;
  const cr = await get(crPath()).catch(() => undefined);
  if (cr) {
    await remove(creds, 'install.mesh.io/v1alpha1', 'MeshOperator', watchedNs, 'mesh');
    await kubeRequest(creds, 'PATCH', crPath(), { metadata: { finalizers: null } }, { contentType: 'application/merge-patch+json' });
  }
  for (const name of [`mesh-sidecar-injector-${revision}`, `mesh-revision-tag-e${id}`]) await remove(creds, 'admissionregistration.k8s.io/v1', 'MutatingWebhookConfiguration', undefined, name).catch(() => undefined);
  for (const kind of ['ClusterRole', 'ClusterRoleBinding']) {
    for (const name of [operatorName, `meshd-clusterrole-${revision}-${controlNs}`, `mesh-reader-clusterrole-${controlNs}`]) await remove(creds, 'rbac.authorization.k8s.io/v1', kind, undefined, name).catch(() => undefined);
  }
  await remove(creds, 'admissionregistration.k8s.io/v1', 'ValidatingWebhookConfiguration', undefined, `mesh-${controlNs}`).catch(() => undefined);
  for (const ns of [opNs, watchedNs, controlNs]) await deleteNamespace(creds, ns).catch(() => undefined);
  rmSync(dir, { recursive: true, force: true });
}, 120_000);

describe('mesh-operator end to end', () => {
  it('meshctl operator init installs the controller and waits for its Deployment', async () => {
    const init = await meshctl('operator', 'init', '--operatorNamespace', opNs, '--watchedNamespaces', watchedNs, '-r', revision, '--hub', 'registry.example/mesh', '--tag', 'e2e');
    expect([init.code, init.stderr]).toEqual([0, '']);
    expect(init.stdout).toContain(`applied Deployment ${opNs}/${operatorName}`);
    expect(init.stdout).toContain(`operator ${operatorName} is ready in namespace ${opNs}, watching ${watchedNs}`);
    const d = (await get(objectPath('apps/v1', 'Deployment', opNs, operatorName))) as { spec: { template: { spec: { containers: Array<{ image: string; args: string[] }> } } } };
    expect(d.spec.template.spec.containers[0].image).toBe('registry.example/mesh/operator:e2e');
    expect(d.spec.template.spec.containers[0].args).toEqual(['server', '--operatorNamespace', opNs, '--watchedNamespaces', watchedNs, '--monitoringAddr', ':15014', '--revision', revision]);
    expect(await get('/apis/apiextensions.k8s.io/v1/customresourcedefinitions/meshoperators.install.mesh.io')).toBeDefined();
  }, 200_000);

  it('runs mesh-operator server as a process with the operator account and installs a MeshOperator to Healthy', async () => {
    const account = await serviceAccountKubeconfig();
    operator = spawn(
      process.execPath,
      [OPERATOR, 'server', '--watchedNamespaces', watchedNs, '--clusterconfig', account, '--operatorNamespace', opNs, '--revision', revision, '--monitoringAddr', '127.0.0.1:0', '--requeueDelay', '500ms', '--identity', `e2e-${id}`],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    operator.stdout?.setEncoding('utf8').on('data', (c: string) => (operatorLog += c));
    operator.stderr?.setEncoding('utf8').on('data', (c: string) => (operatorLog += c));
    const port = await pollUntil(() => /mesh-operator started\s.*monitoring=(\d+)/.exec(operatorLog)?.[1], { timeoutMs: 20_000, what: 'the operator to start' }).catch((err: Error) => {
      throw new Error(`${err.message}\n${tail(operatorLog)}`);
    });

    await apply(creds, {
      apiVersion: 'install.mesh.io/v1alpha1',
      kind: 'MeshOperator',
      metadata: { name: 'mesh', namespace: watchedNs },
      spec: { profile: 'minimal', revision, namespace: controlNs, tag: 'e2e' },
    });
    const healthy = await pollUntil(
      async () => {
        const cr = (await get(crPath())) as { metadata: { generation: number }; status?: { phase?: string; observedGeneration?: number } } | undefined;
        return cr?.status?.phase === 'Healthy' && cr.status.observedGeneration === cr.metadata.generation ? cr : undefined;
      },
      { timeoutMs: 120_000, what: 'the MeshOperator to be Healthy' },
    ).catch(async (err: Error) => {
      throw new Error(`${err.message}; status ${JSON.stringify(((await get(crPath())) as { status?: unknown } | undefined)?.status)}\n${tail(operatorLog)}`);
    });
    expect(healthy.status?.phase).toBe('Healthy');
    const meshd = (await get(objectPath('apps/v1', 'Deployment', controlNs, `meshd-${revision}`))) as { metadata: { labels: Record<string, string> } };
    expect(meshd.metadata.labels).toMatchObject({ 'install.mesh.io/owning-resource': 'mesh', 'install.mesh.io/owning-resource-namespace': watchedNs, 'mesh.io/rev': revision });

    const ready = await fetch(`http://127.0.0.1:${port}/ready`);
    expect(ready.status).toBe(200);
    const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    expect(metricValue(metrics, 'render_manifest_total', { component: 'Meshd' })).toBeGreaterThanOrEqual(1);
    expect(metricValue(metrics, 'resource_creation_total', { kind: 'Deployment' })).toBeGreaterThanOrEqual(1);
    expect(metricValue(metrics, 'owned_resource_total')).toBeGreaterThan(10);
    const lease = (await get(objectPath('coordination.k8s.io/v1', 'Lease', opNs, `mesh-operator-lock-${revision}`))) as { spec: { holderIdentity: string } };
    expect(lease.spec.holderIdentity).toBe(`e2e-${id}`);
  }, 200_000);

  it('manages revision tags of the installed revision', async () => {
    const tag = `e${id}`;
    expect((await meshctl('tag', 'set', tag, '-r', revision)).code).toBe(0);
    const list = await meshctl('tag', 'list');
    expect(list.stdout).toMatch(new RegExp(`^${tag}\\s+${revision}\\s+<none>$`, 'm'));
    const again = await meshctl('tag', 'set', tag, '-r', 'default');
    expect(again.code).toBe(1);
    const rm = await meshctl('tag', 'remove', tag);
    expect([rm.code, rm.stdout]).toEqual([0, `Revision tag "${tag}" removed.\n`]);
  }, 60_000);

  it('operator remove refuses while the MeshOperator exists; deleting it uninstalls; then remove removes the controller', async () => {
    const refused = await meshctl('operator', 'remove', '--operatorNamespace', opNs, '-r', revision);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`MeshOperator resources of revision ${revision} still exist: ${watchedNs}/mesh`);

    await remove(creds, 'install.mesh.io/v1alpha1', 'MeshOperator', watchedNs, 'mesh');
    await pollUntil(async () => (await get(crPath())) === undefined, { timeoutMs: 60_000, what: 'the MeshOperator to go' }).catch((err: Error) => {
      throw new Error(`${err.message}\n${tail(operatorLog)}`);
    });
    expect(await get(objectPath('apps/v1', 'Deployment', controlNs, `meshd-${revision}`))).toBeUndefined();
    expect(await get(`/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/mesh-sidecar-injector-${revision}`)).toBeUndefined();

    operator?.kill('SIGTERM');
    const code = await new Promise<number | null>((resolve) => operator?.once('exit', (c) => resolve(c)));
    expect(code).toBe(0);
    expect(operatorLog).toContain('mesh-operator stopped');

    const removed = await meshctl('operator', 'remove', '--operatorNamespace', opNs, '-r', revision);
    expect([removed.code, removed.stderr]).toEqual([0, '']);
    expect(removed.stdout).toContain(`deleted Deployment ${opNs}/${operatorName}`);
    expect(removed.stdout).toContain(`deleted Namespace ${opNs}`);
    expect(await get(objectPath('rbac.authorization.k8s.io/v1', 'ClusterRole', undefined, operatorName))).toBeUndefined();
    expect(await get('/apis/apiextensions.k8s.io/v1/customresourcedefinitions/meshoperators.install.mesh.io')).toBeDefined();
  }, 120_000);
});
