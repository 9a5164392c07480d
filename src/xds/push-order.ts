/**
 * The order in which a push visits the connections (docs/adr/0206): those whose subscriptions name
 * a host the change touches first, then the rest. Every connection is still visited and decides for
 * itself what it sends; the order only keeps the clients that get something from waiting behind the
 * generation and comparison work of thousands that get nothing.
 */
import { ChangeSet } from '../model/derived.js';
import type { PushRequest } from '../model/push-request.js';
import { parseClusterName } from './envoy/names.js';

/** Dependency key prefixes that name one host (model/derived.ts Dep). */
const HOST_KEYS = ['svc:', 'vs:', 'dr:', 'ep:'];

/**
 * The hosts a push is about: those of the snapshot's change set (a full push) and the request's
 * endpoint hosts; undefined when the change reaches past named hosts (mesh settings, policies,
 * Sidecars, Gateways, wildcard hosts, every service), so that every connection may be reached.
 */
export function pushedHosts(req: PushRequest, changes: ChangeSet): ReadonlySet<string> | undefined {
  const hosts = new Set(req.edsHosts);
  if (!req.full) return hosts;
  if (changes.all) return undefined;
  for (const key of changes.keys) {
    // a VirtualService's gateway binding goes with its hosts, which are listed too
    if (key === 'version' || key.startsWith('vsgw:')) continue;
    const prefix = HOST_KEYS.find((p) => key.startsWith(p));
    const host = prefix === undefined ? undefined : key.slice(prefix.length);
    if (host === undefined || host.startsWith('*')) return undefined;
    hosts.add(host);
  }
  return hosts;
}

/** The hosts a name set names, and whether some name names no host this can tell. */
export interface NamedHosts {
  readonly hosts: ReadonlySet<string>;
  readonly unknown: boolean;
}

const named = new WeakMap<ReadonlySet<string>, NamedHosts>();

/**
 * The hosts of a (shared, never mutated) name set, computed once per set: cluster names
 * (`outbound|port|subset|host`) and `host:port` names of listeners and route configurations.
 */
export function namedHosts(names: ReadonlySet<string>): NamedHosts {
  let n = named.get(names);
  if (!n) {
    const hosts = new Set<string>();
    let unknown = false;
    for (const name of names) {
      const host = hostOfName(name);
      if (host === undefined) unknown = true;
      else hosts.add(host);
    }
    n = { hosts, unknown };
    named.set(names, n);
  }
  return n;
}

function hostOfName(name: string): string | undefined {
  const cluster = parseClusterName(name);
  if (cluster) return cluster.host;
  const colon = name.lastIndexOf(':');
  if (colon <= 0 || !/^\d+$/.test(name.slice(colon + 1))) return undefined;
  const host = name.slice(0, colon);
  return /[/?=|]/.test(host) ? undefined : host;
}

/** Whether subscriptions with these names (undefined: every resource of the type) may name one of `hosts`. */
export function mayName(names: ReadonlySet<string> | undefined, hosts: ReadonlySet<string>): boolean {
  if (names === undefined) return true;
  const n = namedHosts(names);
  if (n.unknown) return true;
  const [small, large] = n.hosts.size < hosts.size ? [n.hosts, hosts] : [hosts, n.hosts];
  for (const h of small) if (large.has(h)) return true;
  return false;
}
