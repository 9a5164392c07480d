/**
 * The controller runtime (docs/adr/0029): the reconcile contract, its runner on the work queue,
 * event sources, and leader gating. A controller of the project is written as
 *
 *   const controller = new Controller({
 *     name: 'gateway-api-status',
 *     reconciler: { reconcile: async (key, { signal }) => { ...; return again(5000) } },
 *     sources: [fromCache(gateways), every(60_000, () => keys())],
 *     syncErrors: metrics.controllerSyncErrors,
 *   });
 *   leadership.add(controller);   // leader only; or controller.start() / stop() on every replica
 */
export { again, done, isTerminal, TerminalError, type Outcome, type ReconcileContext, type Reconciler, type ReconcileFn } from './reconciler.js';
export { Controller, type ControllerOptions, type ControllerStats, type Duty, type SyncErrorCounter } from './controller.js';
export { every, fromCache, fromEvents, Trigger, type EventSource, type KeySink, type KeysOf } from './sources.js';
export { Leadership, type LeadershipOptions, type LeaseOptions } from './leadership.js';
export { BackoffRetryLimiter, type RetryLimiter, type RetryOptions } from './retry.js';
export { rfc3339, transitionTime } from './conditions.js';
export { WorkQueue, type WorkQueueOptions, type WorkQueueStats } from './workqueue.js';
