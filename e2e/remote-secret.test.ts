/**
 * `meshctl x create-remote-secret` on the local plane: the Secret it prints carries the multicluster
 * label and one kubeconfig keyed by the cluster ID; that kubeconfig, used as another cluster's
 * meshd would, reads this cluster's services and pods as the reader service account and may not
 * write (least privilege). The Secret is accepted by a second API server as it is printed, and a
 * meshd (the built daemon) whose own cluster is that second server reads this cluster's endpoints
 * through it, under the cluster ID given as --name. A Secret of an account without rights, or with
 * a wrong token, is named in meshd's log and metrics, and meshd stays ready. Bad input ends with a
 * clear message and exit 1.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse, stringify } from 'yaml';
import { main as meshctl } from '../src/cli/meshctl.js';
import { clustersOfSecret } from '../src/controllers/remote-clusters/secrets.js';
import { KubeClient } from '../src/kube/client.js';
import type { KubeObject } from '../src/kube/types.js';
import { captureIO } from '../test/cli/capture.js';
import { makeConfigDir, startDaemon, type ConfigDir, type Daemon } from '../test/support/daemon.js';
import { eventually } from '../test/support/eventually.js';
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

  describe('on another cluster', () => {
    const OTHER = 'cluster-b';
    let other: RemoteApiServer | undefined;
    let far: KubeClient | undefined;
    let daemon: Daemon | undefined;
    let configDir: ConfigDir | undefined;
    const host = (name: string): string => `${name}.${ns}.svc.cluster.local`;

    /** `cluster address:port` of a service in meshd's /debug/endpointz, sorted. */
    async function endpointz(name: string): Promise<string[]> {
      const dump = (await daemon!.debug('endpointz')) as Array<{ hostname: string; endpoints: Array<{ clusterId: string; address: string; port: number }> }>;
      return (dump.find((s) => s.hostname === host(name))?.endpoints ?? []).map((e) => `${e.clusterId} ${e.address}:${e.port}`).sort();
    }

    /** Runs create-remote-secret and stores its Secret on the other API server as printed. */
    async function printAndStore(extra: string[]): Promise<typeof secret> {
      const r = await run(['x', 'create-remote-secret', '-c', kubeconfig, '-i', ns!, ...extra]);
      expect(r).toMatchObject({ code: 0, stderr: '' });
      const printed = parse(r.stdout) as typeof secret;
      await far!.create(printed);
      return printed;
    }

    const diagnostics = (): string => `--- meshd log tail ---\n${daemon?.logs().slice(-6000) ?? ''}`;

    beforeAll(async () => {
      other = await startRemoteApiServer();
      far = (await KubeClient.create({ kubeconfig: other.kubeconfig, qps: 0 })).client;
      await far.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
      // In this cluster: a Service without selector and its EndpointSlice (no controller writes one for it).
      await client.create({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'echo', namespace: ns }, spec: { ports: [{ name: 'http', port: 8080, targetPort: 8080 }] } } as KubeObject);
      await client.create({
        apiVersion: 'discovery.k8s.io/v1',
        kind: 'EndpointSlice',
        metadata: { name: 'echo-manual', namespace: ns, labels: { 'kubernetes.io/service-name': 'echo', 'endpointslice.kubernetes.io/managed-by': 'mesh-tests' } },
        addressType: 'IPv4',
        endpoints: [{ addresses: ['198.18.60.1'], conditions: { ready: true } }, { addresses: ['198.18.60.2'], conditions: { ready: true } }],
        ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
      } as KubeObject);
      // A service account of this cluster without any role, for the forbidden case.
      await client.create({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'no-rights', namespace: ns } });
    }, REMOTE_APISERVER_START_TIMEOUT_MS);

    afterAll(async () => {
      await daemon?.stop();
      await configDir?.cleanup();
      far?.close();
      await other?.stop();
    }, REMOTE_APISERVER_STOP_TIMEOUT_MS);

    it('accepts the Secret as printed, and its meshd reads this cluster\'s endpoints under the --name cluster ID', async () => {
      await far!.create(secret);
      const stored = await far!.get({ apiVersion: 'v1', kind: 'Secret', namespace: ns, name: 'mesh-remote-secret-cluster-a' });
      expect(clustersOfSecret(stored as never).map((c) => [c.clusterId, c.kubeconfig])).toEqual([['cluster-a', secret.stringData['cluster-a']]]);

      // meshd of the other cluster: its own cluster is the other API server, its remote Secrets are in
      // `ns` there; its mesh config comes from an empty directory (the other server has no mesh CRDs).
      configDir = await makeConfigDir();
      daemon = await startDaemon({
        registries: 'Cluster',
        configDir: configDir.path,
        args: ['--clusterconfig', other!.kubeconfig, '--clusterID', OTHER, '--clusterRegistriesNamespace', ns!],
        // No controller runs for the other API server: meshd reads EndpointSlices; a remote cluster must sync before ready.
        env: { POD_NAMESPACE: ns, DISC_ENABLE_STATUS: 'false', DISC_USE_ENDPOINT_SLICE: 'true', DISC_REMOTE_CLUSTER_TIMEOUT: '30s' },
        readyTimeoutMs: 45_000,
      });
      expect(await endpointz('echo')).toEqual(['cluster-a 198.18.60.1:8080', 'cluster-a 198.18.60.2:8080']);
      expect(await daemon.metric('meshd_managed_clusters')).toBe(2);
      expect(await daemon.metric('remote_cluster_sync_timeouts_total')).toBe(0);
      expect(daemon.logs()).toContain('remote cluster cluster-a synced in');

      // An endpoint change in this cluster reaches the other cluster's meshd.
      await client.mergePatch(
        { apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice', namespace: ns, name: 'echo-manual' },
        { endpoints: [{ addresses: ['198.18.60.3'], conditions: { ready: true } }] },
      );
      await eventually('the endpoint change to reach meshd', async () => (await endpointz('echo')).join() === 'cluster-a 198.18.60.3:8080', { timeoutMs: 20_000, diagnostics, retryErrors: true });
    }, 60_000);

    it('names a kubeconfig whose account may not read, or whose token is wrong, in its log and metrics, and stays ready', async () => {
      expect(daemon).toBeDefined();
      const errors = (): Promise<number> => daemon!.metric('controller_sync_errors_total', { controller: 'remote-cluster-registry' });
      const before = await errors();
      // The real command, for an account of this cluster that exists but has no role.
      await printAndStore(['--service-account', 'no-rights', '--name', 'cluster-denied']);
      // The reader's Secret with a token this cluster does not know.
      const config = parse(secret.stringData['cluster-a']) as { users: Array<{ user: { token: string } }> };
      config.users[0].user.token = `${config.users[0].user.token.slice(0, -8)}AAAAAAAA`;
      await far!.create({
        ...secret,
        metadata: { ...secret.metadata, name: 'mesh-remote-secret-cluster-badtoken' },
        stringData: { 'cluster-badtoken': stringify(config) },
      });

      await eventually(
        'meshd to log both clusters\' failures',
        () => /remote cluster cluster-denied: \w+ informer: \w+: .*forbidden/i.test(daemon!.logs()) && /remote cluster cluster-badtoken: \w+ informer: \w+: .*(unauthorized|401)/i.test(daemon!.logs()),
        { timeoutMs: 20_000, diagnostics },
      );
      expect(await errors()).toBeGreaterThan(before);
      expect(daemon!.logs()).toMatch(/cluster-denied.*system:serviceaccount:[^:]+:no-rights/);
      // No secret material in the log.
      expect(daemon!.logs()).not.toContain(config.users[0].user.token);
      expect(daemon!.logs()).not.toContain((parse(secret.stringData['cluster-a']) as typeof config).users[0].user.token);
      // Ready, still serving the cluster it can read, and nothing of the two it cannot.
      expect(daemon!.running()).toBe(true);
      expect(await daemon!.ready()).toBe(true);
      expect(await endpointz('echo')).toEqual(['cluster-a 198.18.60.3:8080']);
      expect(await daemon!.metric('meshd_managed_clusters')).toBe(4);
    }, 60_000);
  });

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
