/**
 * In-process ADS: a real grpc-js server on loopback hosting DiscoveryServer over a model built from
 * YAML, and streams of the project's one raw ADS test client (test/support/ads-client.ts) on one
 * shared channel. Every wait is bounded.
 */
import * as grpc from '@grpc/grpc-js';
import pino from 'pino';
import { generatorsFor } from '../../src/bootstrap/generators.js';
import { createMetrics, type Metrics } from '../../src/metrics/metrics.js';
import { DiscoveryServer, type AdsObserver, type AdsOptions } from '../../src/xds/ads-server.js';
import { ResourceCache } from '../../src/xds/cache.js';
import { DEFAULT_GENERATOR_SETTINGS } from '../../src/xds/generators/types.js';
import { DeltaStream, SotwStream, type NodeSpec } from '../support/ads-client.js';
import { withTimeout } from '../support/eventually.js';
import { metricValue } from '../support/metrics-text.js';
import { modelFromYaml, type TestModel } from '../support/model.js';
import { serviceEntryYaml } from '../support/service-entries.js';

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
  /** Sum of a metric's samples whose labels include `labels`; 0 if absent. */
  metric(name: string, labels?: Record<string, string>): Promise<number>;
  close(): Promise<void>;
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
  opts: { options?: Partial<AdsOptions>; features?: Parameters<typeof modelFromYaml>[1]; observer?: AdsObserver; log?: pino.Logger; grpcOptions?: grpc.ServerOptions } = {},
): Promise<Harness> {
  const tm = modelFromYaml(yaml, opts.features);
  const metrics = createMetrics({ defaultMetrics: false });
  const ads = new DiscoveryServer({
    model: () => tm.model.current(),
    generatorsFor,
    cache: new ResourceCache(10_000, true),
    settings: DEFAULT_GENERATOR_SETTINGS,
    metrics,
    log: opts.log ?? pino({ level: 'silent' }),
    options: { ...DEFAULT_ADS_OPTIONS, ...opts.options },
    observer: opts.observer,
  });
  const unwire = tm.model.onPush((req) => ads.push(req));
  const server = new grpc.Server(opts.grpcOptions);
  server.addService(ads.serviceDefinition(), ads.handlers());
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  const client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  const streams: Array<{ cancel(): void }> = [];

  const metric = async (name: string, labels?: Record<string, string>): Promise<number> => metricValue(await metrics.registry.getSingleMetricAsString(name), name, labels);

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
export const serviceEntry = (name: string, addresses: string[], port = 8080): string => serviceEntryYaml(name, addresses, port);

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
