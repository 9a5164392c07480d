/**
 * Leader gating, the one wrapper for meshd's singleton duties and the operator's controller:
 * duties (a Controller, or any `{ name, run(signal) }`) run only while this process leads.
 *
 * With a `lease`, every replica competes for that coordination.k8s.io Lease
 * (src/kube/leader-election.ts; meshd: `meshd-leader[-<revision>]` in POD_NAMESPACE, the operator:
 * `mesh-operator-lock[-<revision>]` in its namespace). Without one (`--leaderElect=false`, a single
 * local process) this process leads from `start()` to `stop()`.
 *
 * While leading, every duty runs with a signal that aborts when leadership ends; a duty added
 * meanwhile starts at once. A duty whose `run` settles before its signal aborts has failed: it is
 * started again after a backoff (1 s doubling to 60 s) while leadership lasts. `stop()` first stops
 * the duties and waits for them (at most `stopTimeoutMs`), then releases the lease, so that two
 * replicas never run a duty at once on a clean hand-over and the next takes over without waiting
 * for the lease to expire.
 */
import type { Logger } from 'pino';
import { Backoff, sleep } from '../../kube/backoff.js';
import { LeaderElector, type LeaseParams } from '../../kube/leader-election.js';
import type { Duty } from './controller.js';

export type { Duty };

/** The Lease a Leadership competes for (identity: unique per replica, the pod name in a cluster). */
export type LeaseOptions = LeaseParams;

export interface LeadershipOptions {
  /** The Lease to compete for; absent: lead from start to stop. */
  readonly lease?: LeaseOptions;
  /** This replica's identity when there is no lease (for logs). */
  readonly identity?: string;
  /** First restart delay of a failed duty (default 1 s, doubling to 60 s). */
  readonly dutyRestartMs?: number;
  /** How long `stop()` waits for duties to end (default 10 s). */
  readonly stopTimeoutMs?: number;
  readonly log?: Logger;
}

interface Entry {
  readonly duty: Duty;
  /** The running instance (while leading). */
  instance?: { readonly abort: AbortController; readonly done: Promise<void> };
}

export class Leadership {
  private readonly duties = new Map<string, Entry>();
  private readonly elector: LeaderElector | undefined;
  /** Ends the term of a process without a lease. */
  private term: AbortController | undefined;
  private leading: AbortSignal | undefined;
  private started = false;
  private terms = 0;

  constructor(private readonly opts: LeadershipOptions = {}) {
    const lease = opts.lease;
    if (!lease) return;
    if (!lease.identity) throw new Error('leadership: identity is required');
    if (!lease.namespace) throw new Error('leadership: lease namespace is required');
    const log = opts.log;
    this.elector = new LeaderElector({
      client: lease.client,
      namespace: lease.namespace,
      name: lease.name,
      identity: lease.identity,
      leaseDurationMs: lease.leaseDurationMs,
      renewDeadlineMs: lease.renewDeadlineMs,
      retryPeriodMs: lease.retryPeriodMs,
      onStartedLeading: (signal) => this.onStartedLeading(signal),
      onStoppedLeading: () => log?.info({ lease: lease.name, identity: lease.identity }, 'leadership: stopped leading'),
      onNewLeader: (holder) => log?.info({ lease: lease.name, leader: holder || '(none)', me: holder === lease.identity }, 'leadership: leader changed'),
      onError: (err) => log?.warn({ lease: lease.name, err: err.message }, 'leadership: lease request failed; retrying'),
    });
  }

  get identity(): string {
    return this.opts.lease?.identity ?? this.opts.identity ?? '';
  }

  /** The Lease competed for ('' without one). */
  get leaseName(): string {
    return this.opts.lease?.name ?? '';
  }

  /**
   * Registers a duty. It starts at once when this replica leads, else when it becomes leader.
   * Returns a function that stops and removes it.
   */
  add(duty: Duty): () => Promise<void> {
    if (this.duties.has(duty.name)) throw new Error(`leadership: duty "${duty.name}" is already registered`);
    const entry: Entry = { duty };
    this.duties.set(duty.name, entry);
    if (this.leading && !this.leading.aborted) this.startDuty(entry, this.leading);
    return async () => {
      if (this.duties.get(duty.name) !== entry) return;
      this.duties.delete(duty.name);
      await this.stopDuty(entry);
    };
  }

  /** Starts competing for the lease (or, without one, leading). */
  start(): void {
    if (this.started) return;
    this.started = true;
    if (this.elector) {
      this.elector.start();
      return;
    }
    this.term = new AbortController();
    this.onStartedLeading(this.term.signal);
  }

  /** Stops every duty (waiting for them), then releases the lease. */
  async stop(): Promise<void> {
    if (!this.started) return;
    this.started = false;
    this.leading = undefined;
    await Promise.all([...this.duties.values()].map((d) => this.stopDuty(d)));
    this.term?.abort();
    this.term = undefined;
    await this.elector?.stop();
  }

  isLeader(): boolean {
    return this.elector ? this.elector.isLeader() : this.term !== undefined && !this.term.signal.aborted;
  }

  /** The identity last seen holding the lease ('' when none; this replica's without a lease). */
  leader(): string {
    return this.elector ? this.elector.leader() : this.isLeader() ? this.identity : '';
  }

  /** How many times this replica started leading. */
  leadershipTerms(): number {
    return this.terms;
  }

  /** Names of the duties running now, sorted. */
  runningDuties(): string[] {
    return [...this.duties.values()].filter((d) => d.instance).map((d) => d.duty.name).sort();
  }

  private onStartedLeading(signal: AbortSignal): void {
    if (!this.started) return;
    this.terms++;
    this.leading = signal;
    this.opts.log?.info({ lease: this.leaseName || undefined, identity: this.identity, duties: [...this.duties.keys()] }, 'leadership: leading; starting duties');
    for (const entry of this.duties.values()) this.startDuty(entry, signal);
    signal.addEventListener(
      'abort',
      () => {
        if (this.leading === signal) this.leading = undefined;
      },
      { once: true },
    );
  }

  private startDuty(entry: Entry, leading: AbortSignal): void {
    if (entry.instance) return;
    const abort = new AbortController();
    const onLost = (): void => abort.abort();
    leading.addEventListener('abort', onLost, { once: true });
    const done = this.supervise(entry.duty, abort.signal).finally(() => {
      leading.removeEventListener('abort', onLost);
      if (entry.instance?.abort === abort) entry.instance = undefined;
    });
    entry.instance = { abort, done };
  }

  /** Runs a duty until its signal aborts, restarting it with backoff when it ends early. */
  private async supervise(duty: Duty, signal: AbortSignal): Promise<void> {
    const backoff = new Backoff({ initialMs: this.opts.dutyRestartMs ?? 1000, maxMs: 60_000 });
    while (!signal.aborted) {
      const started = Date.now();
      try {
        await duty.run(signal);
        if (signal.aborted) return;
        this.opts.log?.warn({ duty: duty.name }, 'leadership: duty ended while leading; restarting it');
      } catch (err) {
        if (signal.aborted) return;
        this.opts.log?.error({ duty: duty.name, err: err instanceof Error ? err.stack : String(err) }, 'leadership: duty failed; restarting it');
      }
      if (Date.now() - started > 60_000) backoff.reset();
      await sleep(backoff.next(), signal);
    }
  }

  private async stopDuty(entry: Entry): Promise<void> {
    const instance = entry.instance;
    if (!instance) return;
    instance.abort.abort();
    const timeoutMs = this.opts.stopTimeoutMs ?? 10_000;
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), timeoutMs);
    });
    const result = await Promise.race([instance.done.then(() => 'done' as const), timedOut]);
    clearTimeout(timer);
    if (result === 'timeout') this.opts.log?.warn({ duty: entry.duty.name, timeoutMs }, 'leadership: duty did not stop in time');
  }
}
