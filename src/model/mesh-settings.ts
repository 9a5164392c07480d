import type { MeshConfig_ExtensionProvider, ProxyDefaults } from '../gen/config/schemas.js';

/** The mesh-wide settings the model uses, resolved from the mesh config file and flags. */
export interface MeshSettings {
  readonly rootNamespace: string;
  readonly trustDomain: string;
  readonly domain: string;
  readonly clusterId: string;
  readonly outboundTrafficPolicy: 'ALLOW_ANY' | 'REGISTRY_ONLY';
  readonly defaultServiceExportTo: ReadonlyArray<string>;
  readonly defaultVirtualServiceExportTo: ReadonlyArray<string>;
  readonly defaultDestinationRuleExportTo: ReadonlyArray<string>;
  readonly connectTimeoutMs: number;
  readonly protocolDetectionTimeoutMs: number;
  readonly enableAutoMtls: boolean;
  /** `enableTracing`: HTTP connection managers make trace decisions and record spans (docs/adr/0176). */
  readonly enableTracing: boolean;
  /** `accessLogFile`: where proxies write access logs; empty: none (docs/adr/0176). */
  readonly accessLogFile: string;
  /** Host patterns declared cluster-local (`serviceSettings[].settings.clusterLocal`); absent means none. */
  readonly clusterLocalHosts?: ReadonlyArray<string>;
  /** Telemetry providers used where a Telemetry names none (`defaultProviders`); absent means none. */
  readonly defaultProviders?: { readonly tracing: ReadonlyArray<string>; readonly metrics: ReadonlyArray<string>; readonly accessLogging: ReadonlyArray<string> };
  /** The proxies' defaults (`defaultConfig`), which the sidecar injector gives each proxy; absent means none. */
  readonly proxyDefaults?: ProxyDefaults;
  /** Other trust domains whose identities count as this one's (`trustDomainAliases`); absent means none. */
  readonly trustDomainAliases?: ReadonlyArray<string>;
  /** Extensions by name (`extensionProviders`): external authorizers of CUSTOM policies; absent means none. */
  readonly extensionProviders?: ReadonlyArray<MeshConfig_ExtensionProvider>;
}

export const DEFAULT_MESH_SETTINGS: MeshSettings = Object.freeze({
  rootNamespace: 'mesh-system',
  trustDomain: 'cluster.local',
  domain: 'cluster.local',
  clusterId: 'Cluster',
  outboundTrafficPolicy: 'ALLOW_ANY',
  defaultServiceExportTo: ['*'],
  defaultVirtualServiceExportTo: ['*'],
  defaultDestinationRuleExportTo: ['*'],
  connectTimeoutMs: 10_000,
  protocolDetectionTimeoutMs: 0,
  enableAutoMtls: true,
  enableTracing: false,
  accessLogFile: '',
});
