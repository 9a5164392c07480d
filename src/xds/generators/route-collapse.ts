/**
 * Route collapse (DISC_ENABLE_ROUTE_COLLAPSE_OPTIMIZATION): virtual hosts of one route configuration
 * whose routes are identical become one virtual host carrying the union of their domains. Virtual
 * hosts are handled as encoded parts (name, domains, and the routes as encoded bytes), so "identical"
 * means byte-identical encoded routes, which the generators produce for equal route shapes.
 */
import { VirtualHost } from '../../gen/envoy/config/route/v3/route_components.js';
import { encode, msg } from '../envoy/pack.js';

/** A virtual host as the route generators assemble it. */
export interface VirtualHostPart {
  /** Cache key naming every input of the part (name, domains and routes). */
  readonly key: string;
  readonly name: string;
  readonly domains: ReadonlyArray<string>;
  /** The encoded `routes` field (VirtualHost field 3, repeated), tags included. */
  readonly routes: Uint8Array;
}

/**
 * Merges virtual hosts with byte-identical routes: the first of each group keeps its place and name
 * and gets the domains of the others appended, in order, each domain once. Hosts whose routes differ
 * from every other are returned unchanged, in their order. A pure function of its input.
 */
export function collapseVirtualHosts(parts: ReadonlyArray<VirtualHostPart>): VirtualHostPart[] {
  const groups = new Map<string, { first: VirtualHostPart; domains: string[]; seen: Set<string>; merged: boolean }>();
  const order: Array<{ first: VirtualHostPart; domains: string[]; seen: Set<string>; merged: boolean }> = [];
  for (const part of parts) {
    const signature = routesSignature(part.routes);
    const group = groups.get(signature);
    if (!group) {
      const fresh = { first: part, domains: [...part.domains], seen: new Set(part.domains), merged: false };
      groups.set(signature, fresh);
      order.push(fresh);
      continue;
    }
    group.merged = true;
    for (const d of part.domains) {
      if (group.seen.has(d)) continue;
      group.seen.add(d);
      group.domains.push(d);
    }
  }
  return order.map((g) => (g.merged ? { ...g.first, domains: g.domains } : g.first));
}

/**
 * The routes' bytes as a string, to group equal routes. Routes buffers come from the fragment cache
 * and are shared by every table (and every scope) that holds the host, so the string is made once
 * per buffer rather than once per table assembled.
 */
const signatures = new WeakMap<Uint8Array, string>();
function routesSignature(routes: Uint8Array): string {
  let s = signatures.get(routes);
  if (s === undefined) {
    s = Buffer.from(routes.buffer, routes.byteOffset, routes.byteLength).toString('latin1');
    signatures.set(routes, s);
  }
  return s;
}

/** A virtual host's bytes from its part: the same bytes the generated encoder writes for it. */
export function encodeVirtualHost(part: VirtualHostPart): Buffer {
  return Buffer.concat([encode(VirtualHost, msg(VirtualHost, { name: part.name, domains: part.domains })), part.routes]);
}

/** The `routes` field of a virtual host, encoded, for a VirtualHostPart. */
export function encodeRoutesField(routes: Parameters<typeof msg<VirtualHost>>[1]['routes']): Uint8Array {
  return encode(VirtualHost, msg(VirtualHost, { routes }));
}
