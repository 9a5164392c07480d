/**
 * Plays the containers of simulated pods. On the local control plane the node simulator makes pods
 * Running and Ready with an address from the plane's pod range, but nothing runs them. The player
 * watches the pods of a namespace that match a label selector and gives each pod with an address a
 * network namespace of its own holding that address (test/support/netns.ts), with an Echo backend
 * named after the pod (echo-child.mjs) listening inside on `<podIP>:<port>`. The daemon and the
 * test's clients on this machine reach it across the namespace's link, as they would a pod on a
 * node. When a pod goes away its backend stops and, once no pod has the address, its namespace goes.
 * `stop()` removes everything; namespaces a crashed run left are removed when a player starts.
 *
 * Readiness: the simulator makes a pod Ready at once, before any backend could listen, so the
 * daemon would hand clients an address that refuses them for a while. A pod with the readiness gate
 * `PLAYED_CONDITION` (`deployment(..., { readinessGate: PLAYED_CONDITION })`, e2e/support/kube.ts)
 * stays not Ready until the player has its backend listening and sets the gate and Ready, as a
 * kubelet would after a readiness probe; when the backend dies they go back to False.
 *
 * Needs root (see `podNetwork()` in test/support/cluster.ts, which says why when it cannot).
 */
import type { ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { kubeRequest, podNetwork, type KubeconfigCredentials, type PodNetwork } from '../../test/support/cluster.js';
import { createTestHost, ownedName, removeLeftovers, stopChild, type TestHost } from '../../test/support/netns.js';

/** The readiness gate the player sets once a pod's backend listens. */
export const PLAYED_CONDITION = 'e2e.mesh.io/played';

const ECHO_CHILD = fileURLToPath(new URL('./echo-child.mjs', import.meta.url));
/** How long a backend may take to listen after its process starts (a busy machine is slow to start node). */
const LISTEN_TIMEOUT_MS = 20_000;

export interface PodPlayer {
  /** Names of the pods whose backend listens now. */
  serving(): string[];
  /** What went wrong so far (pods sharing an address, a backend that failed), oldest first. */
  problems(): string[];
  stop(): Promise<void>;
}

interface Pod {
  readonly metadata?: { readonly name?: string; readonly deletionTimestamp?: string };
  readonly spec?: { readonly readinessGates?: ReadonlyArray<{ readonly conditionType?: string }> };
  readonly status?: { readonly podIP?: string; readonly phase?: string; readonly conditions?: ReadonlyArray<{ readonly type?: string; readonly status?: string }> };
}

interface PodList {
  readonly items?: ReadonlyArray<Pod>;
}

const gated = (pod: Pod): boolean => pod.spec?.readinessGates?.some((g) => g.conditionType === PLAYED_CONDITION) ?? false;
const played = (pod: Pod): boolean => pod.status?.conditions?.some((c) => c.type === PLAYED_CONDITION && c.status === 'True') ?? false;

interface Backend {
  readonly pod: string;
  readonly child: ChildProcess;
  listening: boolean;
}

/** One pod address: its namespace and the backend of the pod that has the address now. */
interface Slot {
  readonly ip: string;
  /** The pod that should be served here; undefined once no live pod has the address. */
  want: string | undefined;
  host: TestHost | undefined;
  backend: Backend | undefined;
  /** The running reconcile of this slot, if any. */
  work: Promise<void> | undefined;
}

export interface PlayPodsOptions {
  /** Pause between looks at the pods (default 200 ms). */
  readonly pollMs?: number;
  /** Defaults to `podNetwork()` of the local plane. */
  readonly network?: PodNetwork;
}

export async function playPods(
  creds: KubeconfigCredentials,
  namespace: string,
  labelSelector: string,
  port: number,
  options: PlayPodsOptions = {},
): Promise<PodPlayer> {
  const network = options.network ?? podNetwork().network;
  if (!network) throw new Error(`cannot play pods: ${podNetwork().reason}`);
  const pollMs = options.pollMs ?? 200;
  const slots = new Map<string, Slot>();
  const problems: string[] = [];
  const problem = (text: string): void => {
    if (problems[problems.length - 1] !== text) problems.push(text);
    if (problems.length > 50) problems.shift();
  };
  let stopped = false;

  await removeLeftovers(network.netnsPrefix, 'dead');

  const startBackend = (host: TestHost, pod: string, ip: string): Promise<Backend> =>
    new Promise((resolve, reject) => {
      const child = host.spawn([process.execPath, ECHO_CHILD, pod, ip, String(port)], { stdio: ['pipe', 'pipe', 'pipe'] });
      let stderr = '';
      child.stderr?.setEncoding('utf8').on('data', (c: string) => (stderr = (stderr + c).slice(-4000)));
      const backend: Backend = { pod, child, listening: false };
      const timer = setTimeout(() => {
        void stopChild(child);
        reject(new Error(`backend of pod ${pod} did not listen on ${ip}:${port} within ${LISTEN_TIMEOUT_MS} ms; stderr: ${stderr}`));
      }, LISTEN_TIMEOUT_MS);
      const lines = createInterface({ input: child.stdout! });
      lines.once('line', () => {
        clearTimeout(timer);
        backend.listening = true;
        resolve(backend);
      });
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        lines.close();
        const was = backend.listening;
        backend.listening = false;
        const text = `backend of pod ${pod} on ${ip}:${port} exited (${signal ?? code})${stderr ? `: ${stderr.trim()}` : ''}`;
        if (!was) reject(new Error(text));
        else if (!stopped && slots.get(ip)?.backend === backend) {
          problem(text);
          const slot = slots.get(ip);
          if (slot) slot.backend = undefined;
        }
      });
    });

  /** Brings one slot to what it should be: the wanted pod's backend, or nothing at all. */
  const reconcile = async (slot: Slot): Promise<void> => {
    try {
      await reconcileOnce(slot);
    } finally {
      if (stopped) await clear(slot);
    }
  };

  /** Stops the slot's backend and removes its namespace. */
  const clear = async (slot: Slot): Promise<void> => {
    const { backend, host } = slot;
    slot.backend = undefined;
    slot.host = undefined;
    if (backend) await stopChild(backend.child);
    await host?.destroy();
  };

  const reconcileOnce = async (slot: Slot): Promise<void> => {
    while (!stopped) {
      const want = slot.want;
      if (slot.backend && (slot.backend.pod !== want || slot.backend.child.exitCode !== null)) {
        const b = slot.backend;
        slot.backend = undefined;
        await stopChild(b.child);
        continue;
      }
      if (want === undefined) {
        const host = slot.host;
        slot.host = undefined;
        await host?.destroy();
        if (slot.want === undefined) slots.delete(slot.ip);
        return;
      }
      if (slot.backend) return;
      slot.host ??= await createTestHost({ name: ownedName(network.netnsPrefix, slot.ip.replaceAll('.', '-')), address: slot.ip, gateway: network.gateway });
      if (stopped || slot.want !== want) continue;
      slot.backend = await startBackend(slot.host, want, slot.ip);
    }
  };

  const kick = (slot: Slot): void => {
    if (slot.work || stopped) return;
    slot.work = reconcile(slot)
      .catch((err: unknown) => problem(err instanceof Error ? err.message : String(err)))
      .finally(() => {
        slot.work = undefined;
      });
  };

  const sync = async (): Promise<void> => {
    const path = `/api/v1/namespaces/${namespace}/pods?labelSelector=${encodeURIComponent(labelSelector)}`;
    const res = await kubeRequest(creds, 'GET', path);
    if (res.status !== 200 || stopped) return;
    const byIp = new Map<string, string[]>();
    const live = new Map<string, Pod>();
    for (const pod of (res.body as PodList).items ?? []) {
      const name = pod.metadata?.name;
      const ip = pod.status?.podIP;
      if (!name || !ip || pod.metadata?.deletionTimestamp || pod.status?.phase !== 'Running') continue;
      byIp.set(ip, [...(byIp.get(ip) ?? []), name]);
      live.set(name, pod);
    }
    for (const [ip, pods] of byIp) {
      // Two live pods with one address cannot both be reached: serve neither, and say so.
      if (pods.length > 1) problem(`pods ${pods.sort().join(', ')} all have address ${ip}: the node simulator handed it out twice`);
    }
    for (const slot of slots.values()) {
      const pods = byIp.get(slot.ip);
      slot.want = pods?.length === 1 ? pods[0] : undefined;
    }
    for (const [ip, pods] of byIp) {
      if (pods.length !== 1 || slots.has(ip)) continue;
      slots.set(ip, { ip, want: pods[0], host: undefined, backend: undefined, work: undefined });
    }
    for (const slot of slots.values()) {
      const settled = slot.want === undefined ? !slot.host && !slot.backend : slot.backend?.pod === slot.want && slot.backend.child.exitCode === null;
      if (!settled) kick(slot);
    }
    // Readiness follows the backends (see the module comment).
    const listening = new Set(serving());
    for (const [name, pod] of live) {
      if (!gated(pod) || played(pod) === listening.has(name)) continue;
      const res = await setPlayed(name, listening.has(name));
      if (res.status !== 200) problem(`cannot set the readiness of pod ${name}: HTTP ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
    }
  };

  const setPlayed = (pod: string, ready: boolean): ReturnType<typeof kubeRequest> => {
    const now = new Date().toISOString();
    const status = ready ? 'True' : 'False';
    const conditions = [
      { type: PLAYED_CONDITION, status, lastTransitionTime: now, ...(ready ? {} : { reason: 'BackendNotListening' }) },
      { type: 'Ready', status, lastTransitionTime: now, ...(ready ? {} : { reason: 'ReadinessGatesNotReady' }) },
    ];
    return kubeRequest(creds, 'PATCH', `/api/v1/namespaces/${namespace}/pods/${pod}/status`, { status: { conditions } }, { contentType: 'application/strategic-merge-patch+json' });
  };

  const serving = (): string[] =>
    [...slots.values()]
      .filter((s) => s.backend?.listening && s.backend.pod === s.want)
      .map((s) => s.backend!.pod)
      .sort();

  let timer: NodeJS.Timeout | undefined;
  const loop = async (): Promise<void> => {
    try {
      await sync();
    } catch {
      // the API server may be restarting in a test; try again on the next tick
    }
    if (!stopped) timer = setTimeout(() => void loop(), pollMs);
  };
  await loop();

  return {
    serving,
    problems: () => [...problems],
    async stop() {
      if (stopped) return;
      stopped = true;
      if (timer) clearTimeout(timer);
      // Destroying a namespace ends the backends inside, which also ends a reconcile waiting for one.
      await Promise.all([...slots.values()].map((s) => s.host?.destroy()));
      await Promise.all([...slots.values()].map((s) => s.work));
      await Promise.all([...slots.values()].map((s) => clear(s)));
      slots.clear();
    },
  };
}
