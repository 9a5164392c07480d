/**
 * Plays the containers of simulated pods. On the local control plane kwok makes pods Running and
 * Ready with an IP from the pod range, and scripts/cluster/up.sh (as root) makes that range local to
 * this host. The player watches the pods of a namespace that match a label selector and, for each
 * pod with an IP, starts an Echo backend named after the pod on `<podIP>:<port>`; when the pod goes
 * away its backend stops. A client routed by the daemon to a pod's endpoint thus reaches a server
 * that answers with the pod's name.
 */
import { kubeRequest, type KubeconfigCredentials } from '../../test/support/cluster.js';
import { startBackend, type Backend } from './backend.js';

export interface PodPlayer {
  /** Names of the pods whose backend listens now. */
  serving(): string[];
  stop(): Promise<void>;
}

interface PodList {
  readonly items?: ReadonlyArray<{
    readonly metadata?: { readonly name?: string; readonly deletionTimestamp?: string };
    readonly status?: { readonly podIP?: string; readonly phase?: string };
  }>;
}

export async function playPods(
  creds: KubeconfigCredentials,
  namespace: string,
  labelSelector: string,
  port: number,
  pollMs = 200,
): Promise<PodPlayer> {
  const running = new Map<string, { readonly ip: string; readonly backend: Promise<Backend>; listening: boolean }>();
  let stopped = false;

  const sync = async (): Promise<void> => {
    const path = `/api/v1/namespaces/${namespace}/pods?labelSelector=${encodeURIComponent(labelSelector)}`;
    const res = await kubeRequest(creds, 'GET', path);
    if (res.status !== 200) return;
    const live = new Map<string, string>();
    for (const pod of (res.body as PodList).items ?? []) {
      const name = pod.metadata?.name;
      const ip = pod.status?.podIP;
      if (name && ip && !pod.metadata?.deletionTimestamp && pod.status?.phase === 'Running') live.set(name, ip);
    }
    for (const [name, entry] of running) {
      if (live.get(name) === entry.ip) continue;
      running.delete(name);
      void entry.backend.then((b) => b.stop()).catch(() => undefined);
    }
    for (const [name, ip] of live) {
      if (running.has(name)) continue;
      const entry = { ip, backend: startBackend(name, { host: ip, port }), listening: false };
      entry.backend.then(() => (entry.listening = true)).catch(() => running.delete(name));
      running.set(name, entry);
    }
  };

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
    serving: () => [...running].filter(([, e]) => e.listening).map(([name]) => name).sort(),
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      const all = [...running.values()];
      running.clear();
      await Promise.all(all.map((e) => e.backend.then((b) => b.stop()).catch(() => undefined)));
    },
  };
}
