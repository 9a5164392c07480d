/**
 * The status the daemon writes into mesh config objects, as plain data, and the pure rules for
 * building and comparing it (docs/adr/0015-status-leadership-and-auto-registration.md):
 *
 *   status:
 *     observedGeneration: <metadata.generation the daemon acted on>
 *     conditions:
 *     - type: Reconciled
 *       status: "True" | "False"
 *       reason: Accepted | Distributed | Distributing
 *       message: "generation 3 accepted" | "4/5 proxies up to date"
 *       observedGeneration: 3
 *       lastTransitionTime: <when status last flipped>
 *     validationMessages:            # only with DISC_ENABLE_ANALYSIS and only when non-empty
 *     - {code: MESH0103, level: ERROR, message: ..., path: spec.http[0].route[0].destination.subset}
 */
import type { AnalysisMessage } from '../../analysis/types.js';
import { transitionTime } from '../runtime/conditions.js';

export const RECONCILED = 'Reconciled';

export interface Condition {
  readonly type: string;
  readonly status: 'True' | 'False' | 'Unknown';
  readonly reason?: string;
  readonly message?: string;
  readonly observedGeneration?: number;
  readonly lastTransitionTime?: string;
}

/** The part of `status` the status controller owns. */
export interface ConfigStatus {
  readonly observedGeneration: number;
  readonly conditions: ReadonlyArray<Condition>;
  readonly validationMessages?: ReadonlyArray<AnalysisMessage>;
}

/** Distribution of one object's generation: how many of the connected proxies hold it. */
export interface DistributionState {
  readonly upToDate: number;
  readonly proxies: number;
}

/**
 * The status for `generation`: `Reconciled` True/Accepted without distribution tracking; with it,
 * True/Distributed once every connected proxy holds the generation (also when none is connected),
 * False/Distributing before. `lastTransitionTime` is left out (see `withTransitionTime`).
 */
export function desiredStatus(generation: number, messages: ReadonlyArray<AnalysisMessage>, distribution?: DistributionState): ConfigStatus {
  let condition: Condition;
  if (!distribution) {
    condition = { type: RECONCILED, status: 'True', reason: 'Accepted', message: `generation ${generation} accepted by the control plane`, observedGeneration: generation };
  } else {
    const done = distribution.upToDate >= distribution.proxies;
    condition = {
      type: RECONCILED,
      status: done ? 'True' : 'False',
      reason: done ? 'Distributed' : 'Distributing',
      message: distributionMessage(distribution),
      observedGeneration: generation,
    };
  }
  return {
    observedGeneration: generation,
    conditions: [condition],
    ...(messages.length > 0 ? { validationMessages: messages.map(normalizeMessage) } : {}),
  };
}

export function distributionMessage(d: DistributionState): string {
  return `${Math.min(d.upToDate, d.proxies)}/${d.proxies} proxies up to date`;
}

function normalizeMessage(m: AnalysisMessage): AnalysisMessage {
  return { code: m.code, level: m.level, message: m.message, ...(m.path ? { path: m.path } : {}) };
}

interface RawStatus {
  readonly observedGeneration?: unknown;
  readonly conditions?: unknown;
  readonly validationMessages?: unknown;
}

function conditionOf(raw: RawStatus | undefined, type: string): Condition | undefined {
  if (!raw || !Array.isArray(raw.conditions)) return undefined;
  return (raw.conditions as Condition[]).find((c) => typeof c === 'object' && c !== null && c.type === type);
}

function messagesOf(raw: RawStatus | undefined): AnalysisMessage[] {
  if (!raw || !Array.isArray(raw.validationMessages)) return [];
  return (raw.validationMessages as AnalysisMessage[]).map(normalizeMessage);
}

/** True when the object's current status already says what `desired` says (times aside). */
export function statusMatches(current: unknown, desired: ConfigStatus): boolean {
  const raw = typeof current === 'object' && current !== null ? (current as RawStatus) : undefined;
  if (raw?.observedGeneration !== desired.observedGeneration) return false;
  for (const want of desired.conditions) {
    const have = conditionOf(raw, want.type);
    if (!have) return false;
    if (have.status !== want.status || have.reason !== want.reason || have.message !== want.message || have.observedGeneration !== want.observedGeneration) return false;
  }
  return JSON.stringify(messagesOf(raw)) === JSON.stringify(desired.validationMessages ?? []);
}

/**
 * `desired` with each condition's lastTransitionTime: kept from the current status when the
 * condition's status is unchanged, `now` otherwise.
 */
export function withTransitionTime(current: unknown, desired: ConfigStatus, now: Date): ConfigStatus {
  const raw = typeof current === 'object' && current !== null ? (current as RawStatus) : undefined;
  return {
    ...desired,
    conditions: desired.conditions.map((c) => {
      return { ...c, lastTransitionTime: transitionTime(conditionOf(raw, c.type), c.status, now) };
    }),
  };
}

/** A comparable fingerprint of a desired status (times are never part of it). */
export function statusDigest(s: ConfigStatus): string {
  return JSON.stringify([s.observedGeneration, s.conditions.map((c) => [c.type, c.status, c.reason, c.message, c.observedGeneration]), s.validationMessages ?? []]);
}
