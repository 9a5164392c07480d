/**
 * A test proxy that behaves like Envoy on one ADS stream: subscribes to CDS and LDS (wildcard),
 * then to the EDS names its clusters ask for and the RDS names its listeners name, ACKs every
 * response (until told to stop), and keeps what it holds per type (EDS and RDS responses carry
 * only changes, so it accumulates them by name). `dump()` writes what it holds as Envoy's admin
 * `/config_dump` would (src/xds/envoy/config-dump.ts), the file `meshctl proxy-config -f` reads.
 */
import { Cluster } from '../../src/gen/envoy/config/cluster/v3/cluster.js';
import { Any } from '../../src/gen/google/protobuf/any.js';
import type { DiscoveryResponse } from '../../src/gen/envoy/service/discovery/v3/discovery.js';
import { envoyConfigDump } from '../../src/xds/envoy/config-dump.js';
import { TypeUrl, type XdsTypeUrl } from '../../src/xds/types.js';
import { Listener } from '../../src/gen/envoy/config/listener/v3/listener.js';
import { HttpConnectionManager } from '../../src/gen/envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.js';
import { SotwStream, resourceName, type NodeSpec } from './ads-client.js';
import { delay, eventually } from './eventually.js';

export class TestProxy {
  readonly stream: SotwStream;
  /** Per type: name → encoded Any, and the version of the last response. */
  private readonly held = new Map<XdsTypeUrl, { version: string; byName: Map<string, Buffer> }>();
  private acking = true;
  private seen = 0;
  private edsNames: string[] = [];
  private rdsNames: string[] = [];
  private pump: Promise<void> | undefined;
  private stopped = false;

  constructor(
    address: string,
    readonly node: NodeSpec,
  ) {
    this.stream = new SotwStream(address, node);
  }

  /** Subscribes as Envoy does and waits until every type was answered and ACKed. */
  async start(): Promise<void> {
    this.stream.send({ typeUrl: TypeUrl.Cluster });
    this.stream.send({ typeUrl: TypeUrl.Listener });
    this.pump = this.loop();
    await eventually(
      `${this.node.id} holding every type`,
      () => this.held.has(TypeUrl.Cluster) && this.held.has(TypeUrl.Listener) && (this.edsNames.length === 0 || this.held.has(TypeUrl.Endpoint)) && (this.rdsNames.length === 0 || this.held.has(TypeUrl.Route)),
      { diagnostics: () => this.stream.summary() },
    );
  }

  /** From now on responses are recorded but not ACKed (a proxy that stopped answering). */
  stopAcking(): void {
    this.acking = false;
  }

  private async loop(): Promise<void> {
    while (!this.stopped && !this.stream.status()) {
      while (this.seen < this.stream.responses.length) this.record(this.stream.responses[this.seen++]);
      await delay(20);
    }
  }

  /** Responses received so far (all recorded). */
  get received(): number {
    return this.stream.responses.length;
  }

  private record(res: DiscoveryResponse): void {
    const type = res.typeUrl as XdsTypeUrl;
    const partial = type === TypeUrl.Endpoint || type === TypeUrl.Route;
    const prev = this.held.get(type);
    const byName = partial && prev ? new Map(prev.byName) : new Map<string, Buffer>();
    for (const a of res.resources) byName.set(resourceName(a.typeUrl, a.value), Buffer.from(Any.encode(a).finish()));
    this.held.set(type, { version: res.versionInfo, byName });
    if (!this.acking) return;
    if (type === TypeUrl.Cluster) {
      this.edsNames = res.resources
        .map((a) => Cluster.decode(a.value))
        .filter((c) => c.edsClusterConfig !== undefined)
        .map((c) => c.name)
        .sort();
      this.stream.ack(res);
      if (this.edsNames.length > 0) this.stream.send({ typeUrl: TypeUrl.Endpoint, names: this.edsNames });
    } else if (type === TypeUrl.Listener) {
      this.rdsNames = filterChainRoutes(res);
      this.stream.ack(res);
      if (this.rdsNames.length > 0) this.stream.send({ typeUrl: TypeUrl.Route, names: this.rdsNames });
    } else {
      this.stream.ack(res, type === TypeUrl.Endpoint ? this.edsNames : this.rdsNames);
    }
  }

  /** What the proxy holds, as an Envoy config dump (JSON text). */
  dump(): string {
    const resources = new Map(
      [...this.held].map(([type, h]) => [type, { version: h.version, list: [...h.byName].sort(([a], [b]) => a.localeCompare(b)).map(([name, any]) => ({ name, any, version: '' })) }] as const),
    );
    return `${JSON.stringify(envoyConfigDump({ node: { id: this.node.id, metadata: this.node.metadata ?? {} }, resources }), null, 2)}\n`;
  }

  close(): void {
    this.stopped = true;
    this.stream.close();
  }
}

/** The RDS names the HTTP connection managers of a listener response's filter chains point at, as Envoy subscribes to them. */
export function filterChainRoutes(res: DiscoveryResponse): string[] {
  const names = new Set<string>();
  for (const any of res.resources) {
    const listener = Listener.decode(any.value);
    for (const chain of [...listener.filterChains, ...(listener.defaultFilterChain ? [listener.defaultFilterChain] : [])]) {
      for (const filter of chain.filters) {
        const typed = filter.typedConfig;
        if (!typed?.typeUrl.endsWith('HttpConnectionManager')) continue;
        const hcm = HttpConnectionManager.decode(typed.value);
        if (hcm.rds) names.add(hcm.rds.routeConfigName);
      }
    }
  }
  return [...names].sort();
}
