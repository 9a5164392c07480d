/**
 * `meshctl x metrics` (the built program, as a process) on the local plane: it looks for the
 * metrics store by its labels in the mesh namespace (-i) and reaches it by a port-forward through
 * the API server. The figures themselves are tested against a real Prometheus in
 * test/diag/metrics-store.test.ts; here, what an operator sees when the store cannot be used: a
 * malformed workload, no store in the mesh namespace, and a store pod the API server cannot reach
 * (the plane's node simulator runs no kubelet), each a clear message and exit 1.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import type { KubeClient } from '../src/kube/client.js';
import { createNamespace, deleteNamespace, kubeTestEnv } from '../test/kube/helpers.js';
import { REPO_ROOT } from '../test/support/daemon.js';

const MESHCTL = path.join(REPO_ROOT, 'dist', 'bin', 'meshctl.js');

let client: KubeClient;
let kubeconfig: string;
let mesh: string | undefined;

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

beforeAll(async () => {
  const env = await kubeTestEnv();
  client = env.client;
  kubeconfig = env.cluster.kubeconfig;
  mesh = await createNamespace(client, 'metrics');
  await client.create({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'prometheus-0', namespace: mesh, labels: { 'app.kubernetes.io/name': 'prometheus' } }, spec: { containers: [{ name: 'prometheus', image: 'prometheus' }] } });
}, 120_000);

afterAll(async () => {
  await deleteNamespace(client, mesh);
  client?.close();
});

describe('meshctl x metrics', () => {
  it('a store pod the API server cannot reach is a clear error naming the pod', async () => {
    const r = await meshctl(['x', 'metrics', 'reviews-v1.shop', '-i', mesh!]);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(new RegExp(`error: cannot reach the metrics store at 127\\.0\\.0\\.1:\\d+: .+ \\(pod ${mesh}/prometheus-0, port 9090, through the API server\\)`));
    expect(r.out).toBe('');
  }, 90_000);

  it.each([
    ['no metrics store in the mesh namespace', ['x', 'm', 'reviews-v1', '-i', 'kube-system'], /error: no metrics addon in namespace kube-system: no pod matches app\.kubernetes\.io\/name=prometheus/],
    ['a malformed workload', ['x', 'metrics', 'reviews-v1', 'Bad_Name.shop'], /error: workload "Bad_Name\.shop": "Bad_Name" is not a valid workload name/],
    ['no workload', ['x', 'metrics'], /missing required argument 'workload'/],
  ])('%s ends with a clear message and exit 1', async (_what, argv, message) => {
    const r = await meshctl(argv);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(message);
  }, 90_000);
});
