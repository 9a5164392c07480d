/**
 * The status controller (DISC_ENABLE_STATUS): writes `observedGeneration`, the `Reconciled`
 * condition and, with DISC_ENABLE_ANALYSIS, the analyzers' `validationMessages` into the status
 * subresource of every mesh config object read from the Kubernetes API. Runs as the leader's
 * `status` duty (`run(signal)` until the signal aborts), on the reconcile contract
 * (src/controllers/runtime/), keyed by `Kind/namespace/name`.
 *
 * Sources: config store events, analysis results that changed an object's findings, distribution
 * changes (re-read every DISC_STATUS_UPDATE_INTERVAL), and every object once when the term starts.
 * DISC_STATUS_MAX_WORKERS workers; writes are rate limited by DISC_STATUS_QPS / DISC_STATUS_BURST.
 * A key is written only when the desired status differs from what the object holds (one GET
 * when this term of leadership has not written that status yet), by server-side apply on /status
 * with the field manager `meshd-status`, so conditions other writers own stay. Objects deleted
 * meanwhile (404) are skipped. Analysis reruns (debounced) on config and service changes;
 * distribution state is re-read every DISC_STATUS_UPDATE_INTERVAL and only changed keys are queued.
 */
import type { Logger } from 'pino';
import { analyze } from '../../analysis/analyze.js';
import { objectRef, type AnalysisMessage, type WorkloadInfo } from '../../analysis/types.js';
import { splitRef } from '../../analysis/analyze.js';
import { CONFIG_KINDS, kindByName } from '../../config/kinds.js';
import { KUBE_ORIGIN } from '../../config/kube-source.js';
import type { ConfigEvent, ConfigObject, ConfigStore } from '../../config/types.js';
import { sleep } from '../../kube/backoff.js';
import type { KubeClient } from '../../kube/client.js';
import { isNotFound } from '../../kube/errors.js';
import { TokenBucket } from '../../kube/rate-limiter.js';
import type { KubeObject } from '../../kube/types.js';
import type { MeshSettings } from '../../model/mesh-settings.js';
import type { Service } from '../../model/service.js';
import { Controller, fromEvents, Trigger, type Duty, type SyncErrorCounter } from '../runtime/index.js';
import { desiredStatus, statusDigest, statusMatches, withTransitionTime, distributionMessage, type ConfigStatus, type DistributionState } from './conditions.js';
import type { DistributionSource, DistributionView } from './distribution.js';

export const STATUS_FIELD_MANAGER = 'meshd-status';

/** Services (and their changes) for the analyzers; a ServiceRegistry fits. */
export interface ServiceSource {
  services(): ReadonlyArray<Service>;
  onEvent?(handler: () => void): () => void;
}

export interface AnalysisOptions {
  readonly services: ServiceSource;
  readonly mesh: () => MeshSettings;
  /** Workloads for selector checks; absent turns those checks off. */
  readonly workloads?: () => ReadonlyArray<WorkloadInfo>;
  readonly scopeGatewayToNamespace?: boolean;
  /** Quiet time before analysis reruns after a change (default 100 ms). */
  readonly debounceMs?: number;
}

export interface DistributionOptions {
  readonly source: DistributionSource;
  /** DISC_STATUS_UPDATE_INTERVAL in ms. */
  readonly intervalMs: number;
  /** Called when the duty starts / stops (e.g. to run the report informer). */
  readonly start?: (signal: AbortSignal) => Promise<void>;
  readonly stop?: () => Promise<void>;
}

export interface StatusControllerOptions {
  readonly client: KubeClient;
  readonly store: ConfigStore;
  /** DISC_STATUS_QPS (<= 0: unlimited). */
  readonly qps: number;
  /** DISC_STATUS_BURST. */
  readonly burst: number;
  /** DISC_STATUS_MAX_WORKERS. */
  readonly workers: number;
  /** DISC_ENABLE_ANALYSIS: present turns analysis on. */
  readonly analysis?: AnalysisOptions;
  /** DISC_ENABLE_CONFIG_DISTRIBUTION_TRACKING: present reports distribution in `Reconciled`. */
  readonly distribution?: DistributionOptions;
  readonly fieldManager?: string;
  readonly log?: Logger;
  readonly now?: () => Date;
  /** controller_sync_errors_total (label `status`). */
  readonly syncErrors?: SyncErrorCounter;
}

export interface StatusStats {
  /** Keys processed (every queued key once per processing). */
  readonly reconciles: number;
  /** Status writes sent. */
  readonly writes: number;
  /** Reconciles that found the status current (no write). */
  readonly unchanged: number;
  /** Writes skipped because the object was gone. */
  readonly gone: number;
  readonly errors: number;
  /** Analysis runs. */
  readonly analyses: number;
}

interface Term {
  /** Queues keys for this term's controller. */
  readonly trigger: Trigger<string>;
  /** Digest of the status known to be on each object (this term only). */
  readonly written: Map<string, string>;
  messages: ReadonlyMap<string, ReadonlyArray<AnalysisMessage>>;
  view: DistributionView | undefined;
  readonly distribution: Map<string, string>;
}

export const STATUS_CONTROLLER = 'status';

export class StatusController implements Duty {
  readonly name = STATUS_CONTROLLER;
  private readonly limiter: TokenBucket;
  private readonly fieldManager: string;
  private readonly counters = { reconciles: 0, writes: 0, unchanged: 0, gone: 0, errors: 0, analyses: 0 };
  private term: Term | undefined;

  constructor(private readonly opts: StatusControllerOptions) {
    if (!Number.isInteger(opts.workers) || opts.workers < 1) throw new Error(`DISC_STATUS_MAX_WORKERS: ${opts.workers} must be a positive integer`);
    if (!(opts.burst >= 0)) throw new Error(`DISC_STATUS_BURST: ${opts.burst} must not be negative`);
    this.limiter = new TokenBucket(opts.qps, Math.max(1, opts.burst));
    this.fieldManager = opts.fieldManager ?? STATUS_FIELD_MANAGER;
  }

  stats(): StatusStats {
    return { ...this.counters };
  }

  /** The leader duty: keeps status current until `signal` aborts. */
  async run(signal: AbortSignal): Promise<void> {
    const log = this.opts.log;
    while (!this.opts.store.hasSynced() && !signal.aborted) await sleep(50, signal);
    if (signal.aborted) return;
    const trigger = new Trigger<string>();
    const term: Term = { trigger, written: new Map(), messages: new Map(), view: undefined, distribution: new Map() };
    this.term = term;
    const controller = new Controller<string>({
      name: STATUS_CONTROLLER,
      workers: this.opts.workers,
      reconciler: {
        reconcile: (key, ctx) =>
          this.reconcile(term, key, ctx.signal).catch((err: unknown) => {
            if (!ctx.signal.aborted) this.counters.errors++;
            throw err;
          }),
      },
      sources: [
        trigger,
        // every object once per term, then the store's changes
        fromEvents((emit) => {
          emit([...this.objects()].map(refOf));
          return this.opts.store.onEvent((e) => emit(this.onConfigEvent(term, e, scheduleAnalysis)));
        }),
      ],
      syncErrors: this.opts.syncErrors,
      log: this.opts.log,
    });
    let analysisTimer: NodeJS.Timeout | undefined;
    const scheduleAnalysis = (): void => {
      if (!this.opts.analysis || analysisTimer) return;
      analysisTimer = setTimeout(() => {
        analysisTimer = undefined;
        if (!signal.aborted) this.runAnalysis(term);
      }, this.opts.analysis.debounceMs ?? 100);
    };
    const cleanups: Array<() => void> = [];
    try {
      if (this.opts.distribution?.start) await this.opts.distribution.start(signal);
      if (signal.aborted) return;
      const services = this.opts.analysis?.services;
      if (services?.onEvent) cleanups.push(services.onEvent(() => scheduleAnalysis()));
      if (this.opts.analysis) this.runAnalysis(term, false);
      if (this.opts.distribution) {
        this.refreshDistribution(term, false);
        const timer = setInterval(() => this.refreshDistribution(term, true), this.opts.distribution.intervalMs);
        cleanups.push(() => clearInterval(timer));
      }
      log?.info({ analysis: !!this.opts.analysis, distribution: !!this.opts.distribution }, 'status: writing status of mesh config objects');
      await controller.run(signal);
    } finally {
      clearTimeout(analysisTimer);
      for (const c of cleanups) c();
      await controller.stop();
      await this.opts.distribution?.stop?.();
      if (this.term === term) this.term = undefined;
      log?.info('status: stopped writing status');
    }
  }

  /** Objects whose status this controller writes: those read from the Kubernetes API. */
  private *objects(): Iterable<ConfigObject> {
    for (const def of CONFIG_KINDS) {
      for (const o of this.opts.store.list(def.kind)) if (o.meta.origin === KUBE_ORIGIN) yield o;
    }
  }

  /** The key a store event queues (none for a delete: there is no status left to write). */
  private onConfigEvent(term: Term, e: ConfigEvent, scheduleAnalysis: () => void): string | undefined {
    const ref = objectRef(e.kind, e.object.meta.namespace, e.object.meta.name);
    scheduleAnalysis();
    if (e.type === 'delete') {
      term.written.delete(ref);
      term.distribution.delete(ref);
      return undefined;
    }
    return ref;
  }

  private runAnalysis(term: Term, enqueueChanges = true): void {
    const a = this.opts.analysis;
    if (!a) return;
    const started = Date.now();
    let result;
    try {
      result = analyze({
        configs: this.opts.store,
        services: a.services.services(),
        workloads: a.workloads?.(),
        mesh: a.mesh(),
        scopeGatewayToNamespace: a.scopeGatewayToNamespace,
      });
    } catch (err) {
      this.counters.errors++;
      this.opts.log?.error({ err: err instanceof Error ? err.stack : String(err) }, 'analysis: analyzers failed; keeping the previous findings');
      return;
    }
    this.counters.analyses++;
    const before = term.messages;
    term.messages = result.byObject;
    this.opts.log?.debug({ findings: result.findings.length, ms: Date.now() - started }, 'analysis: done');
    if (!enqueueChanges) return;
    const keys = new Set([...before.keys(), ...result.byObject.keys()]);
    for (const key of keys) {
      if (JSON.stringify(before.get(key) ?? []) !== JSON.stringify(result.byObject.get(key) ?? [])) term.trigger.enqueue(key);
    }
  }

  private refreshDistribution(term: Term, enqueueChanges: boolean): void {
    const d = this.opts.distribution;
    if (!d) return;
    const view = d.source.view();
    term.view = view;
    for (const o of this.objects()) {
      const ref = refOf(o);
      const message = distributionMessage({ upToDate: view.upToDate(ref, o.meta.generation), proxies: view.proxies });
      if (term.distribution.get(ref) === message) continue;
      term.distribution.set(ref, message);
      if (enqueueChanges) term.trigger.enqueue(ref);
    }
  }

  /** The status an object should have now. */
  private desired(o: ConfigObject, term: Term | undefined = this.term): ConfigStatus {
    const ref = refOf(o);
    const messages = this.opts.analysis ? (term?.messages.get(ref) ?? []) : [];
    let distribution: DistributionState | undefined;
    if (this.opts.distribution) {
      const view = term?.view ?? this.opts.distribution.source.view();
      distribution = { upToDate: view.upToDate(ref, o.meta.generation), proxies: view.proxies };
    }
    return desiredStatus(o.meta.generation, messages, distribution);
  }

  private async reconcile(term: Term, ref: string, signal: AbortSignal): Promise<void> {
    if (signal.aborted) return;
    this.counters.reconciles++;
    const [kind, namespace, name] = splitRef(ref);
    const o = this.opts.store.get(kind, namespace, name);
    const def = kindByName(kind);
    if (!o || !def || o.meta.origin !== KUBE_ORIGIN) {
      term.written.delete(ref);
      return;
    }
    const desired = this.desired(o, term);
    const digest = statusDigest(desired);
    if (term.written.get(ref) === digest) return;
    const target = { apiVersion: def.apiVersion, kind, namespace, name };
    const current = await this.opts.client.find<KubeObject & { status?: unknown }>(target, signal);
    if (!current) {
      this.counters.gone++;
      return;
    }
    if (statusMatches(current.status, desired)) {
      this.counters.unchanged++;
      term.written.set(ref, digest);
      return;
    }
    const status = withTransitionTime(current.status, desired, (this.opts.now ?? (() => new Date()))());
    await this.limiter.take(signal);
    try {
      await this.opts.client.applyStatus(
        { apiVersion: def.apiVersion, kind, metadata: { name, namespace }, status } as KubeObject,
        { fieldManager: this.fieldManager, force: true, signal },
      );
    } catch (err) {
      if (isNotFound(err)) {
        this.counters.gone++;
        return;
      }
      throw err;
    }
    this.counters.writes++;
    term.written.set(ref, digest);
  }
}

function refOf(o: ConfigObject): string {
  return objectRef(o.meta.gvk.kind, o.meta.namespace, o.meta.name);
}
