/**
 * Conflicts between config objects that the snapshot resolves silently (one object wins), counted
 * for the disc_vservice_dup_domain and disc_destrule_subsets gauges (docs/adr/0175). Pure functions
 * of the config store; the gauges compute them when scraped, once per snapshot (src/model/mesh-model.ts).
 */
import { CONFIG_KINDS } from '../config/kinds.js';
import type { DestinationRule, VirtualService } from '../config/spec-types.js';
import type { ConfigObject, ConfigStore } from '../config/types.js';
import { resolveHost } from './host.js';

const byCreation = (a: ConfigObject, b: ConfigObject): number =>
  (a.meta.creationTimestamp ?? '').localeCompare(b.meta.creationTimestamp ?? '') || `${a.meta.namespace}/${a.meta.name}`.localeCompare(`${b.meta.namespace}/${b.meta.name}`);

/**
 * VirtualServices that claim a domain (host) another, older VirtualService of the same namespace
 * already claims for the same gateway (`mesh` when none is named): routing for that domain comes
 * from one of them only.
 */
export function virtualServicesWithDuplicateDomains(configs: ConfigStore, domain: string): number {
  const claimed = new Set<string>();
  let count = 0;
  for (const vs of [...configs.list<VirtualService>('VirtualService')].sort(byCreation)) {
    const ns = vs.meta.namespace;
    const gateways = vs.spec.gateways && vs.spec.gateways.length > 0 ? vs.spec.gateways : ['mesh'];
    let duplicate = false;
    for (const g of gateways) {
      for (const h of vs.spec.hosts ?? []) {
        const key = `${ns}\u0000${g}\u0000${resolveHost(h, ns, domain)}`;
        if (claimed.has(key)) duplicate = true;
        else claimed.add(key);
      }
    }
    if (duplicate) count++;
  }
  return count;
}

/**
 * Subset names defined by more than one DestinationRule for the same host (and namespace): only one
 * rule applies to a host, so the other definitions are dead. Counts each repeated definition.
 */
export function duplicateDestinationRuleSubsets(configs: ConfigStore, domain: string): number {
  const seen = new Set<string>();
  let count = 0;
  for (const dr of [...configs.list<DestinationRule>('DestinationRule')].sort(byCreation)) {
    const ns = dr.meta.namespace;
    const host = resolveHost(dr.spec.host ?? '', ns, domain);
    const selector = JSON.stringify(dr.spec.workloadSelector?.matchLabels ?? {});
    for (const s of new Set((dr.spec.subsets ?? []).map((x) => x.name))) {
      const key = `${ns}\u0000${selector}\u0000${host}\u0000${s}`;
      if (seen.has(key)) count++;
      else seen.add(key);
    }
  }
  return count;
}

/** Objects in the store per config kind, keyed by type URL (`group/version/Kind`). */
export function typeInstances(configs: ConfigStore): ReadonlyMap<string, number> {
  const out = new Map<string, number>();
  for (const def of CONFIG_KINDS) out.set(`${def.apiVersion}/${def.kind}`, configs.list(def.kind).length);
  return out;
}
