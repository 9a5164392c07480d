/**
 * When an installed object counts as ready, and waiting until a set of them is.
 *
 *  - CustomResourceDefinition: condition Established is True.
 *  - Deployment: the controller has seen the current generation, every wanted replica runs the
 *    current template (updated), no old replica is left, and every wanted replica is available.
 *  - Namespace: phase Active (not Terminating).
 *  - Anything else (Service, ConfigMap, RBAC, webhook configurations, ...): it exists.
 *
 * `objectReadiness` is a pure function of the live object; `waitForReady` polls the API server
 * for the objects not yet ready, with a short interval growing to one second, until all are ready
 * or the timeout passes.
 */
import type { KubeClient, ObjectRef } from '../../kube/client.js';
import { isAbortError } from '../../kube/errors.js';
import { displayName } from './objects.js';

export interface Readiness {
  readonly ready: boolean;
  /** Why it is not ready (empty when ready). */
  readonly reason: string;
}

type Live = Record<string, unknown> & { metadata?: Record<string, unknown> };

const READY: Readiness = { ready: true, reason: '' };
const notReady = (reason: string): Readiness => ({ ready: false, reason });

function num(v: unknown, fallback = 0): number {
  return typeof v === 'number' && Number.isFinite(v) ? v : fallback;
}

function obj(v: unknown): Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}

function conditions(status: Record<string, unknown>): Array<Record<string, unknown>> {
  return Array.isArray(status.conditions) ? (status.conditions as unknown[]).map(obj) : [];
}

function deploymentReadiness(live: Live): Readiness {
  const spec = obj(live.spec);
  const status = obj(live.status);
  const generation = num(obj(live.metadata).generation);
  const observed = num(status.observedGeneration, -1);
  if (observed < generation) return notReady('the rollout has not been observed by the controller yet');
  const progressing = conditions(status).find((c) => c.type === 'Progressing');
  if (progressing?.reason === 'ProgressDeadlineExceeded') return notReady(`rollout stuck: ${String(progressing.message ?? 'progress deadline exceeded')}`);
  const wanted = num(spec.replicas, 1);
  const updated = num(status.updatedReplicas);
  const total = num(status.replicas);
  const available = num(status.availableReplicas);
  if (updated < wanted) return notReady(`${updated}/${wanted} replicas updated`);
  if (total > updated) return notReady(`${total - updated} old replicas pending termination`);
  if (available < wanted) return notReady(`${available}/${wanted} replicas available`);
  return READY;
}

function crdReadiness(live: Live): Readiness {
  const established = conditions(obj(live.status)).find((c) => c.type === 'Established');
  if (established?.status === 'True') return READY;
  const names = conditions(obj(live.status)).find((c) => c.type === 'NamesAccepted');
  if (names?.status === 'False') return notReady(`names not accepted: ${String(names.message ?? '')}`);
  return notReady('not established yet');
}

/** Readiness of `live` (undefined: the object does not exist). */
export function objectReadiness(kind: string, live: Live | undefined): Readiness {
  if (!live) return notReady('not found');
  if (obj(live.metadata).deletionTimestamp) return notReady('being deleted');
  switch (kind) {
    case 'Deployment':
      return deploymentReadiness(live);
    case 'CustomResourceDefinition':
      return crdReadiness(live);
    case 'Namespace': {
      const phase = obj(live.status).phase;
      return phase === undefined || phase === 'Active' ? READY : notReady(`phase ${String(phase)}`);
    }
    default:
      return READY;
  }
}

/** Reads one object and judges it. API errors other than "not found" become the reason. */
export async function checkObject(client: KubeClient, ref: ObjectRef, signal?: AbortSignal): Promise<Readiness> {
  try {
    return objectReadiness(ref.kind, await client.find<Live>(ref, signal));
  } catch (err) {
    if (isAbortError(err)) throw err;
    return notReady(`cannot read: ${(err as Error).message}`);
  }
}

export interface WaitOptions {
  /** 0: check once, do not wait. */
  readonly timeoutMs: number;
  readonly signal?: AbortSignal;
  /** Called when the set of objects not yet ready changes (names with reasons). */
  readonly onWaiting?: (notReady: readonly string[]) => void;
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason instanceof Error ? signal.reason : Object.assign(new Error('aborted'), { name: 'AbortError' }));
      return;
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason instanceof Error ? signal.reason : Object.assign(new Error('aborted'), { name: 'AbortError' }));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

export { sleep };

/**
 * Waits until every object of `refs` is ready or `timeoutMs` passes. Returns the objects still
 * not ready, as `<name>: <reason>` (empty when all are ready).
 */
export async function waitForReady(client: KubeClient, refs: readonly ObjectRef[], opts: WaitOptions): Promise<string[]> {
  const deadline = performance.now() + opts.timeoutMs;
  let pending = [...refs];
  let reasons = new Map<ObjectRef, string>();
  let last = '';
  let interval = 200;
  for (;;) {
    const checks = await Promise.all(pending.map(async (ref) => [ref, await checkObject(client, ref, opts.signal)] as const));
    pending = checks.filter(([, r]) => !r.ready).map(([ref]) => ref);
    reasons = new Map(checks.filter(([, r]) => !r.ready).map(([ref, r]) => [ref, r.reason]));
    const lines = pending.map((ref) => `${displayName(ref)}: ${reasons.get(ref) ?? ''}`);
    if (pending.length === 0) return [];
    const remaining = deadline - performance.now();
    if (remaining <= 0) return lines;
    const key = lines.join('\n');
    if (key !== last) opts.onWaiting?.(lines);
    last = key;
    await sleep(Math.min(interval, remaining), opts.signal);
    interval = Math.min(interval * 2, 1000);
  }
}
