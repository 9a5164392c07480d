/** Generation steps shared by all proxy kinds: outbound clusters and endpoint assignments. */
import { Cluster } from '../../gen/envoy/config/cluster/v3/cluster.js';
import { ClusterLoadAssignment } from '../../gen/envoy/config/endpoint/v3/endpoint.js';
import type { Proxy } from '../../model/proxy.js';
import { ownNamespaceCredential, type PushContext, type ResolvedDestinationRule } from '../../model/push-context.js';
import type { EndpointIndex } from '../../model/endpoint-index.js';
import { labelsMatch, localityKey, type Endpoint, type Service, type ServicePort } from '../../model/service.js';
import { mtlsModeForPort } from '../../model/policy/index.js';
import type { TrafficPolicy } from '../../config/spec-types.js';
import { objectId } from '../../util/identity.js';
import type { EncodedResource, ResourceCache } from '../cache.js';
import { buildOutboundCluster, mergePolicy, policyForPort } from '../envoy/clusters.js';
import { buildLoadAssignment } from '../envoy/endpoints.js';
import { outboundClusterName, parseClusterName } from '../envoy/names.js';
import { encode } from '../envoy/pack.js';
import { TypeUrl } from '../types.js';
import { CACERT_SUFFIX } from '../../model/credentials.js';
import { caCredential } from './secrets.js';

export interface ClusterRef {
  readonly name: string;
  readonly service: Service;
  readonly port: ServicePort;
  readonly subset: string;
}

/** The outbound clusters for a service: one per port, plus one per port and subset of its rule. */
export function clusterRefs(service: Service, dr: ResolvedDestinationRule | undefined): ClusterRef[] {
  const out: ClusterRef[] = [];
  for (const port of service.ports) {
    out.push({ name: outboundClusterName(port.port, '', service.hostname), service, port, subset: '' });
    for (const s of dr?.spec.subsets ?? []) {
      if (!s.name) continue;
      out.push({ name: outboundClusterName(port.port, s.name, service.hostname), service, port, subset: s.name });
    }
  }
  return out;
}

/** Resolves a cluster name back to its service and port, as seen by `proxy`. */
export function resolveClusterRef(name: string, push: PushContext, proxy: Proxy): ClusterRef | undefined {
  const parsed = parseClusterName(name);
  if (!parsed || parsed.direction !== 'outbound') return undefined;
  const service = push.serviceForHost(parsed.host, proxy.namespace);
  if (!service) return undefined;
  const port = service.ports.find((p) => p.port === parsed.port);
  if (!port) return undefined;
  if (parsed.subset) {
    const dr = push.destinationRule(proxy, service);
    if (!dr?.spec.subsets?.some((s) => s.name === parsed.subset)) return undefined;
  }
  return { name, service, port, subset: parsed.subset };
}

export function encodeOutboundCluster(
  ref: ClusterRef,
  proxy: Proxy,
  push: PushContext,
  endpoints: EndpointIndex,
  cache: ResourceCache,
  proxyless: boolean,
): EncodedResource {
  const dr = push.destinationRule(proxy, ref.service);
  const dns = ref.service.resolution === 'DNS' || ref.service.resolution === 'DNSRoundRobin';
  const hostEps = dns ? endpoints.get(ref.service.hostname) : undefined;
  const subset = dr?.spec.subsets?.find((s) => s.name === ref.subset);
  const merged = mergePolicy(policyForPort(dr?.spec.trafficPolicy, ref.port.port), subset ? policyForPort(subset.trafficPolicy, ref.port.port) : undefined);
  const credential = proxyless ? KEEP_CREDENTIAL : clientCredential(proxy, push, dr, merged);
  const policy = credential.policy ?? merged;
  const autoMtls = proxyless && proxylessAutoMtls(ref, subset?.labels, policy, push, endpoints);
  const key = `c|${ref.name}|s${objectId(ref.service)}|d${objectId(dr?.spec)}|m${objectId(push.mesh)}|${proxyless ? (autoMtls ? 'gm' : 'g') : 'e'}|${hostEps?.version ?? 0}${credential.key}`;
  // Within one push a cluster is encoded once even when CDS is kept out of the cross-push cache.
  return push.memoize(key, () =>
    cache.getOrBuild('cds', key, () => {
      const cluster = buildOutboundCluster({
        name: ref.name,
        service: ref.service,
        port: ref.port,
        policy,
        mesh: push.mesh,
        proxyless,
        proxylessMeshTls: autoMtls,
        credentialCa: credential.ca,
        inlineEndpoints: hostEps?.endpoints.filter((e) => e.servicePortName === ref.port.name).map((e) => ({ address: e.address, port: e.port })),
      });
      return { name: ref.name, typeUrl: TypeUrl.Cluster, bytes: encode(Cluster, cluster) };
    }),
  );
}

interface CredentialChoice {
  /** The policy to build from when the credential is left out (its `credentialName` removed); undefined keeps it. */
  readonly policy?: TrafficPolicy;
  /** False when the credential is used but has no CA (no `-cacert` Secret, no `ca.crt`). */
  readonly ca?: boolean;
  /** Part of the cluster's cache key: '' (none named), `|ks`/`|ksc` (served over SDS, with the CA), `|kf` (left out). */
  readonly key: string;
}

const KEEP_CREDENTIAL: CredentialChoice = Object.freeze({ key: '' });

/**
 * Whether an Envoy proxy's cluster names a DestinationRule's `credentialName` over SDS (docs/adr/0105,
 * 0152). Gateways: always from their own namespace. Sidecars: only through a rule with a
 * workloadSelector (the public API's rule; such a rule selects workloads of its own namespace). In
 * both cases the Secret must be of the proxy's namespace and not known to be missing (loading is
 * fine: it comes). Otherwise the credential is left out: the rule's certificate files are used, and
 * MUTUAL without them is TLS without a client certificate — never a name that would not be served,
 * whose cluster would never warm. Reading the Secret records it as a dependency, so its arrival or
 * removal rebuilds the cluster.
 */
function clientCredential(proxy: Proxy, push: PushContext, dr: ResolvedDestinationRule | undefined, policy: TrafficPolicy | undefined): CredentialChoice {
  const name = policy?.tls?.credentialName;
  if (!name) return KEEP_CREDENTIAL;
  const mode = policy.tls!.mode;
  if (mode !== 'SIMPLE' && mode !== 'MUTUAL') return KEEP_CREDENTIAL;
  const selected = proxy.type === 'router' || (proxy.type === 'sidecar' && Object.keys(dr?.spec.workloadSelector?.matchLabels ?? {}).length > 0);
  const secret = selected ? ownNamespaceCredential(name, proxy.namespace) : undefined;
  const state = secret !== undefined ? push.credential(proxy.namespace, secret).state : 'missing';
  if (secret !== undefined && state !== 'missing') {
    const ca = state === 'pending' || push.credential(proxy.namespace, `${secret}${CACERT_SUFFIX}`).state === 'pending' || caCredential(push, proxy.namespace, secret) !== undefined;
    return ca ? { key: '|ksc' } : { ca: false, key: '|ks' };
  }
  const { credentialName: _left, ...tls } = policy.tls!;
  return { policy: { ...policy, tls }, key: '|kf' };
}

/**
 * Automatic mutual TLS for a proxyless client's cluster (docs/adr/0103). gRPC has no transport socket
 * matches, so the choice is per cluster: mesh TLS when every endpoint's port is STRICT under its
 * workload's PeerAuthentication, plaintext otherwise (what PERMISSIVE and DISABLE ports of sidecars and
 * of proxyless servers all accept). A DestinationRule with TLS settings decides instead.
 */
function proxylessAutoMtls(ref: ClusterRef, subsetLabels: Readonly<Record<string, string>> | undefined, policy: TrafficPolicy | undefined, push: PushContext, endpoints: EndpointIndex): boolean {
  if (!push.mesh.enableAutoMtls || ref.service.meshExternal || policy?.tls || ref.service.resolution !== 'ClientSideLB') return false;
  const host = ref.service.hostname;
  return push.memoize(`gmtls|${ref.name}|${ref.service.namespace}|${labelsKey(subsetLabels)}`, () => {
    let any = false;
    for (const e of endpoints.get(host).endpoints) {
      if (e.servicePortName !== ref.port.name || !labelsMatch(subsetLabels, e.labels)) continue;
      if (mtlsModeForPort(push.policies.mtlsFor({ namespace: ref.service.namespace, labels: e.labels }), e.port) !== 'STRICT') return false;
      any = true;
    }
    return any;
  }, endpoints);
}

const labelsKey = (l: Readonly<Record<string, string>> | undefined): string =>
  l
    ? Object.keys(l)
        .sort()
        .map((k) => `${k}=${l[k]}`)
        .join(',')
    : '';

/**
 * Outbound clusters of every service visible to the proxy: one list per scope, built service by
 * service (model/derived.ts): a later snapshot rebuilds the clusters of the services whose inputs
 * changed and keeps the others, and a first build is spread over turns under a deadline.
 */
export function visibleOutboundClusters(
  proxy: Proxy,
  push: PushContext,
  endpoints: EndpointIndex,
  cache: ResourceCache,
  proxyless: boolean,
): ReadonlyArray<EncodedResource> {
  const key = `cds-out|${push.scopeKey(proxy)}|${proxyless}|${proxy.type}`;
  return push.memoizeList(
    key,
    { endpoints },
    () => push.visibleServices(proxy),
    (service) => `${service.hostname}|${service.namespace}|${objectId(service)}`,
    (service) => {
      const dr = push.destinationRule(proxy, service);
      // A service's clusters are the same for every scope that sees it under the same rule: built once
      // and shared (a connect storm builds the list of every namespace). The proxy counts only where a
      // rule names a credential (clientCredential reads its namespace and kind).
      const own = push.destinationRuleCredentials().length > 0 ? `|${proxy.type}|${proxy.namespace}` : '';
      return push.memoize(
        `cds-svc|${objectId(service)}|${objectId(dr?.spec)}|${proxyless}${own}`,
        () => clusterRefs(service, dr).map((ref) => encodeOutboundCluster(ref, proxy, push, endpoints, cache, proxyless)),
        endpoints,
      );
    },
  );
}

/**
 * One ClusterLoadAssignment per requested EDS cluster the proxy may see. Proxies of one scope that
 * ask for the same (shared) name set get one list; it is built name by name, so an endpoint change
 * or a new snapshot rebuilds only the assignments whose inputs changed (a new name set of the scope
 * starts from the scope's latest list).
 */
export function generateEndpoints(
  proxy: Proxy,
  push: PushContext,
  endpoints: EndpointIndex,
  cache: ResourceCache,
  names: ReadonlySet<string> | undefined,
  withTlsMetadata: boolean,
  allClusters: () => Iterable<string>,
  few = false,
): ReadonlyArray<EncodedResource> {
  if (!names) return [...allClusters()].flatMap((name) => endpointsFor(name, proxy, push, endpoints, cache, withTlsMetadata));
  if (few) return [...names].flatMap((name) => endpointsFor(name, proxy, push, endpoints, cache, withTlsMetadata));
  const scope = `eds|${push.scopeKey(proxy)}|${withTlsMetadata}|${localityKey(proxy.locality)}|${proxy.type}`;
  return push.memoizeList(
    `${scope}|${objectId(names)}`,
    // the list goes with the (client-chosen) name set, not with the snapshot
    { endpoints, reuseKey: scope, owner: names },
    () => [...names],
    (name) => name,
    (name) => endpointsFor(name, proxy, push, endpoints, cache, withTlsMetadata),
  );
}

/** The assignment of one cluster name, or none when the proxy cannot see it or it is not an EDS cluster. */
function endpointsFor(name: string, proxy: Proxy, push: PushContext, endpoints: EndpointIndex, cache: ResourceCache, withTlsMetadata: boolean): EncodedResource[] {
  const ref = resolveClusterRef(name, push, proxy);
  if (!ref || ref.service.resolution !== 'ClientSideLB') return [];
  const dr = push.destinationRule(proxy, ref.service);
  const hostEps = endpoints.get(ref.service.hostname);
  const failover = dr?.spec.trafficPolicy?.outlierDetection !== undefined && (proxy.locality.region !== '' || proxy.locality.zone !== '');
  const flipped = withTlsMetadata ? autoMtlsFlips(ref, push, endpoints) : NO_FLIPS;
  const key = `e|${name}|v${hostEps.version}|d${objectId(dr?.spec)}|${withTlsMetadata ? 't' : ''}|${failover ? localityKey(proxy.locality) : ''}${flipped.key}`;
  return [
    cache.getOrBuild('eds', key, () => {
      const subsetLabels = ref.subset ? dr?.spec.subsets?.find((s) => s.name === ref.subset)?.labels : undefined;
      const cla = buildLoadAssignment({
        clusterName: name,
        endpoints: hostEps.endpoints,
        portName: ref.port.name,
        subsetLabels: ref.subset ? (subsetLabels ?? {}) : undefined,
        clientLocality: failover ? proxy.locality : undefined,
        withTlsMetadata,
        tlsFlipped: flipped.endpoints,
      });
      return { name, typeUrl: TypeUrl.Endpoint, bytes: encode(ClusterLoadAssignment, cla) };
    }),
  ];
}

interface TlsFlips {
  /** Endpoints whose mesh TLS is not what their `tlsMode` label says. */
  readonly endpoints: ReadonlySet<Endpoint>;
  /** Empty when none; else `|a` and the flipped endpoints' addresses (part of the EDS cache key). */
  readonly key: string;
}

const NO_FLIPS: TlsFlips = Object.freeze({ endpoints: new Set<Endpoint>(), key: '' });

/**
 * Automatic mutual TLS toward each endpoint of a service port (docs/adr/0151), as the public API's
 * auto mTLS decides it: the endpoint's `tlsMode` label says whether a sidecar answers it, and the
 * destination workload's effective PeerAuthentication mode for that port overrides it — DISABLE
 * means plaintext (its sidecar would refuse mesh TLS), STRICT means mesh TLS (a proxyless server,
 * which carries no label, would refuse plaintext). PERMISSIVE leaves the label's answer. Reading the
 * policies records their dependency (PeerAuthentications only), so an edit rebuilds the load
 * assignments that read one and the cache key changes only where an endpoint's answer changes.
 */
function autoMtlsFlips(ref: ClusterRef, push: PushContext, endpoints: EndpointIndex): TlsFlips {
  if (!push.mesh.enableAutoMtls || ref.service.meshExternal || !push.policies.hasPeerAuthn()) return NO_FLIPS;
  const host = ref.service.hostname;
  return push.memoize(
    `amtls|${host}|${ref.service.namespace}|${ref.port.name}`,
    () => {
      const out = new Set<Endpoint>();
      for (const e of endpoints.get(host).endpoints) {
        if (e.servicePortName !== ref.port.name) continue;
        const mode = mtlsModeForPort(push.policies.mtlsFor({ namespace: ref.service.namespace, labels: e.labels }), e.port);
        const label = e.tlsMode === 'mesh';
        if ((mode === 'DISABLE' && label) || (mode === 'STRICT' && !label)) out.add(e);
      }
      if (out.size === 0) return NO_FLIPS;
      return { endpoints: out, key: `|a${[...out].map((e) => `${e.address}:${e.port}`).join(',')}` };
    },
    endpoints,
  );
}
