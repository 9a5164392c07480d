/**
 * `meshctl cluster-inject` and `meshctl x injector list` against the local plane: the injector's
 * settings come from the mesh namespace's ConfigMaps of the revision a mutating webhook
 * configuration serves (`--revision`, `--webhookConfig`); an unknown revision and a missing
 * ConfigMap are refused by name; the list shows a labelled namespace with its revision, webhook and
 * pod counts. The webhook configurations made here select no namespace and ignore failures, so
 * they never touch other tests' pods.
 */
import { randomBytes } from 'node:crypto';
import { writeFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import type { KubeClient } from '../../src/kube/client.js';
import type { Pod } from '../../src/inject/pod.js';
import { main } from '../../src/cli/meshctl.js';
import type { CliIO } from '../../src/cli/runner.js';
import { configMap, createNamespace, deleteNamespace, kubeTestEnv, type KubeTestEnv } from '../kube/helpers.js';

let env: KubeTestEnv;
let client: KubeClient;
let meshNs: string;
let appNs: string;
let kubeconfig: string;
let dir: string;
const revision = `capt${randomBytes(3).toString('hex')}`;
const orphan = `capt-orphan-${randomBytes(3).toString('hex')}`;
const webhooks: string[] = [];

const ADMISSION = 'admissionregistration.k8s.io/v1';

async function webhook(name: string, rev: string): Promise<void> {
  await client.create({
    apiVersion: ADMISSION,
    kind: 'MutatingWebhookConfiguration',
    metadata: { name, labels: { 'mesh.io/rev': rev, app: 'sidecar-injector' } },
    webhooks: [
      {
        name: `rev.${name}.sidecar-injector.mesh.io`,
        clientConfig: { url: 'https://127.0.0.1:9/inject' },
        // selects nothing: no namespace carries this label
        namespaceSelector: { matchLabels: { 'mesh.io/test-never': 'true' } },
        rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }],
        failurePolicy: 'Ignore',
        sideEffects: 'None',
        admissionReviewVersions: ['v1'],
      },
    ],
  } as never);
  webhooks.push(name);
}

beforeAll(async () => {
  env = await kubeTestEnv();
  client = env.client;
  kubeconfig = env.cluster.kubeconfig;
  meshNs = await createNamespace(client, 'capt-mesh');
  appNs = await createNamespace(client, 'capt-app');
  dir = await mkdtemp(join(tmpdir(), 'cluster-inject-kube-'));
  await client.create(
    configMap(meshNs, `mesh-sidecar-injector-${revision}`, {
      config: 'policy: enabled\n',
      values: JSON.stringify({ global: { hub: 'registry.example/rev', tag: revision } }),
    }),
  );
  await client.create(configMap(meshNs, 'mesh', { mesh: 'trustDomain: capture.example\n' }));
  await webhook(`mesh-sidecar-injector-${revision}`, revision);
  await webhook(orphan, `${revision}x`);
}, 120_000);

afterAll(async () => {
  for (const name of webhooks) await client?.delete({ apiVersion: ADMISSION, kind: 'MutatingWebhookConfiguration', name }).catch(() => undefined);
  await deleteNamespace(client, meshNs);
  await deleteNamespace(client, appNs);
  if (dir) await rm(dir, { recursive: true, force: true });
  client?.close();
});

function io(stdin = ''): CliIO & { stdout: () => string; stderr: () => string } {
  let out = '';
  let err = '';
  return { out: (t) => void (out += t), err: (t) => void (err += t), env: { KUBECONFIG: kubeconfig }, isTTY: false, readStdin: () => Promise.resolve(stdin), stdout: () => out, stderr: () => err };
}

async function meshctl(args: string[], stdin = ''): Promise<{ code: number; stdout: string; stderr: string }> {
  const t = io(stdin);
  const code = await main(args, t);
  return { code, stdout: t.stdout(), stderr: t.stderr() };
}

const POD: Pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web', labels: { app: 'web' } }, spec: { containers: [{ name: 'web', image: 'web:1' }] } } as Pod;

describe('meshctl cluster-inject against the cluster', () => {
  it('--revision reads that revision\'s ConfigMap and the mesh ConfigMap of --meshNamespace, and the cluster\'s version', async () => {
    const r = await meshctl(['cluster-inject', '-f', '-', '-i', meshNs, '-r', revision], JSON.stringify(POD));
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const [out] = parseAllDocuments(r.stdout).map((d) => d.toJS() as Pod);
    // the local plane runs Kubernetes 1.29 or later: the proxy is a native sidecar (an init container that keeps running)
    const proxy = out!.spec!.initContainers?.find((c) => c.name === 'mesh-proxy');
    expect(proxy).toMatchObject({ restartPolicy: 'Always' });
    expect(proxy?.image).toBe(`registry.example/rev/proxy:${revision}`);
    expect(JSON.parse(out!.metadata!.annotations!['sidecar.mesh.io/status']!)).toMatchObject({ revision });
    expect(JSON.stringify(proxy?.env)).toContain('capture.example');
  }, 60_000);

  it('--webhookConfig names the webhook; its revision label chooses the ConfigMap (here missing: refused by name)', async () => {
    const r = await meshctl(['cluster-inject', '-f', '-', '-i', meshNs, '--webhookConfig', orphan], JSON.stringify(POD));
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain(`error: the ConfigMap ${meshNs}/mesh-sidecar-injector-${revision}x does not exist (the injector of revision "${revision}x", served by ${orphan})`);
  }, 60_000);

  it('an unknown revision is refused, listing the installed ones', async () => {
    const r = await meshctl(['cluster-inject', '-f', '-', '-i', meshNs, '-r', 'no-such-rev'], JSON.stringify(POD));
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('error: revision "no-such-rev" is not installed: no MutatingWebhookConfiguration mesh-sidecar-injector-no-such-rev (installed revisions: ');
    expect(r.stderr).toContain(revision);
  }, 60_000);

  it('a missing mesh ConfigMap is refused by name', async () => {
    const values = join(dir, 'values.json');
    const config = join(dir, 'config.yaml');
    await writeFile(values, '{}');
    await writeFile(config, 'policy: enabled\n');
    const r = await meshctl(['cluster-inject', '-f', '-', '-i', meshNs, '--valuesFile', values, '--injectConfigFile', config, '--meshConfigMapName', 'no-such-mesh'], JSON.stringify(POD));
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`error: the ConfigMap ${meshNs}/no-such-mesh does not exist (the mesh config)`);
  }, 60_000);
});

describe('meshctl x injector list', () => {
  it('shows a labelled namespace with its revision, webhook and pod counts', async () => {
    const ns = await client.get({ apiVersion: 'v1', kind: 'Namespace', name: appNs });
    await client.mergePatch({ apiVersion: 'v1', kind: 'Namespace', name: appNs }, { metadata: { labels: { ...(ns.metadata?.labels ?? {}), 'mesh.io/rev': revision } } });
    const injected = await meshctl(['cluster-inject', '-f', '-', '-i', meshNs, '-r', revision], JSON.stringify({ ...POD, metadata: { ...POD.metadata, name: 'injected' } }));
    expect(injected.code).toBe(0);
    const [pod] = parseAllDocuments(injected.stdout).map((d) => d.toJS() as Pod);
    await client.create({ ...pod!, metadata: { ...pod!.metadata, namespace: appNs } } as never);
    await client.create({ ...POD, metadata: { ...POD.metadata, name: 'plain', namespace: appNs } } as never);

    const json = await meshctl(['x', 'injector', 'list', '-o', 'json']);
    expect(json.stderr).toBe('');
    expect(json.code).toBe(0);
    const rows = JSON.parse(json.stdout) as Array<Record<string, unknown>>;
    expect(rows.find((r) => r.namespace === appNs)).toEqual({
      namespace: appNs,
      label: `mesh.io/rev=${revision}`,
      revision,
      webhook: `mesh-sidecar-injector-${revision}`,
      pods: 2,
      injectedPods: 1,
      injectedBy: { [revision]: 1 },
    });
    const table = await meshctl(['x', 'injector', 'list']);
    expect(table.code).toBe(0);
    expect(table.stdout.split('\n')[0]).toMatch(/^NAMESPACE\s+LABEL\s+REVISION\s+WEBHOOK\s+PODS\s+INJECTED\s+INJECTED-BY$/);
    expect(table.stdout).toMatch(new RegExp(`${appNs}\\s+mesh.io/rev=${revision}\\s+${revision}\\s+mesh-sidecar-injector-${revision}\\s+2\\s+1\\s+${revision}:1`));
  }, 60_000);

  it('a bad output format is refused', async () => {
    const r = await meshctl(['x', 'injector', 'list', '-o', 'xml']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('--output: invalid value "xml" (choose from table, json)');
  });
});
