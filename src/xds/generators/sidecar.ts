/**
 * Generators for Envoy sidecars: the capture listeners (outbound 15001, inbound 15006), one outbound
 * listener per service port, outbound clusters of the visible services, inbound clusters of the
 * proxy's own workload, and the passthrough and blackhole clusters. HTTP routing (per-service route
 * configurations for services with VIPs, a shared table per port) is in sidecar-http.ts.
 */
import { Cluster } from '../../gen/envoy/config/cluster/v3/cluster.js';
import { Listener } from '../../gen/envoy/config/listener/v3/listener.js';
import type { EndpointIndex } from '../../model/endpoint-index.js';
import type { Proxy } from '../../model/proxy.js';
import type { PushContext } from '../../model/push-context.js';
import { isHttpProtocol, type Service } from '../../model/service.js';
import { contentHash } from '../../util/hash.js';
import { objectId } from '../../util/identity.js';
import type { EncodedResource } from '../cache.js';
import { buildBlackholeCluster, buildInboundCluster, buildPassthroughCluster } from '../envoy/clusters.js';
import { buildListener, hcmFilter, tcpProxyFilter, tlsInspectorListenerFilter, type FilterChainShape, type HcmOptions } from '../envoy/listeners.js';
import {
  BLACKHOLE_CLUSTER,
  INBOUND_PASSTHROUGH_CLUSTER,
  OUTBOUND_CAPTURE_PORT,
  PASSTHROUGH_CLUSTER,
  VIRTUAL_INBOUND_LISTENER,
  VIRTUAL_OUTBOUND_LISTENER,
  inboundClusterName,
  outboundClusterName,
} from '../envoy/names.js';
import { encode } from '../envoy/pack.js';
import { destinationCluster, type RouteContext } from '../envoy/routes.js';
import { TypeUrl } from '../types.js';
import { generateEndpoints, visibleOutboundClusters } from './common.js';
import { httpPlan, sidecarRoutes, vipChainMatch } from './sidecar-http.js';
import { NO_AUTHZ } from '../../model/policy/index.js';
import { buildInboundListener, type InboundPort } from './sidecar-inbound.js';
import { workloadJwt } from './request-authn.js';
import { workloadExtAuthz } from './ext-authz.js';
import { settingsKey, type GenerateInput, type GeneratorSet, type GeneratorSettings } from './types.js';
import { secrets } from './secrets.js';
import { nameTable } from './name-table.js';
import { hcmObservability, type ObservabilityChoice } from './observability.js';

export type { InboundPort };

/** The proxy's inbound ports: endpoints at its IP addresses, one entry per target port. */
function inboundIndex(push: PushContext, endpoints: EndpointIndex): { byIp: Map<string, InboundPort[]>; conflicts: Map<string, Set<number>> } {
  return push.memoize('instances', () => {
    const byIp = new Map<string, InboundPort[]>();
    // address -> ports that services target with different protocols (the first service's wins)
    const conflicts = new Map<string, Set<number>>();
    for (const svc of push.services) {
      for (const e of endpoints.get(svc.hostname).endpoints) {
        const port = svc.ports.find((p) => p.name === e.servicePortName);
        if (!port) continue;
        const list = byIp.get(e.address) ?? [];
        const current = list.find((p) => p.port === e.port);
        if (!current) list.push({ port: e.port, protocol: port.protocol });
        else if (current.protocol !== port.protocol) {
          const set = conflicts.get(e.address) ?? new Set<number>();
          set.add(e.port);
          conflicts.set(e.address, set);
        }
        byIp.set(e.address, list);
      }
    }
    return { byIp, conflicts };
  }, endpoints);
}

export function inboundPorts(proxy: Proxy, push: PushContext, endpoints: EndpointIndex): InboundPort[] {
  const { byIp } = inboundIndex(push, endpoints);
  const out: InboundPort[] = [];
  for (const ip of proxy.ipAddresses) for (const p of byIp.get(ip) ?? []) if (!out.some((o) => o.port === p.port)) out.push(p);
  return out.sort((a, b) => a.port - b.port);
}

/**
 * Listener conflicts the sidecar generators resolve silently for a proxy (disc_conflict_*; docs/adr/0175):
 * `inbound`, ports of the proxy that services target with different protocols (the first one's is
 * used); `httpOverCurrentTcp` / `tcpOverCurrentHttp`, wildcard ports where HTTP and TCP services meet
 * (the HTTP listener takes the port; named by which kind of service came first); `tcpOverCurrentTcp`,
 * TCP services dropped because another one already holds their address and port.
 */
export interface ListenerConflicts {
  readonly inbound: number;
  readonly httpOverCurrentTcp: number;
  readonly tcpOverCurrentHttp: number;
  readonly tcpOverCurrentTcp: number;
}

export function listenerConflicts(proxy: Proxy, push: PushContext, endpoints: EndpointIndex): ListenerConflicts {
  const { conflicts } = inboundIndex(push, endpoints);
  const inbound = new Set<number>();
  for (const ip of proxy.ipAddresses) for (const port of conflicts.get(ip) ?? []) inbound.add(port);
  return { inbound: inbound.size, ...outboundTcp(proxy, push).conflicts };
}

function clusters({ proxy, push, endpoints, cache, settings }: GenerateInput): ReadonlyArray<EncodedResource> {
  // Proxies of one scope with the same inbound ports share one list (and so skip unchanged pushes cheaply).
  const inbound = inboundPorts(proxy, push, endpoints);
  const memoKey = `cds-sidecar|${push.scopeKey(proxy)}|${inbound.map((p) => `${p.port}/${p.protocol}`).join(',')}|${settingsKey(settings)}`;
  return push.memoize(memoKey, () => sidecarClusters(inbound, { proxy, push, endpoints, cache, settings }), endpoints);
}

function sidecarClusters(inbound: ReadonlyArray<InboundPort>, { proxy, push, endpoints, cache, settings }: Omit<GenerateInput, 'names'>): ReadonlyArray<EncodedResource> {
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
  return out;
}

function hcmOptions(settings: GeneratorSettings, statPrefix: string, obs: ObservabilityChoice): Omit<HcmOptions, 'routeConfig' | 'leadingFilters'> {
  return {
    statPrefix,
    proxyless: false,
    useRemoteAddress: settings.sidecarUseRemoteAddress,
    http10: settings.http10,
    delayedCloseTimeoutMs: settings.httpDelayedCloseTimeoutMs,
    observability: obs.value,
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
  const { proxy, push } = input;
  // the proxy's trace sampling is part of what the list reads (docs/adr/0176)
  const obs = hcmObservability(proxy, push.mesh, input.settings);
  return push.memoize(`lds-out|${push.routingScopeKey(proxy)}|${settingsKey(input.settings)}|${obs.key}`, () => buildOutboundListeners(input, obs));
}

interface TcpListenerPlan {
  readonly address: string;
  readonly port: number;
  readonly chains: FilterChainShape[];
  readonly tls: boolean;
  readonly sni: Set<string>;
}

/** The non-HTTP outbound listeners of a routing scope (before HTTP listeners take their wildcard ports), and the conflicts met. */
function outboundTcp(proxy: Proxy, push: PushContext): { tcp: ReadonlyMap<string, TcpListenerPlan>; conflicts: Omit<ListenerConflicts, 'inbound'> } {
  return push.memoize(`tcp-plan|${push.routingScopeKey(proxy)}`, () => planOutboundTcp(proxy, push));
}

function planOutboundTcp(proxy: Proxy, push: PushContext): { tcp: ReadonlyMap<string, TcpListenerPlan>; conflicts: Omit<ListenerConflicts, 'inbound'> } {
  const tcp = new Map<string, TcpListenerPlan>();
  /** Which kind of service came first on each port (for the wildcard HTTP/TCP conflicts). */
  const first = new Map<number, 'http' | 'tcp'>();
  let tcpOverCurrentTcp = 0;
  for (const svc of push.visibleServices(proxy)) {
    for (const p of svc.ports) {
      if (isHttpProtocol(p.protocol)) {
        if (!first.has(p.port)) first.set(p.port, 'http');
        continue;
      }
      const address = push.serviceAddresses(svc, proxy)[0] ?? '0.0.0.0';
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
      } else tcpOverCurrentTcp++; // the port's listener already forwards to an earlier service
      if (address === '0.0.0.0' && !first.has(p.port)) first.set(p.port, 'tcp');
      tcp.set(name, entry);
    }
  }
  let httpOverCurrentTcp = 0;
  let tcpOverCurrentHttp = 0;
  for (const { port } of httpPlan(proxy, push).ports) {
    if (!tcp.has(`0.0.0.0_${port}`)) continue;
    if (first.get(port) === 'tcp') httpOverCurrentTcp++;
    else tcpOverCurrentHttp++;
  }
  return { tcp, conflicts: { httpOverCurrentTcp, tcpOverCurrentHttp, tcpOverCurrentTcp } };
}

function buildOutboundListeners({ proxy, push, cache, settings }: GenerateInput, obs: ObservabilityChoice): ReadonlyArray<EncodedResource> {
  const plan = httpPlan(proxy, push);
  const tcp = new Map(outboundTcp(proxy, push).tcp);
  const out: EncodedResource[] = [];
  for (const { port, chains } of plan.ports) {
    const name = `0.0.0.0_${port}`;
    tcp.delete(name); // an HTTP listener owns the wildcard address on its port
    // One stat prefix for every chain of the port: a service with a VIP adds no stats of its own.
    const statPrefix = `outbound_0.0.0.0_${port}`;
    const chainsKey = chains.map((c) => `${c.address}/${c.prefixLen}=${c.routeName}`).join(',');
    out.push(
      cache.getOrBuild('lds', `lo|${name}|${JSON.stringify(settings)}|${obs.key}|${chainsKey.length > 512 ? contentHash(chainsKey) : chainsKey}`, () => ({
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
            filterChains: [
              // services with a VIP: matched on the destination address, each with its own small route configuration
              ...chains.map((c) => ({ filterChainMatch: vipChainMatch(c), filters: [hcmFilter({ ...hcmOptions(settings, statPrefix, obs), rds: c.routeName })] })),
              // everything else on the port: the shared table, routed by Host
              { filters: [hcmFilter({ ...hcmOptions(settings, statPrefix, obs), rds: String(port) })] },
            ],
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
    // keyed by its content: the listener is rebuilt only when what it read changed (lds-out above)
    const bytes = encode(Listener, listener);
    out.push(cache.getOrBuild('lds', `lt|${name}|${contentHash(bytes)}`, () => ({ name, typeUrl: TypeUrl.Listener, bytes })));
  }
  return out;
}

function listeners(input: GenerateInput): ReadonlyArray<EncodedResource> {
  // Proxies of one scope with the same inbound ports share one list, so one response frame.
  const { proxy, push, endpoints } = input;
  const inbound = inboundPorts(proxy, push, endpoints);
  // ... and the same security policy (mutual TLS and authorization: docs/adr/0080)
  const authz = input.settings.authz ? push.policies.authzFor(proxy) : NO_AUTHZ;
  const policy = `${push.policies.mtlsFor(proxy).key}|${authz.key}|${workloadJwt(proxy, push, input.settings).key}|${workloadExtAuthz(proxy, push, input.settings, authz).key}`;
  const memoKey = `lds-sidecar|${push.routingScopeKey(proxy)}|${inbound.map((p) => `${p.port}/${p.protocol}`).join(',')}|${settingsKey(input.settings)}|${policy}|${hcmObservability(proxy, push.mesh, input.settings).key}`;
  return push.memoize(memoKey, () => sidecarListeners(inbound, input), endpoints);
}

function sidecarListeners(inbound: ReadonlyArray<InboundPort>, input: GenerateInput): EncodedResource[] {
  const { push, cache, settings } = input;
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
  const { proxy } = input;
  const mtls = push.policies.mtlsFor(proxy);
  const authz = settings.authz ? push.policies.authzFor(proxy) : NO_AUTHZ;
  const jwt = workloadJwt(proxy, push, settings);
  const extAuthz = workloadExtAuthz(proxy, push, settings, authz);
  const obs = hcmObservability(proxy, push.mesh, settings);
  out.push(
    cache.getOrBuild('lds', `lv-in|${JSON.stringify(inbound)}|${JSON.stringify(settings)}|${obs.key}|${mtls.key}|${authz.key}|${jwt.key}|${extAuthz.key}|m${objectId(push.mesh)}`, () => ({
      name: VIRTUAL_INBOUND_LISTENER,
      typeUrl: TypeUrl.Listener,
      bytes: encode(Listener, buildInboundListener({ ports: inbound, mtls, authz, jwt, extAuthz, mesh: push.mesh, hcm: hcmOptions(settings, '', obs) })),
    })),
  );
  out.push(...outboundListeners(input));
  return out;
}

export const sidecarGenerators: GeneratorSet = {
  [TypeUrl.Cluster]: clusters,
  [TypeUrl.Listener]: listeners,
  [TypeUrl.Route]: sidecarRoutes,
  [TypeUrl.Secret]: secrets,
  [TypeUrl.NameTable]: nameTable,
  [TypeUrl.Endpoint]: ({ proxy, push, endpoints, cache, names, few }) =>
    generateEndpoints(
      proxy,
      push,
      endpoints,
      cache,
      names,
      true,
      () => visibleOutboundClusters(proxy, push, endpoints, cache, false).map((c) => c.name),
      few,
    ),
};
