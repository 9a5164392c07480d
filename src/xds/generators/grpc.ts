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
import { routeInputsKey } from './route-inputs.js';
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

function listeners(input: GenerateInput): EncodedResource[] {
  const { proxy, push, cache, names } = input;
  const out: EncodedResource[] = [];
  for (const name of names ?? []) {
    const listening = parseServerListenerName(name);
    if (listening) {
      out.push(serverListener(name, listening, input));
      continue;
    }
    if (!parseTarget(name, push, proxy)) continue;
    out.push(cache.getOrBuild('lds', `gl|${name}`, () => ({ name, typeUrl: TypeUrl.Listener, bytes: encode(Listener, buildApiListener(name, name)) })));
  }
  return out;
}

function routes({ proxy, push, cache, names, settings }: GenerateInput): EncodedResource[] {
  const out: EncodedResource[] = [];
  for (const name of names ?? []) {
    const target = parseTarget(name, push, proxy);
    if (!target) continue;
    const vs = push.virtualServiceForHost(proxy.namespace, target.service.hostname);
    // Keyed by what the routes read (service, VirtualService, destinations and their rules), so an
    // edit elsewhere in the mesh reuses the encoded routes.
    const key = `gr|${name}|${routeInputsKey(push, proxy, target.service, vs)}|t${settings.defaultRequestTimeoutMs}`;
    out.push(
      cache.getOrBuild('rds', key, () => {
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
      }),
    );
  }
  return out;
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
