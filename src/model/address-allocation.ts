/**
 * Automatic addresses for hosts declared without one (docs/adr/0050).
 *
 * A ServiceEntry without `addresses` (not a wildcard host, resolution other than NONE) gets one
 * IPv4 address per hostname from the class E range 240.240.0.0/16, which is never routed on a
 * network. Sidecars whose agent resolves mesh hostnames itself (node metadata DNS_CAPTURE and
 * DNS_AUTO_ALLOCATE, as the public API's DNS proxying defines them) receive these addresses: their
 * applications reach such a host at its address, so the sidecar routes it by address like a service
 * with a VIP — its own route configuration (ADR 0014) and TCP listener — and learns the names from
 * the name table (NDS).
 *
 * The address of a host is stable for as long as the host exists: a slot derived from a hash of the
 * hostname, the next free one on a collision, and an address once given is kept. Addresses that
 * services declare themselves are never handed out.
 */
import type { Service } from './service.js';

export const AUTO_ADDRESS_PREFIX = '240.240.';
/** Slots 1 … 65534 of 240.240.0.0/16 (neither .0.0 nor .255.255). */
const SLOTS = 65534;

/** Whether a service gets an automatic address: a ServiceEntry host without addresses that clients resolve. */
export function needsAutoAddress(s: Service): boolean {
  return s.registry === 'ServiceEntry' && s.addresses.length === 0 && !s.hostname.startsWith('*') && s.resolution !== 'Passthrough';
}

function slotAddress(slot: number): string {
  return `${AUTO_ADDRESS_PREFIX}${slot >>> 8}.${slot & 255}`;
}

/** FNV-1a, 32 bits. */
function hash(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/**
 * Addresses by hostname for every service that needs one, keeping those of `previous` for hosts that
 * still need one. Returns `previous` itself when nothing changed (identity marks "no change").
 * Gives up (leaves hosts without an address) only when all 65,534 slots are in use.
 */
export function allocateAddresses(services: ReadonlyArray<Service>, previous: ReadonlyMap<string, string>): ReadonlyMap<string, string> {
  const declared = new Set<string>();
  const hosts = new Set<string>();
  for (const s of services) {
    for (const a of s.addresses) declared.add(a.includes('/') ? a.slice(0, a.indexOf('/')) : a);
  }
  for (const s of services) if (needsAutoAddress(s)) hosts.add(s.hostname);
  const next = new Map<string, string>();
  const used = new Set<string>();
  // kept first, so that a new host never takes an address an existing one holds
  for (const h of hosts) {
    const a = previous.get(h);
    if (a && !declared.has(a) && !used.has(a)) {
      next.set(h, a);
      used.add(a);
    }
  }
  for (const h of [...hosts].sort()) {
    if (next.has(h)) continue;
    let slot = (hash(h) % SLOTS) + 1;
    for (let tries = 0; tries < SLOTS; tries++) {
      const a = slotAddress(slot);
      if (!used.has(a) && !declared.has(a)) {
        next.set(h, a);
        used.add(a);
        break;
      }
      slot = (slot % SLOTS) + 1;
    }
  }
  if (next.size === previous.size) {
    let same = true;
    for (const [h, a] of next) {
      if (previous.get(h) !== a) {
        same = false;
        break;
      }
    }
    if (same) return previous;
  }
  return next;
}
