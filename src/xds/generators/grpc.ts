/**
 * Generators for proxyless gRPC clients. A client dialing `xds:///host:port` asks for Listener
 * `host:port`; it gets an API listener whose RDS name is the same string, one virtual host for the
 * service, and EDS clusters named by the routes. A server (`xds.NewGRPCServer`) asks for
 * `grpc/server?xds.resource.listening_address=IP:port` and gets a server listener with its workload's
 * mutual TLS and authorization (grpc-server.ts, docs/adr/0103).
 */
import { Listener } from '../../gen/envoy/config/listener/v3/listener.js';
import { RouteConfiguration } from '../../gen/envoy/config/route/v3/route.js';
import type { Proxy } from '../../model/proxy.js';
import type { PushContext } from '../../model/push-context.js';
import type { Service } from '../../model/service.js';
import type { EncodedResource } from '../cache.js';
import { buildApiListener } from '../envoy/listeners.js';
import { encode, msg } from '../envoy/pack.js';
import { buildHttpRoutes, defaultRoute, type RouteContext, type RouteShape } from '../envoy/routes.js';
import { contentHash } from '../../util/hash.js';
import { TypeUrl } from '../types.js';
import { encodeOutboundCluster, generateEndpoints, resolveClusterRef, visibleOutboundClusters } from './common.js';
import { routeInputsKey, sourceMatchKey } from './route-inputs.js';
import { secrets } from './secrets.js';
import { nameTable } from './name-table.js';
import { buildGrpcServerListener, parseServerListenerName, type ListeningAddress } from './grpc-server.js';
import { NO_AUTHZ, mtlsModeForPort } from '../../model/policy/index.js';
import { objectId } from '../../util/identity.js';
import type { GenerateInput, GeneratorSet } from './types.js';

/** `host:port` → the visible service and port, or undefined. */
function parseTarget(name: string, push: PushContext, proxy: Proxy): { service: Service; port: number; host: string } | undefined {
  const colon = name.lastIndexOf(':');
  const host = colon > 0 ? name.slice(0, colon) : name;
  const portText = colon > 0 ? name.slice(colon + 1) : '';
  let service = push.serviceForHost(host, proxy.namespace);
  if (!service && !host.includes('.')) {
    // short names resolve in the client's namespace
    service = push.serviceForHost(`${host}.${proxy.namespace}.svc.${push.mesh.domain}`, proxy.namespace);
  }
  if (!service) return undefined;
  const port = portText ? Number(portText) : service.ports.length === 1 ? service.ports[0].port : NaN;
  if (!service.ports.some((p) => p.port === port)) return undefined;
  return { service, port, host };
}

/**
 * Proxyless clients compare an updated resource with the one they hold by walking the old value's
 * keys only, so an entry added to a map that was empty (a fault override added to a route's
 * typed_per_filter_config) goes unnoticed. Naming each route after a hash of its content makes every
 * content change visible in a field both versions have.
 */
function tagRouteContent(route: RouteShape): RouteShape {
  const { name, ...rest } = route;
  const hash = contentHash(JSON.stringify(rest, (_k, v: unknown) => (Buffer.isBuffer(v) ? v.toString('base64') : v))).slice(0, 8);
  return { ...route, name: `${name ?? 'route'}@${hash}` };
}

/**
 * A server listener (`xds.NewGRPCServer`) under the policies of the proxy's own workload. Servers
 * with the same port mode, authorization policies and trust domains share one encoded listener.
 */
function serverListener(name: string, listening: ListeningAddress, { proxy, push, cache, settings }: GenerateInput): EncodedResource {
  const mode = mtlsModeForPort(push.policies.mtlsFor(proxy), listening.port);
  const authz = settings.authz ? push.policies.authzFor(proxy) : NO_AUTHZ;
  const key = `gs|${name}|${mode}|${authz.key}|m${objectId(push.mesh)}`;
  return cache.getOrBuild('lds', key, () => ({
    name,
    typeUrl: TypeUrl.Listener,
    bytes: encode(Listener, buildGrpcServerListener({ name, listening, mode, authz, mesh: push.mesh })),
  }));
}

/**
 * The resources of a client's name set, one list per set (shared by the clients asking for the same
 * names, docs/adr/0110) and `scope` (what the resources read of the proxy), memoized on the snapshot
 * name by name: a later snapshot hands the same list to every client whose names its changes do not
 * reach, so a push to them is one comparison, and builds the changed resources once for all the
 * clients that asked for them (docs/adr/0206). Delta subscribes (`few`) are built as they come.
 */
function byName(input: GenerateInput, type: string, scope: string, one: (name: string) => EncodedResource | undefined): ReadonlyArray<EncodedResource> {
  const { push, names, few } = input;
  if (!names) return [];
  const build = (name: string): EncodedResource[] => {
    const r = one(name);
    return r ? [r] : [];
  };
  if (few) return [...names].flatMap(build);
  return push.memoizeList(`grpc-${type}|${scope}`, { owner: names }, () => [...names], (name) => name, build);
}

const serverListenerSets = new WeakMap<ReadonlySet<string>, boolean>();

/** Whether a (shared, never mutated) name set names a server listener; once per set. */
function namesServerListener(names: ReadonlySet<string>): boolean {
  let yes = serverListenerSets.get(names);
  if (yes === undefined) {
    yes = [...names].some((name) => parseServerListenerName(name) !== undefined);
    serverListenerSets.set(names, yes);
  }
  return yes;
}

function listeners(input: GenerateInput): ReadonlyArray<EncodedResource> {
  const { proxy, push, cache, names } = input;
  const apiListener = (name: string): EncodedResource | undefined =>
    parseTarget(name, push, proxy) ? cache.getOrBuild('lds', `gl|${name}`, () => ({ name, typeUrl: TypeUrl.Listener, bytes: encode(Listener, buildApiListener(name, name)) })) : undefined;
  // a server listener reads its workload's policies (labels): those name sets are built per client
  if (!names || namesServerListener(names)) {
    const out: EncodedResource[] = [];
    for (const name of names ?? []) {
      const listening = parseServerListenerName(name);
      const r = listening ? serverListener(name, listening, input) : apiListener(name);
      if (r) out.push(r);
    }
    return out;
  }
  // client listeners read the services the client's namespace sees, nothing else of it
  return byName(input, 'lds', proxy.namespace, apiListener);
}

function routes(input: GenerateInput): ReadonlyArray<EncodedResource> {
  const { proxy, push, settings } = input;
  // routes read the client's namespace, its scope's destination rules and, where routes match on
  // them, its labels
  return byName(input, 'rds', `${push.scopeKey(proxy)}|${sourceMatchKey(push, proxy)}|t${settings.defaultRequestTimeoutMs}`, (name) => routeFor(name, input));
}

function routeFor(name: string, { proxy, push, cache, settings }: GenerateInput): EncodedResource | undefined {
  const target = parseTarget(name, push, proxy);
  if (!target) return undefined;
  const vs = push.virtualServiceForHost(proxy.namespace, target.service.hostname);
  // Keyed by what the routes read (service, VirtualService, destinations and their rules), so an
  // edit elsewhere in the mesh reuses the encoded routes.
  const key = `gr|${name}|${routeInputsKey(push, proxy, target.service, vs)}|t${settings.defaultRequestTimeoutMs}`;
  return cache.getOrBuild('rds', key, () => {
    const ctx: RouteContext = {
      push,
      proxy,
      namespace: vs?.namespace ?? target.service.namespace,
      listenerPort: target.port,
      proxyless: true,
      defaultTimeoutMs: settings.defaultRequestTimeoutMs,
      gateway: 'mesh',
    };
    const built = vs ? buildHttpRoutes(`${vs.namespace}.${vs.source.meta.name}`, vs.http, ctx) : [];
    if (built.length === 0) built.push(defaultRoute(target.service, target.port, ctx));
    const routeList = built.map(tagRouteContent);
    const domains = [...new Set([name, target.host, `${target.service.hostname}:${target.port}`, target.service.hostname])];
    const rc = msg(RouteConfiguration, { name, virtualHosts: [{ name, domains, routes: routeList }] });
    return { name, typeUrl: TypeUrl.Route, bytes: encode(RouteConfiguration, rc) };
  });
}

function clusters({ proxy, push, endpoints, cache, names }: GenerateInput): ReadonlyArray<EncodedResource> {
  if (!names) return visibleOutboundClusters(proxy, push, endpoints, cache, true);
  const out: EncodedResource[] = [];
  for (const name of names) {
    const ref = resolveClusterRef(name, push, proxy);
    if (ref) out.push(encodeOutboundCluster(ref, proxy, push, endpoints, cache, true));
  }
  return out;
}

export const grpcGenerators: GeneratorSet = {
  [TypeUrl.Listener]: listeners,
  [TypeUrl.Route]: routes,
  [TypeUrl.Secret]: secrets,
  [TypeUrl.NameTable]: nameTable,
  [TypeUrl.Cluster]: clusters,
  [TypeUrl.Endpoint]: ({ proxy, push, endpoints, cache, names, few }) => generateEndpoints(proxy, push, endpoints, cache, names, false, () => [], few),
};
