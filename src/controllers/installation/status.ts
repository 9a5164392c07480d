/**
 * The status the controller writes on a MeshOperator (status subresource, server-side apply by
 * the field manager `mesh-operator`): a phase (Reconciling, Healthy, Error), a message, the
 * generation it describes, per-component status, and two conditions with observedGeneration:
 *   - Reconciled: the spec was valid and every object of it was applied;
 *   - Ready: every component's workloads are ready.
 * A condition keeps its lastTransitionTime while its status stays the same, so writing the same
 * status again changes nothing on the server.
 */
import type { ComponentName } from '../../install/render/types.js';
import { transitionTime } from '../runtime/conditions.js';

export type Phase = 'Reconciling' | 'Healthy' | 'Error';

export interface Condition {
  readonly type: string;
  readonly status: 'True' | 'False' | 'Unknown';
  readonly reason: string;
  readonly message: string;
  readonly observedGeneration: number;
  readonly lastTransitionTime: string;
}

export interface ComponentStatus {
  readonly status: Phase;
  readonly error?: string;
  readonly objects?: number;
}

export interface OperatorStatus {
  readonly phase: Phase;
  readonly message?: string;
  readonly observedGeneration: number;
  readonly revision?: string;
  readonly profile?: string;
  readonly components?: Partial<Record<ComponentName, ComponentStatus>>;
  readonly conditions: readonly Condition[];
}

export interface StatusInput {
  readonly phase: Phase;
  readonly message?: string;
  readonly generation: number;
  readonly revision?: string;
  readonly profile?: string;
  readonly components?: Partial<Record<ComponentName, ComponentStatus>>;
  readonly reconciled: { readonly ok: boolean; readonly reason: string; readonly message: string };
  readonly ready: { readonly ok: boolean | 'unknown'; readonly reason: string; readonly message: string };
}

function condition(type: string, ok: boolean | 'unknown', reason: string, message: string, generation: number, previous: readonly Condition[] | undefined, now: Date): Condition {
  const status = ok === 'unknown' ? 'Unknown' : ok ? 'True' : 'False';
  const lastTransitionTime = transitionTime(previous?.find((c) => c.type === type), status, now);
  return { type, status, reason, message, observedGeneration: generation, lastTransitionTime };
}

/** The next status, keeping transition times of unchanged conditions from `previous`. */
export function buildStatus(input: StatusInput, previous: Partial<OperatorStatus> | undefined, now = new Date()): OperatorStatus {
  const conditions = [
    condition('Reconciled', input.reconciled.ok, input.reconciled.reason, input.reconciled.message, input.generation, previous?.conditions, now),
    condition('Ready', input.ready.ok, input.ready.reason, input.ready.message, input.generation, previous?.conditions, now),
  ];
  const out: { -readonly [K in keyof OperatorStatus]: OperatorStatus[K] } = { phase: input.phase, observedGeneration: input.generation, conditions };
  if (input.message) out.message = input.message;
  if (input.revision !== undefined) out.revision = input.revision;
  if (input.profile !== undefined) out.profile = input.profile;
  if (input.components && Object.keys(input.components).length > 0) out.components = input.components;
  return out;
}
