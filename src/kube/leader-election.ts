/**
 * Leader election on a coordination.k8s.io/v1 Lease: of all electors sharing a lease name, one
 * leads at a time.
 *
 * An elector reads the lease every `retryPeriodMs`. It takes the lease when nobody holds it, when
 * the holder released it, or when the holder has not renewed it for `leaseDurationMs` as measured
 * on the elector's own clock since it last saw the record change (so clock skew between machines
 * does not matter). Writes are conditional on the lease's resourceVersion, so two electors never
 * both win a race. The leader renews every `retryPeriodMs`; if it cannot renew for
 * `renewDeadlineMs` it stops leading (the signal given to `onStartedLeading` aborts) and competes
 * again. `stop()` releases the lease, so another elector takes over without waiting for expiry.
 */
import { sleep } from './backoff.js';
import type { KubeClient } from './client.js';
import { isAlreadyExists, isConflict, isNotFound } from './errors.js';
import { getLogger } from '../log/logger.js';

/** Which Lease, who competes for it, and the timings. */
export interface LeaseParams {
  readonly client: KubeClient;
  readonly namespace: string;
  /** Lease name. */
  readonly name: string;
  /** Unique per elector (e.g. the pod name). */
  readonly identity: string;
  /** How long a lease stays valid without renewal (default 15 s). */
  readonly leaseDurationMs?: number;
  /** How long the leader keeps trying to renew before it gives up leading (default 10 s). */
  readonly renewDeadlineMs?: number;
  /** Time between tries (default 2 s). */
  readonly retryPeriodMs?: number;
}

export interface LeaderElectionOptions extends LeaseParams {
  /** Release the lease on `stop()` (default true). */
  readonly releaseOnStop?: boolean;
  /** Called when this elector becomes leader; `signal` aborts when it stops leading. */
  readonly onStartedLeading: (signal: AbortSignal) => void | Promise<void>;
  /** Called when this elector stops leading (lost the lease, or `stop()`). */
  readonly onStoppedLeading?: () => void;
  /** Called when the observed holder changes ('' when nobody holds the lease). */
  readonly onNewLeader?: (identity: string) => void;
  /** API errors while reading or writing the lease (they are retried). */
  readonly onError?: (error: Error) => void;
}

interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
}

interface Lease {
  apiVersion: 'coordination.k8s.io/v1';
  kind: 'Lease';
  metadata: { name: string; namespace: string; resourceVersion?: string };
  spec?: LeaseSpec;
}

/** RFC 3339 with microseconds, the wire format of metav1.MicroTime. */
export function microTime(d: Date): string {
  return d.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

export class LeaderElector {
  private readonly leaseDurationMs: number;
  private readonly renewDeadlineMs: number;
  private readonly retryPeriodMs: number;
  private readonly path: string;
  private observed: LeaseSpec | undefined;
  private observedKey = '';
  /** Local clock (ms) when the observed record last changed. */
  private observedAt = 0;
  private observedRV: string | undefined;
  private leading: AbortController | undefined;
  private stopper: AbortController | undefined;
  private loop: Promise<void> | undefined;
  private holder = '';

  constructor(private readonly opts: LeaderElectionOptions) {
    this.leaseDurationMs = opts.leaseDurationMs ?? 15_000;
    this.renewDeadlineMs = opts.renewDeadlineMs ?? 10_000;
    this.retryPeriodMs = opts.retryPeriodMs ?? 2_000;
    if (!opts.identity) throw new Error('leader election: identity is required');
    if (!opts.name || !opts.namespace) throw new Error('leader election: lease name and namespace are required');
    if (this.leaseDurationMs <= this.renewDeadlineMs) throw new Error('leader election: leaseDurationMs must be greater than renewDeadlineMs');
    if (this.renewDeadlineMs <= this.retryPeriodMs * 1.2) throw new Error('leader election: renewDeadlineMs must be greater than 1.2 × retryPeriodMs');
    if (this.leaseDurationMs < 1000) throw new Error('leader election: leaseDurationMs must be at least 1000 (the lease counts whole seconds)');
    this.path = `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(opts.namespace)}/leases`;
  }

  isLeader(): boolean {
    return this.leading !== undefined;
  }

  /** The holder last seen on the lease ('' when none). */
  leader(): string {
    return this.holder;
  }

  start(): void {
    if (this.loop) return;
    this.stopper = new AbortController();
    this.loop = this.run(this.stopper.signal);
  }

  /** Stops competing; a leader releases the lease (unless `releaseOnStop` is false) and stops leading. */
  async stop(): Promise<void> {
    if (!this.loop) return;
    this.stopper?.abort();
    await this.loop;
    this.loop = undefined;
  }

  private async run(stop: AbortSignal): Promise<void> {
    while (!stop.aborted) {
      // Acquire.
      while (!stop.aborted && !(await this.tryAcquireOrRenew(stop, this.retryPeriodMs))) {
        await sleep(this.retryPeriodMs * (1 + 0.2 * Math.random()), stop);
      }
      if (stop.aborted) break;
      this.startLeading();
      // Renew until stopped or the renew deadline passes.
      let lastRenew = performance.now();
      while (!stop.aborted) {
        await sleep(this.retryPeriodMs, stop);
        if (stop.aborted) break;
        const left = this.renewDeadlineMs - (performance.now() - lastRenew);
        const ok = left > 0 && (await this.tryAcquireOrRenew(stop, Math.max(1, Math.min(left, this.retryPeriodMs * 2))));
        if (ok) lastRenew = performance.now();
        else if (this.holder !== '' && this.holder !== this.opts.identity) {
          // Someone else holds the lease now (our renewals failed for longer than the lease).
          this.stopLeading();
          break;
        } else if (performance.now() - lastRenew >= this.renewDeadlineMs) {
          this.stopLeading();
          break;
        }
      }
    }
    if (this.leading) {
      if (this.opts.releaseOnStop ?? true) await this.release();
      this.stopLeading();
    }
  }

  private startLeading(): void {
    const controller = new AbortController();
    this.leading = controller;
    try {
      void Promise.resolve(this.opts.onStartedLeading(controller.signal)).catch((err: unknown) => this.report(err));
    } catch (err) {
      this.report(err);
    }
  }

  private stopLeading(): void {
    const controller = this.leading;
    if (!controller) return;
    this.leading = undefined;
    controller.abort();
    try {
      this.opts.onStoppedLeading?.();
    } catch (err) {
      this.report(err);
    }
  }

  /** One round: true when this elector holds the lease afterwards. */
  private async tryAcquireOrRenew(stop: AbortSignal, timeoutMs: number): Promise<boolean> {
    const signal = AbortSignal.any([stop, AbortSignal.timeout(Math.max(1, Math.ceil(timeoutMs)))]);
    const now = new Date();
    const mine = (prev: LeaseSpec | undefined): LeaseSpec => {
      const held = prev?.holderIdentity === this.opts.identity;
      return {
        holderIdentity: this.opts.identity,
        leaseDurationSeconds: Math.ceil(this.leaseDurationMs / 1000),
        acquireTime: held && prev?.acquireTime ? prev.acquireTime : microTime(now),
        renewTime: microTime(now),
        leaseTransitions: prev === undefined ? 0 : held ? (prev.leaseTransitions ?? 0) : (prev.leaseTransitions ?? 0) + 1,
      };
    };
    try {
      let lease: Lease;
      try {
        lease = await this.opts.client.request<Lease>({ method: 'GET', path: `${this.path}/${encodeURIComponent(this.opts.name)}`, signal });
      } catch (err) {
        if (!isNotFound(err)) throw err;
        const created = await this.opts.client.request<Lease>({
          method: 'POST',
          path: this.path,
          body: { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: this.opts.name, namespace: this.opts.namespace }, spec: mine(undefined) },
          signal,
        });
        this.observe(created);
        return true;
      }
      this.observe(lease);
      const spec = lease.spec ?? {};
      const holder = spec.holderIdentity ?? '';
      const valid = performance.now() - this.observedAt < (spec.leaseDurationSeconds ?? 0) * 1000;
      if (holder !== '' && holder !== this.opts.identity && valid) return false;
      const updated = await this.opts.client.request<Lease>({
        method: 'PUT',
        path: `${this.path}/${encodeURIComponent(this.opts.name)}`,
        body: { ...lease, spec: mine(spec) },
        signal,
      });
      this.observe(updated);
      return true;
    } catch (err) {
      if (stop.aborted) return false;
      // Losing a race (409) is the normal way to learn someone else won.
      if (!isConflict(err) && !isAlreadyExists(err)) this.report(err);
      return false;
    }
  }

  private observe(lease: Lease): void {
    const spec = lease.spec ?? {};
    const key = JSON.stringify([spec.holderIdentity ?? '', spec.renewTime ?? '', spec.acquireTime ?? '', spec.leaseDurationSeconds ?? 0, spec.leaseTransitions ?? 0]);
    if (key !== this.observedKey) {
      this.observedKey = key;
      this.observedAt = performance.now();
      this.observed = spec;
    }
    this.observedRV = lease.metadata.resourceVersion;
    const holder = spec.holderIdentity ?? '';
    if (holder !== this.holder) {
      this.holder = holder;
      try {
        this.opts.onNewLeader?.(holder);
      } catch (err) {
        this.report(err);
      }
    }
  }

  /** Gives the lease up: no holder and a 1 s duration, so the next elector takes it at once. */
  private async release(): Promise<void> {
    if (!this.observed || this.observed.holderIdentity !== this.opts.identity) return;
    const now = microTime(new Date());
    try {
      const released = await this.opts.client.request<Lease>({
        method: 'PUT',
        path: `${this.path}/${encodeURIComponent(this.opts.name)}`,
        body: {
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          metadata: { name: this.opts.name, namespace: this.opts.namespace, resourceVersion: this.observedRV },
          spec: { leaseDurationSeconds: 1, acquireTime: now, renewTime: now, leaseTransitions: this.observed.leaseTransitions ?? 0 },
        },
        timeoutMs: this.renewDeadlineMs,
      });
      this.observe(released);
    } catch (err) {
      this.report(err);
    }
  }

  private report(err: unknown): void {
    const error = err instanceof Error ? err : new Error(String(err));
    if (this.opts.onError) this.opts.onError(error);
    else getLogger('kube').warn({ lease: `${this.opts.namespace}/${this.opts.name}`, identity: this.opts.identity, err: error.message }, `leader election ${this.opts.namespace}/${this.opts.name} (${this.opts.identity}): ${error.message}`);
  }
}
