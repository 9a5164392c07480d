/**
 * Debug endpoints on the HTTP address (ENABLE_DEBUG_ON_HTTP): what each proxy was sent and ACKed,
 * the config and registry the daemon holds, and a decoded config dump per proxy.
 */
import { Cluster } from '../gen/envoy/config/cluster/v3/cluster.js';
import { ClusterLoadAssignment } from '../gen/envoy/config/endpoint/v3/endpoint.js';
import { Listener } from '../gen/envoy/config/listener/v3/listener.js';
import { RouteConfiguration } from '../gen/envoy/config/route/v3/route.js';
import { Any } from '../gen/google/protobuf/any.js';
import type { ConfigStore } from '../config/types.js';
import type { DiscoveryServer } from '../xds/ads-server.js';
import { Connection } from '../xds/connection.js';
import type { MeshModel } from '../model/mesh-model.js';
import type { GeneratorSet, GeneratorSettings } from '../xds/generators/types.js';
import type { ResourceCache } from '../xds/cache.js';
import type { Proxy } from '../model/proxy.js';
import { PUSH_ORDER, TypeUrl, shortType, type XdsTypeUrl } from '../xds/types.js';
import type { HttpService } from './http.js';

export interface DebugDeps {
  readonly ads: DiscoveryServer;
  readonly model: MeshModel;
  readonly store: ConfigStore;
  readonly kinds: ReadonlyArray<string>;
  readonly generatorsFor: (proxy: Proxy) => GeneratorSet;
  readonly cache: ResourceCache;
  readonly settings: GeneratorSettings;
}

const decoders: Record<XdsTypeUrl, { decode(b: Uint8Array): unknown; toJSON(m: never): unknown }> = {
  [TypeUrl.Cluster]: Cluster,
  [TypeUrl.Endpoint]: ClusterLoadAssignment,
  [TypeUrl.Listener]: Listener,
  [TypeUrl.Route]: RouteConfiguration,
};

export function registerDebug(http: HttpService, d: DebugDeps): void {
  http.route('/debug', () => ({ body: { endpoints: http.paths() } }));

  http.route('/debug/syncz', () => ({
    body: [...d.ads.connections.values()].map((c) => ({
      proxy: c.proxy.id,
      connection: c.id,
      identity: c.identity ?? null,
      type: c.proxy.type,
      delta: c.delta,
      connectedAt: new Date(c.connectedAt).toISOString(),
      watches: Object.fromEntries(
        [...c.watches.values()].map((w) => [
          shortType[w.typeUrl as XdsTypeUrl] ?? w.typeUrl,
          {
            names: w.names ? [...w.names] : '*',
            resources: Connection.heldCount(w),
            sentVersion: w.versionSent,
            sentNonce: w.nonceSent,
            ackedVersion: w.versionAcked,
            ackedNonce: w.nonceAcked,
            status: w.lastError ? 'NACKED' : w.nonceSent === w.nonceAcked ? 'SYNCED' : 'STALE',
            lastError: w.lastError,
          },
        ]),
      ),
    })),
  }));

  http.route('/debug/connections', () => ({
    body: {
      total: d.ads.connections.size,
      connections: [...d.ads.connections.values()].map((c) => ({ id: c.id, peer: c.peer, proxy: c.proxy.id, identity: c.identity ?? null, type: c.proxy.type, namespace: c.proxy.namespace, delta: c.delta })),
    },
  }));

  http.route('/debug/configz', () => ({
    body: d.kinds.flatMap((k) => d.store.list(k).map((o) => ({ kind: k, ...o.meta, gvk: undefined, apiVersion: `${o.meta.gvk.group}/${o.meta.gvk.version}`, spec: o.spec }))),
  }));

  http.route('/debug/registryz', () => ({ body: d.model.current().push.services }));

  http.route('/debug/endpointz', () => {
    const { push, endpoints } = d.model.current();
    return {
      body: push.services.map((s) => ({ hostname: s.hostname, namespace: s.namespace, version: endpoints.get(s.hostname).version, endpoints: endpoints.get(s.hostname).endpoints })),
    };
  });

  http.route('/debug/push_status', () => {
    const { push, endpoints } = d.model.current();
    return {
      body: {
        version: push.version,
        services: push.services.length,
        virtualServices: push.virtualServiceCount,
        endpoints: endpoints.count(),
        connections: d.ads.connections.size,
        queued: d.ads.queueLength,
        cacheEntries: d.cache.size,
      },
    };
  });

  http.route('/debug/config_dump', (_req, url) => {
    const id = url.searchParams.get('proxyID');
    if (!id) return { status: 400, body: { error: 'proxyID query parameter is required' } };
    const conn = [...d.ads.connections.values()].find((c) => c.proxy.id === id || c.id === id || c.proxy.workloadId === id);
    if (!conn) return { status: 404, body: { error: `no connected proxy ${id}` } };
    const { push, endpoints } = d.model.current();
    const gens = d.generatorsFor(conn.proxy);
    const dump: Record<string, unknown> = {};
    for (const typeUrl of PUSH_ORDER) {
      const watch = conn.watches.get(typeUrl);
      const resources = gens[typeUrl]({ proxy: conn.proxy, push, endpoints, names: watch ? watch.names : undefined, cache: d.cache, settings: d.settings });
      dump[shortType[typeUrl]] = resources.map((r) => {
        const any = Any.decode(r.any);
        const codec = decoders[typeUrl];
        return { name: r.name, version: r.version, resource: codec.toJSON(codec.decode(any.value) as never) };
      });
    }
    return { body: { proxy: conn.proxy, version: push.version, config: dump } };
  });
}
