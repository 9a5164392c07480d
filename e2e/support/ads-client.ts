/**
 * A raw state-of-the-world ADS client for protocol-level tests: it sends exactly the
 * DiscoveryRequests a test builds (or arbitrary bytes), and records every DiscoveryResponse and the
 * final status of the stream. Messages are encoded with the project's generated ts-proto types.
 */
import * as grpc from '@grpc/grpc-js';
import { DiscoveryRequest, DiscoveryResponse } from '../../src/gen/envoy/service/discovery/v3/discovery.js';
import { Listener } from '../../src/gen/envoy/config/listener/v3/listener.js';
import { RouteConfiguration } from '../../src/gen/envoy/config/route/v3/route.js';
import { HttpConnectionManager } from '../../src/gen/envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.js';
import type { Node } from '../../src/gen/envoy/config/core/v3/base.js';
import { DEFAULT_NODE_ID, DEFAULT_NODE_METADATA } from './xds-client.js';
import { eventually } from '../../test/support/eventually.js';

export const ADS_METHOD = '/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources';

export const TYPE = {
  Listener: 'type.googleapis.com/envoy.config.listener.v3.Listener',
  Route: 'type.googleapis.com/envoy.config.route.v3.RouteConfiguration',
  Cluster: 'type.googleapis.com/envoy.config.cluster.v3.Cluster',
  Endpoint: 'type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment',
} as const;

/** The node of a proxyless gRPC client, as grpc-js-xds would send it. */
export function grpcNode(id = DEFAULT_NODE_ID, metadata: Record<string, unknown> = {}): Node {
  return {
    id,
    cluster: '',
    metadata: { ...DEFAULT_NODE_METADATA, ...metadata },
    dynamicParameters: {},
    locality: { region: '', zone: '', subZone: '' },
    userAgentName: 'mesh-e2e-raw-ads',
    userAgentVersion: '0.0.0',
    extensions: [],
    clientFeatures: [],
    listeningAddresses: [],
  };
}

/** A request with every unset field at its default. */
export function request(fields: Partial<DiscoveryRequest>): DiscoveryRequest {
  return DiscoveryRequest.fromPartial(fields);
}

type Outgoing = DiscoveryRequest | Uint8Array;

function serialize(msg: Outgoing): Buffer {
  if (msg instanceof Uint8Array) return Buffer.from(msg.buffer, msg.byteOffset, msg.byteLength);
  return Buffer.from(DiscoveryRequest.encode(msg).finish());
}

function deserialize(bytes: Buffer): DiscoveryResponse {
  return DiscoveryResponse.decode(bytes);
}

export interface StreamEnd {
  readonly code: grpc.status;
  readonly details: string;
}

export class AdsStream {
  /** Every response received, in order. */
  readonly responses: DiscoveryResponse[] = [];
  private readonly client: grpc.Client;
  private readonly call: grpc.ClientDuplexStream<Outgoing, DiscoveryResponse>;
  private endStatus: StreamEnd | undefined;
  private readonly waiters = new Set<() => void>();

  private constructor(address: string) {
    // A channel of its own, so that one stream's failure cannot affect another test client.
    this.client = new grpc.Client(address, grpc.credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 });
    this.call = this.client.makeBidiStreamRequest<Outgoing, DiscoveryResponse>(ADS_METHOD, serialize, deserialize, new grpc.Metadata());
    this.call.on('data', (res: DiscoveryResponse) => {
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

  static open(address: string): AdsStream {
    return new AdsStream(address);
  }

  private wake(): void {
    for (const w of [...this.waiters]) w();
  }

  /** Sends one DiscoveryRequest, or raw bytes as one gRPC message. */
  send(msg: Partial<DiscoveryRequest> | Uint8Array): void {
    this.call.write(msg instanceof Uint8Array ? msg : request(msg));
  }

  /** The stream's final status, once it has ended. */
  status(): StreamEnd | undefined {
    return this.endStatus;
  }

  /**
   * Resolves with the first response at index ≥ `from` that matches `match` (default: any).
   * Rejects when the stream ends first or on timeout.
   */
  async next(match: (r: DiscoveryResponse) => boolean = () => true, timeoutMs = 5000, from = 0): Promise<DiscoveryResponse> {
    return new Promise<DiscoveryResponse>((resolve, reject) => {
      const check = (): boolean => {
        for (let i = from; i < this.responses.length; i++) {
          if (match(this.responses[i])) {
            done();
            resolve(this.responses[i]);
            return true;
          }
        }
        if (this.endStatus) {
          done();
          reject(new Error(`ADS stream ended (${grpc.status[this.endStatus.code]}: ${this.endStatus.details}) before a matching response; got ${this.summary()}`));
          return true;
        }
        return false;
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`no matching ADS response within ${timeoutMs} ms; got ${this.summary()}`));
      }, timeoutMs);
      const waiter = (): void => void check();
      const done = (): void => {
        clearTimeout(timer);
        this.waiters.delete(waiter);
      };
      this.waiters.add(waiter);
      check();
    });
  }

  /** Resolves with the stream's final status; rejects on timeout. */
  ended(timeoutMs = 5000): Promise<StreamEnd> {
    return eventually('the ADS stream to end', () => this.endStatus, { timeoutMs, intervalMs: 20, diagnostics: () => `responses: ${this.summary()}`, retryErrors: true });
  }

  /** Responses of one type, in order. */
  ofType(typeUrl: string): DiscoveryResponse[] {
    return this.responses.filter((r) => r.typeUrl === typeUrl);
  }

  /** A short description of what was received, for error messages. */
  summary(): string {
    const items = this.responses.map((r) => `${r.typeUrl.split('.').pop()}(v=${r.versionInfo}, nonce=${r.nonce}, n=${r.resources.length})`);
    return `[${items.join(', ')}]${this.endStatus ? ` then ${grpc.status[this.endStatus.code]}: ${this.endStatus.details}` : ''}`;
  }

  close(): void {
    this.call.cancel();
    this.client.close();
  }
}

/** The route configuration name a client listener points at (RDS), or its inline config. */
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

/** Subscribes to one listener (LDS, carrying the node) and ACKs the response. */
export async function subscribeListener(stream: AdsStream, listenerName: string, node: Node = grpcNode()): Promise<DiscoveryResponse> {
  const mark = stream.responses.length;
  stream.send({ node, typeUrl: TYPE.Listener, resourceNames: [listenerName] });
  const lds = await stream.next((r) => r.typeUrl === TYPE.Listener, 5000, mark);
  stream.send({ typeUrl: TYPE.Listener, resourceNames: [listenerName], versionInfo: lds.versionInfo, responseNonce: lds.nonce });
  return lds;
}

/**
 * Given an (ACKed) LDS response, subscribes to what it references the way grpc-js-xds does: RDS
 * for the route configuration (ACKed) unless it is inline, then CDS for the routed clusters. The
 * CDS response is not ACKed, so a test can ACK or NACK it.
 */
export async function followListener(stream: AdsStream, lds: DiscoveryResponse): Promise<{ rds?: DiscoveryResponse; cds: DiscoveryResponse; clusters: string[] }> {
  const { rdsNames, inline } = listenerRoutes(lds);
  let rds: DiscoveryResponse | undefined;
  let routeConfigs = inline;
  if (rdsNames.length > 0) {
    const mark = stream.responses.length;
    stream.send({ typeUrl: TYPE.Route, resourceNames: rdsNames });
    rds = await stream.next((r) => r.typeUrl === TYPE.Route, 5000, mark);
    stream.send({ typeUrl: TYPE.Route, resourceNames: rdsNames, versionInfo: rds.versionInfo, responseNonce: rds.nonce });
    routeConfigs = decodeRouteConfigs(rds);
  }
  const clusters = routeClusters(routeConfigs);
  if (clusters.length === 0) throw new Error(`the listener routes to no cluster; received ${stream.summary()}`);
  const mark = stream.responses.length;
  stream.send({ typeUrl: TYPE.Cluster, resourceNames: clusters });
  const cds = await stream.next((r) => r.typeUrl === TYPE.Cluster, 5000, mark);
  return { ...(rds ? { rds } : {}), cds, clusters };
}

/** LDS, then RDS, then CDS, as a proxyless client subscribes; the CDS response is left un-ACKed. */
export async function subscribeChain(
  stream: AdsStream,
  listenerName: string,
  node: Node = grpcNode(),
): Promise<{ lds: DiscoveryResponse; rds?: DiscoveryResponse; cds: DiscoveryResponse; clusters: string[] }> {
  const lds = await subscribeListener(stream, listenerName, node);
  return { lds, ...(await followListener(stream, lds)) };
}
