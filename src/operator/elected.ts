/**
 * One operator replica: it competes for the Lease `mesh-operator-lock[-R]` in the operator
 * namespace (src/kube/leader-election.ts) and runs a MeshOperatorController only while it leads,
 * so that two replicas never reconcile at once. Losing the lease stops the controller (running
 * reconciles see their signal aborted); leading again starts a fresh one. Without leader election
 * (a single local process) the controller simply runs.
 */
import { LeaderElector } from '../kube/leader-election.js';
import { MeshOperatorController, type MeshOperatorControllerOptions } from './controller.js';
import { silentLog } from './log.js';
import { leaseName, normalRevision } from './names.js';

export interface OperatorReplicaOptions extends MeshOperatorControllerOptions {
  readonly operatorNamespace: string;
  /** Unique per replica (the pod name in a cluster). */
  readonly identity: string;
  /** Default true. */
  readonly leaderElection?: boolean;
  readonly leaseDurationMs?: number;
  readonly renewDeadlineMs?: number;
  readonly retryPeriodMs?: number;
}

export class OperatorReplica {
  private elector: LeaderElector | undefined;
  private controller: MeshOperatorController | undefined;
  /** Settles when the controller of the last leadership term has stopped. */
  private stopping: Promise<void> = Promise.resolve();
  private leading = false;
  private terms = 0;

  constructor(private readonly opts: OperatorReplicaOptions) {}

  start(): void {
    if (this.opts.leaderElection === false) {
      void this.lead(new AbortController().signal);
      return;
    }
    if (this.elector) return;
    const log = this.opts.log ?? silentLog;
    this.elector = new LeaderElector({
      client: this.opts.client,
      namespace: this.opts.operatorNamespace,
      name: leaseName(normalRevision(this.opts.revision)),
      identity: this.opts.identity,
      leaseDurationMs: this.opts.leaseDurationMs,
      renewDeadlineMs: this.opts.renewDeadlineMs,
      retryPeriodMs: this.opts.retryPeriodMs,
      onStartedLeading: (signal) => this.lead(signal),
      onNewLeader: (id) => log.info('leader', { identity: id || '(none)', me: id === this.opts.identity }),
      onError: (err) => log.warn('leader election', { error: err.message }),
    });
    this.elector.start();
  }

  /** Stops competing (releasing the lease) and the controller. */
  async stop(): Promise<void> {
    await this.elector?.stop();
    this.elector = undefined;
    const c = this.controller;
    this.controller = undefined;
    this.leading = false;
    await c?.stop();
    await this.stopping;
  }

  isLeader(): boolean {
    return this.leading;
  }

  /** How many times this replica started leading. */
  leadershipTerms(): number {
    return this.terms;
  }

  /** The running controller (while leading). */
  current(): MeshOperatorController | undefined {
    return this.controller;
  }

  /** Ready: a standby replica is ready; a leader once its caches are synced. */
  ready(): boolean {
    return !this.leading || (this.controller?.hasSynced() ?? false);
  }

  private async lead(signal: AbortSignal): Promise<void> {
    await this.stopping;
    if (signal.aborted) return;
    const controller = new MeshOperatorController(this.opts);
    this.controller = controller;
    this.leading = true;
    this.terms++;
    signal.addEventListener(
      'abort',
      () => {
        this.leading = false;
        if (this.controller === controller) this.controller = undefined;
        this.stopping = controller.stop();
      },
      { once: true },
    );
    try {
      await controller.start({ signal });
    } catch (err) {
      if (!signal.aborted) throw err;
    }
  }
}
