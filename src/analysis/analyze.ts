/**
 * Runs the analyzers over one snapshot and groups the findings by object. Pure: the same input
 * gives the same findings, in a stable order (by code, then path, then message).
 */
import type { DestinationRule, ServiceEntry } from '../config/spec-types.js';
import { hostMatches, resolveHost, visibleTo } from '../model/host.js';
import { PushContext } from '../model/push-context.js';
import { parseProtocol, type Service } from '../model/service.js';
import { annotationsAnalyzer } from './analyzers/annotations.js';
import { conflictingDestinationRulesAnalyzer, destinationRuleSubsetsAnalyzer, destinationRuleTlsAnalyzer } from './analyzers/destination-rule.js';
import { envoyFilterAnalyzer } from './analyzers/envoy-filter.js';
import { gatewayConflictsAnalyzer, gatewayCredentialsAnalyzer, gatewaySelectorAnalyzer, gatewayServicePortsAnalyzer } from './analyzers/gateway.js';
import { injectionAnalyzer } from './analyzers/injection.js';
import { authorizationPolicyAnalyzer, ineffectiveSelectorAnalyzer, telemetryAnalyzer } from './analyzers/policies.js';
import { serviceEntryAddressesAnalyzer, serviceEntryPortsAnalyzer, serviceProtocolsAnalyzer } from './analyzers/service-entry.js';
import { sidecarSelectorsAnalyzer } from './analyzers/sidecar.js';
import { applicationUidAnalyzer, deploymentServicesAnalyzer, servicePortNamesAnalyzer } from './analyzers/workloads.js';
import { virtualServiceDestinationsAnalyzer, virtualServiceGatewaysAnalyzer, virtualServiceHostsAnalyzer, virtualServiceRoutesAnalyzer } from './analyzers/virtual-service.js';
import { objectRef, type AnalysisContext, type AnalysisInput, type AnalysisMessage, type Analyzer, type Finding } from './types.js';

/** Every analyzer, in the order they run. */
export const ANALYZERS: ReadonlyArray<Analyzer> = Object.freeze([
  virtualServiceGatewaysAnalyzer,
  virtualServiceDestinationsAnalyzer,
  virtualServiceRoutesAnalyzer,
  virtualServiceHostsAnalyzer,
  gatewaySelectorAnalyzer,
  gatewayCredentialsAnalyzer,
  gatewayConflictsAnalyzer,
  gatewayServicePortsAnalyzer,
  conflictingDestinationRulesAnalyzer,
  destinationRuleTlsAnalyzer,
  destinationRuleSubsetsAnalyzer,
  serviceEntryPortsAnalyzer,
  serviceEntryAddressesAnalyzer,
  serviceProtocolsAnalyzer,
  sidecarSelectorsAnalyzer,
  authorizationPolicyAnalyzer,
  telemetryAnalyzer,
  envoyFilterAnalyzer,
  ineffectiveSelectorAnalyzer,
  annotationsAnalyzer,
  injectionAnalyzer,
  servicePortNamesAnalyzer,
  deploymentServicesAnalyzer,
  applicationUidAnalyzer,
]);

export interface AnalysisResult {
  /** All findings, ordered by object then code. */
  readonly findings: ReadonlyArray<Finding>;
  /** Findings by object (`Kind/namespace/name`); objects without findings are absent. */
  readonly byObject: ReadonlyMap<string, ReadonlyArray<AnalysisMessage>>;
}

/** The services the analysis knows: of the registries, and of every ServiceEntry (files have no registry). */
function knownServices(input: AnalysisInput): Service[] {
  const out = input.services.filter((s) => s.registry !== 'ServiceEntry');
  for (const se of input.configs.list<ServiceEntry>('ServiceEntry')) {
    const ports = (se.spec.ports ?? []).map((p) => ({ name: p.name, port: p.number, protocol: parseProtocol(p.protocol) }));
    for (const h of se.spec.hosts ?? []) {
      out.push({
        hostname: resolveHost(h, se.meta.namespace, input.mesh.domain),
        namespace: se.meta.namespace,
        name: se.meta.name,
        ports,
        addresses: se.spec.addresses ?? [],
        resolution: 'ClientSideLB',
        meshExternal: (se.spec.location ?? 'MESH_EXTERNAL') === 'MESH_EXTERNAL',
        ...(se.spec.exportTo ? { exportTo: se.spec.exportTo } : {}),
        labels: {},
        serviceAccounts: [],
        clusterId: input.mesh.clusterId,
        registry: 'ServiceEntry',
        creationTime: 0,
      });
    }
  }
  return out;
}

/** The lookups the analyzers share, built once from the input. */
export function analysisContext(input: AnalysisInput): AnalysisContext {
  const services = knownServices(input);
  const exact = new Map<string, Service[]>();
  const wildcards: Service[] = [];
  for (const s of services) {
    if (s.hostname.startsWith('*')) wildcards.push(s);
    else {
      const list = exact.get(s.hostname);
      if (list) list.push(s);
      else exact.set(s.hostname, [s]);
    }
  }
  const visible = (s: Service, viewer: string | undefined): boolean =>
    viewer === undefined || visibleTo(s.exportTo ?? input.mesh.defaultServiceExportTo, s.namespace, viewer);
  let push: PushContext | undefined;
  const namespaceOfHost = (hostname: string): string | undefined => {
    const direct = exact.get(hostname);
    if (direct) return direct[0].namespace;
    const wild = wildcards.find((w) => hostMatches(w.hostname, hostname));
    if (wild) return wild.namespace;
    const m = /^[^.]+\.([^.]+)\.svc\./.exec(hostname);
    return m ? m[1] : undefined;
  };
  return {
    hostKnown: (hostname, viewer) =>
      (exact.get(hostname) ?? []).some((s) => visible(s, viewer)) || wildcards.some((w) => hostMatches(w.hostname, hostname) && visible(w, viewer)),
    servicesOf: (hostname) => exact.get(hostname) ?? [],
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
