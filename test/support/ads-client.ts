/**
 * The one raw ADS test client, for in-process tests (test/xds) and end-to-end tests (e2e/): a
 * duplex stream that sends exactly the requests a test builds (or arbitrary bytes), with the
 * project's generated ts-proto types, and records every response and the stream's final status.
 * Responses are read two ways: `next()` takes them one by one in order (what was taken is not
 * returned again; `quiet()` and `drain()` take the rest), and `nextMatching()` finds one in
 * everything received from an index on. Every wait is bounded.
 */
import * as grpc from '@grpc/grpc-js';
import { Cluster } from '../../src/gen/envoy/config/cluster/v3/cluster.js';
import { Node } from '../../src/gen/envoy/config/core/v3/base.js';
import { ClusterLoadAssignment } from '../../src/gen/envoy/config/endpoint/v3/endpoint.js';
import { Listener } from '../../src/gen/envoy/config/listener/v3/listener.js';
import { RouteConfiguration } from '../../src/gen/envoy/config/route/v3/route.js';
import { HttpConnectionManager } from '../../src/gen/envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.js';
import { DeltaDiscoveryRequest, DeltaDiscoveryResponse, DiscoveryRequest, DiscoveryResponse } from '../../src/gen/envoy/service/discovery/v3/discovery.js';
import { TypeUrl } from '../../src/xds/types.js';
import { delay, eventually } from './eventually.js';

const SERVICE = '/envoy.service.discovery.v3.AggregatedDiscoveryService';

/** A proxy's identity as a test states it; the stream sends it as the node of its first request. */
export interface NodeSpec {
  readonly id: string;
  readonly metadata?: Record<string, unknown>;
}

export interface StreamEnd {
  readonly code: grpc.status;
  readonly details: string;
}

type Outgoing<Req> = Req | Uint8Array;

abstract class AdsStream<Req extends { node?: Node | undefined }, Res extends { typeUrl: string; nonce: string }> {
  /** Every response received, in order. */
  readonly responses: Res[] = [];
  private readonly call: grpc.ClientDuplexStream<Outgoing<Req>, Res>;
  private readonly ownClient?: grpc.Client;
  private endStatus: StreamEnd | undefined;
  private readonly waiters = new Set<() => void>();
  private taken = 0;
  private first = true;

  /**
   * `target` is `host:port` (the stream gets a channel of its own, so one stream's failure cannot
   * affect another client) or a client whose channel several streams share. With `node`, the
   * first request carries it unless it names a node itself.
   */
  protected constructor(
    target: string | grpc.Client,
    method: string,
    private readonly node: NodeSpec | null | undefined,
    private readonly encode: (r: Req) => Uint8Array,
    decode: (b: Buffer) => Res,
  ) {
    const client = typeof target === 'string' ? new grpc.Client(target, grpc.credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 }) : target;
    if (typeof target === 'string') this.ownClient = client;
    const serialize = (msg: Outgoing<Req>): Buffer => {
      const bytes = msg instanceof Uint8Array ? msg : this.encode(msg);
      return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    };
    this.call = client.makeBidiStreamRequest<Outgoing<Req>, Res>(`${SERVICE}/${method}`, serialize, decode, new grpc.Metadata());
    this.call.on('data', (res: Res) => {
      this.responses.push(res);
      this.wake();
    });
    this.call.on('status', (s: grpc.StatusObject) => {
      this.endStatus ??= { code: s.code, details: s.details };
      this.wake();
    });
    // The status event carries the outcome; without an error listener a failed stream would throw.
    this.call.on('error', (err: grpc.ServiceError) => {
      this.endStatus ??= { code: err.code, details: err.details };
      this.wake();
    });
  }

  private wake(): void {
    for (const w of [...this.waiters]) w();
  }

  /** Writes one request (the stream's node added to the first one), or raw bytes as one gRPC message. */
  protected write(msg: Req | Uint8Array): void {
    if (!(msg instanceof Uint8Array) && this.first && this.node && !msg.node) {
      msg.node = Node.fromPartial({ id: this.node.id, metadata: this.node.metadata ?? {} });
    }
    this.first = false;
    this.call.write(msg);
  }

  /** The stream's final status, once it has ended. */
  status(): StreamEnd | undefined {
    return this.endStatus;
  }

  /** Resolves with the stream's final status; rejects on timeout. */
  ended(timeoutMs = 5000): Promise<StreamEnd> {
    return eventually('the ADS stream to end', () => this.endStatus, { timeoutMs, intervalMs: 20, diagnostics: () => `responses: ${this.summary()}` });
  }

  /** The next response not taken yet, or a rejection after `ms`. */
  async next(ms = 3000): Promise<Res> {
    if (this.taken >= this.responses.length) await this.waitFor(() => this.taken < this.responses.length, ms, `no response within ${ms} ms`);
    return this.responses[this.taken++];
  }

  /**
   * The first response at index ≥ `from` that matches `match` (default: any), taken or not.
   * Rejects when the stream ends first or on timeout.
   */
  async nextMatching(match: (r: Res) => boolean = () => true, timeoutMs = 5000, from = 0): Promise<Res> {
    const find = (): Res | undefined => this.responses.slice(from).find(match);
    await this.waitFor(() => find() !== undefined || this.endStatus !== undefined, timeoutMs, `no matching ADS response within ${timeoutMs} ms; got ${this.summary()}`);
    const hit = find();
    if (hit) return hit;
    const end = this.endStatus!;
    throw new Error(`ADS stream ended (${grpc.status[end.code]}: ${end.details}) before a matching response; got ${this.summary()}`);
  }

  private waitFor(ready: () => boolean, ms: number, timeoutMessage: string): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const check = (): void => {
        if (!ready()) return;
        done();
        resolve();
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(timeoutMessage));
      }, ms);
      const done = (): void => {
        clearTimeout(timer);
        this.waiters.delete(check);
      };
      this.waiters.add(check);
      check();
    });
  }

  /** Takes the responses (expected: none) that arrive within `ms`, with any not taken yet. */
  async quiet(ms = 300): Promise<Res[]> {
    await delay(ms);
    const out = this.responses.slice(this.taken);
    this.taken = this.responses.length;
    return out;
  }

  /** The type URLs of the responses (expected: none) that arrive within `ms`. */
  async quietTypes(ms = 300): Promise<string[]> {
    return (await this.quiet(ms)).map((r) => r.typeUrl);
  }

  /** Takes every response until none arrives for `ms`. */
  async drain(ms = 300): Promise<Res[]> {
    const out: Res[] = [];
    for (;;) {
      const got = await this.quiet(ms);
      if (got.length === 0) return out;
      out.push(...got);
    }
  }

  /** Responses received and not taken yet. */
  get pending(): number {
    return this.responses.length - this.taken;
  }

  /** Responses of one type, in order. */
  ofType(typeUrl: string): Res[] {
    return this.responses.filter((r) => r.typeUrl === typeUrl);
  }

  protected abstract describe(r: Res): string;

  /** A short description of what was received, for error messages. */
  summary(): string {
    const items = this.responses.map((r) => `${r.typeUrl.split('.').pop()}(${this.describe(r)}, nonce=${r.nonce})`);
    return `[${items.join(', ')}]${this.endStatus ? ` then ${grpc.status[this.endStatus.code]}: ${this.endStatus.details}` : ''}`;
  }

  /** Half-closes the stream (the client sends no more). */
  end(): void {
    this.call.end();
  }

  /** Cancels the stream. */
  cancel(): void {
    this.call.cancel();
  }

  /** Cancels the stream and closes its own channel. */
  close(): void {
    this.call.cancel();
    this.ownClient?.close();
  }
}

/** A state-of-the-world ADS stream (StreamAggregatedResources). */
export class SotwStream extends AdsStream<DiscoveryRequest, DiscoveryResponse> {
  constructor(target: string | grpc.Client, node?: NodeSpec | null) {
    super(target, 'StreamAggregatedResources', node, (r) => DiscoveryRequest.encode(r).finish(), (b) => DiscoveryResponse.decode(b));
  }

  /** A stream on a channel of its own to `address`, sending no node unless a request names one. */
  static open(address: string): SotwStream {
    return new SotwStream(address);
  }

  /** Sends a DiscoveryRequest with every unset field at its default, or raw bytes as one message. */
  sendRequest(msg: Partial<DiscoveryRequest> | Uint8Array): void {
    this.write(msg instanceof Uint8Array ? msg : DiscoveryRequest.fromPartial(msg));
  }

  send(p: { typeUrl: string; names?: string[]; nonce?: string; version?: string; error?: string }): void {
    this.sendRequest({
      typeUrl: p.typeUrl,
      resourceNames: p.names ?? [],
      responseNonce: p.nonce ?? '',
      versionInfo: p.version ?? '',
      errorDetail: p.error ? { code: 3, message: p.error, details: [] } : undefined,
    });
  }

  /** ACK a response, keeping (or changing to) the given names. */
  ack(res: DiscoveryResponse, names?: string[]): void {
    this.send({ typeUrl: res.typeUrl, names, nonce: res.nonce, version: res.versionInfo });
  }

  nack(res: DiscoveryResponse, message: string, names?: string[]): void {
    this.send({ typeUrl: res.typeUrl, names, nonce: res.nonce, error: message });
  }

  protected describe(r: DiscoveryResponse): string {
    return `v=${r.versionInfo}, n=${r.resources.length}`;
  }
}

/** An incremental ADS stream (DeltaAggregatedResources). */
export class DeltaStream extends AdsStream<DeltaDiscoveryRequest, DeltaDiscoveryResponse> {
  constructor(target: string | grpc.Client, node?: NodeSpec | null) {
    super(target, 'DeltaAggregatedResources', node, (r) => DeltaDiscoveryRequest.encode(r).finish(), (b) => DeltaDiscoveryResponse.decode(b));
  }

  /** Sends a DeltaDiscoveryRequest with every unset field at its default, or raw bytes as one message. */
  sendRequest(msg: Partial<DeltaDiscoveryRequest> | Uint8Array): void {
    this.write(msg instanceof Uint8Array ? msg : DeltaDiscoveryRequest.fromPartial(msg));
  }

  send(p: { typeUrl: string; subscribe?: string[]; unsubscribe?: string[]; nonce?: string; initial?: Record<string, string>; error?: string }): void {
    this.sendRequest({
      typeUrl: p.typeUrl,
      resourceNamesSubscribe: p.subscribe ?? [],
      resourceNamesUnsubscribe: p.unsubscribe ?? [],
      responseNonce: p.nonce ?? '',
      initialResourceVersions: p.initial ?? {},
      errorDetail: p.error ? { code: 3, message: p.error, details: [] } : undefined,
    });
  }

  ack(res: DeltaDiscoveryResponse): void {
    this.send({ typeUrl: res.typeUrl, nonce: res.nonce });
  }

  protected describe(r: DeltaDiscoveryResponse): string {
    return `n=${r.resources.length}, removed=${r.removedResources.length}`;
  }
}

// ---- reading responses ----------------------------------------------------------------------

/** Names of the resources in a SotW response. */
export function namesOf(res: DiscoveryResponse): string[] {
  return res.resources.map((a) => resourceName(a.typeUrl, a.value));
}

/** Names of the resources in a delta response. */
export function deltaNames(res: DeltaDiscoveryResponse): string[] {
  return res.resources.map((r) => r.name);
}

/** The name inside an encoded resource (a ClusterLoadAssignment names itself by cluster_name). */
export function resourceName(typeUrl: string, value: Uint8Array): string {
  switch (typeUrl) {
    case TypeUrl.Cluster:
      return Cluster.decode(value).name;
    case TypeUrl.Endpoint:
      return ClusterLoadAssignment.decode(value).clusterName;
    case TypeUrl.Listener:
      return Listener.decode(value).name;
    case TypeUrl.Route:
      return RouteConfiguration.decode(value).name;
    case TypeUrl.NameTable:
      // the one name table a proxy gets has the empty name (docs/adr/0187)
      return '';
    default:
      throw new Error(`unknown type ${typeUrl}`);
  }
}

/** The route configuration names client listeners point at (RDS), and their inline configs. */
export function listenerRoutes(res: DiscoveryResponse): { rdsNames: string[]; inline: RouteConfiguration[] } {
  const rdsNames: string[] = [];
  const inline: RouteConfiguration[] = [];
  for (const any of res.resources) {
    const listener = Listener.decode(any.value);
    const api = listener.apiListener?.apiListener;
    if (!api) continue;
    const hcm = HttpConnectionManager.decode(api.value);
    if (hcm.rds) rdsNames.push(hcm.rds.routeConfigName);
    if (hcm.routeConfig) inline.push(hcm.routeConfig);
  }
  return { rdsNames, inline };
}

/** Every cluster name a set of route configurations sends traffic to. */
export function routeClusters(configs: ReadonlyArray<RouteConfiguration>): string[] {
  const names = new Set<string>();
  for (const rc of configs) {
    for (const vh of rc.virtualHosts) {
      for (const route of vh.routes) {
        if (route.route?.cluster) names.add(route.route.cluster);
        for (const cw of route.route?.weightedClusters?.clusters ?? []) names.add(cw.name);
      }
    }
  }
  return [...names].sort();
}

export function decodeRouteConfigs(res: DiscoveryResponse): RouteConfiguration[] {
  return res.resources.map((any) => RouteConfiguration.decode(any.value));
}

// ---- subscribing as a proxyless client ------------------------------------------------------

/** Subscribes to one listener (LDS, carrying `node`) and ACKs the response. */
export async function subscribeListener(stream: SotwStream, listenerName: string, node: Node): Promise<DiscoveryResponse> {
  const mark = stream.responses.length;
  stream.sendRequest({ node, typeUrl: TypeUrl.Listener, resourceNames: [listenerName] });
  const lds = await stream.nextMatching((r) => r.typeUrl === TypeUrl.Listener, 5000, mark);
  stream.sendRequest({ typeUrl: TypeUrl.Listener, resourceNames: [listenerName], versionInfo: lds.versionInfo, responseNonce: lds.nonce });
  return lds;
}

/**
 * Given an (ACKed) LDS response, subscribes to what it references the way grpc-js-xds does: RDS
 * for the route configuration (ACKed) unless it is inline, then CDS for the routed clusters. The
 * CDS response is not ACKed, so a test can ACK or NACK it.
 */
export async function followListener(stream: SotwStream, lds: DiscoveryResponse): Promise<{ rds?: DiscoveryResponse; cds: DiscoveryResponse; clusters: string[] }> {
  const { rdsNames, inline } = listenerRoutes(lds);
  let rds: DiscoveryResponse | undefined;
  let routeConfigs = inline;
  if (rdsNames.length > 0) {
    const mark = stream.responses.length;
    stream.sendRequest({ typeUrl: TypeUrl.Route, resourceNames: rdsNames });
    rds = await stream.nextMatching((r) => r.typeUrl === TypeUrl.Route, 5000, mark);
    stream.sendRequest({ typeUrl: TypeUrl.Route, resourceNames: rdsNames, versionInfo: rds.versionInfo, responseNonce: rds.nonce });
    routeConfigs = decodeRouteConfigs(rds);
  }
  const clusters = routeClusters(routeConfigs);
  if (clusters.length === 0) throw new Error(`the listener routes to no cluster; received ${stream.summary()}`);
  const mark = stream.responses.length;
  stream.sendRequest({ typeUrl: TypeUrl.Cluster, resourceNames: clusters });
  const cds = await stream.nextMatching((r) => r.typeUrl === TypeUrl.Cluster, 5000, mark);
  return { ...(rds ? { rds } : {}), cds, clusters };
}

/** LDS, then RDS, then CDS, as a proxyless client subscribes; the CDS response is left un-ACKed. */
export async function subscribeChain(
  stream: SotwStream,
  listenerName: string,
  node: Node,
): Promise<{ lds: DiscoveryResponse; rds?: DiscoveryResponse; cds: DiscoveryResponse; clusters: string[] }> {
  const lds = await subscribeListener(stream, listenerName, node);
  return { lds, ...(await followListener(stream, lds)) };
}
