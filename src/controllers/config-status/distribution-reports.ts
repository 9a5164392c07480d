/**
 * Sharing distribution between daemons: every daemon publishes its DistributionReport in a
 * ConfigMap `meshd-distribution-<identity>` of the daemon namespace (label
 * `mesh.io/distribution-report=true`, key `report`), rewritten at most every
 * DISC_STATUS_UPDATE_INTERVAL when it changed and at least every third of `staleAfterMs` as a
 * heartbeat; it is deleted on stop. The leader reads the others' reports through an informer and
 * ignores reports older than `staleAfterMs` (a daemon that died without cleaning up).
 *
 * The publisher is a controller of one key (the report's name) on the reconcile contract: a tick
 * every interval queues it; a failed write is retried with backoff; on stop the report's desired
 * state becomes "absent" and the queue is drained, so the delete is a reconcile too.
 */
import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import type { KubeClient } from '../../kube/client.js';
import { isNotFound } from '../../kube/errors.js';
import { Informer } from '../../kube/informer.js';
import type { KubeObject } from '../../kube/types.js';
import { Controller, every, Trigger, type SyncErrorCounter } from '../runtime/index.js';
import { combineViews, type DistributionReport, type DistributionSource, type DistributionTracker, type DistributionView } from './distribution.js';

export const REPORT_LABEL = 'mesh.io/distribution-report';
export const REPORT_KEY = 'report';
const FIELD_MANAGER = 'meshd-distribution';

interface ConfigMap extends KubeObject {
  readonly data?: Readonly<Record<string, string>>;
}

/** A DNS-1123 name for the report of `identity` (pod names are already valid; others are hashed). */
export function reportName(identity: string): string {
  const clean = identity.toLowerCase().replace(/[^a-z0-9-]/g, '-').replace(/^-+|-+$/g, '');
  const base = `meshd-distribution-${clean}`;
  if (clean === identity && base.length <= 253) return base;
  const hash = createHash('sha256').update(identity).digest('hex').slice(0, 10);
  return `${base.slice(0, 200).replace(/-+$/, '')}-${hash}`;
}

export function parseReport(cm: ConfigMap): DistributionReport | undefined {
  const text = cm.data?.[REPORT_KEY];
  if (!text) return undefined;
  try {
    const r = JSON.parse(text) as Partial<DistributionReport>;
    if (typeof r.identity !== 'string' || typeof r.time !== 'string' || typeof r.proxies !== 'number' || typeof r.configs !== 'object' || r.configs === null) return undefined;
    return r as DistributionReport;
  } catch {
    return undefined;
  }
}

export interface ReportPublisherOptions {
  readonly client: KubeClient;
  readonly tracker: DistributionTracker;
  readonly namespace: string;
  readonly identity: string;
  /** DISC_STATUS_UPDATE_INTERVAL in ms. */
  readonly intervalMs: number;
  /** Reports older than this are ignored by the leader; the publisher refreshes at a third of it. */
  readonly staleAfterMs: number;
  readonly log?: Logger;
  /** controller_sync_errors_total (label `distribution-report`). */
  readonly syncErrors?: SyncErrorCounter;
}

export const REPORT_CONTROLLER = 'distribution-report';

/** Publishes this daemon's report (runs on every daemon, leader or not). */
export class ReportPublisher {
  private readonly controller: Controller<string>;
  private readonly trigger = new Trigger<string>();
  private lastChanges = -1;
  private lastWrite = 0;
  /** Stopping: the report's desired state is "absent". */
  private retired = false;
  readonly name: string;

  constructor(private readonly opts: ReportPublisherOptions) {
    this.name = reportName(opts.identity);
    this.controller = new Controller<string>({
      name: REPORT_CONTROLLER,
      reconciler: { reconcile: (_key, ctx) => this.reconcile(ctx.signal) },
      sources: [this.trigger, every(opts.intervalMs, () => [this.name])],
      retry: { baseDelayMs: Math.max(10, Math.min(1000, opts.intervalMs)), maxDelayMs: Math.max(opts.intervalMs, opts.staleAfterMs / 3) },
      syncErrors: opts.syncErrors,
      log: opts.log,
    });
  }

  start(): void {
    if (this.controller.running) return;
    this.retired = false;
    this.controller.start();
    this.trigger.enqueue(this.name);
  }

  /** Stops publishing and deletes the report (one last reconcile, with the queue drained). */
  async stop(): Promise<void> {
    if (!this.controller.running) return;
    this.retired = true;
    this.trigger.enqueue(this.name);
    await this.controller.stop({ drain: true });
  }

  /** Writes the report when it changed or the heartbeat is due; deletes it once retired. */
  private async reconcile(signal: AbortSignal): Promise<void> {
    const ref = { apiVersion: 'v1', kind: 'ConfigMap', namespace: this.opts.namespace, name: this.name };
    if (this.retired) {
      await this.opts.client.delete(ref).catch((err: unknown) => {
        if (!isNotFound(err)) throw err;
      });
      return;
    }
    const changes = this.opts.tracker.changeCount();
    const heartbeatMs = this.opts.staleAfterMs / 3;
    const sinceWrite = Date.now() - this.lastWrite;
    if (changes === this.lastChanges && sinceWrite < heartbeatMs) return;
    const report = this.opts.tracker.report(this.opts.identity);
    await this.opts.client.applyObject(
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: this.name, namespace: this.opts.namespace, labels: { [REPORT_LABEL]: 'true' } },
        data: { [REPORT_KEY]: JSON.stringify(report) },
      } as ConfigMap,
      { fieldManager: FIELD_MANAGER, force: true, signal },
    );
    this.lastChanges = changes;
    this.lastWrite = Date.now();
  }
}

export interface MeshDistributionOptions {
  readonly client: KubeClient;
  readonly tracker: DistributionTracker;
  readonly namespace: string;
  readonly identity: string;
  readonly staleAfterMs: number;
  readonly log?: Logger;
}

/**
 * The leader's mesh-wide view: its own tracker (in memory) plus the fresh reports of the other
 * daemons (ConfigMaps). `start` / `stop` run the informer; the status duty owns them.
 */
export class MeshDistribution implements DistributionSource {
  private readonly informer: Informer<ConfigMap>;

  constructor(private readonly opts: MeshDistributionOptions) {
    this.informer = new Informer<ConfigMap>(opts.client, {
      resource: { group: '', version: 'v1', plural: 'configmaps', namespaced: true, kind: 'ConfigMap' },
      namespace: opts.namespace,
      labelSelector: `${REPORT_LABEL}=true`,
      name: 'distribution reports',
      onError: (err, phase) => opts.log?.warn({ err: err.message, phase }, 'distribution: report informer failed; retrying'),
    });
  }

  start(): void {
    this.informer.start();
  }

  waitForSync(signal?: AbortSignal): Promise<void> {
    return this.informer.waitForSync({ signal });
  }

  stop(): Promise<void> {
    return this.informer.stop();
  }

  /** Fresh reports of the other daemons. */
  others(now = Date.now()): DistributionReport[] {
    const out: DistributionReport[] = [];
    for (const cm of this.informer.list()) {
      const r = parseReport(cm);
      if (!r || r.identity === this.opts.identity) continue;
      const at = Date.parse(r.time);
      if (!Number.isFinite(at) || now - at > this.opts.staleAfterMs) continue;
      out.push(r);
    }
    return out;
  }

  view(): DistributionView {
    return combineViews(this.opts.tracker.view(), this.others());
  }
}
