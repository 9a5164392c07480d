/**
 * The daemon's singleton duties under Lease-based leader election (src/kube/leader-election.ts).
 *
 * Every daemon of a revision competes for the Lease `meshd-leader` (`meshd-leader-<revision>` for a
 * named revision) in the daemon namespace, with its pod name as identity. The daemon that holds
 * the lease runs every registered duty (`status`, `wle-cleanup`, later `webhook-patch`), each with
 * an AbortSignal that aborts when leadership ends; the others run none. A duty's `run` resolves
 * once the duty has stopped; settling before its signal aborts counts as a failure and the duty is
 * started again after a backoff (the daemon keeps leading). `stop()` first stops the duties and
 * waits for them, then releases the lease so another daemon takes over at once.
 */
import type { Logger } from 'pino';
import { Backoff, sleep } from '../kube/backoff.js';
import type { KubeClient } from '../kube/client.js';
import { LeaderElector } from '../kube/leader-election.js';

/** Duty names in use; others are allowed. */
export type DutyName = 'status' | 'wle-cleanup' | 'webhook-patch' | (string & {});

export type DutyRun = (signal: AbortSignal) => Promise<void> | void;

export interface LeadershipOptions {
  readonly client: KubeClient;
  /** The daemon namespace (POD_NAMESPACE). */
  readonly namespace: string;
  /** The pod name (POD_NAME); must differ between daemons. */
  readonly identity: string;
  /** REVISION: daemons of different revisions elect separately. */
  readonly revision?: string;
  /** Lease name (default from the revision, see `leaseName`). */
  readonly leaseName?: string;
  readonly leaseDurationMs?: number;
  readonly renewDeadlineMs?: number;
  readonly retryPeriodMs?: number;
  /** First restart delay of a failed duty (default 1 s, doubling to 60 s). */
  readonly dutyRestartMs?: number;
  /** How long `stop()` waits for duties to end (default 10 s). */
  readonly stopTimeoutMs?: number;
  readonly log?: Logger;
}

/** `meshd-leader`, or `meshd-leader-<revision>` for a named revision other than `default`. */
export function leaseName(revision: string | undefined): string {
  return revision && revision !== 'default' ? `meshd-leader-${revision}` : 'meshd-leader';
}

interface Duty {
  readonly name: string;
  readonly run: DutyRun;
  /** The running instance (while leading). */
  instance?: { readonly abort: AbortController; readonly done: Promise<void> };
}

export class Leadership {
  readonly leaseName: string;
  private readonly duties = new Map<string, Duty>();
  private readonly elector: LeaderElector;
  private leading: AbortSignal | undefined;
  private started = false;

  constructor(private readonly opts: LeadershipOptions) {
    if (!opts.identity) throw new Error('leadership: identity (POD_NAME) is required');
    if (!opts.namespace) throw new Error('leadership: namespace (POD_NAMESPACE) is required');
    this.leaseName = opts.leaseName ?? leaseName(opts.revision);
    this.elector = new LeaderElector({
      client: opts.client,
      namespace: opts.namespace,
      name: this.leaseName,
      identity: opts.identity,
      leaseDurationMs: opts.leaseDurationMs,
      renewDeadlineMs: opts.renewDeadlineMs,
      retryPeriodMs: opts.retryPeriodMs,
      onStartedLeading: (signal) => this.onStartedLeading(signal),
      onStoppedLeading: () => this.opts.log?.info({ lease: this.leaseName, identity: opts.identity }, 'leadership: stopped leading'),
      onNewLeader: (holder) => this.opts.log?.info({ lease: this.leaseName, leader: holder || '(none)' }, 'leadership: leader changed'),
      onError: (err) => this.opts.log?.warn({ lease: this.leaseName, err: err.message }, 'leadership: lease request failed; retrying'),
    });
  }

  get identity(): string {
    return this.opts.identity;
  }

  /**
   * Registers a duty. It starts at once when this daemon leads, else when it becomes leader.
   * Returns a function that stops and removes it.
   */
  addDuty(name: DutyName, run: DutyRun): () => Promise<void> {
    if (this.duties.has(name)) throw new Error(`leadership: duty "${name}" is already registered`);
    const duty: Duty = { name, run };
    this.duties.set(name, duty);
    if (this.leading && !this.leading.aborted) this.startDuty(duty, this.leading);
    return async () => {
      if (this.duties.get(name) !== duty) return;
      this.duties.delete(name);
      await this.stopDuty(duty);
    };
  }

  /** Starts competing for the lease. */
  start(): void {
    if (this.started) return;
    this.started = true;
    this.elector.start();
  }

  /** Stops every duty (waiting for them), then releases the lease. */
  async stop(): Promise<void> {
    if (!this.started) return;
    this.started = false;
    this.leading = undefined;
    await Promise.all([...this.duties.values()].map((d) => this.stopDuty(d)));
    await this.elector.stop();
  }

  isLeader(): boolean {
    return this.elector.isLeader();
  }

  /** The identity last seen holding the lease ('' when none). */
  leader(): string {
    return this.elector.leader();
  }

  /** Names of the duties running now. */
  runningDuties(): string[] {
    return [...this.duties.values()].filter((d) => d.instance).map((d) => d.name).sort();
  }

  private onStartedLeading(signal: AbortSignal): void {
    if (!this.started) return;
    this.leading = signal;
    this.opts.log?.info({ lease: this.leaseName, identity: this.opts.identity, duties: [...this.duties.keys()] }, 'leadership: leading; starting duties');
    for (const duty of this.duties.values()) this.startDuty(duty, signal);
    signal.addEventListener(
      'abort',
      () => {
        if (this.leading === signal) this.leading = undefined;
      },
      { once: true },
    );
  }

  private startDuty(duty: Duty, leading: AbortSignal): void {
    if (duty.instance) return;
    const abort = new AbortController();
    const onLost = (): void => abort.abort();
    leading.addEventListener('abort', onLost, { once: true });
    const done = this.supervise(duty, abort.signal).finally(() => {
      leading.removeEventListener('abort', onLost);
      if (duty.instance?.abort === abort) duty.instance = undefined;
    });
    duty.instance = { abort, done };
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

  private async stopDuty(duty: Duty): Promise<void> {
    const instance = duty.instance;
    if (!instance) return;
    instance.abort.abort();
    const timeoutMs = this.opts.stopTimeoutMs ?? 10_000;
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), timeoutMs);
    });
    const result = await Promise.race([instance.done.then(() => 'done' as const), timedOut]);
    clearTimeout(timer);
    if (result === 'timeout') this.opts.log?.warn({ duty: duty.name, timeoutMs }, 'leadership: duty did not stop in time');
  }
}
