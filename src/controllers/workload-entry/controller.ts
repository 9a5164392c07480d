/**
 * Workload entry auto-registration (DISC_ENABLE_WORKLOAD_ENTRY_AUTOREGISTRATION) and health
 * (DISC_ENABLE_WORKLOAD_ENTRY_HEALTHCHECKS), on every daemon: a controller `wle` on the reconcile
 * contract (src/controllers/runtime/), keyed by entry (`namespace/<group>-<ip>`).
 *
 * The xDS server's hooks only record what this daemon knows and queue the entry's key:
 * - `connected(proxy)` for a proxy with node metadata `WORKLOAD_GROUP` (Proxy.workloadGroup): the
 *   workload is connected here;
 * - `disconnected(proxy)` when the last of its streams to this daemon ends: it left, at that time;
 * - `healthReport(proxy, report)`: the result of its readiness probe.
 * A reconcile brings the entry in line with that:
 * - connected here: the WorkloadEntry `<group>-<ip>` exists, built from the group's template, owned
 *   by the group, annotated with this daemon's identity and the connect time. An existing
 *   auto-registered entry is taken over (another daemon's, or one marked disconnected); an entry a
 *   user created under that name is left alone (a terminal error: nothing to retry);
 * - left: the entry is marked disconnected (annotation with the time it left), unless another
 *   daemon has taken it over meanwhile or it belongs to another connection of ours;
 * - a health report of a group with a probe: the entry's `Healthy` condition (server-side apply on
 *   /status, field manager `meshd-wle-health`).
 * Every change is a conditional write (resourceVersion); the queue runs one reconcile per entry at
 * a time; a failed write is counted (auto_registration_errors_total) and retried with backoff.
 *
 * On `start()`, entries claimed by this identity without a live connection here (the previous
 * process of this pod held them) are marked disconnected at start time, so a workload that does
 * not come back is cleaned up after the grace period and one that reconnects keeps its entry.
 * The leader's cleanup of old entries is ./cleanup.ts.
 */
import type { Logger } from 'pino';
import type { KubeClient, ObjectList } from '../../kube/client.js';
import { isAlreadyExists, isConflict, isNotFound } from '../../kube/errors.js';
import type { KubeObject } from '../../kube/types.js';
import type { Proxy } from '../../model/proxy.js';
import type { WorkloadGroup } from '../../gen/config/schemas.js';
import { Controller, rfc3339, TerminalError, Trigger, type SyncErrorCounter } from '../runtime/index.js';
import {
  AUTO_REGISTRATION_GROUP,
  CONNECTED_AT,
  DISCONNECTED_AT,
  NETWORKING_API_VERSION,
  WORKLOAD_CONTROLLER,
  annotation,
  buildEntry,
  describeProbe,
  entryName,
  isAutoRegistered,
  keyOf,
  type WorkloadEntryObject,
  type WorkloadGroupObject,
} from './entry.js';
import type { AutoRegistrationCounters, ConnectionObserver, HealthObserver, HealthReport } from './types.js';
import { markDisconnected } from './writes.js';

export const HEALTH_FIELD_MANAGER = 'meshd-wle-health';
export const HEALTHY = 'Healthy';
export const WLE_CONTROLLER = 'wle';

const MAX_ATTEMPTS = 5;

export interface WorkloadEntryControllerOptions {
  readonly client: KubeClient;
  /** This daemon's identity (POD_NAME). */
  readonly identity: string;
  /** DISC_ENABLE_WORKLOAD_ENTRY_AUTOREGISTRATION (default true). */
  readonly autoRegistration?: boolean;
  /** DISC_ENABLE_WORKLOAD_ENTRY_HEALTHCHECKS (default true). */
  readonly healthChecks?: boolean;
  /** DISC_WORKLOAD_ENTRY_GRACE_PERIOD in ms. */
  readonly gracePeriodMs: number;
  /** Only entries of this namespace (default: all namespaces). */
  readonly namespace?: string;
  readonly counters?: AutoRegistrationCounters;
  readonly syncErrors?: SyncErrorCounter;
  /** First retry delay of a failed entry (default 100 ms, doubling to 5 min). */
  readonly retryBaseDelayMs?: number;
  readonly log?: Logger;
  readonly now?: () => Date;
}

/** What this daemon knows of a workload connected to it. */
interface Connection {
  /** Streams of this workload open on this daemon. */
  count: number;
  readonly proxy: Proxy;
  readonly group: string;
  /** connectedAt this daemon wrote for the current registration. */
  connectedAt?: string;
  probe?: WorkloadGroup['probe'];
  /** The health to show, and the last one written. */
  health?: { readonly status: 'True' | 'False'; readonly message: string; readonly since: string };
  healthWritten?: string;
}

/** A workload that left this daemon: its entry is to be marked disconnected. */
interface Departure {
  readonly at: string;
  /** Mark only an entry this identity holds... */
  readonly controller: string;
  /** ...and, when set, still from this connection. */
  readonly connectedAt?: string;
}

/** What one reconcile of an entry did. */
export type EntryOutcome = 'registered' | 'current' | 'marked' | 'unchanged' | 'failed';

export class WorkloadEntryController implements ConnectionObserver, HealthObserver {
  private readonly connections = new Map<string, Connection>();
  private readonly departures = new Map<string, Departure>();
  /** Callers waiting for the next reconcile of a key. */
  private readonly waiters = new Map<string, Array<(o: EntryOutcome) => void>>();
  private readonly trigger = new Trigger<string>();
  private readonly controller: Controller<string>;
  private readonly now: () => Date;
  /** After `stop()`: the daemon is going away; its hooks change nothing any more. */
  private stopped = false;

  constructor(private readonly opts: WorkloadEntryControllerOptions) {
    if (!opts.identity) throw new Error('workload entry controller: identity (POD_NAME) is required');
    if (!(opts.gracePeriodMs >= 0)) throw new Error(`DISC_WORKLOAD_ENTRY_GRACE_PERIOD: ${opts.gracePeriodMs} ms must not be negative`);
    this.now = opts.now ?? (() => new Date());
    this.controller = new Controller<string>({
      name: WLE_CONTROLLER,
      reconciler: { reconcile: (key) => this.reconcile(key) },
      sources: [this.trigger],
      workers: 4,
      retry: { baseDelayMs: opts.retryBaseDelayMs ?? 100, maxDelayMs: 300_000 },
      syncErrors: opts.syncErrors,
      log: opts.log,
    });
  }

  get enabled(): boolean {
    return this.opts.autoRegistration !== false;
  }

  get identity(): string {
    return this.opts.identity;
  }

  /** Entries (`namespace/name`) with a live connection to this daemon. */
  liveEntries(): string[] {
    return [...this.connections.keys()].sort();
  }

  /** True while the workload of entry `key` is connected to this daemon. */
  isConnected(key: string): boolean {
    return this.connections.has(key);
  }

  /**
   * Starts the controller and marks the entries this identity claimed without a live connection
   * here as disconnected now (a restart of this daemon). Resolves with the number marked.
   */
  async start(signal?: AbortSignal): Promise<number> {
    if (!this.enabled) return 0;
    this.stopped = false;
    this.controller.start();
    const at = this.now().toISOString();
    const mine = (await this.listEntries(signal)).filter(
      (e) => isAutoRegistered(e) && annotation(e, WORKLOAD_CONTROLLER) === this.opts.identity && !annotation(e, DISCONNECTED_AT) && !this.connections.has(keyOf(e)),
    );
    for (const e of mine) this.departures.set(keyOf(e), { at, controller: this.opts.identity });
    const outcomes = await Promise.all(mine.map((e) => this.reconciled(keyOf(e))));
    const marked = outcomes.filter((o) => o === 'marked').length;
    if (marked > 0) this.opts.log?.info({ entries: marked }, 'wle: entries of this daemon\'s previous run marked disconnected');
    return marked;
  }

  /** Finishes the queued work and stops; later hook calls change nothing. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.controller.stop({ drain: true });
    for (const [key, waiting] of this.waiters) {
      this.waiters.delete(key);
      for (const w of waiting) w('unchanged');
    }
  }

  connected(proxy: Proxy): Promise<void> {
    const target = this.targetOf(proxy);
    if (!target) return Promise.resolve();
    let conn = this.connections.get(target.key);
    if (!conn) {
      conn = { count: 0, proxy, group: target.group };
      this.connections.set(target.key, conn);
    }
    conn.count++;
    this.departures.delete(target.key);
    return this.reconciled(target.key).then(() => undefined);
  }

  disconnected(proxy: Proxy): Promise<void> {
    const target = this.targetOf(proxy, false);
    if (!target) return Promise.resolve();
    const conn = this.connections.get(target.key);
    if (!conn) return Promise.resolve();
    conn.count--;
    if (conn.count > 0) return Promise.resolve();
    this.connections.delete(target.key);
    this.departures.set(target.key, { at: this.now().toISOString(), controller: this.opts.identity, connectedAt: conn.connectedAt });
    return this.reconciled(target.key).then(() => undefined);
  }

  healthReport(proxy: Proxy, report: HealthReport): Promise<void> {
    if (this.opts.healthChecks === false) return Promise.resolve();
    const target = this.targetOf(proxy, false);
    if (!target) return Promise.resolve();
    const conn = this.connections.get(target.key);
    if (!conn?.probe) return Promise.resolve(); // not connected here, or the group has no probe
    const status = report.healthy ? 'True' : 'False';
    const detail = report.message || (report.healthy ? 'passed' : 'failed');
    const message = `${describeProbe(conn.probe)}: ${detail}`;
    if (conn.health && conn.health.status === status && conn.health.message === message) return Promise.resolve();
    const since = conn.health?.status === status ? conn.health.since : rfc3339(this.now());
    conn.health = { status, message, since };
    return this.reconciled(target.key).then(() => undefined);
  }

  /** Queues `key` and resolves with the outcome of its next reconcile. */
  private reconciled(key: string): Promise<EntryOutcome> {
    if (this.stopped) return Promise.resolve('unchanged');
    this.controller.start();
    return new Promise((resolve) => {
      const waiting = this.waiters.get(key) ?? [];
      waiting.push(resolve);
      this.waiters.set(key, waiting);
      this.trigger.enqueue(key);
    });
  }

  // ---- reconcile -----------------------------------------------------------------------------

  private async reconcile(key: string): Promise<void> {
    // Those waiting now are answered by this reconcile; later callers wait for the next one.
    const waiting = this.waiters.get(key) ?? [];
    this.waiters.delete(key);
    let outcome: EntryOutcome = 'failed';
    try {
      outcome = await this.converge(key);
    } catch (err) {
      this.opts.counters?.errors.inc();
      throw err;
    } finally {
      for (const w of waiting) w(outcome);
    }
  }

  private async converge(key: string): Promise<EntryOutcome> {
    const conn = this.connections.get(key);
    if (conn) {
      const outcome = await this.register(key, conn);
      await this.writeHealth(key, conn);
      return outcome;
    }
    const departure = this.departures.get(key);
    if (!departure) return 'unchanged';
    const [namespace, name] = splitEntryKey(key);
    const marked = await markDisconnected(this.opts.client, namespace, name, departure.at, departure, () => this.opts.counters?.unregister.inc());
    // Only forget what this reconcile acted on: a newer departure waits for its own reconcile.
    if (this.departures.get(key) === departure) this.departures.delete(key);
    if (marked && departure.connectedAt !== undefined) this.opts.log?.info({ entry: key }, 'wle: workload disconnected');
    return marked ? 'marked' : 'unchanged';
  }

  private targetOf(proxy: Proxy, report = true): { key: string; group: string; name: string } | undefined {
    if (!this.enabled || !proxy.workloadGroup) return undefined;
    const ip = proxy.ipAddresses[0];
    const fail = (why: string): undefined => {
      if (report) {
        this.opts.counters?.errors.inc();
        this.opts.log?.warn({ proxy: proxy.id, group: proxy.workloadGroup }, `wle: cannot auto-register: ${why}`);
      }
      return undefined;
    };
    if (!ip) return fail('the proxy has no IP address in its node id');
    if (!proxy.namespace) return fail('the proxy has no namespace');
    try {
      const name = entryName(proxy.workloadGroup, ip);
      return { key: `${proxy.namespace}/${name}`, group: proxy.workloadGroup, name };
    } catch (err) {
      return fail((err as Error).message);
    }
  }

  /** Makes the entry this connection's: created, taken over, or already ours. */
  private async register(key: string, conn: Connection): Promise<EntryOutcome> {
    const client = this.opts.client;
    const { proxy } = conn;
    const [namespace, name] = splitEntryKey(key);
    const group = await client.find<WorkloadGroupObject>({ apiVersion: NETWORKING_API_VERSION, kind: 'WorkloadGroup', namespace, name: conn.group });
    if (!group?.spec) throw new Error(`WorkloadGroup ${namespace}/${conn.group} named by proxy ${proxy.id} does not exist`);
    conn.probe = group.spec.probe;
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const existing = await client.find<WorkloadEntryObject>({ apiVersion: NETWORKING_API_VERSION, kind: 'WorkloadEntry', namespace, name });
      if (existing && !isAutoRegistered(existing)) {
        throw new TerminalError(`WorkloadEntry ${namespace}/${name} exists and was not auto-registered; leaving it alone`);
      }
      if (existing && annotation(existing, WORKLOAD_CONTROLLER) === this.opts.identity && conn.connectedAt !== undefined && annotation(existing, CONNECTED_AT) === conn.connectedAt && !annotation(existing, DISCONNECTED_AT)) {
        return 'current'; // another stream of the same workload; the entry is ours already
      }
      const connectedAt = this.now().toISOString();
      const entry = buildEntry({ group, proxy, name, identity: this.opts.identity, connectedAt, existing });
      try {
        if (existing) {
          await client.replace(entry);
          this.opts.counters?.updates.inc();
          this.opts.log?.info({ entry: key, previous: annotation(existing, WORKLOAD_CONTROLLER) }, 'wle: workload connected; entry taken over');
        } else {
          await client.create(entry);
          this.opts.counters?.success.inc();
          this.opts.log?.info({ entry: key, group: conn.group }, 'wle: workload connected; entry created');
        }
        conn.connectedAt = connectedAt;
        conn.healthWritten = undefined; // a new entry has no condition yet
        return 'registered';
      } catch (err) {
        if (isConflict(err) || isAlreadyExists(err)) continue; // raced with another writer: read again
        throw err;
      }
    }
    throw new Error(`WorkloadEntry ${key}: gave up after ${MAX_ATTEMPTS} conflicting writes`);
  }

  private async writeHealth(key: string, conn: Connection): Promise<void> {
    const health = conn.health;
    if (!health || !conn.probe || this.opts.healthChecks === false) return;
    const digest = `${health.status}\n${health.message}\n${health.since}`;
    if (conn.healthWritten === digest) return;
    const [namespace, name] = splitEntryKey(key);
    try {
      await this.opts.client.applyStatus(
        {
          apiVersion: NETWORKING_API_VERSION,
          kind: 'WorkloadEntry',
          metadata: { name, namespace },
          status: {
            conditions: [
              { type: HEALTHY, status: health.status, reason: health.status === 'True' ? 'HealthCheckSucceeded' : 'HealthCheckFailed', message: health.message, lastTransitionTime: health.since },
            ],
          },
        } as KubeObject,
        { fieldManager: HEALTH_FIELD_MANAGER, force: true },
      );
      conn.healthWritten = digest;
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }

  private async listEntries(signal?: AbortSignal): Promise<WorkloadEntryObject[]> {
    const out: WorkloadEntryObject[] = [];
    let token: string | undefined;
    do {
      const page: ObjectList<WorkloadEntryObject> = await this.opts.client.list<WorkloadEntryObject>(NETWORKING_API_VERSION, 'WorkloadEntry', { namespace: this.opts.namespace, limit: 500, continue: token, signal });
      out.push(...page.items);
      token = page.metadata.continue || undefined;
    } while (token);
    return out;
  }
}

/** `namespace/name` → [namespace, name]. */
function splitEntryKey(key: string): [string, string] {
  const slash = key.indexOf('/');
  return [key.slice(0, slash), key.slice(slash + 1)];
}

export { AUTO_REGISTRATION_GROUP, CONNECTED_AT, DISCONNECTED_AT, WORKLOAD_CONTROLLER };
