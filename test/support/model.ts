/**
 * Builds the daemon's model from YAML strings, in process: the same store, registries and snapshot
 * code the daemon runs, without files or sockets. Generators can then be called directly.
 */
import pino from 'pino';
import { parseConfigDocuments } from '../../src/config/parse.js';
import { MemoryConfigStore } from '../../src/config/store.js';
import { createMetrics, type Metrics } from '../../src/metrics/metrics.js';
import { MeshModel } from '../../src/model/mesh-model.js';
import type { CredentialSource } from '../../src/model/credentials.js';
import { DEFAULT_MESH_SETTINGS, type MeshSettings } from '../../src/model/mesh-settings.js';
import { parseProxy, type Proxy } from '../../src/model/proxy.js';
import { DEFAULT_FEATURES, type FeatureFlags } from '../../src/model/push-context.js';
import type { ServiceRegistry } from '../../src/model/registry.js';
import { AggregateRegistry } from '../../src/registry/aggregate.js';
import { MockRegistry } from '../../src/registry/mock.js';
import { ServiceEntryRegistry } from '../../src/registry/service-entry.js';
import { generatorsFor } from '../../src/bootstrap/generators.js';
import { ResourceCache, type EncodedResource } from '../../src/xds/cache.js';
import { DEFAULT_GENERATOR_SETTINGS, type GeneratorSettings } from '../../src/xds/generators/types.js';
import type { JwksSource } from '../../src/model/policy/jwks.js';
import { TypeUrl, type XdsTypeUrl } from '../../src/xds/types.js';
import { decodeResource, type DecodedResources } from './decode.js';

export interface TestModel {
  readonly model: MeshModel;
  readonly store: MemoryConfigStore;
  /** The model's metrics (gauges it sets). */
  readonly metrics: Metrics;
  /** Resources of one type for a proxy, decoded. `names` undefined = wildcard. */
  generate<T extends XdsTypeUrl>(proxy: Proxy, type: T, names?: Iterable<string>): DecodedResources[T][];
  /** The generator's own result (encoded, shared with other proxies), for the same arguments; name sets are shared per `names` array. */
  generateRaw(proxy: Proxy, type: XdsTypeUrl, names?: ReadonlyArray<string>): ReadonlyArray<EncodedResource>;
  /** Replace the YAML of one origin and rebuild (as a file edit would). */
  apply(origin: string, yaml: string): void;
  stop(): void;
}

export function modelFromYaml(
  yaml: string,
  opts: { mock?: boolean; mesh?: Partial<MeshSettings>; features?: Partial<FeatureFlags>; credentials?: CredentialSource; jwks?: JwksSource; settings?: Partial<GeneratorSettings>; remoteJwks?: boolean } = {},
): TestModel {
  const store = new MemoryConfigStore();
  const load = (origin: string, text: string): void => {
    const parsed = parseConfigDocuments(text, origin, 'default');
    if (parsed.rejections.length > 0) throw new Error(`test config rejected: ${JSON.stringify(parsed.rejections)}`);
    store.applySource(origin, parsed.objects);
  };
  load('test.yaml', yaml);
  store.markSynced();
  const mesh = { ...DEFAULT_MESH_SETTINGS, ...opts.mesh };
  const registries: ServiceRegistry[] = [];
  if (opts.mock !== false) registries.push(new MockRegistry(mesh.domain, mesh.clusterId));
  const se = new ServiceEntryRegistry(store, mesh.domain, mesh.clusterId);
  registries.push(se);
  const registry = new AggregateRegistry(registries);
  void registry.start();
  const log = pino({ level: 'silent' });
  const metrics = createMetrics({ defaultMetrics: false });
  const model = new MeshModel(store, registry, mesh, { debounceAfterMs: 0, debounceMaxMs: 0, edsDebounce: true, features: { ...DEFAULT_FEATURES, ...opts.features }, credentials: opts.credentials, jwks: opts.jwks, remoteJwks: opts.remoteJwks }, metrics, log);
  model.start();
  const cache = new ResourceCache(10_000, true);
  const settings: GeneratorSettings = opts.settings ? { ...DEFAULT_GENERATOR_SETTINGS, ...opts.settings } : DEFAULT_GENERATOR_SETTINGS;
  // as the ADS server does, proxies asking for the same names share one set
  const nameSets = new WeakMap<ReadonlyArray<string>, ReadonlySet<string>>();
  const generateRaw = (proxy: Proxy, type: XdsTypeUrl, names?: ReadonlyArray<string>): ReadonlyArray<EncodedResource> => {
    const { push, endpoints } = model.current();
    let set = names ? nameSets.get(names) : undefined;
    if (names && !set) {
      set = new Set(names);
      nameSets.set(names, set);
    }
    return generatorsFor(proxy)[type]({ proxy, push, endpoints, names: set, cache, settings });
  };
  return {
    model,
    store,
    metrics,
    generate(proxy, type, names) {
      const { push, endpoints } = model.current();
      const res = generatorsFor(proxy)[type]({ proxy, push, endpoints, names: names ? new Set(names) : undefined, cache, settings });
      return res.map((r) => decodeResource(type, r.any)) as never;
    },
    generateRaw,
    apply(origin, text) {
      load(origin, text);
    },
    stop() {
      model.stop();
      registry.stop();
    },
  };
}

export function sidecar(ip: string, pod: string, ns = 'default', labels: Record<string, string> = {}, metadata: Record<string, unknown> = {}): Proxy {
  return parseProxy(`sidecar~${ip}~${pod}.${ns}~${ns}.svc.cluster.local`, { NAMESPACE: ns, LABELS: labels, ...metadata });
}

/** Node metadata of a sidecar whose agent answers DNS for mesh hosts with automatic addresses. */
export const DNS_AUTO_ALLOCATE = Object.freeze({ DNS_CAPTURE: 'true', DNS_AUTO_ALLOCATE: 'true' });

export function grpcClient(ns = 'default', labels: Record<string, string> = {}): Proxy {
  return parseProxy(`sidecar~10.0.0.9~client.${ns}~${ns}.svc.cluster.local`, { GENERATOR: 'grpc', NAMESPACE: ns, LABELS: labels });
}

export function router(ns = 'mesh-system', labels: Record<string, string> = { app: 'mesh-ingressgateway' }): Proxy {
  return parseProxy(`router~10.0.0.20~gw-1.${ns}~${ns}.svc.cluster.local`, { NAMESPACE: ns, LABELS: labels });
}

export { TypeUrl };
