/**
 * Writes the status of the gateway-api objects this daemon handles (DISC_ENABLE_GATEWAY_API_STATUS),
 * as the leader's `gateway-api-status` duty, on the reconcile contract (src/controllers/runtime/)
 * keyed by `Kind/namespace/name`: GatewayClass `Accepted`; Gateway `Accepted`,
 * `Programmed` and `listeners[]` (attachedRoutes, conditions); HTTP/GRPC/TCP/TLS routes
 * `status.parents[]` entries with controllerName `mesh.io/gateway-controller`, `Accepted` and
 * `ResolvedRefs`. Desired status comes from the source's last conversion; a key is written (server-side
 * apply on /status, field manager `meshd-gateway-api-status`) only when the object's cached status
 * says something else. Route parents of other controllers are kept as they are.
 */
import type { Logger } from 'pino';
import type { ConversionResult, RouteParentStatus } from '../../config/gateway-api/convert.js';
import type { GatewayApiSource } from '../../config/gateway-api/source.js';
import { apiVersionOf, CONTROLLER_NAME, type ApiCondition } from '../../config/gateway-api/types.js';
import type { KubeClient } from '../../kube/client.js';
import { isNotFound } from '../../kube/errors.js';
import { TokenBucket } from '../../kube/rate-limiter.js';
import type { KubeObject } from '../../kube/types.js';
import { Controller, fromEvents, rfc3339, type Duty, type SyncErrorCounter } from '../runtime/index.js';

export const GATEWAY_API_STATUS_MANAGER = 'meshd-gateway-api-status';

export interface GatewayApiStatusOptions {
  readonly client: KubeClient;
  readonly source: GatewayApiSource;
  /** DISC_STATUS_QPS / DISC_STATUS_BURST (qps <= 0: unlimited). */
  readonly qps?: number;
  readonly burst?: number;
  readonly log?: Logger;
  readonly now?: () => Date;
  /** controller_sync_errors_total (label `gateway-api-status`). */
  readonly syncErrors?: SyncErrorCounter;
}

type StatusKind = 'GatewayClass' | 'Gateway' | 'HTTPRoute' | 'GRPCRoute' | 'TCPRoute' | 'TLSRoute';

interface RawStatus {
  readonly conditions?: ReadonlyArray<ApiCondition>;
  readonly listeners?: ReadonlyArray<{ readonly name?: string; readonly conditions?: ReadonlyArray<ApiCondition> }>;
  readonly parents?: ReadonlyArray<RouteParentStatus>;
}

type Obj = KubeObject & { readonly status?: RawStatus };

/** `conditions` with lastTransitionTime kept from `current` when a condition's status is unchanged. */
function timed(current: ReadonlyArray<ApiCondition> | undefined, desired: ReadonlyArray<ApiCondition>, now: string): ApiCondition[] {
  return desired.map((c) => {
    const have = current?.find((x) => x.type === c.type);
    return { ...c, lastTransitionTime: have && have.status === c.status && have.lastTransitionTime ? have.lastTransitionTime : now };
  });
}

/** A comparable form of a status: lastTransitionTime left out. */
function comparable(value: unknown): string {
  return JSON.stringify(value, (k, v: unknown) => (k === 'lastTransitionTime' ? undefined : v));
}

function sameParent(a: RouteParentStatus['parentRef'], b: RouteParentStatus['parentRef']): boolean {
  return comparable(a) === comparable(b);
}

export const GATEWAY_API_STATUS_CONTROLLER = 'gateway-api-status';

export class GatewayApiStatusWriter implements Duty {
  readonly name = GATEWAY_API_STATUS_CONTROLLER;
  private readonly limiter: TokenBucket;
  private writes = 0;

  constructor(private readonly opts: GatewayApiStatusOptions) {
    this.limiter = new TokenBucket(opts.qps ?? 0, Math.max(1, opts.burst ?? 1));
  }

  /** Status writes sent so far. */
  stats(): { readonly writes: number } {
    return { writes: this.writes };
  }

  /** The leader duty: keeps gateway-api status current until `signal` aborts. */
  async run(signal: AbortSignal): Promise<void> {
    /** Route keys that had parents in the previous result: when dropped, our entries are removed. */
    let previousRoutes = new Set<string>();
    const keysOf = (r: ConversionResult): string[] => {
      const keys = [...[...r.gatewayClasses.keys()].map((name) => `GatewayClass//${name}`), ...[...r.gateways.keys()].map((key) => `Gateway/${key}`)];
      const routes = new Set(r.routes.keys());
      keys.push(...new Set([...routes, ...previousRoutes]));
      previousRoutes = routes;
      return keys;
    };
    const controller = new Controller<string>({
      name: GATEWAY_API_STATUS_CONTROLLER,
      reconciler: { reconcile: (key, ctx) => this.reconcile(key, ctx.signal) },
      sources: [
        // the latest conversion once, then every new one
        fromEvents((emit) => {
          const first = this.opts.source.latest();
          if (first) emit(keysOf(first));
          return this.opts.source.onResult((r) => emit(keysOf(r)));
        }),
      ],
      syncErrors: this.opts.syncErrors,
      log: this.opts.log,
    });
    this.opts.log?.info('gateway-api status: writing status of gateway-api objects');
    await controller.run(signal);
  }

  private async reconcile(key: string, signal: AbortSignal): Promise<void> {
    const [kind, namespace, ...rest] = key.split('/');
    const name = rest.join('/');
    const result = this.opts.source.latest();
    const current = this.opts.source.cache<Obj>(kind as StatusKind)?.get(namespace, name);
    if (!result || !current || signal.aborted) return;
    const now = rfc3339((this.opts.now ?? (() => new Date()))());
    const have = current.status ?? {};
    let status: RawStatus;
    if (kind === 'GatewayClass') {
      const want = result.gatewayClasses.get(name);
      if (!want) return;
      status = { conditions: timed(have.conditions, want.conditions, now) };
    } else if (kind === 'Gateway') {
      const want = result.gateways.get(`${namespace}/${name}`);
      if (!want) return;
      status = {
        conditions: timed(have.conditions, want.conditions, now),
        listeners: want.listeners.map((l) => ({ ...l, conditions: timed(have.listeners?.find((x) => x.name === l.name)?.conditions, l.conditions, now) })),
      };
    } else {
      const want = result.routes.get(key)?.parents ?? [];
      const others = (have.parents ?? []).filter((p) => p.controllerName !== CONTROLLER_NAME);
      const ours = want.map((p) => ({ ...p, conditions: timed(have.parents?.find((x) => x.controllerName === CONTROLLER_NAME && sameParent(x.parentRef, p.parentRef))?.conditions, p.conditions, now) }));
      status = { parents: [...others, ...ours] };
    }
    // Only the fields written are compared (and owned): others' status fields stay theirs.
    const before = Object.fromEntries(Object.keys(status).map((k) => [k, (have as Record<string, unknown>)[k]]));
    if (comparable(status) === comparable(before)) return;
    await this.limiter.take(signal);
    try {
      await this.opts.client.applyStatus(
        { apiVersion: apiVersionOf(kind), kind, metadata: { name, ...(namespace ? { namespace } : {}) }, status } as KubeObject,
        { fieldManager: GATEWAY_API_STATUS_MANAGER, force: true, signal },
      );
      this.writes++;
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }
}
