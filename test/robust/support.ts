/**
 * Shared pieces of the fault-and-abuse suite: a mesh of N services as config files, a well-behaved
 * sidecar that fetches a complete configuration the way Envoy does (wildcard CDS and LDS, then EDS
 * and RDS by name, every response ACKed), and a sampler of a process's resident memory.
 */
import { readFileSync } from 'node:fs';
import { Cluster } from '../../src/gen/envoy/config/cluster/v3/cluster.js';
import { Listener } from '../../src/gen/envoy/config/listener/v3/listener.js';
import { HttpConnectionManager } from '../../src/gen/envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.js';
import type { DiscoveryResponse } from '../../src/gen/envoy/service/discovery/v3/discovery.js';
import { TypeUrl } from '../../src/xds/types.js';
import { SotwStream } from '../support/ads-client.js';

/**
 * ServiceEntries `svc-<i>.ns-<i%5>.svc.cluster.local` (HTTP 8080, `endpoints` endpoints, default two,
 * half labelled v1 and half v2), a DestinationRule with subsets each, a VirtualService for every fifth.
 */
export function meshObjects(services: number, endpoints = 2): object[] {
  const out: object[] = [];
  for (let i = 0; i < services; i++) {
    const ns = `ns-${i % 5}`;
    const host = `svc-${i}.${ns}.svc.cluster.local`;
    out.push({
      apiVersion: 'networking.mesh.io/v1',
      kind: 'ServiceEntry',
      metadata: { name: `svc-${i}`, namespace: ns },
      spec: {
        hosts: [host],
        addresses: [`240.240.${(i >> 8) & 255}.${i & 255}`],
        location: 'MESH_INTERNAL',
        resolution: 'STATIC',
        ports: [{ number: 8080, name: 'http', protocol: 'HTTP' }],
        endpoints: Array.from({ length: endpoints }, (_, k) => ({ address: `10.${k + 1}.${(i >> 8) & 255}.${i & 255}`, labels: { version: `v${(k % 2) + 1}` } })),
      },
    });
    out.push({
      apiVersion: 'networking.mesh.io/v1',
      kind: 'DestinationRule',
      metadata: { name: `svc-${i}`, namespace: ns },
      spec: { host, subsets: [{ name: 'v1', labels: { version: 'v1' } }, { name: 'v2', labels: { version: 'v2' } }] },
    });
    if (i % 5 === 0) out.push(virtualService(i, 90));
  }
  return out;
}

/** The VirtualService of service `i`: `weight` % to v1, the rest to v2. */
export function virtualService(i: number, weight: number): object {
  const ns = `ns-${i % 5}`;
  const host = `svc-${i}.${ns}.svc.cluster.local`;
  return {
    apiVersion: 'networking.mesh.io/v1',
    kind: 'VirtualService',
    metadata: { name: `svc-${i}`, namespace: ns },
    spec: {
      hosts: [host],
      http: [{ route: [{ destination: { host, subset: 'v1' }, weight }, { destination: { host, subset: 'v2' }, weight: 100 - weight }] }],
    },
  };
}

export function sidecarNode(n: number): { id: string; metadata: Record<string, unknown> } {
  const ns = `ns-${n % 5}`;
  return { id: `sidecar~10.200.${(n >> 8) & 255}.${n & 255}~good-${n}.${ns}~${ns}.svc.cluster.local`, metadata: { NAMESPACE: ns } };
}

/** A sidecar that fetches and ACKs a complete configuration, and stays to receive changes. */
export class WellBehavedSidecar {
  readonly stream: SotwStream;
  private readonly opened = performance.now();
  /** ms from opening the stream to holding CDS, EDS, LDS and RDS. */
  readonly complete: Promise<number>;

  constructor(addr: string, n: number, timeoutMs = 30_000) {
    this.stream = new SotwStream(addr, sidecarNode(n));
    this.complete = this.run(timeoutMs);
  }

  private async run(timeoutMs: number): Promise<number> {
    const s = this.stream;
    const deadline = Date.now() + timeoutMs;
    const left = (): number => Math.max(1, deadline - Date.now());
    s.send({ typeUrl: TypeUrl.Cluster });
    s.send({ typeUrl: TypeUrl.Listener });
    const have = new Set<string>();
    let from = 0;
    while (have.size < 4) {
      const res = await s.nextMatching(() => true, left(), from);
      from = s.responses.indexOf(res) + 1;
      this.answer(res);
      have.add(res.typeUrl);
    }
    return performance.now() - this.opened;
  }

  /** ACKs a response; CDS and LDS responses also subscribe to the EDS and RDS names they imply. */
  private answer(res: DiscoveryResponse): void {
    const s = this.stream;
    if (res.typeUrl === TypeUrl.Cluster) {
      const eds = res.resources.map((a) => Cluster.decode(a.value)).filter((c) => c.type === 3 || c.edsClusterConfig).map((c) => c.name);
      this.subscriptions.set(TypeUrl.Endpoint, eds);
      s.send({ typeUrl: TypeUrl.Endpoint, names: eds });
    } else if (res.typeUrl === TypeUrl.Listener) {
      const routes = new Set<string>();
      for (const a of res.resources) {
        const l = Listener.decode(a.value);
        for (const chain of l.filterChains) {
          for (const f of chain.filters) {
            if (f.typedConfig?.typeUrl.endsWith('HttpConnectionManager')) {
              const hcm = HttpConnectionManager.decode(f.typedConfig.value);
              if (hcm.rds) routes.add(hcm.rds.routeConfigName);
            }
          }
        }
      }
      this.subscriptions.set(TypeUrl.Route, [...routes].sort());
      s.send({ typeUrl: TypeUrl.Route, names: [...routes].sort() });
    }
    s.ack(res, this.namesFor(res.typeUrl));
  }

  private namesFor(typeUrl: string): string[] | undefined {
    if (typeUrl === TypeUrl.Cluster || typeUrl === TypeUrl.Listener) return undefined;
    // ACK with the current subscription: the last request of that type
    return this.subscriptions.get(typeUrl);
  }

  private readonly subscriptions = new Map<string, string[]>();

  close(): void {
    this.stream.close();
  }
}

/** Resident set size of a process, bytes (Linux). */
export function rssOf(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) * 1024 : 0;
}

/** Samples a process's RSS every `everyMs` until stopped; reports the peak. */
export function sampleRss(pid: number, everyMs = 200): { stop(): { peak: number; last: number } } {
  let peak = 0;
  let last = 0;
  const take = (): void => {
    try {
      last = rssOf(pid);
      peak = Math.max(peak, last);
    } catch {
      // the process is gone
    }
  };
  take();
  const timer = setInterval(take, everyMs);
  return {
    stop() {
      clearInterval(timer);
      take();
      return { peak, last };
    },
  };
}

export function percentile(sorted: ReadonlyArray<number>, p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}
