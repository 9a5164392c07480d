/**
 * What a simulated client needs to know about the resources of a response, decoded with the
 * project's generated types and memoized by content: names to subscribe to next, and short
 * "signatures" of route tables and endpoint sets so that the driver can tell when a change arrived.
 */
import { Cluster, Cluster_DiscoveryType } from '../../src/gen/envoy/config/cluster/v3/cluster.js';
import { ClusterLoadAssignment } from '../../src/gen/envoy/config/endpoint/v3/endpoint.js';
import { Listener } from '../../src/gen/envoy/config/listener/v3/listener.js';
import type { Filter } from '../../src/gen/envoy/config/listener/v3/listener_components.js';
import { RouteConfiguration } from '../../src/gen/envoy/config/route/v3/route.js';
import type { Route } from '../../src/gen/envoy/config/route/v3/route_components.js';
import { HttpConnectionManager } from '../../src/gen/envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.js';
import { Any } from '../../src/gen/google/protobuf/any.js';
import type { ResponseEnvelope } from './frames.js';

export const TYPE = {
  Cluster: 'type.googleapis.com/envoy.config.cluster.v3.Cluster',
  Endpoint: 'type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment',
  Listener: 'type.googleapis.com/envoy.config.listener.v3.Listener',
  Route: 'type.googleapis.com/envoy.config.route.v3.RouteConfiguration',
} as const;

export type TypeKey = 'cds' | 'eds' | 'lds' | 'rds';

export const TYPE_KEY: Readonly<Record<string, TypeKey>> = {
  [TYPE.Cluster]: 'cds',
  [TYPE.Endpoint]: 'eds',
  [TYPE.Listener]: 'lds',
  [TYPE.Route]: 'rds',
};

export const TYPE_URL: Readonly<Record<TypeKey, string>> = { cds: TYPE.Cluster, eds: TYPE.Endpoint, lds: TYPE.Listener, rds: TYPE.Route };

const HCM_TYPE = 'type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager';

export interface ResourceInfo {
  /** Names of the resources in the response. */
  readonly names: ReadonlySet<string>;
  /** CDS: clusters of type EDS, sorted (what to ask EDS for). */
  readonly edsClusters: ReadonlyArray<string>;
  /** LDS: route configuration names the listeners' connection managers use (RDS), sorted. */
  readonly routeNames: ReadonlyArray<string>;
  /** RDS: clusters the routes send traffic to, sorted (what a proxyless client asks CDS for). */
  readonly routeClusters: ReadonlyArray<string>;
  /** RDS: virtual host name → its routes' targets and weights; EDS: cluster → `,addr:port,…,`. */
  readonly signatures: ReadonlyMap<string, string>;
}

function hcmRouteNames(filters: ReadonlyArray<Filter>, into: Set<string>): void {
  for (const f of filters) {
    if (f.typedConfig?.typeUrl !== HCM_TYPE) continue;
    const hcm = HttpConnectionManager.decode(f.typedConfig.value);
    if (hcm.rds?.routeConfigName) into.add(hcm.rds.routeConfigName);
  }
}

function routeSignature(routes: ReadonlyArray<Route>): string {
  return routes
    .map((r) => {
      const action = r.route;
      if (!action) return r.directResponse ? `direct:${r.directResponse.status}` : 'other';
      if (action.weightedClusters) return action.weightedClusters.clusters.map((c) => `${c.name}=${c.weight ?? 0}`).join(',');
      return action.cluster ?? 'unknown';
    })
    .join(';');
}

function decodeResources(env: ResponseEnvelope): ResourceInfo {
  const names = new Set<string>();
  const edsClusters: string[] = [];
  const routeNames = new Set<string>();
  const routeClusters = new Set<string>();
  const signatures = new Map<string, string>();
  for (const raw of env.resources) {
    const any = Any.decode(raw);
    switch (env.typeUrl) {
      case TYPE.Cluster: {
        const c = Cluster.decode(any.value);
        names.add(c.name);
        if (c.type === Cluster_DiscoveryType.EDS) edsClusters.push(c.name);
        break;
      }
      case TYPE.Listener: {
        const l = Listener.decode(any.value);
        names.add(l.name);
        const api = l.apiListener?.apiListener;
        if (api?.typeUrl === HCM_TYPE) {
          const hcm = HttpConnectionManager.decode(api.value);
          if (hcm.rds?.routeConfigName) routeNames.add(hcm.rds.routeConfigName);
        }
        for (const chain of l.filterChains) hcmRouteNames(chain.filters, routeNames);
        if (l.defaultFilterChain) hcmRouteNames(l.defaultFilterChain.filters, routeNames);
        break;
      }
      case TYPE.Route: {
        const rc = RouteConfiguration.decode(any.value);
        names.add(rc.name);
        for (const vh of rc.virtualHosts) {
          signatures.set(vh.name, routeSignature(vh.routes));
          for (const r of vh.routes) {
            if (r.route?.cluster) routeClusters.add(r.route.cluster);
            for (const c of r.route?.weightedClusters?.clusters ?? []) routeClusters.add(c.name);
          }
        }
        break;
      }
      case TYPE.Endpoint: {
        const cla = ClusterLoadAssignment.decode(any.value);
        names.add(cla.clusterName);
        const addrs: string[] = [];
        for (const loc of cla.endpoints) {
          for (const lb of loc.lbEndpoints) {
            const sa = lb.endpoint?.address?.socketAddress;
            if (sa) addrs.push(`${sa.address}:${sa.portValue ?? 0}`);
          }
        }
        signatures.set(cla.clusterName, `,${addrs.sort().join(',')},`);
        break;
      }
      default:
        break;
    }
  }
  return {
    names,
    edsClusters: edsClusters.sort(),
    routeNames: [...routeNames].sort(),
    routeClusters: [...routeClusters].sort(),
    signatures,
  };
}

/**
 * Decoded resource information, shared by every client that received the same bytes. Candidates
 * are found by type, resource count and span length, then compared byte for byte (memcmp is far
 * cheaper than hashing megabytes per client, and a mismatch usually stops within a few bytes).
 */
export class ResourceMemo {
  private readonly entries = new Map<string, Array<{ span: Buffer; info: ResourceInfo }>>();
  private count = 0;
  decodes = 0;
  hits = 0;

  constructor(
    private readonly maxEntries = 4_000,
    private readonly maxPerKey = 32,
  ) {}

  info(env: ResponseEnvelope): ResourceInfo {
    const key = `${env.typeUrl}|${env.resources.length}|${env.span.length}`;
    let list = this.entries.get(key);
    if (list) {
      for (let i = list.length - 1; i >= 0; i--) {
        if (list[i].span.equals(env.span)) {
          this.hits++;
          return list[i].info;
        }
      }
    }
    this.decodes++;
    const info = decodeResources(env);
    if (this.count >= this.maxEntries) {
      this.entries.clear();
      this.count = 0;
      list = undefined;
    }
    if (!list) {
      list = [];
      this.entries.set(key, list);
    }
    // Keeps the received buffer alive; bounded by maxEntries.
    list.push({ span: env.span, info });
    this.count++;
    if (list.length > this.maxPerKey) {
      list.shift();
      this.count--;
    }
    return info;
  }
}
