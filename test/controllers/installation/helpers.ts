/**
 * Helpers of the operator tests: an in-process MeshOperatorController (or leader-elected replica)
 * against the local control plane, MeshOperator resources, waiting on their status, and checking
 * that a live object holds every field a rendered object sets.
 */
import { randomBytes } from 'node:crypto';
import { INSTALL_API_VERSION, MESH_OPERATOR_KIND } from '../../../src/install/api.js';
import { ensureMeshOperatorCrd } from '../../../src/install/apply/operator-crd.js';
import type { KubeClient } from '../../../src/kube/client.js';
import { isNotFound } from '../../../src/kube/errors.js';
import { MeshOperatorController, loadSpecSources, type MeshOperatorResource, type SpecSources } from '../../../src/controllers/installation/mesh-operator.js';
import { createOperatorMetrics, type OperatorMetrics } from '../../../src/controllers/installation/metrics.js';
import { OPERATOR_FINALIZER } from '../../../src/install/operator-names.js';
import { until } from '../../kube/helpers.js';

export const hex = (n = 3): string => randomBytes(n).toString('hex');

let sources: Promise<SpecSources> | undefined;
export function specSources(): Promise<SpecSources> {
  return (sources ??= loadSpecSources());
}

export async function ensureCrd(client: KubeClient): Promise<void> {
  await ensureMeshOperatorCrd(client, { name: 'mesh-tests', namespace: 'default' }, '', { fieldManager: 'mesh-tests', timeoutMs: 60_000 });
}

export interface TestController {
  readonly controller: MeshOperatorController;
  readonly metrics: OperatorMetrics;
  /** Stops the controller (the end of its duty). */
  stop(): Promise<void>;
}

export async function startController(client: KubeClient, watched: string[], revision: string): Promise<TestController> {
  const metrics = createOperatorMetrics();
  const controller = new MeshOperatorController({
    client,
    metrics,
    sources: await specSources(),
    watchedNamespaces: watched,
    revision,
    defaultTag: 'test',
    requeueDelayMs: 300,
    resyncMs: 0,
    retryBaseDelayMs: 200,
  });
  // Run as the operator runs it while leading: a duty until the signal aborts.
  const abort = new AbortController();
  const done = controller.run(abort.signal);
  await until('the controller to sync', () => controller.hasSynced(), 30_000);
  return {
    controller,
    metrics,
    stop: async () => {
      abort.abort();
      await done;
    },
  };
}

export function meshOperator(namespace: string, name: string, spec: Record<string, unknown>): MeshOperatorResource & { spec: Record<string, unknown> } {
  return { apiVersion: INSTALL_API_VERSION, kind: MESH_OPERATOR_KIND, metadata: { name, namespace }, spec };
}

export async function applyCr(client: KubeClient, cr: MeshOperatorResource): Promise<MeshOperatorResource> {
  return client.applyObject(cr, { fieldManager: 'mesh-tests', force: true });
}

export function getCr(client: KubeClient, namespace: string, name: string): Promise<MeshOperatorResource | undefined> {
  return client.find<MeshOperatorResource>({ apiVersion: INSTALL_API_VERSION, kind: MESH_OPERATOR_KIND, namespace, name });
}

/** Waits until the resource's status says `phase` for its current generation. */
export async function waitForPhase(client: KubeClient, namespace: string, name: string, phase: string, timeoutMs = 60_000): Promise<MeshOperatorResource> {
  let last: MeshOperatorResource | undefined;
  try {
    return await until(
      `MeshOperator ${namespace}/${name} to be ${phase}`,
      async () => {
        last = await getCr(client, namespace, name);
        return last?.status?.phase === phase && last.status.observedGeneration === last.metadata?.generation ? last : undefined;
      },
      timeoutMs,
    );
  } catch (err) {
    throw new Error(`${(err as Error).message}; last status: ${JSON.stringify(last?.status)}`, { cause: err });
  }
}

/** Deletes resources and, if nobody processes their finalizer, takes it off. */
export async function removeCr(client: KubeClient, namespace: string, name: string): Promise<void> {
  const ref = { apiVersion: INSTALL_API_VERSION, kind: MESH_OPERATOR_KIND, namespace, name };
  await client.delete(ref).catch(() => undefined);
  const cr = await getCr(client, namespace, name).catch(() => undefined);
  if (cr?.metadata?.finalizers?.includes(OPERATOR_FINALIZER)) {
    await client.mergePatch(ref, { metadata: { finalizers: null } }).catch((err: unknown) => {
      if (!isNotFound(err)) throw err;
    });
  }
}

const QUANTITY = /^(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E)?$/;
const FACTOR: Record<string, number> = { '': 1, m: 1e-3, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18, Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60 };

/** The value of a Kubernetes quantity (`2048Mi` and `2Gi` are the same), or undefined. */
function quantity(v: unknown): number | undefined {
  const m = typeof v === 'string' ? QUANTITY.exec(v) : typeof v === 'number' ? [String(v), String(v), ''] : null;
  return m ? Number(m[1]) * FACTOR[m[2] ?? ''] : undefined;
}

/**
 * The paths of `want` whose value `live` does not hold (maps: every key; lists: same length,
 * element by element). As the API server stores them: an empty string may be left out, and a
 * quantity under `resources` may be written in another unit.
 */
export function missingFields(want: unknown, live: unknown, path = ''): string[] {
  if (want === '' && live === undefined) return [];
  if (/resources\.(requests|limits)\./.test(path) && quantity(want) !== undefined && quantity(want) === quantity(live)) return [];
  if (Array.isArray(want)) {
    if (!Array.isArray(live) || live.length !== want.length) return [`${path}: want ${JSON.stringify(want)}, live ${JSON.stringify(live)}`];
    return want.flatMap((w, i) => missingFields(w, live[i], `${path}[${i}]`));
  }
  if (typeof want === 'object' && want !== null) {
    if (typeof live !== 'object' || live === null) return [`${path}: want a map, live ${JSON.stringify(live)}`];
    return Object.entries(want).flatMap(([k, v]) => missingFields(v, (live as Record<string, unknown>)[k], path ? `${path}.${k}` : k));
  }
  return want === live ? [] : [`${path}: want ${JSON.stringify(want)}, live ${JSON.stringify(live)}`];
}

/** A Prometheus sample value of the controller's registry (0 when absent). */
export async function metricValue(metrics: OperatorMetrics, name: string, labels: Record<string, string> = {}): Promise<number> {
  const all = await metrics.registry.getMetricsAsJSON();
  const m = all.find((x) => x.name === name);
  const values = (m?.values ?? []) as Array<{ value: number; labels: Record<string, string | number> }>;
  return values.filter((v) => Object.entries(labels).every(([k, val]) => String(v.labels[k]) === val)).reduce((n, v) => n + v.value, 0);
}
