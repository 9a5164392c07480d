/**
 * Cluster-local host patterns of the mesh config (`serviceSettings[].settings.clusterLocal` with
 * `hosts`): `*` matches every host, `*.<suffix>` every host ending in `.<suffix>`, anything else
 * one host exactly (case-insensitive, as DNS names are).
 */
import type { MeshConfig } from '../../gen/config/schemas.js';

/** The host patterns a mesh config declares cluster-local, in order. */
export function clusterLocalHostsOf(mc: Pick<MeshConfig, 'serviceSettings'>): string[] {
  const out: string[] = [];
  for (const s of mc.serviceSettings ?? []) if (s.settings?.clusterLocal) for (const h of s.hosts ?? []) out.push(h);
  return out;
}

/** A predicate telling whether a hostname matches one of the patterns. */
export function clusterLocalMatcher(patterns: ReadonlyArray<string>): (host: string) => boolean {
  const exact = new Set<string>();
  const suffixes: string[] = [];
  let all = false;
  for (const p of patterns) {
    const lower = p.trim().toLowerCase();
    if (lower === '*') all = true;
    else if (lower.startsWith('*.')) suffixes.push(lower.slice(1));
    else if (lower) exact.add(lower);
  }
  return (host) => {
    if (all) return true;
    const h = host.toLowerCase();
    return exact.has(h) || suffixes.some((s) => h.endsWith(s));
  };
}
