/**
 * Runs the analyzers over one snapshot and groups the findings by object. Pure: the same input
 * gives the same findings, in a stable order (by code, then path, then message).
 */
import type { DestinationRule } from '../config/spec-types.js';
import { hostMatches, resolveHost } from '../model/host.js';
import type { ServiceEntry } from '../config/spec-types.js';
import { PushContext } from '../model/push-context.js';
import { conflictingDestinationRulesAnalyzer } from './analyzers/destination-rule.js';
import { gatewaySelectorAnalyzer } from './analyzers/gateway.js';
import { serviceEntryPortsAnalyzer } from './analyzers/service-entry.js';
import { virtualServiceDestinationsAnalyzer, virtualServiceGatewaysAnalyzer } from './analyzers/virtual-service.js';
import { objectRef, type AnalysisContext, type AnalysisInput, type AnalysisMessage, type Analyzer, type Finding } from './types.js';

/** Every analyzer, in the order they run. */
export const ANALYZERS: ReadonlyArray<Analyzer> = Object.freeze([
  virtualServiceGatewaysAnalyzer,
  virtualServiceDestinationsAnalyzer,
  gatewaySelectorAnalyzer,
  conflictingDestinationRulesAnalyzer,
  serviceEntryPortsAnalyzer,
]);

export interface AnalysisResult {
  /** All findings, ordered by object then code. */
  readonly findings: ReadonlyArray<Finding>;
  /** Findings by object (`Kind/namespace/name`); objects without findings are absent. */
  readonly byObject: ReadonlyMap<string, ReadonlyArray<AnalysisMessage>>;
}

/** The lookups the analyzers share, built once from the input. */
export function analysisContext(input: AnalysisInput): AnalysisContext {
  const exact = new Map<string, string>();
  const wildcards: Array<{ host: string; namespace: string }> = [];
  const addHost = (host: string, namespace: string): void => {
    if (host.startsWith('*')) wildcards.push({ host, namespace });
    else if (!exact.has(host)) exact.set(host, namespace);
  };
  for (const s of input.services) addHost(s.hostname, s.namespace);
  // ServiceEntries count even when no registry turned them into services (files only).
  for (const se of input.configs.list<ServiceEntry>('ServiceEntry')) {
    for (const h of se.spec.hosts) addHost(resolveHost(h, se.meta.namespace, input.mesh.domain), se.meta.namespace);
  }
  let push: PushContext | undefined;
  const namespaceOfHost = (hostname: string): string | undefined => {
    const direct = exact.get(hostname);
    if (direct !== undefined) return direct;
    const wild = wildcards.find((w) => hostMatches(w.host, hostname));
    if (wild) return wild.namespace;
    const m = /^[^.]+\.([^.]+)\.svc\./.exec(hostname);
    return m ? m[1] : undefined;
  };
  return {
    hostKnown: (hostname) => exact.has(hostname) || wildcards.some((w) => hostMatches(w.host, hostname)),
    namespaceOfHost,
    destinationRule(viewerNamespace, hostname) {
      push ??= PushContext.build({ version: 'analysis', configs: input.configs, services: input.services, mesh: input.mesh });
      const dr = push.destinationRule({ namespace: viewerNamespace, labels: {} }, { hostname, namespace: namespaceOfHost(hostname) ?? viewerNamespace });
      if (!dr) return undefined;
      const spec = dr.spec as DestinationRule;
      return { namespace: dr.source.meta.namespace, name: dr.source.meta.name, subsets: (spec.subsets ?? []).map((s) => s.name) };
    },
  };
}

const byMessage = (a: AnalysisMessage, b: AnalysisMessage): number =>
  a.code.localeCompare(b.code) || (a.path ?? '').localeCompare(b.path ?? '') || a.message.localeCompare(b.message);

/** Runs `analyzers` (default: all) over the input. */
export function analyze(input: AnalysisInput, analyzers: ReadonlyArray<Analyzer> = ANALYZERS): AnalysisResult {
  const ctx = analysisContext(input);
  const grouped = new Map<string, AnalysisMessage[]>();
  for (const analyzer of analyzers) {
    for (const f of analyzer.analyze(input, ctx)) {
      const key = objectRef(f.kind, f.namespace, f.name);
      const message: AnalysisMessage = { code: f.code, level: f.level, message: f.message, ...(f.path ? { path: f.path } : {}) };
      const list = grouped.get(key);
      if (list) list.push(message);
      else grouped.set(key, [message]);
    }
  }
  const keys = [...grouped.keys()].sort();
  const byObject = new Map<string, ReadonlyArray<AnalysisMessage>>();
  const findings: Finding[] = [];
  for (const key of keys) {
    const messages = (grouped.get(key) ?? []).sort(byMessage);
    // One analyzer may reach the same finding twice (e.g. a route and its mirror); keep one.
    const unique = messages.filter((m, i) => i === 0 || byMessage(m, messages[i - 1]) !== 0);
    byObject.set(key, Object.freeze(unique));
    const [kind, namespace, name] = splitRef(key);
    for (const m of unique) findings.push({ kind, namespace, name, ...m });
  }
  return { findings, byObject };
}

/** `Kind/namespace/name` → its parts (namespace '' for cluster-scoped objects). */
export function splitRef(ref: string): [kind: string, namespace: string, name: string] {
  const a = ref.indexOf('/');
  const b = ref.indexOf('/', a + 1);
  return [ref.slice(0, a), ref.slice(a + 1, b), ref.slice(b + 1)];
}
