/**
 * Reads the gateway-api kinds from the API server (DISC_ENABLED_SERVICE_APIS) and keeps the
 * derived Gateway and VirtualService configs of the conversion (convert.ts) in the config store,
 * replaced as one set (origin `gateway-api`) whenever an input changes.
 *
 * Discovery comes first: when the API server does not serve the required kinds (the CRDs are not
 * installed) the source logs that once, reports itself synced (readiness is not held up) and looks
 * again every `recheckMs`; once the CRDs appear it starts its informers. Optional kinds (GRPCRoute,
 * TCPRoute, TLSRoute, ReferenceGrant) are read when served.
 */
import type { V1Namespace, V1Service } from '@kubernetes/client-node';
import type { KubeClient } from '../../kube/client.js';
import { dropManagedFields, Informer, type InformerOptions } from '../../kube/informer.js';
import type { KubeObject, ObjectCache } from '../../kube/types.js';
import type { MemoryConfigStore } from '../store.js';
import type { ConfigRejection } from '../types.js';
import { convertGatewayApi, GATEWAY_API_ORIGIN, type ConversionResult } from './convert.js';
import { GATEWAY_API_GROUP, GATEWAY_API_KINDS, type GatewayApiKind, type GatewayClassObject, type GatewayObject, type GRPCRouteObject, type HTTPRouteObject, type L4RouteObject, type ReferenceGrantObject } from './types.js';

export interface GatewayApiSourceOptions {
  readonly client: KubeClient;
  readonly store: MemoryConfigStore;
  /** The daemon's Service and Namespace caches (backend checks, namespace selectors). */
  readonly services: ObjectCache<V1Service>;
  readonly namespaces: ObjectCache<V1Namespace>;
  readonly domain: string;
  readonly resyncMs?: number;
  /** Look for the CRDs again this often while they are absent (default 60 s). */
  readonly recheckMs?: number;
  /** Quiet time before a change is converted (default 50 ms). */
  readonly debounceMs?: number;
  readonly log?: { info(msg: string): void; warn(msg: string): void };
  readonly onReject?: (r: ConfigRejection) => void;
  readonly informer?: Pick<InformerOptions<KubeObject>, 'watchdogMs' | 'backoff'>;
}

type KindName = GatewayApiKind['kind'];

export class GatewayApiSource {
  private readonly informers = new Map<KindName, Informer<KubeObject>>();
  private readonly handlers = new Set<(r: ConversionResult) => void>();
  private result: ConversionResult | undefined;
  private timer: NodeJS.Timeout | undefined;
  private recheck: NodeJS.Timeout | undefined;
  private readonly offs: Array<() => void> = [];
  private running = false;
  private absentLogged = false;

  constructor(private readonly opts: GatewayApiSourceOptions) {}

  /** True once the informers run (the CRDs were found). */
  active(): boolean {
    return this.informers.size > 0;
  }

  /** The informer of a kind, while active (the status writer reads current objects from it). */
  cache<T extends KubeObject>(kind: KindName): ObjectCache<T> | undefined {
    return this.informers.get(kind) as ObjectCache<T> | undefined;
  }

  /** The last conversion, if any. */
  latest(): ConversionResult | undefined {
    return this.result;
  }

  /** Called after every conversion; returns an unsubscribe function. */
  onResult(handler: (r: ConversionResult) => void): () => void {
    this.handlers.add(handler);
    return () => this.handlers.delete(handler);
  }

  /** Looks for the CRDs; when served, starts the informers and resolves once they synced. */
  async start(signal?: AbortSignal): Promise<void> {
    if (this.running) return;
    this.running = true;
    await this.tryStart(signal);
  }

  async stop(): Promise<void> {
    this.running = false;
    clearTimeout(this.timer);
    clearTimeout(this.recheck);
    for (const off of this.offs.splice(0)) off();
    await Promise.all([...this.informers.values()].map((i) => i.stop()));
    this.informers.clear();
  }

  private async served(): Promise<Map<KindName, GatewayApiKind>> {
    const found = new Map<KindName, GatewayApiKind>();
    for (const k of GATEWAY_API_KINDS) {
      const ok = await this.opts.client.resource(`${GATEWAY_API_GROUP}/${k.version}`, k.kind).then(
        () => true,
        () => false,
      );
      if (ok) found.set(k.kind, k);
    }
    return found;
  }

  private async tryStart(signal?: AbortSignal): Promise<void> {
    if (!this.running) return;
    const served = await this.served();
    const missing = GATEWAY_API_KINDS.filter((k) => k.required && !served.has(k.kind));
    if (missing.length > 0) {
      if (!this.absentLogged) {
        this.absentLogged = true;
        this.opts.log?.info(
          `gateway-api: the API server does not serve ${missing.map((k) => `${k.kind} (${GATEWAY_API_GROUP}/${k.version})`).join(', ')}; gateway-api resources are not read until their CRDs are installed`,
        );
      }
      this.recheck = setTimeout(() => void this.tryStart().catch((err: unknown) => this.opts.log?.warn(`gateway-api: ${String(err)}`)), this.opts.recheckMs ?? 60_000);
      this.recheck.unref();
      return;
    }
    const optional = GATEWAY_API_KINDS.filter((k) => !k.required && !served.has(k.kind));
    if (optional.length > 0) this.opts.log?.info(`gateway-api: ${optional.map((k) => k.kind).join(', ')} not served; those kinds are not read`);
    for (const k of served.values()) {
      const informer = new Informer<KubeObject>(this.opts.client, {
        ...this.opts.informer,
        resource: { group: GATEWAY_API_GROUP, version: k.version, plural: k.plural, namespaced: k.namespaced, kind: k.kind },
        transform: dropManagedFields,
        resyncMs: this.opts.resyncMs,
        name: k.kind,
        onError: (err, phase) => this.opts.log?.warn(`gateway-api: ${k.kind} informer: ${phase}: ${err.message} (retrying)`),
      });
      // Status-only updates change nothing the conversion reads: skip those.
      this.offs.push(informer.onEvent((e) => (e.type === 'update' && sameSpec(e.object, e.previous) ? undefined : this.schedule())));
      this.informers.set(k.kind, informer);
    }
    this.offs.push(this.opts.services.onEvent(() => this.informers.size > 0 && this.schedule()));
    this.offs.push(this.opts.namespaces.onEvent(() => this.informers.size > 0 && this.schedule()));
    for (const i of this.informers.values()) i.start();
    await Promise.all([...this.informers.values()].map((i) => i.waitForSync({ signal })));
    this.opts.log?.info(`gateway-api: reading ${[...served.keys()].join(', ')}`);
    this.convert();
  }

  private schedule(): void {
    if (this.timer || !this.running) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (this.running && [...this.informers.values()].every((i) => i.hasSynced())) this.convert();
    }, this.opts.debounceMs ?? 50);
  }

  /** Converts the cached objects and replaces the derived configs in the store. */
  convert(): void {
    const list = <T>(kind: KindName): T[] => (this.informers.get(kind)?.list() ?? []) as T[];
    const result = convertGatewayApi({
      gatewayClasses: list<GatewayClassObject>('GatewayClass'),
      gateways: list<GatewayObject>('Gateway'),
      httpRoutes: list<HTTPRouteObject>('HTTPRoute'),
      grpcRoutes: list<GRPCRouteObject>('GRPCRoute'),
      tcpRoutes: list<L4RouteObject>('TCPRoute'),
      tlsRoutes: list<L4RouteObject>('TLSRoute'),
      referenceGrants: list<ReferenceGrantObject>('ReferenceGrant'),
      servicePorts: (ns, name) => this.opts.services.get(ns, name)?.spec?.ports?.map((p) => p.port),
      namespaceLabels: (ns) => this.opts.namespaces.get('', ns)?.metadata?.labels,
      domain: this.opts.domain,
    });
    this.result = result;
    const applied = this.opts.store.applySource(GATEWAY_API_ORIGIN, result.configs);
    for (const r of applied.rejections) this.opts.onReject?.(r);
    for (const h of [...this.handlers]) {
      try {
        h(result);
      } catch (err) {
        this.opts.log?.warn(`gateway-api: result handler failed: ${String(err)}`);
      }
    }
  }
}

function sameSpec(a: KubeObject, b: KubeObject): boolean {
  const specOf = (o: KubeObject): string => JSON.stringify([(o as { spec?: unknown }).spec, o.metadata?.generation, o.metadata?.labels]);
  return specOf(a) === specOf(b);
}
