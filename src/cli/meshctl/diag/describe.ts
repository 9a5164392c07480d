/**
 * `meshctl x describe pod|service`: what applies to a workload and what its traffic does, as data
 * (the command formats it). From the API server: the Services selecting the pod, per Service the
 * DestinationRule clients in its namespace get (subsets, which the pod is in, load balancing, client
 * TLS), the VirtualServices routing its host (routes with matches, destinations and weights), the
 * Gateways exposing it and the Gateways the pod itself serves, the inbound mutual TLS its
 * PeerAuthentications require and the AuthorizationPolicies selecting it (the model's own policy
 * index, so the same answer the daemon computes). From meshd over the xDS debug channel, when
 * reachable: whether the proxy is connected and synced, and the authorization its configuration
 * enforces (the RBAC rows of ./authz.ts over meshd's config dump of it).
 */
import type { V1Pod, V1Service } from '@kubernetes/client-node';
import type { DestinationRule, Gateway, HTTPMatchRequest, HTTPRoute, StringMatch, TrafficPolicy, VirtualService } from '../../../gen/config/schemas.js';
import type { ConfigObject, ConfigStore } from '../../../config/types.js';
import type { KubeClient } from '../../../kube/client.js';
import type { KubeObject } from '../../../kube/types.js';
import { PROXY_CONTAINER } from '../../../inject/names.js';
import { hostMatches, hostSpecificity, resolveHost, visibleTo } from '../../../model/host.js';
import type { MeshSettings } from '../../../model/mesh-settings.js';
import { PolicyIndex } from '../../../model/policy/index.js';
import { labelsMatch } from '../../../model/service.js';
import { CliError } from '../../runner.js';
import { readCluster } from '../analyze/cluster.js';
import { authzRows } from './authz.js';
import { parseConfigDump } from './config-dump.js';
import type { PodRef } from './flags.js';
import { resolvePod } from './pods.js';
import { queryDebug, resolveTargets, type XdsConnectFlags } from './xds-client.js';

type Pod = V1Pod & KubeObject;
type Svc = V1Service & KubeObject;

export interface RouteSummary {
  readonly kind: 'http' | 'tcp' | 'tls';
  readonly name: string;
  /** Readable matches (`uri prefix /v2`, `header x-canary=true` …), empty for a catch-all. */
  readonly matches: string[];
  readonly destinations: Array<{ readonly host: string; readonly subset: string; readonly port?: number; readonly weight?: number }>;
  /** Timeout, retries, fault, mirror, rewrite, redirect, direct response, as set. */
  readonly extras: string[];
}

export interface VirtualServiceSummary {
  readonly name: string;
  readonly namespace: string;
  readonly gateways: string[];
  readonly routes: RouteSummary[];
}

export interface DestinationRuleSummary {
  readonly name: string;
  readonly namespace: string;
  readonly host: string;
  readonly subsets: Array<{ readonly name: string; readonly labels: Readonly<Record<string, string>>; readonly hasPod: boolean }>;
  readonly policy: string[];
}

export interface ServiceSummary {
  readonly name: string;
  readonly namespace: string;
  readonly hostname: string;
  readonly ports: Array<{ readonly name: string; readonly port: number; readonly targetPort: string; readonly protocol: string }>;
  readonly destinationRule?: DestinationRuleSummary;
  /** Client TLS toward the service, per the DestinationRule or auto mutual TLS. */
  readonly clientTls: string;
  readonly virtualServices: VirtualServiceSummary[];
  /** VirtualServices bound to gateways whose routes reach this service. */
  readonly ingress: Array<{ readonly virtualService: string; readonly gateways: string[]; readonly hosts: string[] }>;
}

export interface PeerAuthnSummary {
  readonly mode: string;
  readonly ports: Array<readonly [number, string]>;
  /** The PeerAuthentications in effect: mesh, namespace and workload level. */
  readonly policies: string[];
}

export interface AuthzSummary {
  readonly namespace: string;
  readonly name: string;
  readonly action: string;
  readonly dryRun: boolean;
  readonly rules: number;
}

export interface LiveSummary {
  /** The meshd the proxy is connected to, with per-type sync state. */
  readonly meshd?: string;
  readonly sync?: Record<string, string>;
  /** The authorization meshd's configuration for it enforces: `ACTION ns/name` each. */
  readonly enforced?: string[];
  /** Why meshd could not tell (unreachable, or the proxy is not connected). */
  readonly error?: string;
  /** No meshd answered at all. */
  readonly unreachable?: boolean;
}

export interface WorkloadDescription {
  readonly pod?: {
    readonly name: string;
    readonly namespace: string;
    readonly labels: Readonly<Record<string, string>>;
    readonly serviceAccount: string;
    readonly phase: string;
    readonly inMesh: boolean;
    readonly ports: string[];
  };
  /** For `describe service`: the pods it selects. */
  readonly pods?: string[];
  readonly services: ServiceSummary[];
  /** Gateways whose selector picks this pod (it serves them). */
  readonly servesGateways: string[];
  readonly peerAuthentication?: PeerAuthnSummary;
  readonly authorization: AuthzSummary[];
  readonly warnings: string[];
  readonly live?: LiveSummary;
}

export interface DescribeInput {
  readonly client: () => Promise<KubeClient>;
  readonly ref: PodRef;
  readonly mesh: (meshConfigText: string | undefined) => Promise<MeshSettings>;
  readonly meshNamespace: string;
  /** meshd over the xDS debug channel; absent to skip the live part. */
  readonly xds?: XdsConnectFlags;
  readonly ignoreUnmeshed: boolean;
  readonly signal?: AbortSignal;
}

const ofKind = <S>(objects: readonly ConfigObject[], kind: string): Array<ConfigObject<S>> => objects.filter((o) => o.meta.gvk.kind === kind) as Array<ConfigObject<S>>;

function staticStore(objects: readonly ConfigObject[]): ConfigStore {
  return {
    list: <S>(kind: string) => ofKind<S>(objects, kind),
    get: <S>(kind: string, namespace: string, name: string) => ofKind<S>(objects, kind).find((o) => o.meta.namespace === namespace && o.meta.name === name),
    onEvent: () => () => undefined,
    onChange: () => () => undefined,
    hasSynced: () => true,
  };
}

function stringMatch(m: StringMatch | undefined): string {
  if (!m) return '*';
  const x = m as { exact?: string; prefix?: string; regex?: string };
  if (x.exact !== undefined) return x.exact;
  if (x.prefix !== undefined) return `${x.prefix}*`;
  if (x.regex !== undefined) return `~${x.regex}`;
  return '*';
}

function matchText(m: HTTPMatchRequest): string {
  const parts: string[] = [];
  if (m.uri) parts.push(`uri ${stringMatch(m.uri)}`);
  if (m.method) parts.push(`method ${stringMatch(m.method)}`);
  if (m.authority) parts.push(`authority ${stringMatch(m.authority)}`);
  for (const [k, v] of Object.entries(m.headers ?? {})) parts.push(`header ${k}=${stringMatch(v)}`);
  for (const [k, v] of Object.entries(m.queryParams ?? {})) parts.push(`query ${k}=${stringMatch(v)}`);
  if (m.port) parts.push(`port ${m.port}`);
  if (m.sourceLabels) parts.push(`from ${Object.entries(m.sourceLabels).map(([k, v]) => `${k}=${v}`).join(',')}`);
  if (m.gateways) parts.push(`gateways ${m.gateways.join(',')}`);
  return parts.join(' and ') || 'any';
}

function httpRoute(r: HTTPRoute, vsNs: string, domain: string): RouteSummary {
  const extras: string[] = [];
  if (r.timeout) extras.push(`timeout ${r.timeout}`);
  if (r.retries) extras.push(`retries ${r.retries.attempts ?? 0}${r.retries.perTryTimeout ? ` × ${r.retries.perTryTimeout}` : ''}${r.retries.retryOn ? ` on ${r.retries.retryOn}` : ''}`);
  if (r.fault?.delay) extras.push('fault delay');
  if (r.fault?.abort) extras.push('fault abort');
  if (r.mirror) extras.push(`mirror ${resolveHost(r.mirror.host, vsNs, domain)}`);
  if (r.rewrite) extras.push(`rewrite${r.rewrite.uri ? ` uri ${r.rewrite.uri}` : ''}${r.rewrite.authority ? ` authority ${r.rewrite.authority}` : ''}`);
  if (r.redirect) extras.push('redirect');
  if (r.directResponse) extras.push(`direct response ${r.directResponse.status}`);
  return {
    kind: 'http',
    name: r.name ?? '',
    matches: (r.match ?? []).map(matchText),
    destinations: (r.route ?? []).map((d) => ({ host: resolveHost(d.destination.host, vsNs, domain), subset: d.destination.subset ?? '', port: d.destination.port?.number, weight: d.weight })),
    extras,
  };
}

function vsSummary(o: ConfigObject<VirtualService>, domain: string): VirtualServiceSummary {
  const ns = o.meta.namespace;
  const routes: RouteSummary[] = [
    ...(o.spec.http ?? []).map((r) => httpRoute(r, ns, domain)),
    ...(o.spec.tls ?? []).map((r) => ({
      kind: 'tls' as const,
      name: '',
      matches: (r.match ?? []).map((m) => `sni ${(m.sniHosts ?? []).join(',')}${m.port ? ` port ${m.port}` : ''}`),
      destinations: (r.route ?? []).map((d) => ({ host: resolveHost(d.destination.host, ns, domain), subset: d.destination.subset ?? '', port: d.destination.port?.number, weight: d.weight })),
      extras: [],
    })),
    ...(o.spec.tcp ?? []).map((r) => ({
      kind: 'tcp' as const,
      name: '',
      matches: (r.match ?? []).map((m) => [m.port ? `port ${m.port}` : '', m.destinationSubnets ? `to ${m.destinationSubnets.join(',')}` : ''].filter(Boolean).join(' and ') || 'any'),
      destinations: (r.route ?? []).map((d) => ({ host: resolveHost(d.destination.host, ns, domain), subset: d.destination.subset ?? '', port: d.destination.port?.number, weight: d.weight })),
      extras: [],
    })),
  ];
  return { name: o.meta.name, namespace: ns, gateways: o.spec.gateways ?? [], routes };
}

function policyText(p: TrafficPolicy | undefined): string[] {
  if (!p) return [];
  const out: string[] = [];
  const lb = p.loadBalancer as { simple?: string; consistentHash?: unknown } | undefined;
  if (lb?.simple) out.push(`load balancer ${lb.simple}`);
  if (lb?.consistentHash) out.push('load balancer consistent hash');
  if (p.connectionPool) out.push('connection pool limits');
  if (p.outlierDetection) out.push(`outlier detection${p.outlierDetection.consecutive5xxErrors !== undefined ? ` after ${p.outlierDetection.consecutive5xxErrors} 5xx` : ''}`);
  if (p.tls?.mode) out.push(`tls ${p.tls.mode}`);
  for (const pl of p.portLevelSettings ?? []) if (pl.tls?.mode) out.push(`port ${pl.port?.number ?? '?'} tls ${pl.tls.mode}`);
  return out;
}

/** The DestinationRule clients in `viewerNs` use for `hostname`: their namespace, the service's, then the root namespace; most specific host. */
function destinationRuleFor(drs: ReadonlyArray<ConfigObject<DestinationRule>>, hostname: string, serviceNs: string, viewerNs: string, mesh: MeshSettings): ConfigObject<DestinationRule> | undefined {
  for (const ns of [...new Set([viewerNs, serviceNs, mesh.rootNamespace])]) {
    const candidates = drs
      .filter((d) => d.meta.namespace === ns && !d.spec.workloadSelector && hostMatches(resolveHost(d.spec.host, ns, mesh.domain), hostname))
      .filter((d) => visibleTo(d.spec.exportTo && d.spec.exportTo.length > 0 ? d.spec.exportTo : mesh.defaultDestinationRuleExportTo, ns, viewerNs))
      .sort((a, b) => hostSpecificity(resolveHost(b.spec.host, ns, mesh.domain)) - hostSpecificity(resolveHost(a.spec.host, ns, mesh.domain)));
    if (candidates[0]) return candidates[0];
  }
  return undefined;
}

function serviceSummary(svc: Svc, objects: readonly ConfigObject[], mesh: MeshSettings, podLabels: Readonly<Record<string, string>> | undefined, podInMesh: boolean): ServiceSummary {
  const ns = svc.metadata?.namespace ?? '';
  const name = svc.metadata?.name ?? '';
  const hostname = `${name}.${ns}.svc.${mesh.domain}`;
  const drObj = destinationRuleFor(ofKind<DestinationRule>(objects, 'DestinationRule'), hostname, ns, ns, mesh);
  const destinationRule = drObj
    ? {
        name: drObj.meta.name,
        namespace: drObj.meta.namespace,
        host: drObj.spec.host,
        subsets: (drObj.spec.subsets ?? []).map((s) => ({ name: s.name, labels: s.labels ?? {}, hasPod: podLabels !== undefined && labelsMatch(s.labels ?? {}, podLabels) })),
        policy: policyText(drObj.spec.trafficPolicy),
      }
    : undefined;
  const tlsMode = drObj?.spec.trafficPolicy?.tls?.mode;
  const clientTls = tlsMode ? `${tlsMode} (DestinationRule ${drObj.meta.namespace}/${drObj.meta.name})` : mesh.enableAutoMtls ? (podInMesh ? 'MESH_MUTUAL (auto mutual TLS)' : 'plaintext (auto mutual TLS: no sidecar)') : 'plaintext (no DestinationRule sets TLS)';
  const vss = ofKind<VirtualService>(objects, 'VirtualService');
  const routesHost = (o: ConfigObject<VirtualService>): boolean => (o.spec.hosts ?? []).some((h) => hostMatches(resolveHost(h, o.meta.namespace, mesh.domain), hostname));
  const isMesh = (o: ConfigObject<VirtualService>): boolean => !o.spec.gateways || o.spec.gateways.length === 0 || o.spec.gateways.includes('mesh');
  const virtualServices = vss.filter((o) => isMesh(o) && routesHost(o)).map((o) => vsSummary(o, mesh.domain));
  const ingress = vss
    .filter((o) => !isMesh(o) || (o.spec.gateways ?? []).some((g) => g !== 'mesh'))
    .map((o) => vsSummary(o, mesh.domain))
    .filter((v) => v.routes.some((r) => r.destinations.some((d) => d.host === hostname)))
    .map((v) => {
      const o = vss.find((x) => x.meta.namespace === v.namespace && x.meta.name === v.name)!;
      return { virtualService: `${v.namespace}/${v.name}`, gateways: v.gateways.filter((g) => g !== 'mesh').map((g) => (g.includes('/') ? g : `${v.namespace}/${g}`)), hosts: o.spec.hosts ?? [] };
    });
  return {
    name,
    namespace: ns,
    hostname,
    ports: (svc.spec?.ports ?? []).map((p) => ({ name: p.name ?? '', port: p.port, targetPort: String(p.targetPort ?? p.port), protocol: p.appProtocol ?? p.protocol ?? 'TCP' })),
    destinationRule,
    clientTls,
    virtualServices,
    ingress,
  };
}

const selects = (svc: Svc, labels: Readonly<Record<string, string>>): boolean => {
  const sel = svc.spec?.selector;
  return sel !== undefined && Object.keys(sel).length > 0 && labelsMatch(sel, labels);
};

async function live(input: DescribeInput, client: () => Promise<KubeClient>, proxyId: string): Promise<LiveSummary> {
  if (!input.xds) return {};
  try {
    const targets = await resolveTargets(input.xds, client);
    const sync = await queryDebug<Array<{ workload: string; controlPlane: string; watches?: Record<string, { status?: string }> }>>(input.xds, targets, 'syncz', {}, client);
    const failures = sync.filter((r) => r.body === undefined).map((r) => `meshd ${r.target.name}: ${r.error}`);
    for (const r of sync) {
      const entry = r.body?.find((e) => e.workload === proxyId);
      if (!entry) continue;
      const state = Object.fromEntries(Object.entries(entry.watches ?? {}).map(([type, w]) => [type, w.status ?? '']));
      const dump = await queryDebug(input.xds, [r.target], 'config_dump', { proxyID: proxyId, format: 'envoy' }, client);
      let enforced: string[] | undefined;
      if (dump[0].body !== undefined) {
        const rows = authzRows(parseConfigDump(JSON.stringify(dump[0].body), `meshd's config dump of ${proxyId}`));
        enforced = [...new Set(rows.map((x) => `${x.action}${x.mode === 'dry-run' ? ' (dry-run)' : ''} ${x.policy || `(no rule applies on its ${x.protocol} chains: denies all)`}`))];
      }
      return { meshd: r.target.name, sync: state, enforced, ...(dump[0].error ? { error: `config dump: ${dump[0].error}` } : {}) };
    }
    if (failures.length === sync.length) return { error: failures.join('; '), unreachable: true };
    return { error: `proxy ${proxyId} is connected to no meshd${failures.length > 0 ? ` (${failures.join('; ')})` : ''}` };
  } catch (err) {
    return { error: (err as Error).message, unreachable: true };
  }
}

export async function describeWorkload(input: DescribeInput): Promise<WorkloadDescription> {
  const kube = await input.client();
  const warnings: string[] = [];
  const ref = input.ref;
  let pod: Pod | undefined;
  let service: Svc | undefined;
  let pods: Pod[] = [];
  if (ref.type === 'service') {
    service = await kube.find<Svc>({ apiVersion: 'v1', kind: 'Service', namespace: ref.namespace, name: ref.name }, input.signal);
    if (!service) throw new CliError(`service ${ref.namespace}/${ref.name} not found`);
    const sel = service.spec?.selector;
    if (sel && Object.keys(sel).length > 0) {
      pods = (await kube.list<Pod>('v1', 'Pod', { namespace: ref.namespace, labelSelector: Object.entries(sel).map(([k, v]) => `${k}=${v}`).join(','), signal: input.signal })).items;
    } else warnings.push(`service ${ref.namespace}/${ref.name} has no selector: its endpoints are managed elsewhere`);
    pod = pods.find((p) => p.status?.phase === 'Running') ?? pods[0];
    if (!pod) warnings.push(`service ${ref.namespace}/${ref.name} selects no pods`);
  } else {
    pod = (await resolvePod(kube, ref)) as Pod;
  }

  const view = await readCluster(kube, { meshNamespace: input.meshNamespace, meshConfigMapName: 'mesh', domain: 'cluster.local', signal: input.signal });
  const mesh = await input.mesh(view.meshConfig?.text);
  for (const r of view.rejected) warnings.push(`${r.kind} ${r.namespace}/${r.name} is refused by meshd and has no effect: ${r.issues.map((i) => (i.path ? `${i.path}: ${i.message}` : i.message)).join('; ')}`);
  const ns = pod?.metadata?.namespace ?? ref.namespace;
  const labels = pod?.metadata?.labels ?? {};
  const inMesh = pod !== undefined && (pod.spec?.containers ?? []).some((c) => c.name === PROXY_CONTAINER);
  if (pod && !inMesh && !input.ignoreUnmeshed) warnings.push(`pod ${pod.metadata?.name}.${ns} has no ${PROXY_CONTAINER} container: it is not in the mesh, so no policy or route below is enforced for it`);

  const allServices = await kube.list<Svc>('v1', 'Service', { namespace: ns, signal: input.signal });
  const services = service ? [service] : allServices.items.filter((s) => selects(s, labels));
  if (!service && pod && services.length === 0) warnings.push(`no Service selects pod ${pod.metadata?.name}.${ns}: no mesh route leads to it`);

  const policies = new PolicyIndex({ configs: staticStore(view.objects), mesh });
  const workload = { namespace: ns, labels };
  const mtls = pod ? policies.mtlsFor(workload) : undefined;
  const level = (p: ConfigObject<{ selector?: { matchLabels?: Record<string, string> } }>): number => (p.meta.namespace === mesh.rootNamespace && p.meta.namespace !== ns ? 0 : p.spec.selector?.matchLabels ? 2 : 1);
  const paObjects = ofKind<{ selector?: { matchLabels?: Record<string, string> } }>(view.objects, 'PeerAuthentication').filter(
    (p) =>
      (p.meta.namespace === mesh.rootNamespace && !p.spec.selector?.matchLabels) ||
      (p.meta.namespace === ns && (!p.spec.selector?.matchLabels || Object.keys(p.spec.selector.matchLabels).length === 0 || labelsMatch(p.spec.selector.matchLabels, labels))),
  );
  const authz = pod ? policies.authzFor(workload).policies : [];
  const gateways = ofKind<Gateway>(view.objects, 'Gateway').filter((g) => pod && g.spec.selector && Object.keys(g.spec.selector).length > 0 && labelsMatch(g.spec.selector, labels));

  const podName = pod?.metadata?.name ?? '';
  return {
    pod: pod
      ? {
          name: podName,
          namespace: ns,
          labels,
          serviceAccount: pod.spec?.serviceAccountName ?? 'default',
          phase: pod.status?.phase ?? 'Unknown',
          inMesh,
          ports: (pod.spec?.containers ?? []).flatMap((c) => (c.ports ?? []).map((p) => `${p.containerPort}/${p.protocol ?? 'TCP'} (${c.name})`)),
        }
      : undefined,
    pods: service ? pods.map((p) => p.metadata?.name ?? '').sort() : undefined,
    services: services.map((s) => serviceSummary(s, view.objects, mesh, pod ? labels : undefined, inMesh)),
    servesGateways: gateways.map((g) => `${g.meta.namespace}/${g.meta.name}`),
    peerAuthentication: mtls ? { mode: mtls.mode, ports: mtls.ports.map(([p, m]) => [p, m] as const), policies: [...paObjects].sort((a, b) => level(a) - level(b)).map((p) => `${p.meta.namespace}/${p.meta.name}`) } : undefined,
    authorization: authz.map((p) => ({ namespace: p.namespace, name: p.name, action: p.action, dryRun: p.dryRun, rules: p.rules.length })),
    warnings,
    live: pod && inMesh ? await live(input, input.client, `${podName}.${ns}`) : undefined,
  };
}
