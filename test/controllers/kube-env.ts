/**
 * Shared setup of the status and controller tests: the local control plane with the mesh CRDs, a
 * namespace per test file, a config store fed from the cluster by the daemon's own CRD source, and
 * a gentle poll for API state.
 */
import { KINDS } from '../../src/config/kinds.js';
import { KubeConfigSource } from '../../src/config/kube-source.js';
import { MemoryConfigStore } from '../../src/config/store.js';
import type { KubeClient } from '../../src/kube/client.js';
import type { KubeObject } from '../../src/kube/types.js';
import { applyMeshCrds, createNamespace, kubeTestEnv, type KubeTestEnv } from '../kube/helpers.js';

export const API_VERSION = 'networking.mesh.io/v1';

export interface MeshTestEnv extends KubeTestEnv {
  readonly namespace: string;
}

/** The cluster with the CRDs applied and a fresh namespace named `<prefix>-xxxxxx`. */
export async function meshTestEnv(prefix: string): Promise<MeshTestEnv> {
  const env = await kubeTestEnv();
  await applyMeshCrds(env.client);
  const namespace = await createNamespace(env.client, prefix);
  return { ...env, namespace };
}

/** A store fed by the daemon's Kubernetes config source, watching one namespace; synced. */
export async function watchedStore(client: KubeClient, namespace: string): Promise<{ store: MemoryConfigStore; source: KubeConfigSource }> {
  const store = new MemoryConfigStore();
  const source = new KubeConfigSource({
    client,
    store,
    namespaces: [namespace],
    kinds: [KINDS.VirtualService, KINDS.DestinationRule, KINDS.ServiceEntry, KINDS.Gateway],
    onReject: (r) => console.warn(`test store: rejected ${r.kind} ${r.namespace}/${r.name}: ${JSON.stringify(r.issues)}`),
  });
  await source.start({ timeoutMs: 60_000 });
  return { store, source };
}

/** Polls `probe` (every 150 ms) until it returns something truthy; the error names `what` and the last value seen. */
export async function eventually<T>(what: string, probe: () => Promise<T | undefined | false> | T | undefined | false, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value) return value;
      last = value;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what} (last: ${last instanceof Error ? last.message : JSON.stringify(last)})`);
    await new Promise((r) => setTimeout(r, 150));
  }
}

export interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  observedGeneration?: number;
  lastTransitionTime?: string;
}

export interface StatusObject extends KubeObject {
  spec?: Record<string, unknown>;
  status?: {
    observedGeneration?: number;
    conditions?: Condition[];
    validationMessages?: Array<{ code: string; level: string; message: string; path?: string }>;
  };
}

export function condition(o: StatusObject | undefined, type: string): Condition | undefined {
  return o?.status?.conditions?.find((c) => c.type === type);
}
