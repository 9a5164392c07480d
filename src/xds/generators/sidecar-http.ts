/**
 * Outbound HTTP for sidecars (see docs/adr/0014): which route configuration serves which traffic, and
 * the route configurations themselves.
 *
 * Each HTTP port has one listener `0.0.0.0_<port>`. A service with virtual IPs gets a filter chain
 * per VIP in it, matched on the destination address, whose connection manager uses the service's
 * own route configuration `<host>:<port>`; services without a VIP (headless, ServiceEntries without
 * addresses) share the port's route table `<port>` in the listener's unmatched chain, which also
 * holds the catch-all virtual host. A VirtualService edit then changes one small route configuration
 * rather than the table of every service on the port.
 *
 * Virtual hosts' routes are encoded once per set of inputs (route-inputs.ts) and spliced into the
 * route configurations, so a table of a thousand services re-encodes only the hosts that changed;
 * hosts with identical routes are merged when route collapse is on (route-collapse.ts).
 */
import { isIP } from 'node:net';
import { RouteConfiguration } from '../../gen/envoy/config/route/v3/route.js';
import type { Proxy } from '../../model/proxy.js';
import type { PushContext } from '../../model/push-context.js';
import { isHttpProtocol, type Service } from '../../model/service.js';
import { contentHash } from '../../util/hash.js';
import { objectId } from '../../util/identity.js';
import type { EncodedResource, ResourceCache } from '../cache.js';
import type { FilterChainShape } from '../envoy/listeners.js';
import { PASSTHROUGH_CLUSTER } from '../envoy/names.js';
import { encode, msg } from '../envoy/pack.js';
import { buildHttpRoutes, defaultRoute, type RouteContext } from '../envoy/routes.js';
import { TypeUrl } from '../types.js';
import { encodeRepeatedField } from '../wire.js';
import { collapseVirtualHosts, encodeRoutesField, encodeVirtualHost, type VirtualHostPart } from './route-collapse.js';
import { routeInputsKey, sourceMatchKey } from './route-inputs.js';
import { settingsKey, type GenerateInput, type GeneratorSettings } from './types.js';

/** One VIP of a service on an HTTP port: a filter chain of the port's listener. */
export interface VipChain {
  readonly address: string;
  readonly prefixLen: number;
  readonly routeName: string;
}

export interface HttpPortPlan {
  readonly port: number;
  /** Filter chains of services with VIPs, in service order. */
  readonly chains: ReadonlyArray<VipChain>;
  /** Services routed through the shared table `<port>`: no usable VIP. */
  readonly shared: ReadonlyArray<Service>;
}

export interface HttpPlan {
  /** By port, ascending. */
  readonly ports: ReadonlyArray<HttpPortPlan>;
  /** Per-service route configuration name → the service and port it routes. */
  readonly byRouteName: ReadonlyMap<string, { readonly service: Service; readonly port: number }>;
}

/** Name of the route configuration of a service with a VIP on one port. */
export function serviceRouteName(hostname: string, port: number): string {
  return `${hostname}:${port}`;
}

/** A VIP as address and prefix length; undefined for what is not an IP address or CIDR range. */
function parseVip(address: string): { address: string; prefixLen: number } | undefined {
  const slash = address.indexOf('/');
  const ip = slash >= 0 ? address.slice(0, slash) : address;
  const family = isIP(ip);
  if (family === 0) return undefined;
  const max = family === 6 ? 128 : 32;
  const len = slash >= 0 ? Number(address.slice(slash + 1)) : max;
  if (!Number.isInteger(len) || len < 0 || len > max) return undefined;
  return { address: ip, prefixLen: len };
}

/** The HTTP routing plan of a proxy's scope: one per scope and snapshot. */
export function httpPlan(proxy: Proxy, push: PushContext): HttpPlan {
  return push.memoize(`http-plan|${push.routingScopeKey(proxy)}`, () => {
    const ports = new Map<number, { chains: VipChain[]; shared: Service[]; claimed: Set<string> }>();
    const byRouteName = new Map<string, { service: Service; port: number }>();
    for (const svc of push.visibleServices(proxy)) {
      for (const p of svc.ports) {
        if (!isHttpProtocol(p.protocol)) continue;
        let entry = ports.get(p.port);
        if (!entry) {
          entry = { chains: [], shared: [], claimed: new Set() };
          ports.set(p.port, entry);
        }
        const routeName = serviceRouteName(svc.hostname, p.port);
        let chained = false;
        for (const a of push.serviceAddresses(svc, proxy)) {
          const vip = parseVip(a);
          // a VIP another service on this port already has stays with that one (first service wins)
          if (!vip || entry.claimed.has(`${vip.address}/${vip.prefixLen}`)) continue;
          entry.claimed.add(`${vip.address}/${vip.prefixLen}`);
          entry.chains.push({ ...vip, routeName });
          chained = true;
        }
        if (chained) byRouteName.set(routeName, { service: svc, port: p.port });
        else entry.shared.push(svc);
      }
    }
    const sorted = [...ports.entries()].sort(([a], [b]) => a - b).map(([port, e]) => ({ port, chains: e.chains, shared: e.shared }));
    return { ports: sorted, byRouteName };
  });
}

/** Filter-chain match of a VIP chain. */
export function vipChainMatch(chain: VipChain): NonNullable<FilterChainShape['filterChainMatch']> {
  return { prefixRanges: [{ addressPrefix: chain.address, prefixLen: chain.prefixLen }] };
}

/** Domains a client in `ns` may use for a service on `port`: FQDN, short forms in its namespace, VIPs. */
function serviceDomains(svc: Service, addresses: ReadonlyArray<string>, port: number, proxyNs: string, domain: string): string[] {
  const names = [svc.hostname];
  const suffix = `.svc.${domain}`;
  if (svc.hostname.endsWith(suffix)) {
    const base = svc.hostname.slice(0, -suffix.length); // name.ns
    names.push(`${base}.svc`, base);
    if (svc.namespace === proxyNs) names.push(base.slice(0, base.lastIndexOf('.')));
  }
  names.push(...addresses);
  return names.flatMap((n) => [n, `${n}:${port}`]);
}

/** A service's virtual host: its routes encoded once per set of inputs (whatever the domains). */
function serviceVirtualHost(
  svc: Service,
  port: number,
  domains: ReadonlyArray<string>,
  domainsKey: string,
  proxy: Proxy,
  push: PushContext,
  cache: ResourceCache,
  settings: GeneratorSettings,
): VirtualHostPart {
  const vs = push.virtualServiceForHost(proxy.namespace, svc.hostname);
  const inputs = `${svc.hostname}:${port}|${routeInputsKey(push, proxy, svc, vs)}|t${settings.defaultRequestTimeoutMs}`;
  const routes = cache.getOrBuildFragment('rds', `vr|${inputs}`, () => {
    const ctx: RouteContext = {
      push,
      proxy,
      namespace: vs?.namespace ?? svc.namespace,
      listenerPort: port,
      proxyless: false,
      defaultTimeoutMs: settings.defaultRequestTimeoutMs,
      gateway: 'mesh',
    };
    const built = vs ? buildHttpRoutes(`${vs.namespace}.${vs.source.meta.name}`, vs.http, ctx) : [];
    if (built.length === 0) built.push(defaultRoute(svc, port, ctx));
    return encodeRoutesField(built);
  });
  return { key: `vh|${inputs}|${domainsKey}`, name: serviceRouteName(svc.hostname, port), domains, routes };
}

/** The virtual host for traffic no service claims: passthrough or 502, by the mesh's outbound policy. */
function catchAllVirtualHost(push: PushContext, cache: ResourceCache): VirtualHostPart {
  const allowAny = push.mesh.outboundTrafficPolicy === 'ALLOW_ANY';
  const key = `vh-catchall|${allowAny}`;
  const routes = cache.getOrBuildFragment('rds', key, () =>
    encodeRoutesField([
      allowAny
        ? { name: 'allow_any', match: { prefix: '/' }, route: { cluster: PASSTHROUGH_CLUSTER, timeout: { seconds: 0, nanos: 0 } } }
        : { name: 'block_all', match: { prefix: '/' }, directResponse: { status: 502 } },
    ]),
  );
  return { key, name: allowAny ? 'allow_any' : 'block_all', domains: ['*'], routes };
}

/**
 * A RouteConfiguration from virtual hosts: the same bytes the generated encoder writes. A virtual
 * host is encoded once per name, domains and routes buffer (the routes come from the fragment cache,
 * so equal inputs give the same buffer) and shared by every table that holds it: the scopes of a mesh
 * differ in few hosts (those of their own namespace), so a table of thousands of hosts re-encodes only
 * what it does not share.
 */
function assembleRouteConfiguration(name: string, vhosts: ReadonlyArray<VirtualHostPart>, collapse: boolean, cache: ResourceCache): Uint8Array {
  const hosts = collapse ? collapseVirtualHosts(vhosts) : vhosts;
  const encoded = hosts.map((h) => cache.getOrBuildFragment('rds', `vhb|${h.name}|${objectId(h.routes)}|${h.domains.join(',')}`, () => encodeVirtualHost(h)));
  return Buffer.concat([
    encode(RouteConfiguration, msg(RouteConfiguration, { name })),
    encodeRepeatedField(2, encoded),
    encode(RouteConfiguration, msg(RouteConfiguration, { validateClusters: false })),
  ]);
}

function cachedRouteConfiguration(name: string, parts: ReadonlyArray<VirtualHostPart>, cache: ResourceCache, settings: GeneratorSettings): EncodedResource {
  // tables of many hosts have long keys: name them by a hash of their parts' keys
  const joined = parts.map((p) => p.key).join('\n');
  const collapse = settings.routeCollapse;
  const key = `rc|${name}|c${collapse ? 1 : 0}|${joined.length > 512 ? contentHash(joined) : joined}`;
  return cache.getOrBuild('rds', key, () => ({ name, typeUrl: TypeUrl.Route, bytes: assembleRouteConfiguration(name, parts, collapse, cache) }));
}

/**
 * The shared table of a port: services without a VIP, each domain used once, then the catch-all.
 * Its virtual hosts are a list derived service by service, so an edit rebuilds the virtual host of
 * the service it touched and keeps the others; the table itself is then re-assembled.
 */
function sharedRouteTable(port: number, input: GenerateInput): EncodedResource {
  const { proxy, push, cache, settings } = input;
  const scope = `${push.routingScopeKey(proxy)}|${sourceMatchKey(push, proxy)}|${port}|${settingsKey(settings)}`;
  return push.memoize(`rds-shared|${scope}`, () => {
    const parts = push.memoizeList(
      `rds-shared-parts|${scope}`,
      {},
      () => {
        // which domains each service gets: a domain another service already has stays with that one
        const used = new Set<string>();
        const out: Array<{ svc: Service; domains: string[]; key: string }> = [];
        const plan = httpPlan(proxy, push).ports.find((p) => p.port === port);
        for (const svc of plan?.shared ?? []) {
          const all = serviceDomains(svc, push.serviceAddresses(svc, proxy), port, proxy.namespace, push.mesh.domain);
          const domains = all.filter((d) => !used.has(d));
          if (domains.length === 0) continue;
          for (const d of domains) used.add(d);
          out.push({ svc, domains, key: domains.length === all.length ? domainsVariant(svc, proxy) : domains.join(',') });
        }
        return out;
      },
      (x) => `${x.svc.hostname}|${x.svc.namespace}|${objectId(x.svc)}|${x.key}`,
      (x) => [serviceVirtualHost(x.svc, port, x.domains, x.key, proxy, push, cache, settings)],
    );
    return cachedRouteConfiguration(String(port), [...parts, catchAllVirtualHost(push, cache)], cache, settings);
  });
}

/** The route configuration of one service with a VIP: its virtual host, then the catch-all. */
function serviceRouteConfiguration(name: string, service: Service, port: number, input: GenerateInput): EncodedResource {
  const { proxy, push, cache, settings } = input;
  // Scopes share the configuration when its inputs are the same (a service outside their namespaces)
  const vs = push.virtualServiceForHost(proxy.namespace, service.hostname);
  const addresses = push.serviceAddresses(service, proxy);
  const memoKey = `rds-svc|${name}|${routeInputsKey(push, proxy, service, vs)}|${domainsVariant(service, proxy)}|${addresses.join(',')}|${settingsKey(settings)}`;
  return push.memoize(memoKey, () => {
    const domains = serviceDomains(service, addresses, port, proxy.namespace, push.mesh.domain);
    const parts = [serviceVirtualHost(service, port, domains, domainsVariant(service, proxy), proxy, push, cache, settings), catchAllVirtualHost(push, cache)];
    return cachedRouteConfiguration(name, parts, cache, settings);
  });
}

/**
 * What the domains of a service depend on besides the service (in the inputs key), the port and the
 * mesh domain: whether the client is in the service's namespace (then the bare name is one).
 */
function domainsVariant(svc: Service, proxy: Proxy): string {
  return svc.namespace === proxy.namespace ? 'own-ns' : 'other-ns';
}

/**
 * Sidecar RDS: the requested shared tables (`<port>`) and per-service configurations (`<host>:<port>`).
 * Proxies of one scope asking for the same (shared) names get one list, so one response frame; the
 * list is derived name by name (model/derived.ts), so an edit rebuilds the configurations it touched
 * and a new name set of the scope starts from the scope's latest list.
 */
export function sidecarRoutes(input: GenerateInput): ReadonlyArray<EncodedResource> {
  const { proxy, push, names } = input;
  if (input.few && names) return [...names].flatMap((name) => routeConfigurationsFor(name, input));
  const scope = `rds-sidecar|${push.routingScopeKey(proxy)}|${sourceMatchKey(push, proxy)}|${settingsKey(input.settings)}`;
  return push.memoizeList(
    `${scope}|${objectId(names)}`,
    { reuseKey: scope, owner: names },
    () => [...(names ?? [])],
    (name) => name,
    (name) => routeConfigurationsFor(name, input),
  );
}

/** The route configuration of one requested name: a shared table (`<port>`) or a service's (`<host>:<port>`). */
function routeConfigurationsFor(name: string, input: GenerateInput): EncodedResource[] {
  const plan = httpPlan(input.proxy, input.push);
  const port = /^\d+$/.test(name) ? Number(name) : NaN;
  if (Number.isInteger(port)) return [sharedRouteTable(port, input)];
  const target = plan.byRouteName.get(name);
  return target ? [serviceRouteConfiguration(name, target.service, target.port, input)] : [];
}
