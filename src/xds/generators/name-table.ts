/**
 * The name table (NDS, docs/adr/0187): what a sidecar's agent answers DNS with when it captures
 * the application's DNS (node metadata DNS_CAPTURE=true). One resource with the empty name
 * (proto/mesh/v1/dns/name_table.proto): every hostname the proxy may reach (the same visible
 * services as its clusters and routes: exportTo, then the Sidecar's egress hosts) with its addresses
 * — those its service declares, else, for a proxy that also says DNS_AUTO_ALLOCATE=true, the
 * automatic one (model/address-allocation.ts) — and the shorter names a pod of its namespace
 * resolves to it. Hosts without an address (wildcards, headless services, resolution NONE) are left
 * out, so the agent forwards their queries.
 *
 * The table is built once per routing scope of a snapshot (namespace, Sidecar, automatic addresses
 * or not) and encoded once: every proxy of the scope gets the same bytes, and a snapshot whose
 * changes touch no service and no Sidecar carries the encoded table over (ADR 0051), so a
 * VirtualService edit sends no name table at all.
 */
import { isIP } from 'node:net';
import { NameTable, type NameEntry } from '../../gen/mesh/v1/dns/name_table.js';
import type { Proxy } from '../../model/proxy.js';
import type { PushContext } from '../../model/push-context.js';
import { contentHash } from '../../util/hash.js';
import type { EncodedResource } from '../cache.js';
import { TypeUrl } from '../types.js';
import { encodeAny } from '../wire.js';
import type { GenerateInput } from './types.js';

/** The resource name of the one name table a proxy gets. */
export const NAME_TABLE_RESOURCE = '';

/** A declared address as a DNS answer: a single IP (an `/32` or `/128` prefix is one), never a range or the unspecified address. */
function answerable(address: string): string | undefined {
  const slash = address.indexOf('/');
  const ip = slash < 0 ? address : address.slice(0, slash);
  const family = isIP(ip);
  if (family === 0) return undefined;
  if (slash >= 0 && address.slice(slash + 1) !== (family === 4 ? '32' : '128')) return undefined;
  if (ip === '0.0.0.0' || ip === '::') return undefined;
  return ip;
}

/**
 * Names a pod of `namespace` also uses for `hostname` through its search domains
 * (`<namespace>.svc.<domain>`, `svc.<domain>`, `<domain>`): for `name.ns.svc.<domain>`, `name.ns.svc`
 * and `name.ns`, and `name` when `ns` is the pod's own namespace. Other hosts have none.
 */
export function shortNames(hostname: string, namespace: string, domain: string): string[] {
  const suffix = `.svc.${domain}`;
  if (!hostname.endsWith(suffix)) return [];
  const parts = hostname.slice(0, -suffix.length).split('.');
  if (parts.length !== 2 || !parts[0] || !parts[1]) return [];
  const [name, ns] = parts as [string, string];
  const out = [`${name}.${ns}.svc`, `${name}.${ns}`];
  if (ns === namespace) out.push(name);
  return out;
}

function buildTable(proxy: Proxy, push: PushContext): EncodedResource {
  const entries: NameEntry[] = [];
  for (const s of push.visibleServices(proxy)) {
    if (s.hostname.startsWith('*')) continue;
    let addresses = [...new Set(s.addresses.map(answerable).filter((a): a is string => a !== undefined))];
    let autoAllocated = false;
    if (s.addresses.length === 0 && proxy.dnsAutoAllocate) {
      const auto = push.autoAddress(s.hostname);
      if (auto) {
        addresses = [auto];
        autoAllocated = true;
      }
    }
    if (addresses.length === 0) continue;
    entries.push({ hostname: s.hostname, addresses, aliases: shortNames(s.hostname, proxy.namespace, push.mesh.domain), autoAllocated });
  }
  entries.sort((a, b) => (a.hostname < b.hostname ? -1 : a.hostname > b.hostname ? 1 : 0));
  const bytes = NameTable.encode({ entries }).finish();
  return { name: NAME_TABLE_RESOURCE, any: encodeAny(TypeUrl.NameTable, bytes), version: contentHash(bytes) };
}

/** NDS: the name table for a sidecar that captures DNS; nothing for any other proxy. */
export function nameTable({ proxy, push }: GenerateInput): ReadonlyArray<EncodedResource> {
  if (proxy.type !== 'sidecar' || !proxy.dnsCapture) return NONE;
  return push.memoize(`nds|${push.routingScopeKey(proxy)}`, () => Object.freeze([buildTable(proxy, push)]));
}

const NONE: ReadonlyArray<EncodedResource> = Object.freeze([]);
