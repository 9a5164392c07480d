/**
 * Sharing distribution between daemons: every daemon publishes its DistributionReport in a
 * ConfigMap `meshd-distribution-<identity>` of the daemon namespace (label
 * `mesh.io/distribution-report=true`, key `report`), rewritten at most every
 * DISC_STATUS_UPDATE_INTERVAL when it changed and at least every third of `staleAfterMs` as a
 * heartbeat; it is deleted on stop. The leader reads the others' reports through an informer and
 * ignores reports older than `staleAfterMs` (a daemon that died without cleaning up).
 */
import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import type { KubeClient } from '../kube/client.js';
import { Informer } from '../kube/informer.js';
import type { KubeObject } from '../kube/types.js';
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
}

/** Publishes this daemon's report (runs on every daemon, leader or not). */
export class ReportPublisher {
  private timer: NodeJS.Timeout | undefined;
  private lastChanges = -1;
  private lastWrite = 0;
  private writing: Promise<void> | undefined;
  private readonly name: string;

  constructor(private readonly opts: ReportPublisherOptions) {
    this.name = reportName(opts.identity);
  }

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.tick(), this.opts.intervalMs);
    this.timer.unref();
    void this.tick();
  }

  /** Stops publishing and deletes the report. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.writing;
    await this.opts.client.delete({ apiVersion: 'v1', kind: 'ConfigMap', namespace: this.opts.namespace, name: this.name }).catch((err: unknown) => {
      this.opts.log?.warn({ err: String(err) }, 'distribution: deleting this daemon\'s report failed');
    });
  }

  /** Writes the report now when it changed or the heartbeat is due. */
  async tick(): Promise<void> {
    if (this.writing) return;
    const changes = this.opts.tracker.changeCount();
    const due = Date.now() - this.lastWrite >= this.opts.staleAfterMs / 3;
    if (changes === this.lastChanges && !due) return;
    this.writing = this.write(changes).finally(() => {
      this.writing = undefined;
    });
    await this.writing;
  }

  private async write(changes: number): Promise<void> {
    const report = this.opts.tracker.report(this.opts.identity);
    try {
      await this.opts.client.applyObject(
        {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: this.name, namespace: this.opts.namespace, labels: { [REPORT_LABEL]: 'true' } },
          data: { [REPORT_KEY]: JSON.stringify(report) },
        } as ConfigMap,
        { fieldManager: FIELD_MANAGER, force: true },
      );
      this.lastChanges = changes;
      this.lastWrite = Date.now();
    } catch (err) {
      this.opts.log?.warn({ err: String(err) }, 'distribution: publishing this daemon\'s report failed; retrying');
    }
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
