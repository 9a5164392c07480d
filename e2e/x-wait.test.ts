/**
 * `meshctl x wait` against the local plane: meshd as a process with the Cluster registry (config
 * distribution tracking is on by default with a cluster), two real ADS clients playing sidecars of
 * the namespace, and meshctl in-process reading the generation from the API server and the
 * distribution from meshd over the xDS debug channel of its plaintext port.
 *
 * - an edit of a VirtualService: `x wait` returns once both clients ACKed the new generation;
 * - a client that stops ACKing: `x wait` times out naming what it saw, exit 1; `--threshold 0.5`
 *   is met by the one client that still ACKs;
 * - `--for delete` returns once meshd no longer holds the deleted object, and not before.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { KubeClient } from '../src/kube/client.js';
import { runMeshctl } from '../test/cli/run-meshctl.js';
import { applyMeshCrds, createNamespace, kubeTestEnv, tearDown } from '../test/kube/helpers.js';
import { startDaemon, type Daemon } from '../test/support/daemon.js';
import { eventually } from '../test/support/eventually.js';
import { TestProxy } from '../test/support/proxy-dump.js';

let client: KubeClient;
let kubeconfig: string;
let meshNs: string;
let ns: string;
let daemon: Daemon;
let steady: TestProxy;
let stuck: TestProxy;
let dir: string;

const VS_REF = { apiVersion: 'networking.mesh.io/v1', kind: 'VirtualService', name: 'ratings' } as const;

const run = (argv: string[]) => runMeshctl(argv, { HOME: dir, KUBECONFIG: kubeconfig, MESHCTL_XDS_ADDRESS: daemon.grpcAddr, MESHCTL_PLAINTEXT: 'true' });

/** Sets the route timeout of the VirtualService, a change of its spec (a new generation). */
async function setRouteTimeout(seconds: number): Promise<number> {
  const vs = await client.mergePatch<{ metadata: { generation?: number } }>({ ...VS_REF, namespace: ns }, { spec: { http: [{ timeout: `${seconds}s`, route: [{ destination: { host: 'ratings' } }] }] } });
  return vs.metadata.generation ?? 0;
}

const sidecar = (name: string, ip: string) => ({ id: `sidecar~${ip}~${name}.${ns}~${ns}.svc.cluster.local`, metadata: { NAMESPACE: ns, LABELS: { app: name.replace(/-\d+$/, '') } } });

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mesh-x-wait-'));
  const env = await kubeTestEnv();
  client = env.client;
  kubeconfig = env.cluster.kubeconfig;
  await applyMeshCrds(client);
  meshNs = await createNamespace(client, 'xw-mesh');
  ns = await createNamespace(client, 'xw-app');
  await client.create({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'ratings', namespace: ns }, spec: { selector: { app: 'ratings' }, ports: [{ name: 'http', port: 9080 }] } });
  await client.create({ ...VS_REF, metadata: { name: 'ratings', namespace: ns }, spec: { hosts: ['ratings'], http: [{ timeout: '5s', route: [{ destination: { host: 'ratings' } }] }] } });
  daemon = await startDaemon({ registries: 'Cluster', args: ['--clusterconfig', kubeconfig], env: { POD_NAMESPACE: meshNs, POD_NAME: 'meshd-0' }, readyTimeoutMs: 60_000 });
  steady = new TestProxy(daemon.grpcAddr, sidecar('productpage-0', '10.9.1.4'));
  stuck = new TestProxy(daemon.grpcAddr, sidecar('reviews-0', '10.9.1.5'));
  await Promise.all([steady.start(), stuck.start()]);
}, 180_000);

afterAll(() => tearDown({ close: [steady, stuck], daemon, client, namespaces: [meshNs, ns], dir }), 60_000);

describe('x wait', () => {
  it('returns once both proxies ACKed the edited VirtualService', async () => {
    const first = await run(['x', 'wait', 'vs', `ratings.${ns}`, '--timeout', '20s']);
    expect(first.stderr).toBe('');
    expect(first.stdout).toBe(`VirtualService/${ns}/ratings generation 1 distributed to 2/2 proxies\n`);
    expect(first.code).toBe(0);

    const generation = await setRouteTimeout(7);
    expect(generation).toBe(2);
    const r = await run(['x', 'wait', 'VirtualService', 'ratings', '-n', ns, '--timeout', '20s']);
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe(`VirtualService/${ns}/ratings generation 2 distributed to 2/2 proxies\n`);
    expect(r.code).toBe(0);
    // both held it, as the proxies themselves say
    for (const p of [steady, stuck]) expect(p.dump()).toMatch(/"timeout": \{\s*"seconds": 7\s*\}/);
  }, 60_000);

  it('times out with what it saw when a proxy stops ACKing; --threshold 0.5 is met by the other', async () => {
    stuck.stopAcking();
    const before = stuck.received;
    const generation = await setRouteTimeout(9);
    await eventually('the new routes pushed to the proxy that no longer ACKs', () => stuck.received > before);
    const r = await run(['x', 'wait', 'vs', `ratings.${ns}`, '--timeout', '3s']);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(`error: timed out after 3s waiting for VirtualService/${ns}/ratings (distribution): 1/2 proxies hold generation ${generation} (threshold 1)\n`);
    expect(r.code).toBe(1);
    expect(r.ms).toBeGreaterThanOrEqual(3000);
    expect(r.ms).toBeLessThan(15_000);

    const half = await run(['x', 'wait', 'vs', `ratings.${ns}`, '--threshold', '0.5', '--timeout', '10s']);
    expect(half.stderr).toBe('');
    expect(half.stdout).toBe(`VirtualService/${ns}/ratings generation ${generation} distributed to 1/2 proxies\n`);
    expect(half.code).toBe(0);
  }, 60_000);

  it('--for delete returns once meshd no longer holds the deleted object', async () => {
    const early = await run(['x', 'wait', 'vs', `ratings.${ns}`, '--for', 'delete', '--timeout', '1s']);
    expect(early.stderr).toBe(`error: timed out after 1s waiting for VirtualService/${ns}/ratings (delete): 1 meshd still hold it\n`);
    expect(early.code).toBe(1);

    const waiting = run(['x', 'wait', 'vs', `ratings.${ns}`, '--for', 'delete', '--timeout', '20s']);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    await client.delete({ ...VS_REF, namespace: ns });
    const r = await waiting;
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe(`VirtualService/${ns}/ratings deleted from 1 meshd\n`);
    expect(r.code).toBe(0);
    expect(r.ms).toBeGreaterThanOrEqual(1000);
    // an object that is gone needs no generation from the cluster; waiting for its distribution does
    const gone = await run(['x', 'wait', 'vs', `ratings.${ns}`, '--timeout', '2s']);
    expect(gone.stderr).toBe(`error: VirtualService ${ns}/ratings not found\n`);
    expect(gone.code).toBe(1);
  }, 60_000);
});
