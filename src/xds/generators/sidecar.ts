/**
 * Generators for Envoy sidecars: the capture listeners (outbound 15001, inbound 15006), one outbound
 * listener per service port, route tables per HTTP port, outbound clusters of the visible services,
 * inbound clusters of the proxy's own workload, and the passthrough and blackhole clusters.
 */
import { Cluster } from '../../gen/envoy/config/cluster/v3/cluster.js';
import { Listener } from '../../gen/envoy/config/listener/v3/listener.js';
import { RouteConfiguration } from '../../gen/envoy/config/route/v3/route.js';
import type { VirtualHost } from '../../gen/envoy/config/route/v3/route_components.js';
import type { EndpointIndex } from '../../model/endpoint-index.js';
import type { Proxy } from '../../model/proxy.js';
import type { PushContext } from '../../model/push-context.js';
import { isHttpProtocol, type Protocol, type Service } from '../../model/service.js';
import { objectId } from '../../util/identity.js';
import type { EncodedResource } from '../cache.js';
import { buildBlackholeCluster, buildInboundCluster, buildPassthroughCluster } from '../envoy/clusters.js';
import { buildListener, hcmFilter, originalDstListenerFilter, tcpProxyFilter, tlsInspectorListenerFilter, type FilterChainShape } from '../envoy/listeners.js';
import {
  BLACKHOLE_CLUSTER,
  INBOUND_CAPTURE_PORT,
  INBOUND_PASSTHROUGH_CLUSTER,
  OUTBOUND_CAPTURE_PORT,
  PASSTHROUGH_CLUSTER,
  VIRTUAL_INBOUND_LISTENER,
  VIRTUAL_OUTBOUND_LISTENER,
  inboundClusterName,
  outboundClusterName,
} from '../envoy/names.js';
import { encode, msg, type Shape } from '../envoy/pack.js';
import { buildHttpRoutes, defaultRoute, destinationCluster, type RouteContext } from '../envoy/routes.js';
import { TypeUrl } from '../types.js';
import { generateEndpoints, visibleOutboundClusters } from './common.js';
import type { GenerateInput, GeneratorSet, GeneratorSettings } from './types.js';

/** A port of the proxy's own workload, from the endpoints that carry the proxy's IP. */
export interface InboundPort {
  readonly port: number;
  readonly protocol: Protocol;
}

/** The proxy's inbound ports: endpoints at its IP addresses, one entry per target port. */
export function inboundPorts(proxy: Proxy, push: PushContext, endpoints: EndpointIndex): InboundPort[] {
  type Index = Map<string, InboundPort[]>;
  const memo = push.memo.get('instances') as { index: EndpointIndex; byIp: Index } | undefined;
  let byIp: Index;
  if (memo && memo.index === endpoints) byIp = memo.byIp;
  else {
    byIp = new Map();
    for (const svc of push.services) {
      for (const e of endpoints.get(svc.hostname).endpoints) {
        const port = svc.ports.find((p) => p.name === e.servicePortName);
        if (!port) continue;
        const list = byIp.get(e.address) ?? [];
        if (!list.some((p) => p.port === e.port)) list.push({ port: e.port, protocol: port.protocol });
        byIp.set(e.address, list);
      }
    }
    push.memo.set('instances', { index: endpoints, byIp });
  }
  const out: InboundPort[] = [];
  for (const ip of proxy.ipAddresses) for (const p of byIp.get(ip) ?? []) if (!out.some((o) => o.port === p.port)) out.push(p);
  return out.sort((a, b) => a.port - b.port);
}

function clusters({ proxy, push, endpoints, cache, settings }: GenerateInput): ReadonlyArray<EncodedResource> {
  // Proxies of one scope with the same inbound ports share one list (and so skip unchanged pushes cheaply).
  const inbound = inboundPorts(proxy, push, endpoints);
  const memoKey = `cds-sidecar|${push.scopeKey(proxy)}|${inbound.map((p) => `${p.port}/${p.protocol}`).join(',')}`;
  const memo = push.memo.get(memoKey) as { index: EndpointIndex; list: ReadonlyArray<EncodedResource> } | undefined;
  if (memo && memo.index === endpoints) return memo.list;
  const out = [...visibleOutboundClusters(proxy, push, endpoints, cache, false)];
  const meshId = objectId(push.mesh);
  const fixed = [
    { name: BLACKHOLE_CLUSTER, build: () => buildBlackholeCluster(push.mesh) },
    { name: PASSTHROUGH_CLUSTER, build: () => buildPassthroughCluster(PASSTHROUGH_CLUSTER, push.mesh) },
    { name: INBOUND_PASSTHROUGH_CLUSTER, build: () => buildPassthroughCluster(INBOUND_PASSTHROUGH_CLUSTER, push.mesh) },
  ];
  for (const f of fixed) {
    out.push(cache.getOrBuild('cds', `cf|${f.name}|m${meshId}`, () => ({ name: f.name, typeUrl: TypeUrl.Cluster, bytes: encode(Cluster, f.build()) })));
  }
  for (const p of inbound) {
    const name = inboundClusterName(p.port);
    out.push(
      cache.getOrBuild('cds', `ci|${name}|m${meshId}|${settings.inboundPassthrough}`, () => ({
        name,
        typeUrl: TypeUrl.Cluster,
        bytes: encode(Cluster, buildInboundCluster(p.port, settings.inboundPassthrough, push.mesh)),
      })),
    );
  }
  push.memo.set(memoKey, { index: endpoints, list: out });
  return out;
}

function hcmOptions(settings: GeneratorSettings, statPrefix: string): { statPrefix: string; proxyless: false; useRemoteAddress: boolean; http10: boolean; delayedCloseTimeoutMs: number } {
  return {
    statPrefix,
    proxyless: false,
    useRemoteAddress: settings.sidecarUseRemoteAddress,
    http10: settings.http10,
    delayedCloseTimeoutMs: settings.httpDelayedCloseTimeoutMs,
  };
}

/** TCP destination for a service port: the first matching tcp route of its VirtualService, else the port's cluster. */
function tcpTarget(service: Service, port: number, proxy: Proxy, push: PushContext): string | Array<{ name: string; weight: number }> {
  const vs = push.virtualServiceForHost(proxy.namespace, service.hostname);
  const route = vs?.spec.tcp?.find((r) => !r.match || r.match.length === 0 || r.match.some((m) => !m.port || m.port === port));
  if (vs && route?.route && route.route.length > 0) {
    const ctx = routeContext(proxy, push, vs.namespace, port, 'mesh');
    const dests = route.route
      .map((d) => ({ name: destinationCluster(d.destination, ctx), weight: d.weight ?? (route.route!.length === 1 ? 100 : 0) }))
      .filter((d): d is { name: string; weight: number } => d.name !== undefined && d.weight > 0);
    if (dests.length === 1) return dests[0].name;
    if (dests.length > 1) return dests;
  }
  return outboundClusterName(port, '', service.hostname);
}

/** Filter chains for the VirtualService TLS routes of a service port, matched by SNI (first claim wins). */
function tlsRouteChains(service: Service, port: number, proxy: Proxy, push: PushContext, claimed: Set<string>): FilterChainShape[] {
  const vs = push.virtualServiceForHost(proxy.namespace, service.hostname);
  const out: FilterChainShape[] = [];
  for (const route of vs?.spec.tls ?? []) {
    const ctx = routeContext(proxy, push, vs!.namespace, port, 'mesh');
    const dests = (route.route ?? [])
      .map((d) => ({ name: destinationCluster(d.destination, ctx), weight: d.weight ?? (route.route!.length === 1 ? 100 : 0) }))
      .filter((d): d is { name: string; weight: number } => d.name !== undefined && d.weight > 0);
    if (dests.length === 0) continue;
    for (const m of route.match ?? []) {
      if (m.port && m.port !== port) continue;
      const names = (m.sniHosts ?? []).filter((h) => !claimed.has(h));
      if (names.length === 0) continue;
      names.forEach((h) => claimed.add(h));
      out.push({ filterChainMatch: { serverNames: names }, filters: [tcpProxyFilter(service.hostname, dests.length === 1 ? dests[0].name : dests)] });
    }
  }
  return out;
}

function routeContext(proxy: Proxy, push: PushContext, namespace: string, port: number, gateway: string, timeoutMs = 0): RouteContext {
  return { push, proxy, namespace, listenerPort: port, proxyless: false, defaultTimeoutMs: timeoutMs, gateway };
}

function outboundListeners(input: GenerateInput): ReadonlyArray<EncodedResource> {
  const { proxy, push, cache, settings } = input;
  const memoKey = `lds-out|${push.scopeKey(proxy)}`;
  const memo = push.memo.get(memoKey) as ReadonlyArray<EncodedResource> | undefined;
  if (memo) return memo;
  const httpPorts = new Set<number>();
  const tcp = new Map<string, { address: string; port: number; chains: FilterChainShape[]; tls: boolean; sni: Set<string> }>();
  for (const svc of push.visibleServices(proxy)) {
    for (const p of svc.ports) {
      if (isHttpProtocol(p.protocol)) {
        httpPorts.add(p.port);
        continue;
      }
      const address = svc.addresses[0] ?? '0.0.0.0';
      const name = `${address}_${p.port}`;
      const tls = p.protocol === 'TLS' || p.protocol === 'HTTPS';
      const entry = tcp.get(name) ?? { address, port: p.port, chains: [], tls, sni: new Set<string>() };
      if (tls) {
        // TLS routes of the service's VirtualService pick destinations by SNI
        for (const chain of tlsRouteChains(svc, p.port, proxy, push, entry.sni)) entry.chains.push(chain);
      }
      if (tls && address === '0.0.0.0') {
        // services without a VIP share the port: pick by SNI
        if (!entry.sni.has(svc.hostname)) {
          entry.sni.add(svc.hostname);
          entry.chains.push({ filterChainMatch: { serverNames: [svc.hostname] }, filters: [tcpProxyFilter(svc.hostname, tcpTarget(svc, p.port, proxy, push))] });
        }
      } else if (!entry.chains.some((c) => !c.filterChainMatch)) {
        entry.chains.push({ filters: [tcpProxyFilter(`outbound|${p.port}||${svc.hostname}`, tcpTarget(svc, p.port, proxy, push))] });
      }
      tcp.set(name, entry);
    }
  }
  const out: EncodedResource[] = [];
  for (const port of [...httpPorts].sort((a, b) => a - b)) {
    const name = `0.0.0.0_${port}`;
    tcp.delete(name); // an HTTP listener owns the wildcard address on its port
    out.push(
      cache.getOrBuild('lds', `lo|${name}|${JSON.stringify(settings)}`, () => ({
        name,
        typeUrl: TypeUrl.Listener,
        bytes: encode(
          Listener,
          buildListener({
            name,
            address: '0.0.0.0',
            port,
            bindToPort: false,
            direction: 'outbound',
            filterChains: [{ filters: [hcmFilter({ ...hcmOptions(settings, `outbound_0.0.0.0_${port}`), rds: String(port) })] }],
          }),
        ),
      })),
    );
  }
  for (const [name, l] of [...tcp.entries()].sort(([a], [b]) => a.localeCompare(b))) {
    const listener = buildListener({
      name,
      address: l.address,
      port: l.port,
      bindToPort: false,
      direction: 'outbound',
      filterChains: l.chains,
      listenerFilters: l.tls && l.chains.some((c) => c.filterChainMatch) ? [tlsInspectorListenerFilter()] : [],
    });
    out.push(cache.getOrBuild('lds', `lt|${name}|p${push.version}|${push.scopeKey(proxy)}`, () => ({ name, typeUrl: TypeUrl.Listener, bytes: encode(Listener, listener) })));
  }
  push.memo.set(memoKey, out);
  return out;
}

function listeners(input: GenerateInput): EncodedResource[] {
  const { proxy, push, endpoints, cache, settings } = input;
  const out: EncodedResource[] = [];
  const policy = push.mesh.outboundTrafficPolicy;
  out.push(
    cache.getOrBuild('lds', `lv-out|${policy}`, () => ({
      name: VIRTUAL_OUTBOUND_LISTENER,
      typeUrl: TypeUrl.Listener,
      bytes: encode(
        Listener,
        buildListener({
          name: VIRTUAL_OUTBOUND_LISTENER,
          address: '0.0.0.0',
          port: OUTBOUND_CAPTURE_PORT,
          useOriginalDst: true,
          direction: 'outbound',
          filterChains: [],
          defaultFilterChain: {
            name: 'virtualOutbound-catchall-tcp',
            filters: [tcpProxyFilter(policy === 'ALLOW_ANY' ? PASSTHROUGH_CLUSTER : BLACKHOLE_CLUSTER, policy === 'ALLOW_ANY' ? PASSTHROUGH_CLUSTER : BLACKHOLE_CLUSTER)],
          },
        }),
      ),
    })),
  );
  const inbound = inboundPorts(proxy, push, endpoints);
  out.push(
    cache.getOrBuild('lds', `lv-in|${JSON.stringify(inbound)}|${JSON.stringify(settings)}`, () => ({
      name: VIRTUAL_INBOUND_LISTENER,
      typeUrl: TypeUrl.Listener,
      bytes: encode(
        Listener,
        buildListener({
          name: VIRTUAL_INBOUND_LISTENER,
          address: '0.0.0.0',
          port: INBOUND_CAPTURE_PORT,
          direction: 'inbound',
          listenerFilters: [originalDstListenerFilter()],
          filterChains: inbound.map((p) => {
            const cluster = inboundClusterName(p.port);
            const filters = isHttpProtocol(p.protocol)
              ? [
                  hcmFilter({
                    ...hcmOptions(settings, cluster),
                    routeConfig: {
                      name: cluster,
                      virtualHosts: [
                        { name: `inbound|http|${p.port}`, domains: ['*'], routes: [{ name: 'default', match: { prefix: '/' }, route: { cluster, timeout: { seconds: 0, nanos: 0 } } }] },
                      ],
                    },
                  }),
                ]
              : [tcpProxyFilter(cluster, cluster)];
            return { name: cluster, filterChainMatch: { destinationPort: p.port }, filters };
          }),
          defaultFilterChain: { name: 'virtualInbound-catchall', filters: [tcpProxyFilter(INBOUND_PASSTHROUGH_CLUSTER, INBOUND_PASSTHROUGH_CLUSTER)] },
        }),
      ),
    })),
  );
  out.push(...outboundListeners(input));
  return out;
}

/** Domains a client in `ns` may use for a service on `port`: FQDN, short forms in its namespace, VIPs. */
function serviceDomains(svc: Service, port: number, proxyNs: string, domain: string): string[] {
  const names = [svc.hostname];
  const suffix = `.svc.${domain}`;
  if (svc.hostname.endsWith(suffix)) {
    const base = svc.hostname.slice(0, -suffix.length); // name.ns
    names.push(`${base}.svc`, base);
    if (svc.namespace === proxyNs) names.push(base.slice(0, base.lastIndexOf('.')));
  }
  names.push(...svc.addresses);
  return names.flatMap((n) => [n, `${n}:${port}`]);
}

function routes({ proxy, push, cache, names, settings }: GenerateInput): ReadonlyArray<EncodedResource> {
  // Proxies of one scope asking for the same (shared) names get one list, so one response frame.
  const memoKey = `rds-sidecar|${push.scopeKey(proxy)}|${objectId(names)}|${push.usesSourceMatch ? JSON.stringify(proxy.labels) : ''}`;
  const memo = push.memo.get(memoKey) as ReadonlyArray<EncodedResource> | undefined;
  if (memo) return memo;
  const out: EncodedResource[] = [];
  for (const name of names ?? []) {
    const port = Number(name);
    if (!Number.isInteger(port)) continue;
    const key = `sr|${name}|p${push.version}|${push.scopeKey(proxy)}|${push.usesSourceMatch ? JSON.stringify(proxy.labels) : ''}`;
    out.push(
      cache.getOrBuild('rds', key, () => {
        const used = new Set<string>();
        const vhosts: Shape<VirtualHost>[] = [];
        for (const svc of push.visibleServices(proxy)) {
          if (!svc.ports.some((p) => p.port === port && isHttpProtocol(p.protocol))) continue;
          const domains = serviceDomains(svc, port, proxy.namespace, push.mesh.domain).filter((d) => !used.has(d));
          if (domains.length === 0) continue;
          for (const d of domains) used.add(d);
          const vs = push.virtualServiceForHost(proxy.namespace, svc.hostname);
          const ctx = routeContext(proxy, push, vs?.namespace ?? svc.namespace, port, 'mesh', settings.defaultRequestTimeoutMs);
          const r = vs ? buildHttpRoutes(`${vs.namespace}.${vs.source.meta.name}`, vs.http, ctx) : [];
          if (r.length === 0) r.push(defaultRoute(svc, port, ctx));
          vhosts.push({ name: `${svc.hostname}:${port}`, domains, routes: r });
        }
        const allowAny = push.mesh.outboundTrafficPolicy === 'ALLOW_ANY';
        vhosts.push({
          name: allowAny ? 'allow_any' : 'block_all',
          domains: ['*'],
          routes: [
            allowAny
              ? { name: 'allow_any', match: { prefix: '/' }, route: { cluster: PASSTHROUGH_CLUSTER, timeout: { seconds: 0, nanos: 0 } } }
              : { name: 'block_all', match: { prefix: '/' }, directResponse: { status: 502 } },
          ],
        });
        const rc = msg(RouteConfiguration, { name, virtualHosts: vhosts, validateClusters: false });
        return { name, typeUrl: TypeUrl.Route, bytes: encode(RouteConfiguration, rc) };
      }),
    );
  }
  push.memo.set(memoKey, out);
  return out;
}

export const sidecarGenerators: GeneratorSet = {
  [TypeUrl.Cluster]: clusters,
  [TypeUrl.Listener]: listeners,
  [TypeUrl.Route]: routes,
  [TypeUrl.Endpoint]: ({ proxy, push, endpoints, cache, names }) =>
    generateEndpoints(proxy, push, endpoints, cache, names, true, () =>
      visibleOutboundClusters(proxy, push, endpoints, cache, false).map((c) => c.name),
    ),
};
