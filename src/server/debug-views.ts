/**
 * The daemon's debug views, as data: what each proxy was sent and ACKed (`syncz`), the config,
 * registry and endpoints it holds, a config dump per proxy (the daemon's own JSON, or with
 * `format=envoy` the shape of Envoy's admin `/config_dump`), config distribution (`distributionz`)
 * and the build. Served by name on the debug HTTP listener (`/debug/<name>`, debug.ts) and over the
 * xDS debug channel (`mesh.io/debug/<name>`, xds-debug.ts); one implementation for both.
 */
import { CONFIG_KINDS } from '../config/kinds.js';
import type { ConfigStore } from '../config/types.js';
import type { MeshModel } from '../model/mesh-model.js';
import type { Proxy } from '../model/proxy.js';
import { getBuildInfo } from '../version/build-info.js';
import { JsonArray, lazyMap } from '../util/json-stream.js';
import { overTurns } from '../model/derived.js';
import type { DiscoveryServer } from '../xds/ads-server.js';
import type { EncodedResource, ResourceCache } from '../xds/cache.js';
import { Connection, type WatchState } from '../xds/connection.js';
import { anyToJson, envoyConfigDump } from '../xds/envoy/config-dump.js';
import type { GeneratorSet, GeneratorSettings } from '../xds/generators/types.js';
import { PUSH_ORDER, TypeUrl, shortType, type XdsTypeUrl } from '../xds/types.js';

/** Distribution of config objects to this daemon's proxies (the tracker of src/controllers/config-status). */
export interface DistributionLookup {
  /** Proxies that acknowledged at least once. */
  proxies(): number;
  /** Generation of `ref` (`Kind/namespace/name`) as the daemon holds it, and how many proxies hold it. */
  status(ref: string): { readonly generation: number; readonly upToDate: number } | undefined;
  /** Every tracked object: ref → [generation, proxies up to date]. */
  all(): Readonly<Record<string, readonly [number, number]>>;
}

export interface DebugDeps {
  readonly ads: DiscoveryServer;
  readonly model: MeshModel;
  readonly store: ConfigStore;
  readonly generatorsFor: (proxy: Proxy) => GeneratorSet;
  readonly cache: ResourceCache;
  readonly settings: GeneratorSettings;
  /** This daemon's name in answers (the pod name). */
  readonly identity: string;
  /** Absent without distribution tracking (DISC_ENABLE_CONFIG_DISTRIBUTION_TRACKING, a cluster). */
  readonly distribution?: DistributionLookup;
}

export interface DebugReply {
  readonly status: number;
  readonly body: unknown;
}

export type DebugView = (params: URLSearchParams) => DebugReply | Promise<DebugReply>;

/** Sync state of one type on one connection, as proxy-status shows it. */
export type SyncStatus = 'SYNCED' | 'NOT SENT' | 'STALE' | 'NACKED';

export function syncStatus(w: WatchState | undefined): SyncStatus {
  if (!w || w.nonceSent === '') return 'NOT SENT';
  if (w.lastError) return 'NACKED';
  return w.nonceSent === w.nonceAcked ? 'SYNCED' : 'STALE';
}

/** Types every proxy's sync state lists (NOT SENT when never sent); others (SDS) only when subscribed. */
const ALWAYS_LISTED: ReadonlySet<string> = new Set([TypeUrl.Cluster, TypeUrl.Endpoint, TypeUrl.Listener, TypeUrl.Route]);

const ok = (body: unknown): DebugReply => ({ status: 200, body });
const fail = (status: number, error: string): DebugReply => ({ status, body: { error } });

function findConnection(d: DebugDeps, id: string): Connection | undefined {
  return [...d.ads.connections.values()].find((c) => c.proxy.id === id || c.id === id || c.proxy.workloadId === id);
}

/** The debug views by name. */
export function debugViews(d: DebugDeps): ReadonlyMap<string, DebugView> {
  const views = new Map<string, DebugView>();

  // large views are rendered item by item, with yields, by whoever sends them (docs/adr/0113, 0162)
  views.set('syncz', () => ok(new JsonArray(synczEntries(d))));

  views.set('connections', () =>
    ok({
      total: d.ads.connections.size,
      connections: [...d.ads.connections.values()].map((c) => ({ id: c.id, peer: c.peer, proxy: c.proxy.id, identity: c.identity ?? null, type: c.proxy.type, namespace: c.proxy.namespace, delta: c.delta })),
    }),
  );

  views.set('configz', () => ok(new JsonArray(configzEntries(d))));

  views.set('registryz', () => ok(d.model.current().push.services));

  views.set('endpointz', () => {
    const { push, endpoints } = d.model.current();
    return ok(push.services.map((s) => ({ hostname: s.hostname, namespace: s.namespace, version: endpoints.get(s.hostname).version, endpoints: endpoints.get(s.hostname).endpoints })));
  });

  views.set('push_status', () => {
    const { push, endpoints } = d.model.current();
    return ok({
      version: push.version,
      services: push.services.length,
      virtualServices: push.virtualServiceCount,
      endpoints: endpoints.count(),
      connections: d.ads.connections.size,
      queued: d.ads.queueLength,
      cacheEntries: d.cache.size,
    });
  });

  views.set('config_dump', async (params) => {
    const id = params.get('proxyID');
    if (!id) return fail(400, 'proxyID query parameter is required');
    const format = params.get('format') ?? 'mesh';
    if (format !== 'mesh' && format !== 'envoy') return fail(400, `format: invalid value ${JSON.stringify(format)} (choose from mesh, envoy)`);
    const conn = findConnection(d, id);
    if (!conn) return fail(404, `no connected proxy ${id}`);
    const { push, endpoints } = d.model.current();
    const gens = d.generatorsFor(conn.proxy);
    // a push's work, done as a push does it: over turns of the event loop (model/derived.ts); the
    // dump is then decoded and rendered resource by resource by whoever sends it (docs/adr/0184)
    const generated = new Map<XdsTypeUrl, { version: string; list: ReadonlyArray<EncodedResource> }>();
    for (const typeUrl of PUSH_ORDER) {
      const watch = conn.watches.get(typeUrl);
      const list = await overTurns(() => gens[typeUrl]({ proxy: conn.proxy, push, endpoints, names: watch ? watch.names : undefined, cache: d.cache, settings: d.settings }));
      const version = typeUrl === TypeUrl.Endpoint ? `${push.version}+e${endpoints.version}` : push.version;
      generated.set(typeUrl, { version, list });
    }
    if (format === 'envoy') return ok(envoyConfigDump({ node: { id: conn.proxy.id, metadata: conn.proxy.metadata }, resources: generated }));
    const dump: Record<string, JsonArray> = {};
    for (const [typeUrl, { list }] of generated) dump[shortType[typeUrl]] = new JsonArray(lazyMap(list, (r) => ({ name: r.name, version: r.version, resource: stripType(anyToJson(r.any)) })));
    return ok({ proxy: conn.proxy, version: push.version, config: dump });
  });

  views.set('distributionz', (params) => {
    if (!d.distribution) return fail(404, 'config distribution is not tracked by this daemon (DISC_ENABLE_CONFIG_DISTRIBUTION_TRACKING with a cluster)');
    const ref = params.get('ref');
    if (ref === null) return ok({ controlPlane: d.identity, proxies: d.distribution.proxies(), configs: d.distribution.all() });
    if (ref.split('/').length !== 3) return fail(400, `ref: expected Kind/namespace/name, got ${JSON.stringify(ref)}`);
    const s = d.distribution.status(ref);
    return ok({ controlPlane: d.identity, ref, proxies: d.distribution.proxies(), generation: s?.generation ?? null, upToDate: s?.upToDate ?? 0 });
  });

  views.set('version', () => ok({ controlPlane: d.identity, ...getBuildInfo() }));

  return views;
}

function stripType(o: Record<string, unknown>): Record<string, unknown> {
  const { '@type': _type, ...rest } = o;
  return rest;
}

/**
 * The entries of the `syncz` view, one per connection, built one at a time: the HTTP route streams
 * them (debug.ts), so large subscriptions are never rendered as one string.
 */
function* configzEntries(d: DebugDeps): Generator<object, void, undefined> {
  for (const k of CONFIG_KINDS) {
    for (const o of d.store.list(k.kind)) yield { kind: k.kind, ...o.meta, gvk: undefined, apiVersion: `${o.meta.gvk.group}/${o.meta.gvk.version}`, spec: o.spec };
  }
}

/** A connection that watches the name table and nothing else: a DNS-capturing agent's (ADR 0187). */
const nameTableOnly = (c: Connection): boolean => c.watches.size > 0 && [...c.watches.keys()].every((t) => t === TypeUrl.NameTable);

export function* synczEntries(d: DebugDeps): Generator<object, void, undefined> {
  const all = [...d.ads.connections.values()];
  // A capturing pod holds two streams under one node id: its proxy's and its agent's name-table
  // stream. The agent's is shown inside the proxy's entry, so that every pod is one entry; it
  // stands alone only while the proxy itself is not connected.
  const proxies = new Set(all.filter((c) => !nameTableOnly(c)).map((c) => c.proxy.id));
  const companions = new Map(all.filter((c) => nameTableOnly(c) && proxies.has(c.proxy.id)).map((c) => [c.proxy.id, c]));
  for (const c of all) {
    if (companions.get(c.proxy.id) === c) continue;
    const nds = c.watches.has(TypeUrl.NameTable) ? undefined : companions.get(c.proxy.id)?.watches.get(TypeUrl.NameTable);
    const watchOf = (t: XdsTypeUrl): ReturnType<Connection['watches']['get']> => c.watches.get(t) ?? (t === TypeUrl.NameTable ? nds : undefined);
    yield {
      proxy: c.proxy.id,
      connection: c.id,
      controlPlane: d.identity,
      identity: c.identity ?? null,
      type: c.proxy.type,
      namespace: c.proxy.namespace,
      workload: c.proxy.workloadId,
      proxyVersion: typeof c.proxy.metadata.MESH_VERSION === 'string' ? c.proxy.metadata.MESH_VERSION : '',
      delta: c.delta,
      connectedAt: new Date(c.connectedAt).toISOString(),
      watches: Object.fromEntries(
        PUSH_ORDER.filter((t) => ALWAYS_LISTED.has(t) || watchOf(t) !== undefined).map((t) => {
          const w = watchOf(t);
          return [
            shortType[t],
            {
              names: w ? (w.names ? [...w.names] : '*') : [],
              resources: w ? Connection.heldCount(w) : 0,
              sentVersion: w?.versionSent ?? '',
              sentNonce: w?.nonceSent ?? '',
              ackedVersion: w?.versionAcked ?? '',
              ackedNonce: w?.nonceAcked ?? '',
              status: syncStatus(w),
              lastError: w?.lastError,
              lastSentAt: w?.lastSentAt ? new Date(w.lastSentAt).toISOString() : undefined,
              lastAckAt: w?.lastAckAt ? new Date(w.lastAckAt).toISOString() : undefined,
            },
          ];
        }),
      ),
    };
  }
}
