/**
 * In-process ADS: a real grpc-js server on loopback hosting DiscoveryServer over a model built from
 * YAML, and a raw duplex client that speaks DiscoveryRequest / DeltaDiscoveryRequest frames with the
 * generated encoders. Every wait is bounded.
 */
import * as grpc from '@grpc/grpc-js';
import pino from 'pino';
import { generatorsFor } from '../../src/bootstrap/generators.js';
import { Cluster } from '../../src/gen/envoy/config/cluster/v3/cluster.js';
import { Node } from '../../src/gen/envoy/config/core/v3/base.js';
import { ClusterLoadAssignment } from '../../src/gen/envoy/config/endpoint/v3/endpoint.js';
import { Listener } from '../../src/gen/envoy/config/listener/v3/listener.js';
import { RouteConfiguration } from '../../src/gen/envoy/config/route/v3/route.js';
import { DeltaDiscoveryRequest, DeltaDiscoveryResponse, DiscoveryRequest, DiscoveryResponse } from '../../src/gen/envoy/service/discovery/v3/discovery.js';
import { createMetrics, type Metrics } from '../../src/metrics/metrics.js';
import { DiscoveryServer, type AdsObserver, type AdsOptions } from '../../src/xds/ads-server.js';
import { ResourceCache } from '../../src/xds/cache.js';
import { DEFAULT_GENERATOR_SETTINGS } from '../../src/xds/generators/types.js';
import { TypeUrl } from '../../src/xds/types.js';
import { modelFromYaml, type TestModel } from '../support/model.js';

const SERVICE = '/envoy.service.discovery.v3.AggregatedDiscoveryService';

export const DEFAULT_ADS_OPTIONS: AdsOptions = {
  pushThrottle: 10,
  sendTimeoutMs: 5000,
  flowControl: false,
  flowControlTimeoutMs: 5000,
  deltaEnabled: true,
  controlPlaneId: 'meshd-test',
  distributionTracking: false,
};

export interface Harness {
  readonly tm: TestModel;
  readonly ads: DiscoveryServer;
  readonly metrics: Metrics;
  readonly port: number;
  /**
   * Replace the YAML of one origin (`change.yaml` unless given; the initial YAML is `test.yaml`), as a
   * file edit would; pushes follow. Waits for the pushes to be written unless `wait` is false.
   */
  change(yaml: string, opts?: { origin?: string; wait?: boolean }): Promise<void>;
  sotw(node?: NodeSpec | null): SotwStream;
  delta(node?: NodeSpec | null): DeltaStream;
  /** Value of a metric sample (labels must match exactly the given ones when given); 0 if absent. */
  metric(name: string, labels?: Record<string, string>): Promise<number>;
  close(): Promise<void>;
}

export interface NodeSpec {
  readonly id: string;
  readonly metadata?: Record<string, unknown>;
}

export const sidecarNode = (ns = 'default', labels: Record<string, string> = { app: 'client' }): NodeSpec => ({
  id: `sidecar~10.0.0.50~client-1.${ns}~${ns}.svc.cluster.local`,
  metadata: { NAMESPACE: ns, LABELS: labels },
});

export const grpcNode = (ns = 'default'): NodeSpec => ({
  id: `sidecar~10.0.0.51~grpc-client.${ns}~${ns}.svc.cluster.local`,
  metadata: { GENERATOR: 'grpc', NAMESPACE: ns },
});

export async function startAds(
  yaml: string,
  opts: { options?: Partial<AdsOptions>; features?: Parameters<typeof modelFromYaml>[1]; observer?: AdsObserver } = {},
): Promise<Harness> {
  const tm = modelFromYaml(yaml, opts.features);
  const metrics = createMetrics({ defaultMetrics: false });
  const ads = new DiscoveryServer({
    model: () => tm.model.current(),
    generatorsFor,
    cache: new ResourceCache(10_000, true),
    settings: DEFAULT_GENERATOR_SETTINGS,
    metrics,
    log: pino({ level: 'silent' }),
    options: { ...DEFAULT_ADS_OPTIONS, ...opts.options },
    observer: opts.observer,
  });
  const unwire = tm.model.onPush((req) => ads.push(req));
  const server = new grpc.Server();
  server.addService(ads.serviceDefinition(), ads.handlers());
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  const client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  const streams: Array<{ cancel(): void }> = [];

  const metric = async (name: string, labels?: Record<string, string>): Promise<number> => {
    const text = await metrics.registry.getSingleMetricAsString(name);
    let total = 0;
    for (const line of text.split('\n')) {
      if (line.startsWith('#') || !line.startsWith(name)) continue;
      const m = /^([a-zA-Z_:][\w:]*)(\{([^}]*)\})?\s+(\S+)$/.exec(line);
      if (!m || m[1] !== name) continue;
      const got: Record<string, string> = {};
      for (const kv of (m[3] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) got[kv[1]] = kv[2];
      if (labels && Object.entries(labels).some(([k, v]) => got[k] !== v)) continue;
      total += Number(m[4]);
    }
    return total;
  };

  return {
    tm,
    ads,
    metrics,
    port,
    async change(text, o = {}) {
      tm.apply(o.origin ?? 'change.yaml', text);
      tm.model.flush();
      if (o.wait !== false) await withTimeout(ads.idle(), 5000, 'pushes after a change');
    },
    sotw(node) {
      const s = new SotwStream(client, node === undefined ? sidecarNode() : node);
      streams.push(s);
      return s;
    },
    delta(node) {
      const s = new DeltaStream(client, node === undefined ? sidecarNode() : node);
      streams.push(s);
      return s;
    },
    metric,
    async close() {
      for (const s of streams) s.cancel();
      client.close();
      unwire();
      ads.close();
      tm.stop();
      await withTimeout(new Promise<void>((resolve) => server.tryShutdown(() => resolve())), 2000, 'server shutdown').catch(() => undefined);
      server.forceShutdown();
    },
  };
}

/** A STATIC ServiceEntry `<name>.default.svc.cluster.local` without VIPs, one endpoint per address. */
export const serviceEntry = (name: string, addresses: string[], port = 8080): string => `
apiVersion: networking.mesh.io/v1
kind: ServiceEntry
metadata: { name: ${name}, namespace: default }
spec:
  hosts: [${name}.default.svc.cluster.local]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{ number: ${port}, name: http, protocol: HTTP }]
  endpoints: [${addresses.map((a) => `{ address: ${a} }`).join(', ')}]
---
`;

/** The VirtualService `echo` (host `echo` in default) with one route and its timeout. */
export const echoRoute = (timeout: string): string => `
apiVersion: networking.mesh.io/v1
kind: VirtualService
metadata: { name: echo, namespace: default }
spec:
  hosts: [echo]
  http: [{ timeout: ${timeout}, route: [{ destination: { host: echo } }] }]
---
`;

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let t: NodeJS.Timeout | undefined;
  return Promise.race([p, new Promise<T>((_, reject) => (t = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms)))]).finally(() =>
    clearTimeout(t),
  );
}

/** A duplex ADS stream that queues decoded responses. */
abstract class RawStream<Req, Res> {
  protected readonly call: grpc.ClientDuplexStream<Buffer, Buffer>;
  private readonly inbox: Res[] = [];
  private waiter?: () => void;
  private first = true;
  readonly status: Promise<grpc.StatusObject>;

  constructor(
    client: grpc.Client,
    method: string,
    private readonly node: NodeSpec | null,
    private readonly encode: (r: Req) => Buffer,
    decode: (b: Buffer) => Res,
  ) {
    this.call = client.makeBidiStreamRequest<Buffer, Buffer>(
      `${SERVICE}/${method}`,
      (b) => b,
      (b) => b,
    );
    this.call.on('data', (b: Buffer) => {
      this.inbox.push(decode(b));
      this.waiter?.();
    });
    this.call.on('error', () => undefined); // the status promise reports it
    this.status = new Promise((resolve) => this.call.on('status', resolve));
  }

  protected sendRaw(req: Req & { node?: unknown }): void {
    if (this.first && this.node) req.node = Node.fromPartial({ id: this.node.id, metadata: this.node.metadata ?? {} });
    this.first = false;
    this.call.write(this.encode(req));
  }

  /** The next response, or a rejection after `ms`. */
  async next(ms = 3000): Promise<Res> {
    const deadline = Date.now() + ms;
    while (this.inbox.length === 0) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no response within ${ms} ms`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiter = () => {
          clearTimeout(t);
          resolve();
        };
      });
      this.waiter = undefined;
    }
    return this.inbox.shift()!;
  }

  /** Resolves with the responses (expected: none) that arrive within `ms`. */
  async quiet(ms = 300): Promise<Res[]> {
    await sleep(ms);
    return this.inbox.splice(0);
  }

  /** The type URLs of the responses (expected: none) that arrive within `ms`. */
  async quietTypes(ms = 300): Promise<string[]> {
    return (await this.quiet(ms)).map((r) => (r as { typeUrl: string }).typeUrl);
  }

  /** Every response until none arrives for `ms`. */
  async drain(ms = 300): Promise<Res[]> {
    const out: Res[] = [];
    for (;;) {
      const got = await this.quiet(ms);
      if (got.length === 0) return out;
      out.push(...got);
    }
  }

  get pending(): number {
    return this.inbox.length;
  }

  cancel(): void {
    this.call.cancel();
  }

  end(): void {
    this.call.end();
  }
}

export class SotwStream extends RawStream<DiscoveryRequest, DiscoveryResponse> {
  constructor(client: grpc.Client, node: NodeSpec | null) {
    super(
      client,
      'StreamAggregatedResources',
      node,
      (r) => Buffer.from(DiscoveryRequest.encode(r).finish()),
      (b) => DiscoveryResponse.decode(b),
    );
  }

  send(p: { typeUrl: string; names?: string[]; nonce?: string; version?: string; error?: string }): void {
    this.sendRaw(
      DiscoveryRequest.fromPartial({
        typeUrl: p.typeUrl,
        resourceNames: p.names ?? [],
        responseNonce: p.nonce ?? '',
        versionInfo: p.version ?? '',
        errorDetail: p.error ? { code: 3, message: p.error } : undefined,
      }),
    );
  }

  /** ACK a response, keeping (or changing to) the given names. */
  ack(res: DiscoveryResponse, names?: string[]): void {
    this.send({ typeUrl: res.typeUrl, names, nonce: res.nonce, version: res.versionInfo });
  }

  nack(res: DiscoveryResponse, message: string, names?: string[]): void {
    this.send({ typeUrl: res.typeUrl, names, nonce: res.nonce, error: message });
  }
}

export class DeltaStream extends RawStream<DeltaDiscoveryRequest, DeltaDiscoveryResponse> {
  constructor(client: grpc.Client, node: NodeSpec | null) {
    super(
      client,
      'DeltaAggregatedResources',
      node,
      (r) => Buffer.from(DeltaDiscoveryRequest.encode(r).finish()),
      (b) => DeltaDiscoveryResponse.decode(b),
    );
  }

  send(p: { typeUrl: string; subscribe?: string[]; unsubscribe?: string[]; nonce?: string; initial?: Record<string, string>; error?: string }): void {
    this.sendRaw(
      DeltaDiscoveryRequest.fromPartial({
        typeUrl: p.typeUrl,
        resourceNamesSubscribe: p.subscribe ?? [],
        resourceNamesUnsubscribe: p.unsubscribe ?? [],
        responseNonce: p.nonce ?? '',
        initialResourceVersions: p.initial ?? {},
        errorDetail: p.error ? { code: 3, message: p.error } : undefined,
      }),
    );
  }

  ack(res: DeltaDiscoveryResponse): void {
    this.send({ typeUrl: res.typeUrl, nonce: res.nonce });
  }
}

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
    default:
      throw new Error(`unknown type ${typeUrl}`);
  }
}
