/**
 * Pods of the local control plane and the pod player (e2e/support/pod-player.ts): every pod has an
 * address of the plane's own range that no other running pod has, also after the node simulator
 * restarts; a played pod answers on its address from inside a network namespace of its own, becomes
 * Ready only once it does, and leaves nothing behind. The player's tests need root and are skipped
 * with one line saying why without it.
 */
import { randomBytes } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { directEcho } from '../../e2e/support/backend.js';
import { apply, createNamespace, deleteNamespace, deployment, readyAddresses, scale } from '../../e2e/support/kube.js';
import { PLAYED_CONDITION, playPods, type PodPlayer } from '../../e2e/support/pod-player.js';
import { pollUntil } from '../../e2e/support/wait.js';
import { ensureCluster, kubeRequest, podNetwork, readKubeconfig, restartNodeSimulator, type KubeconfigCredentials } from '../support/cluster.js';
import { listNamespaces } from '../support/netns.js';

const ns = `pod-net-${randomBytes(3).toString('hex')}`;
const available = podNetwork();
if (!available.network) process.stderr.write(`test/harness/pod-network: tests that play pods are skipped: ${available.reason}\n`);
const playing = available.network ? it : it.skip;

let creds: KubeconfigCredentials;

interface Pod {
  metadata: { name: string };
  status?: { podIP?: string; phase?: string; conditions?: Array<{ type: string; status: string }> };
}

async function pods(selector: string): Promise<Pod[]> {
  const res = await kubeRequest(creds, 'GET', `/api/v1/namespaces/${ns}/pods?labelSelector=${encodeURIComponent(selector)}`);
  return (res.body as { items?: Pod[] }).items ?? [];
}

async function addressesOf(selector: string, count: number): Promise<Map<string, string>> {
  return pollUntil(
    async () => {
      const list = await pods(selector);
      const ips = new Map(list.filter((p) => p.status?.podIP).map((p) => [p.metadata.name, p.status!.podIP!] as const));
      return ips.size === count ? ips : undefined;
    },
    { timeoutMs: 60_000, what: `${count} pods of ${selector} with addresses` },
  );
}

/** Whether `address` (dotted IPv4) lies in `cidr`. */
function inRange(address: string, cidr: string): boolean {
  const toInt = (a: string): number => a.split('.').reduce((n, p) => n * 256 + Number(p), 0);
  const [base, bits] = cidr.split('/') as [string, string];
  const size = 2 ** (32 - Number(bits));
  return Math.floor(toInt(address) / size) === Math.floor(toInt(base) / size);
}

beforeAll(async () => {
  const cluster = await ensureCluster();
  creds = await readKubeconfig(cluster.kubeconfig);
  await createNamespace(creds, ns);
}, 120_000);

afterAll(async () => {
  if (creds) await deleteNamespace(creds, ns);
}, 60_000);

describe('pod addresses', () => {
  it('a restarted node simulator gives new pods addresses that no running pod has', async () => {
    await apply(creds, deployment(ns, 'before', 3, { app: 'before' }));
    const before = await addressesOf('app=before', 3);
    await restartNodeSimulator();
    await apply(creds, deployment(ns, 'after', 3, { app: 'after' }));
    const after = await addressesOf('app=after', 3);
    const all = [...before.values(), ...after.values()];
    expect(new Set(all).size).toBe(6);
    const range = podNetwork().network?.podCidr;
    if (range) for (const a of all) expect(inRange(a, range)).toBe(true);
  }, 180_000);
});

describe('the pod player', () => {
  let player: PodPlayer | undefined;
  afterEach(async () => {
    await player?.stop();
    player = undefined;
  });

  const prefix = available.network?.netnsPrefix ?? '';
  const ours = async (): Promise<string[]> => listNamespaces(`${prefix}${process.pid}-`);
  const ready = (p: Pod): boolean => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

  playing('plays gated pods in namespaces of their own; they become Ready once their backend answers on their address', async () => {
    await apply(creds, { apiVersion: 'v1', kind: 'Service', metadata: { name: 'web', namespace: ns }, spec: { selector: { app: 'web' }, ports: [{ name: 'grpc', port: 7070 }] } });
    await apply(creds, deployment(ns, 'web', 2, { app: 'web' }, { readinessGate: PLAYED_CONDITION }));
    const ips = await addressesOf('app=web', 2);
    // Running with an address, but nobody serves it yet: not Ready, no ready endpoint.
    expect((await pods('app=web')).map((p) => [p.status?.phase, ready(p)])).toEqual([
      ['Running', false],
      ['Running', false],
    ]);
    expect(await readyAddresses(creds, ns, 'web')).toEqual([]);

    player = await playPods(creds, ns, 'app=web', 7070, { pollMs: 50 });
    await pollUntil(async () => (await readyAddresses(creds, ns, 'web')).length === 2, { timeoutMs: 30_000, what: 'both pods ready', diagnostics: () => player!.problems().join('\n') });
    expect(player.serving()).toEqual([...ips.keys()].sort());
    for (const [name, ip] of ips) {
      expect((await directEcho(`${ip}:7070`)).backend).toBe(name);
    }
    expect((await ours()).sort()).toEqual([...ips.values()].map((ip) => `${prefix}${process.pid}-${ip.replaceAll('.', '-')}`).sort());
    expect(player.problems()).toEqual([]);
  }, 120_000);

  playing('removes a deleted pod\'s namespace, and all of them when it stops', async () => {
    await apply(creds, deployment(ns, 'shrink', 2, { app: 'shrink' }, { readinessGate: PLAYED_CONDITION }));
    const ips = await addressesOf('app=shrink', 2);
    player = await playPods(creds, ns, 'app=shrink', 7070, { pollMs: 50 });
    await pollUntil(() => player!.serving().length === 2, { timeoutMs: 30_000, what: 'both pods played', diagnostics: () => player!.problems().join('\n') });
    await scale(creds, ns, 'shrink', 1);
    const left = await addressesOf('app=shrink', 1);
    const [gone] = [...ips.values()].filter((ip) => ![...left.values()].includes(ip));
    await pollUntil(async () => !(await ours()).some((n) => n.endsWith(gone!.replaceAll('.', '-'))), { timeoutMs: 15_000, what: `the namespace of ${gone} to go` });
    // Nothing answers for the deleted pod now, and this machine does not send its traffic anywhere else.
    const route = spawnSync('ip', ['route', 'get', gone!], { encoding: 'utf8' });
    expect(`${route.stdout}${route.stderr}`).toMatch(/unreachable|No route to host/);

    await player.stop();
    player = undefined;
    expect(await ours()).toEqual([]);
    expect(spawnSync('ip', ['route', 'show', 'exact', `${[...left.values()][0]}/32`], { encoding: 'utf8' }).stdout).toBe('');
  }, 120_000);
});
