/**
 * `meshctl x add-to-mesh` and `x remove-from-mesh` (the built program, as a process) on the local
 * plane, whose controller manager rolls Deployments for real:
 * - deployment / service: the pod template gets the labels the revision's injection webhook selects
 *   (or the opt-out), and a restart time; the Deployment rolls its pods, which carry those labels.
 *   A Service acts on the Deployments it selects and on no other. A revision without a webhook, a
 *   namespace whose labels decide otherwise and a local injector config are refused, changing nothing.
 * - external-service: a ServiceEntry and a selector-less Service, removed again; objects it did not
 *   make are left alone.
 * The injection webhooks here select no namespace (they only have to exist), so no pod is sent to them.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import type { KubeClient } from '../src/kube/client.js';
import type { KubeObject } from '../src/kube/types.js';
import { applyMeshCrds, createNamespace, deleteNamespace, kubeTestEnv, uniqueName } from '../test/kube/helpers.js';
import { REPO_ROOT } from '../test/support/daemon.js';
import { eventually } from '../test/support/eventually.js';

const MESHCTL = path.join(REPO_ROOT, 'dist', 'bin', 'meshctl.js');

let client: KubeClient;
let kubeconfig: string;
let ns: string | undefined;
let disabledNs: string | undefined;
const webhooks: string[] = [];
const revision = uniqueName('rev');

function meshctl(args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [MESHCTL, ...args, '-c', kubeconfig], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, out, err });
    });
  });
}

/** A webhook configuration that exists but selects no namespace. */
async function inertWebhook(name: string, labels: Record<string, string> = {}): Promise<void> {
  await client.create({
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'MutatingWebhookConfiguration',
    metadata: { name, labels },
    webhooks: [
      {
        name: 'inert.sidecar-injector.mesh.io',
        clientConfig: { url: 'https://127.0.0.1:1/inject' },
        rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }],
        namespaceSelector: { matchLabels: { 'mesh.io/test-never': 'selected' } },
        failurePolicy: 'Ignore',
        sideEffects: 'None',
        admissionReviewVersions: ['v1'],
      },
    ],
  } as KubeObject);
  webhooks.push(name);
}

interface Deployment extends KubeObject {
  readonly metadata: KubeObject['metadata'] & { generation?: number };
  readonly spec: { template: { metadata: { labels: Record<string, string>; annotations?: Record<string, string> } } };
}

function deployment(name: string, namespace: string): KubeObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace },
    spec: { replicas: 1, selector: { matchLabels: { app: name } }, template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'app', image: name }] } } },
  } as KubeObject;
}

const getDeployment = (name: string, namespace = ns!): Promise<Deployment> => client.get<Deployment>({ apiVersion: 'apps/v1', kind: 'Deployment', namespace, name });

/** The pods of app `app` carrying label `key` = `value` (undefined: without the label). */
async function podsWith(app: string, key: string, value: string | undefined): Promise<boolean> {
  const pods = await client.list<KubeObject>('v1', 'Pod', { namespace: ns, labelSelector: `app=${app}` });
  return pods.items.length > 0 && pods.items.some((p) => p.metadata?.labels?.[key] === value && !p.metadata?.deletionTimestamp);
}

beforeAll(async () => {
  const env = await kubeTestEnv();
  client = env.client;
  kubeconfig = env.cluster.kubeconfig;
  await applyMeshCrds(client);
  ns = await createNamespace(client, 'membership');
  disabledNs = await createNamespace(client, 'membership-off');
  await client.mergePatch({ apiVersion: 'v1', kind: 'Namespace', name: disabledNs }, { metadata: { labels: { 'mesh-injection': 'disabled' } } });
  for (const name of ['reviews', 'ratings']) await client.create(deployment(name, ns));
  await client.create(deployment('reviews', disabledNs));
  await client.create({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'ratings', namespace: ns }, spec: { selector: { app: 'ratings' }, ports: [{ name: 'http', port: 9080 }] } } as KubeObject);
  await inertWebhook(uniqueName('mesh-test-default-tag'), { 'mesh.io/tag': 'default' });
  await inertWebhook(`mesh-sidecar-injector-${revision}`);
}, 120_000);

afterAll(async () => {
  for (const name of webhooks) await client.delete({ apiVersion: 'admissionregistration.k8s.io/v1', kind: 'MutatingWebhookConfiguration', name }).catch(() => undefined);
  await deleteNamespace(client, ns);
  await deleteNamespace(client, disabledNs);
  client?.close();
});

describe('meshctl x add-to-mesh / remove-from-mesh', () => {
  it('deployment: restarts its pods with the sidecar label of the default revision, then of a revision, then without', async () => {
    await eventually('the first pod of reviews', () => podsWith('reviews', 'app', 'reviews'), { timeoutMs: 60_000, intervalMs: 200 });
    const added = await meshctl(['x', 'add-to-mesh', 'deployment', 'reviews', '-n', ns!]);
    expect(added.err).toBe('');
    expect(added.code).toBe(0);
    expect(added.out).toBe(`deployment ${ns}/reviews: pods restart with the sidecar of revision default (pod labels sidecar.mesh.io/inject=true, -mesh.io/rev)\n`);
    let d = await getDeployment('reviews');
    expect(d.spec.template.metadata.labels).toEqual({ app: 'reviews', 'sidecar.mesh.io/inject': 'true' });
    const first = d.spec.template.metadata.annotations?.['kubectl.kubernetes.io/restartedAt'];
    expect(Date.parse(first ?? '')).toBeGreaterThan(Date.now() - 60_000);
    await eventually('pods with the injection label', () => podsWith('reviews', 'sidecar.mesh.io/inject', 'true'), { timeoutMs: 60_000, intervalMs: 200 });

    const rev = await meshctl(['x', 'add', 'dep', 'reviews', '-n', ns!, '-r', revision]);
    expect(rev.code).toBe(0);
    d = await getDeployment('reviews');
    expect(d.spec.template.metadata.labels).toEqual({ app: 'reviews', 'sidecar.mesh.io/inject': 'true', 'mesh.io/rev': revision });
    await eventually('pods of the revision', () => podsWith('reviews', 'mesh.io/rev', revision), { timeoutMs: 60_000, intervalMs: 200 });

    const removed = await meshctl(['x', 'remove-from-mesh', 'deploy', 'reviews', '-n', ns!]);
    expect(removed.code).toBe(0);
    expect(removed.out).toBe(`deployment ${ns}/reviews: pods restart without the sidecar (pod labels sidecar.mesh.io/inject=false, -mesh.io/rev)\n`);
    d = await getDeployment('reviews');
    expect(d.spec.template.metadata.labels).toEqual({ app: 'reviews', 'sidecar.mesh.io/inject': 'false' });
    await eventually('pods opted out', () => podsWith('reviews', 'sidecar.mesh.io/inject', 'false'), { timeoutMs: 60_000, intervalMs: 200 });
  }, 180_000);

  it('service: restarts the Deployments it selects, and no other', async () => {
    const before = (await getDeployment('reviews')).metadata.generation;
    const r = await meshctl(['x', 'add-to-mesh', 'svc', 'ratings', '-n', ns!]);
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    expect(r.out).toMatch(new RegExp(`^deployment ${ns}/ratings: pods restart with the sidecar of revision default`));
    expect((await getDeployment('ratings')).spec.template.metadata.labels['sidecar.mesh.io/inject']).toBe('true');
    expect((await getDeployment('reviews')).metadata.generation).toBe(before);
    const back = await meshctl(['x', 'rm', 'service', 'ratings', '-n', ns!]);
    expect(back.code).toBe(0);
    expect((await getDeployment('ratings')).spec.template.metadata.labels['sidecar.mesh.io/inject']).toBe('false');
  }, 120_000);

  it('refuses what cannot work, changing nothing', async () => {
    const generation = async (): Promise<number | undefined> => (await getDeployment('ratings')).metadata.generation;
    const before = await generation();
    const cases: Array<[string[], RegExp]> = [
      [['x', 'add-to-mesh', 'deployment', 'ratings', '-n', ns!, '-r', 'absent'], /error: revision absent: no injection webhook \(MutatingWebhookConfiguration mesh-sidecar-injector-absent, or a tag absent\): is the revision installed\?/],
      [['x', 'add-to-mesh', 'deployment', 'reviews', '-n', disabledNs!], new RegExp(`error: namespace ${disabledNs} is labelled mesh-injection=disabled: its pods are never injected`)],
      [['x', 'add-to-mesh', 'deployment', 'nobody', '-n', ns!], new RegExp(`error: deployment ${ns}/nobody not found`)],
      [['x', 'add-to-mesh', 'service', 'nobody', '-n', ns!], new RegExp(`error: service ${ns}/nobody not found`)],
      [['x', 'add-to-mesh', 'deployment', 'ratings', '-n', ns!, '--injectConfigFile', 'inject.yaml'], /error: --injectConfigFile: not supported; add-to-mesh does not inject by itself/],
      [['x', 'add-to-mesh', 'deployment', 'ratings', '-n', ns!, '--meshConfigMapName', 'other'], /error: --meshConfigMapName: only mesh is supported/],
      [['x', 'remove-from-mesh', 'deployment', 'Bad_Name', '-n', ns!], /error: deployment "Bad_Name" is not a valid name/],
    ];
    for (const [argv, message] of cases) {
      const r = await meshctl(argv);
      expect({ argv, code: r.code, err: r.err }).toEqual({ argv, code: 1, err: expect.stringMatching(message) });
    }
    expect(await generation()).toBe(before);
  }, 180_000);

  it('external-service: a ServiceEntry and a selector-less Service, removed again', async () => {
    const r = await meshctl(['x', 'add-to-mesh', 'es', 'vmdb', '10.0.0.5,10.0.0.6', 'tcp-db:5432', 'http:8080', '-n', ns!, '-l', 'app=vmdb', '-a', 'owner=data', '-s', 'db-sa']);
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    expect(r.out).toBe(`ServiceEntry ${ns}/mesh-external-vmdb: created\nService ${ns}/vmdb: created\n`);
    const entry = await client.get<KubeObject & { spec: unknown }>({ apiVersion: 'networking.mesh.io/v1', kind: 'ServiceEntry', namespace: ns, name: 'mesh-external-vmdb' });
    expect(entry.metadata?.labels).toEqual({ app: 'vmdb', 'mesh.io/external-service': 'vmdb' });
    expect(entry.metadata?.annotations).toEqual({ owner: 'data' });
    expect(entry.spec).toEqual({
      hosts: [`vmdb.${ns}.svc.cluster.local`],
      location: 'MESH_INTERNAL',
      resolution: 'STATIC',
      ports: [
        { number: 5432, protocol: 'TCP', name: 'tcp-db' },
        { number: 8080, protocol: 'HTTP', name: 'http' },
      ],
      endpoints: ['10.0.0.5', '10.0.0.6'].map((address) => ({ address, ports: { 'tcp-db': 5432, http: 8080 }, labels: { app: 'vmdb' }, serviceAccount: 'db-sa' })),
    });
    const svc = await client.get<KubeObject & { spec: { selector?: unknown; ports: Array<{ name: string; port: number }> } }>({ apiVersion: 'v1', kind: 'Service', namespace: ns, name: 'vmdb' });
    expect(svc.spec.selector).toBeUndefined();
    expect(svc.spec.ports.map((p) => [p.name, p.port])).toEqual([
      ['tcp-db', 5432],
      ['http', 8080],
    ]);

    const again = await meshctl(['x', 'add', 'es', 'vmdb', '10.0.0.7', 'tcp:5432', '-n', ns!]);
    expect(again.code).toBe(1);
    expect(again.err).toMatch(new RegExp(`error: ServiceEntry ${ns}/mesh-external-vmdb already exists`));

    const removed = await meshctl(['x', 'remove-from-mesh', 'external-service', 'vmdb', '-n', ns!]);
    expect(removed.code).toBe(0);
    expect(removed.out).toBe(`ServiceEntry ${ns}/mesh-external-vmdb: deleted\nService ${ns}/vmdb: deleted\n`);
    expect(await client.find({ apiVersion: 'v1', kind: 'Service', namespace: ns, name: 'vmdb' })).toBeUndefined();
    const gone = await meshctl(['x', 'rm', 'es', 'vmdb', '-n', ns!]);
    expect(gone.code).toBe(1);
    expect(gone.err).toBe(`error: external service ${ns}/vmdb not found (no ServiceEntry mesh-external-vmdb, no Service vmdb)\n`);
    // A Service it did not make is left alone.
    const notOurs = await meshctl(['x', 'rm', 'es', 'ratings', '-n', ns!]);
    expect(notOurs.code).toBe(1);
    expect(notOurs.err).toMatch(new RegExp(`error: Service ${ns}/ratings was not made by add-to-mesh external-service`));
    expect(await client.find({ apiVersion: 'v1', kind: 'Service', namespace: ns, name: 'ratings' })).toBeDefined();
  }, 120_000);

  it.each([
    ['an address that is not one', ['x', 'add', 'es', 'db', '10.0.0', 'tcp:5432'], /error: address "10\.0\.0" is not an IP address/],
    ['a port that is not a number', ['x', 'add', 'es', 'db', '10.0.0.1', 'tcp:pg'], /error: port "tcp:pg": "pg" is not a port number/],
    ['a port name without a protocol', ['x', 'add', 'es', 'db', '10.0.0.1', 'postgres:5432'], /error: port "postgres:5432": the name must start with a protocol/],
    ['no port', ['x', 'add', 'es', 'db', '10.0.0.1'], /missing required argument 'port'/],
    ['the same port name twice', ['x', 'add', 'es', 'db', '10.0.0.1', 'http:80', 'http:8080'], /error: port name http is given twice/],
  ])('external-service with %s ends with a clear message and exit 1', async (_what, argv, message) => {
    const r = await meshctl([...argv, '-n', ns!]);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(message);
  }, 60_000);
});
