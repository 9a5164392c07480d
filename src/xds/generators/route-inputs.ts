/**
 * Cache keys for HTTP routes made of what the routes read, rather than of the snapshot version: the
 * service, the VirtualService that applies, and the service and destination rule of every host the
 * routes send to (or mirror to). An edit that touches none of them keeps the encoded routes, so a
 * push after one VirtualService edit re-encodes only the routes of the hosts that VirtualService names.
 */
import type { HTTPRoute } from '../../config/spec-types.js';
import { resolveHost } from '../../model/host.js';
import type { Proxy } from '../../model/proxy.js';
import type { PushContext, ResolvedVirtualService } from '../../model/push-context.js';
import type { Service } from '../../model/service.js';
import { objectId } from '../../util/identity.js';

/** Hosts (resolved in the VirtualService's namespace) that routes send or mirror traffic to. */
function destinationHosts(http: ReadonlyArray<HTTPRoute>, namespace: string, domain: string): string[] {
  const hosts = new Set<string>();
  const add = (h: string | undefined): void => {
    if (h) hosts.add(resolveHost(h, namespace, domain));
  };
  for (const r of http) {
    for (const d of r.route ?? []) add(d.destination?.host);
    add(r.mirror?.host);
    for (const m of r.mirrors ?? []) add(m.destination?.host);
  }
  return [...hosts].sort();
}

/** The part of the proxy that routes read: its namespace and labels when some route matches on them. */
export function sourceMatchKey(push: PushContext, proxy: Proxy): string {
  return push.usesSourceMatch ? `${proxy.namespace}|${JSON.stringify(proxy.labels)}` : '';
}

/**
 * A short key naming every input of the routes a proxy gets for `service`: equal keys mean equal
 * routes (for the same port, domains and settings, which callers add). Memoized per snapshot and
 * carried over to later ones while none of its inputs change; `vs` must be the VirtualService of
 * the host as seen from the proxy's namespace (looked up again inside, so that the memo records it).
 */
export function routeInputsKey(push: PushContext, proxy: Proxy, service: Service, vs: ResolvedVirtualService | undefined): string {
  const source = sourceMatchKey(push, proxy);
  return push.memoize(`rin|${proxy.namespace}|${service.hostname}|${objectId(service)}|${objectId(vs?.source)}|${source}`, () => {
    const vs = push.virtualServiceForHost(proxy.namespace, service.hostname);
    const rule = (svc: Service | undefined): number => (svc ? objectId(push.destinationRule(proxy, svc)?.spec) : 0);
    const parts = [`s${objectId(service)}.${rule(service)}`, `m${objectId(push.mesh)}`];
    if (vs) {
      // merged delegate routes are a new array per snapshot; otherwise the source object covers them
      const merged = vs.http !== (vs.spec.http ?? vs.http) || vs.http.length === 0 ? 0 : objectId(vs.http);
      parts.push(`v${objectId(vs.source)}.${merged}`);
      for (const host of destinationHosts(vs.http, vs.namespace, push.mesh.domain)) {
        const svc = push.serviceForHost(host, proxy.namespace);
        parts.push(`${host}=${objectId(svc)}.${rule(svc)}`);
      }
    }
    if (source) parts.push(source);
    return shortKey(parts.join('|'));
  });
}

/** Long keys get a short stand-in, so that the many cache keys built from them stay short. */
const shortKeys = new Map<string, string>();
let nextShortKey = 0;
const SHORT_KEY_LIMIT = 200_000;

function shortKey(long: string): string {
  let k = shortKeys.get(long);
  if (k === undefined) {
    if (shortKeys.size >= SHORT_KEY_LIMIT) shortKeys.clear(); // new ids for everything: only cache misses follow
    k = `k${(nextShortKey++).toString(36)}`;
    shortKeys.set(long, k);
  }
  return k;
}
