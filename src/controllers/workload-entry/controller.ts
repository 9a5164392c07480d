/**
 * Workload entry auto-registration (DISC_ENABLE_WORKLOAD_ENTRY_AUTOREGISTRATION) and health
 * (DISC_ENABLE_WORKLOAD_ENTRY_HEALTHCHECKS).
 *
 * - A proxy connecting with node metadata `WORKLOAD_GROUP` (Proxy.workloadGroup) gets the
 *   WorkloadEntry `<group>-<ip>` in its namespace, built from the group's template, owned by the
 *   group, annotated with this daemon's identity and the connect time. An existing auto-registered
 *   entry is taken over (another daemon's, or one marked disconnected); an entry a user created
 *   under that name is left alone.
 * - When the last stream of that workload to this daemon ends, the entry is marked disconnected
 *   (annotation with the time), unless another daemon has taken it over meanwhile.
 * - The leader's `wle-cleanup` duty deletes entries disconnected for longer than
 *   DISC_WORKLOAD_ENTRY_GRACE_PERIOD (conditional on the version it judged, so a reconnect wins).
 *   Entries connected to another live daemon are left alone; with `controllerPodNamespace`, an
 *   entry whose daemon pod no longer exists is marked disconnected at that moment.
 * - On `start()`, entries claimed by this identity without a live connection here (the previous
 *   process of this pod held them) are marked disconnected at start time, so a workload that does
 *   not come back is cleaned up after the grace period and one that reconnects keeps its entry.
 * - Health reports of a connected workload whose group has a probe set the entry's `Healthy`
 *   condition (server-side apply on /status, field manager `meshd-wle-health`).
 *
 * Every change is a conditional write (resourceVersion); operations on one entry run in order.
 */
import type { Logger } from 'pino';
import { sleep } from '../../kube/backoff.js';
import { resourcePath, type KubeClient, type ObjectList } from '../../kube/client.js';
import { isAlreadyExists, isConflict, isNotFound } from '../../kube/errors.js';
import type { KubeObject } from '../../kube/types.js';
import type { Proxy } from '../../model/proxy.js';
import type { WorkloadGroup } from '../../gen/config/schemas.js';
import {
  AUTO_REGISTRATION_GROUP,
  CONNECTED_AT,
  DISCONNECTED_AT,
  NETWORKING_API_VERSION,
  WORKLOAD_CONTROLLER,
  buildEntry,
  describeProbe,
  entryName,
  isAutoRegistered,
  withAnnotations,
  type WorkloadEntryObject,
  type WorkloadGroupObject,
} from './entry.js';
import type { AutoRegistrationCounters, ConnectionObserver, HealthObserver, HealthReport } from './types.js';

export const HEALTH_FIELD_MANAGER = 'meshd-wle-health';
export const HEALTHY = 'Healthy';

const ENTRY_RESOURCE = { group: 'networking.mesh.io', version: 'v1', plural: 'workloadentries', namespaced: true } as const;
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
  /** Time between cleanup rounds of the leader (default: the grace period, at least 100 ms). */
  readonly cleanupIntervalMs?: number;
  /**
   * Namespace of the daemon pods (identities are pod names there). When set, the cleanup treats an
   * entry whose daemon pod does not exist as disconnected. Leave unset outside a pod.
   */
  readonly controllerPodNamespace?: string;
  /** Only entries of this namespace (default: all namespaces). */
  readonly namespace?: string;
  readonly counters?: AutoRegistrationCounters;
  readonly log?: Logger;
  readonly now?: () => Date;
}

interface Connection {
  /** Streams of this workload open on this daemon. */
  count: number;
  /** connectedAt this daemon wrote for the current registration. */
  connectedAt?: string;
  probe?: WorkloadGroup['probe'];
  health?: { readonly status: 'True' | 'False'; readonly message: string; readonly since: string };
}

export interface CleanupResult {
  readonly deleted: number;
  readonly markedDisconnected: number;
}

export class WorkloadEntryController implements ConnectionObserver, HealthObserver {
  private readonly connections = new Map<string, Connection>();
  private readonly chains = new Map<string, Promise<void>>();
  private readonly now: () => Date;
  private startedAt: Date | undefined;

  constructor(private readonly opts: WorkloadEntryControllerOptions) {
    if (!opts.identity) throw new Error('workload entry controller: identity (POD_NAME) is required');
    if (!(opts.gracePeriodMs >= 0)) throw new Error(`DISC_WORKLOAD_ENTRY_GRACE_PERIOD: ${opts.gracePeriodMs} ms must not be negative`);
    this.now = opts.now ?? (() => new Date());
  }

  get enabled(): boolean {
    return this.opts.autoRegistration !== false;
  }

  /** Entries (`namespace/name`) with a live connection to this daemon. */
  liveEntries(): string[] {
    return [...this.connections.keys()].sort();
  }

  /**
   * Marks entries this identity claimed without a live connection here as disconnected now (a
   * restart of this daemon). Call once before or while proxies connect.
   */
  async start(signal?: AbortSignal): Promise<number> {
    if (!this.enabled) return 0;
    this.startedAt = this.now();
    const at = this.startedAt.toISOString();
    let marked = 0;
    const entries = await this.listEntries(signal);
    await Promise.all(
      entries
        .filter((e) => isAutoRegistered(e) && annotation(e, WORKLOAD_CONTROLLER) === this.opts.identity && !annotation(e, DISCONNECTED_AT))
        .map((e) => {
          const key = keyOf(e);
          return this.serialize(key, async () => {
            if (this.connections.has(key)) return; // the workload is back already
            if (await this.markDisconnected(e.metadata?.namespace ?? '', e.metadata?.name ?? '', at, { controller: this.opts.identity })) marked++;
          });
        }),
    );
    if (marked > 0) this.opts.log?.info({ entries: marked }, 'wle: entries of this daemon\'s previous run marked disconnected');
    return marked;
  }

  /** Waits for pending operations. */
  async stop(): Promise<void> {
    while (this.chains.size > 0) await Promise.all([...this.chains.values()]);
  }

  connected(proxy: Proxy): Promise<void> {
    const target = this.targetOf(proxy);
    if (!target) return Promise.resolve();
    const conn = this.connections.get(target.key) ?? { count: 0 };
    conn.count++;
    this.connections.set(target.key, conn);
    return this.serialize(target.key, () => this.register(proxy, target.group, target.name, conn));
  }

  disconnected(proxy: Proxy): Promise<void> {
    const target = this.targetOf(proxy, false);
    if (!target) return Promise.resolve();
    const conn = this.connections.get(target.key);
    if (!conn) return Promise.resolve();
    conn.count--;
    if (conn.count > 0) return Promise.resolve();
    this.connections.delete(target.key);
    const at = this.now().toISOString();
    return this.serialize(target.key, async () => {
      if (this.connections.has(target.key)) return; // reconnected before this ran
      if (await this.markDisconnected(proxy.namespace, target.name, at, { controller: this.opts.identity, connectedAt: conn.connectedAt })) {
        this.opts.log?.info({ entry: target.key }, 'wle: workload disconnected');
      }
    });
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
    const since = conn.health?.status === status ? conn.health.since : this.now().toISOString().replace(/\.\d+Z$/, 'Z');
    conn.health = { status, message, since };
    return this.serialize(target.key, async () => {
      try {
        await this.opts.client.applyStatus(
          {
            apiVersion: NETWORKING_API_VERSION,
            kind: 'WorkloadEntry',
            metadata: { name: target.name, namespace: proxy.namespace },
            status: { conditions: [{ type: HEALTHY, status, reason: report.healthy ? 'HealthCheckSucceeded' : 'HealthCheckFailed', message, lastTransitionTime: since }] },
          } as KubeObject,
          { fieldManager: HEALTH_FIELD_MANAGER, force: true },
        );
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
    });
  }

  /** The leader duty `wle-cleanup`: a cleanup round every interval until `signal` aborts. */
  async runCleanup(signal: AbortSignal): Promise<void> {
    const interval = this.opts.cleanupIntervalMs ?? Math.max(100, this.opts.gracePeriodMs);
    while (!signal.aborted) {
      try {
        await this.cleanupOnce(signal);
      } catch (err) {
        if (signal.aborted) return;
        this.opts.counters?.errors.inc();
        this.opts.log?.warn({ err: String(err) }, 'wle: cleanup round failed');
      }
      await sleep(interval, signal);
    }
  }

  /** One cleanup round over every auto-registered entry. */
  async cleanupOnce(signal?: AbortSignal): Promise<CleanupResult> {
    const now = this.now();
    let deleted = 0;
    let markedDisconnected = 0;
    const alive = new Map<string, Promise<boolean>>();
    const work: Array<Promise<void>> = [];
    for (const e of await this.listEntries(signal)) {
      if (!isAutoRegistered(e)) continue;
      const key = keyOf(e);
      const ns = e.metadata?.namespace ?? '';
      const name = e.metadata?.name ?? '';
      const disconnectedAt = annotation(e, DISCONNECTED_AT);
      const controller = annotation(e, WORKLOAD_CONTROLLER) ?? '';
      if (disconnectedAt) {
        const since = Date.parse(disconnectedAt);
        if (!Number.isFinite(since) || now.getTime() - since < this.opts.gracePeriodMs) continue;
        work.push(
          this.serialize(key, async () => {
            if (await this.deleteIfUnchanged(e)) {
              deleted++;
              this.opts.counters?.deletes.inc();
              this.opts.log?.info({ entry: key, disconnectedAt }, 'wle: removed the entry of a workload disconnected longer than the grace period');
            }
          }),
        );
      } else if (controller === this.opts.identity) {
        // Ours but not connected here (e.g. a stream ended without its callback).
        if (this.connections.has(key)) continue;
        work.push(
          this.serialize(key, async () => {
            if (this.connections.has(key)) return;
            if (await this.markDisconnected(ns, name, now.toISOString(), { controller })) markedDisconnected++;
          }),
        );
      } else if (this.opts.controllerPodNamespace && controller) {
        let live = alive.get(controller);
        if (!live) {
          live = this.controllerAlive(controller, signal);
          alive.set(controller, live);
        }
        const isLive = await live;
        if (isLive) continue;
        work.push(
          this.serialize(key, async () => {
            if (await this.markDisconnected(ns, name, now.toISOString(), { controller })) {
              markedDisconnected++;
              this.opts.log?.info({ entry: key, controller }, 'wle: the daemon holding this entry is gone; marked disconnected');
            }
          }),
        );
      }
    }
    await Promise.all(work);
    return { deleted, markedDisconnected };
  }

  // ---- internals -----------------------------------------------------------------------------

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

  private serialize(key: string, op: () => Promise<void>): Promise<void> {
    const prev = this.chains.get(key) ?? Promise.resolve();
    const next: Promise<void> = prev
      .then(op)
      .catch((err: unknown) => {
        this.opts.counters?.errors.inc();
        this.opts.log?.warn({ entry: key, err: err instanceof Error ? err.message : String(err) }, 'wle: auto-registration failed');
      })
      .finally(() => {
        if (this.chains.get(key) === next) this.chains.delete(key);
      });
    this.chains.set(key, next);
    return next;
  }

  private async register(proxy: Proxy, groupName: string, name: string, conn: Connection): Promise<void> {
    if (conn.count <= 0 || this.connections.get(`${proxy.namespace}/${name}`) !== conn) return; // gone again before we got here
    const client = this.opts.client;
    const group = await client.find<WorkloadGroupObject>({ apiVersion: NETWORKING_API_VERSION, kind: 'WorkloadGroup', namespace: proxy.namespace, name: groupName });
    if (!group?.spec) throw new Error(`WorkloadGroup ${proxy.namespace}/${groupName} named by proxy ${proxy.id} does not exist`);
    conn.probe = group.spec.probe;
    const connectedAt = this.now().toISOString();
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const existing = await client.find<WorkloadEntryObject>({ apiVersion: NETWORKING_API_VERSION, kind: 'WorkloadEntry', namespace: proxy.namespace, name });
      if (existing && !isAutoRegistered(existing)) {
        throw new Error(`WorkloadEntry ${proxy.namespace}/${name} exists and was not auto-registered; leaving it alone`);
      }
      if (existing && annotation(existing, WORKLOAD_CONTROLLER) === this.opts.identity && annotation(existing, CONNECTED_AT) === conn.connectedAt && !annotation(existing, DISCONNECTED_AT)) {
        return; // another stream of the same workload; the entry is ours already
      }
      const entry = buildEntry({ group, proxy, name, identity: this.opts.identity, connectedAt, existing });
      try {
        if (existing) {
          await client.replace(entry);
          this.opts.counters?.updates.inc();
          this.opts.log?.info({ entry: `${proxy.namespace}/${name}`, previous: annotation(existing, WORKLOAD_CONTROLLER) }, 'wle: workload connected; entry taken over');
        } else {
          await client.create(entry);
          this.opts.counters?.success.inc();
          this.opts.log?.info({ entry: `${proxy.namespace}/${name}`, group: groupName }, 'wle: workload connected; entry created');
        }
        conn.connectedAt = connectedAt;
        return;
      } catch (err) {
        if (isConflict(err) || isAlreadyExists(err)) continue; // raced with another writer: read again
        throw err;
      }
    }
    throw new Error(`WorkloadEntry ${proxy.namespace}/${name}: gave up after ${MAX_ATTEMPTS} conflicting writes`);
  }

  /**
   * Sets the disconnect time on an entry still held by `expect.controller` (and, when given, still
   * from the connection at `expect.connectedAt`). False when there was nothing to mark.
   */
  private async markDisconnected(namespace: string, name: string, at: string, expect: { controller: string; connectedAt?: string }): Promise<boolean> {
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const e = await this.opts.client.find<WorkloadEntryObject>({ apiVersion: NETWORKING_API_VERSION, kind: 'WorkloadEntry', namespace, name });
      if (!e || !isAutoRegistered(e) || annotation(e, DISCONNECTED_AT)) return false;
      if (annotation(e, WORKLOAD_CONTROLLER) !== expect.controller) return false; // taken over
      if (expect.connectedAt !== undefined && annotation(e, CONNECTED_AT) !== expect.connectedAt) return false;
      try {
        await this.opts.client.replace(withAnnotations(e, { [DISCONNECTED_AT]: at }));
        this.opts.counters?.unregister.inc();
        return true;
      } catch (err) {
        if (isNotFound(err)) return false;
        if (!isConflict(err)) throw err;
      }
    }
    throw new Error(`WorkloadEntry ${namespace}/${name}: gave up marking it disconnected after ${MAX_ATTEMPTS} conflicting writes`);
  }

  /** Deletes the entry if it is still the version the cleanup judged (a reconnect changes it). */
  private async deleteIfUnchanged(e: WorkloadEntryObject): Promise<boolean> {
    const ns = e.metadata?.namespace ?? '';
    const name = e.metadata?.name ?? '';
    if (this.connections.has(`${ns}/${name}`)) return false;
    try {
      await this.opts.client.request({
        method: 'DELETE',
        path: resourcePath(ENTRY_RESOURCE, ns, name),
        body: { apiVersion: 'v1', kind: 'DeleteOptions', preconditions: { uid: e.metadata?.uid, resourceVersion: e.metadata?.resourceVersion } },
      });
      return true;
    } catch (err) {
      if (isNotFound(err) || isConflict(err)) return false;
      throw err;
    }
  }

  private async controllerAlive(identity: string, signal?: AbortSignal): Promise<boolean> {
    try {
      const pod = await this.opts.client.find({ apiVersion: 'v1', kind: 'Pod', namespace: this.opts.controllerPodNamespace, name: identity }, signal);
      return pod !== undefined && !pod.metadata?.deletionTimestamp;
    } catch {
      return true; // unknown: assume alive rather than take a live workload's entry
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

function annotation(o: KubeObject, key: string): string | undefined {
  return o.metadata?.annotations?.[key];
}

function keyOf(o: KubeObject): string {
  return `${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;
}

export { AUTO_REGISTRATION_GROUP, CONNECTED_AT, DISCONNECTED_AT, WORKLOAD_CONTROLLER };
