/** ClusterLoadAssignment builder: endpoints of one service port and subset, grouped by locality. */
import { ClusterLoadAssignment } from '../../gen/envoy/config/endpoint/v3/endpoint.js';
import { HealthStatus } from '../../gen/envoy/config/core/v3/health_check.js';
import { labelsMatch, localityKey, type Endpoint, type Locality } from '../../model/service.js';
import { msg, socketAddress } from './pack.js';

export interface LoadAssignmentInput {
  readonly clusterName: string;
  readonly endpoints: ReadonlyArray<Endpoint>;
  readonly portName: string;
  readonly subsetLabels?: Readonly<Record<string, string>>;
  /** When set, localities are given failover priorities relative to the client's locality. */
  readonly clientLocality?: Locality;
  /** Proxyless clients ignore transport-socket match metadata; leave it out for them. */
  readonly withTlsMetadata: boolean;
  /**
   * Endpoints whose mesh TLS differs from their `tlsMode` label (the destination's PeerAuthentication
   * decides: docs/adr/0151): the label's answer is flipped for these.
   */
  readonly tlsFlipped?: ReadonlySet<Endpoint>;
}

function priority(client: Locality, l: Locality): number {
  if (client.region !== l.region) return 2;
  if (client.zone !== l.zone) return 1;
  return client.subzone === l.subzone ? 0 : 1;
}

export function buildLoadAssignment(input: LoadAssignmentInput): ClusterLoadAssignment {
  const groups = new Map<string, { locality: Locality; eps: Endpoint[] }>();
  for (const e of input.endpoints) {
    if (e.servicePortName !== input.portName) continue;
    if (input.subsetLabels && !labelsMatch(input.subsetLabels, e.labels)) continue;
    const key = localityKey(e.locality);
    const g = groups.get(key);
    if (g) g.eps.push(e);
    else groups.set(key, { locality: e.locality, eps: [e] });
  }
  const keys = [...groups.keys()].sort();
  // Failover priorities must be contiguous from 0: rank the distinct raw priorities.
  const raw = keys.map((k) => (input.clientLocality ? priority(input.clientLocality, groups.get(k)!.locality) : 0));
  const rank = new Map([...new Set(raw)].sort().map((p, i) => [p, i]));
  return msg(ClusterLoadAssignment, {
    clusterName: input.clusterName,
    endpoints: keys.map((k, i) => {
      const g = groups.get(k)!;
      const eps = [...g.eps].sort((a, b) => a.address.localeCompare(b.address) || a.port - b.port);
      return {
        locality: { region: g.locality.region, zone: g.locality.zone, subZone: g.locality.subzone },
        loadBalancingWeight: eps.reduce((n, e) => n + e.weight, 0),
        priority: rank.get(raw[i]) ?? 0,
        lbEndpoints: eps.map((e) => ({
          endpoint: { address: socketAddress(e.address, e.port) },
          healthStatus: e.healthy ? HealthStatus.HEALTHY : HealthStatus.UNHEALTHY,
          loadBalancingWeight: e.weight,
          metadata:
            input.withTlsMetadata && (e.tlsMode === 'mesh') !== (input.tlsFlipped?.has(e) ?? false)
              ? { filterMetadata: { 'envoy.transport_socket_match': { tlsMode: 'mesh' } } }
              : undefined,
        })),
      };
    }),
  });
}
