/**
 * `meshctl x create-remote-secret` on the local plane: the Secret it prints carries the multicluster
 * label and one kubeconfig keyed by the cluster ID; that kubeconfig, used as another cluster's
 * meshd would, reads this cluster's services and pods as the reader service account and may not
 * write (least privilege). The Secret is accepted by a second API server as it is printed. Bad
 * input ends with a clear message and exit 1.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse } from 'yaml';
import { main as meshctl } from '../src/cli/meshctl.js';
import { clustersOfSecret } from '../src/controllers/remote-clusters/secrets.js';
import { KubeClient } from '../src/kube/client.js';
import type { KubeObject } from '../src/kube/types.js';
import { captureIO } from '../test/cli/capture.js';
import { createNamespace, deleteNamespace, kubeTestEnv } from '../test/kube/helpers.js';
import { REMOTE_APISERVER_START_TIMEOUT_MS, REMOTE_APISERVER_STOP_TIMEOUT_MS, startRemoteApiServer, type RemoteApiServer } from '../test/support/remote-apiserver.js';

let client: KubeClient;
let kubeconfig: string;
let ns: string | undefined;
let dir: string;

async function run(argv: string[]) {
  const c = captureIO({ HOME: dir });
  const code = await meshctl(argv, c.io);
  return { code, stdout: c.stdout(), stderr: c.stderr() };
}

beforeAll(async () => {
  const env = await kubeTestEnv();
  client = env.client;
  kubeconfig = env.cluster.kubeconfig;
  ns = await createNamespace(client, 'remote');
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'remote-secret-'));
}, 120_000);

afterAll(async () => {
  await client?.delete({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', name: `mesh-reader-clusterrole-${ns}` }).catch(() => undefined);
  await client?.delete({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', name: `mesh-reader-clusterrole-${ns}` }).catch(() => undefined);
  await deleteNamespace(client, ns);
  client?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

describe('meshctl x create-remote-secret', () => {
  let secret: KubeObject & { stringData: Record<string, string> };

  it('prints a Secret whose kubeconfig reads this cluster as the reader account, and writes nothing', async () => {
    const r = await run(['x', 'create-remote-secret', '-c', kubeconfig, '-i', ns!, '--create-service-account', '--name', 'cluster-a']);
    expect(r).toMatchObject({ code: 0, stderr: '' });
    secret = parse(r.stdout) as typeof secret;
    expect(secret.metadata).toMatchObject({ name: 'mesh-remote-secret-cluster-a', namespace: ns, labels: { 'mesh.io/multiCluster': 'true' } });
    expect(Object.keys(secret.stringData)).toEqual(['cluster-a']);
    const config = parse(secret.stringData['cluster-a']) as { clusters: Array<{ cluster: { server: string } }>; users: Array<{ user: { token?: string } }> };
    expect(config.clusters[0].cluster.server).toBe(client.server);
    expect(config.users[0].user.token).toMatch(/^ey/);

    const file = path.join(dir, 'remote.kubeconfig');
    fs.writeFileSync(file, secret.stringData['cluster-a']);
    const { client: remote } = await KubeClient.create({ kubeconfig: file, qps: 0 });
    try {
      const services = await remote.list('v1', 'Service', {});
      expect(services.items.some((s) => s.metadata?.name === 'kubernetes')).toBe(true);
      await remote.list('v1', 'Pod', { namespace: ns });
      await expect(remote.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'nope', namespace: ns } })).rejects.toThrow(/forbidden|403/i);
    } finally {
      remote.close();
    }
  }, 90_000);

  it('uses the same token Secret again, and names the cluster by kube-system\'s UID by default', async () => {
    const r = await run(['x', 'create-remote-secret', '-c', kubeconfig, '-i', ns!]);
    expect(r.code).toBe(0);
    const again = parse(r.stdout) as typeof secret;
    const systemUid = (await client.get({ apiVersion: 'v1', kind: 'Namespace', name: 'kube-system' })).metadata?.uid;
    expect(Object.keys(again.stringData)).toEqual([systemUid]);
    const token = (s: typeof secret) => (parse(Object.values(s.stringData)[0]) as { users: Array<{ user: { token: string } }> }).users[0].user.token;
    expect(token(again)).toBe(token(secret));
  }, 60_000);

  it('is accepted as printed by another cluster\'s API server, and reads back as one cluster', async () => {
    let other: RemoteApiServer | undefined;
    try {
      other = await startRemoteApiServer();
      const { client: far } = await KubeClient.create({ kubeconfig: other.kubeconfig, qps: 0 });
      try {
        await far.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } }).catch(() => undefined);
        await far.create(secret);
        const stored = await far.get({ apiVersion: 'v1', kind: 'Secret', namespace: ns, name: 'mesh-remote-secret-cluster-a' });
        expect(clustersOfSecret(stored as never).map((c) => [c.clusterId, c.kubeconfig])).toEqual([['cluster-a', secret.stringData['cluster-a']]]);
      } finally {
        far.close();
      }
    } finally {
      await other?.stop();
    }
  }, REMOTE_APISERVER_START_TIMEOUT_MS + REMOTE_APISERVER_STOP_TIMEOUT_MS);

  it.each([
    ['a missing service account', ['--service-account', 'nobody'], /service account \S+\/nobody not found \(install the mesh, or give --create-service-account\)/],
    ['a plug-in without its name', ['--auth-type', 'plugin'], /--auth-type=plugin needs --auth-plugin-name/],
    ['plug-in config without the plug-in type', ['--auth-plugin-config', 'a=b'], /--auth-plugin-name and --auth-plugin-config need --auth-type=plugin/],
    ['malformed plug-in config', ['--auth-type', 'plugin', '--auth-plugin-name', 'p', '--auth-plugin-config', 'novalue'], /--auth-plugin-config: "novalue" is not <key>=<value>/],
    ['an unknown type', ['--type', 'other'], /--type <type>' argument 'other' is invalid\. Allowed choices are remote, config/],
    ['a bad cluster name', ['--name', 'a b'], /--name: "a b" is not a cluster ID/],
    ['--manifests', ['-d', 'charts/'], /^error: --manifests: not supported; create-remote-secret uses its built-in service account and role and reads no charts$/m],
    ['an unknown token Secret', ['--secret-name', 'nope'], /--secret-name: secret \S+\/nope not found/],
  ])('%s ends with a clear message and exit 1', async (_what, extra, message) => {
    const r = await run(['x', 'create-remote-secret', '-c', kubeconfig, '-i', ns!, ...extra]);
    expect(r.stderr).toMatch(message);
    expect(r.code).toBe(1);
  });
});
