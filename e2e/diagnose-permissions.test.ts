/**
 * The diagnosing commands on the local plane for a user the API server forbids everything (a fresh
 * service account's token, no RBAC) and for pods that do not exist: each ends with a message that
 * names the refusal or the pod, and exit 1, before any other work.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { KubeClient } from '../src/kube/client.js';
import { runMeshctl } from '../test/cli/run-meshctl.js';
import { applyMeshCrds, createNamespace, deleteNamespace, kubeTestEnv, powerlessKubeconfig } from '../test/kube/helpers.js';

let client: KubeClient;
let kubeconfig: string;
let nobody: string;
let ns: string;
let dir: string;

const run = (argv: string[], extraEnv: Record<string, string> = {}) => runMeshctl(argv, { HOME: dir, ...extraEnv });

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mesh-diag-perm-'));
  const env = await kubeTestEnv();
  client = env.client;
  kubeconfig = env.cluster.kubeconfig;
  await applyMeshCrds(client);
  ns = await createNamespace(client, 'dperm');
  await client.create({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'reviews-0', namespace: ns, labels: { app: 'reviews' } }, spec: { containers: [{ name: 'mesh-proxy', image: 'proxy' }] } });
  await client.create({ apiVersion: 'networking.mesh.io/v1', kind: 'VirtualService', metadata: { name: 'reviews', namespace: ns }, spec: { hosts: ['reviews'], http: [{ route: [{ destination: { host: 'reviews' } }] }] } });
  nobody = await powerlessKubeconfig(client, kubeconfig, ns, dir);
}, 60_000);

afterAll(async () => {
  await deleteNamespace(client, ns);
  client?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
}, 60_000);

describe('a user without rights', () => {
  it.each([
    ['proxy-status of a pod', () => ['proxy-status', `reviews-0.${ns}`]],
    ['proxy-config of a pod', () => ['proxy-config', 'cluster', `reviews-0.${ns}`]],
    ['proxy-config log of a pod', () => ['proxy-config', 'log', `reviews-0.${ns}`]],
    ['x metrics', () => ['x', 'metrics', `reviews.${ns}`]],
    ['x create-remote-secret', () => ['x', 'create-remote-secret', '--name', 'east']],
    ['admin log', () => ['admin', 'log']],
    ['x wait', () => ['x', 'wait', 'vs', `reviews.${ns}`, '--timeout', '5s']],
  ])('%s: told it is forbidden, exit 1', async (_what, argv) => {
    const r = await run([...argv(), '-c', nobody], { MESHCTL_XDS_ADDRESS: '127.0.0.1:1', MESHCTL_PLAINTEXT: 'true' });
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^error: .*forbidden/im);
    expect(r.stderr).toContain(`system:serviceaccount:${ns}:nobody`);
    expect(r.code).toBe(1);
  }, 30_000);
});

describe('a pod that does not exist', () => {
  it.each([
    ['proxy-config cluster', () => ['proxy-config', 'cluster', `nope-0.${ns}`]],
    ['proxy-config all', () => ['proxy-config', 'all', `nope-0.${ns}`]],
    ['proxy-status', () => ['proxy-status', `nope-0.${ns}`]],
    ['x proxy-status', () => ['x', 'proxy-status', `nope-0.${ns}`]],
  ])('%s: names the pod, exit 1', async (_what, argv) => {
    const r = await run([...argv(), '-c', kubeconfig], { MESHCTL_XDS_ADDRESS: '127.0.0.1:1', MESHCTL_PLAINTEXT: 'true' });
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(`error: pod ${ns}/nope-0 not found\n`);
    expect(r.code).toBe(1);
  }, 30_000);
});
