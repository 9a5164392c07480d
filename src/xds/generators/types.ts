import type { EndpointIndex } from '../../model/endpoint-index.js';
import type { Proxy } from '../../model/proxy.js';
import type { PushContext } from '../../model/push-context.js';
import type { EncodedResource, ResourceCache } from '../cache.js';
import type { XdsTypeUrl } from '../types.js';

/** Daemon settings that shape generated config (from environment variables). */
export interface GeneratorSettings {
  readonly inboundPassthrough: boolean;
  readonly defaultRequestTimeoutMs: number;
  readonly sidecarUseRemoteAddress: boolean;
  readonly http10: boolean;
  readonly httpDelayedCloseTimeoutMs: number;
  readonly gatewayStripHostPort: boolean;
  /** DISC_ENABLE_ROUTE_COLLAPSE_OPTIMIZATION: sidecar virtual hosts with identical routes are merged. */
  readonly routeCollapse: boolean;
  /** `--plugins` names `authz`: AuthorizationPolicies become RBAC filters (docs/adr/0082). */
  readonly authz: boolean;
  /** `--plugins` names `authn`: RequestAuthentications become jwt_authn filters (docs/adr/0100). */
  readonly authn: boolean;
  /** `--plugins` names `ext_authz`: CUSTOM AuthorizationPolicies call their provider (docs/adr/0101). */
  readonly extAuthz: boolean;
  /** DISC_JWT_ENABLE_REMOTE_JWKS: in-mesh jwksUris are fetched by the proxy (remote_jwks). */
  readonly remoteJwks: boolean;
  /** DISC_TRACE_SAMPLING: the share of requests traced (0..100) where a proxy's ProxyConfig sets none. */
  readonly traceSampling: number;
}

export const DEFAULT_GENERATOR_SETTINGS: GeneratorSettings = Object.freeze({
  inboundPassthrough: true,
  defaultRequestTimeoutMs: 0,
  sidecarUseRemoteAddress: false,
  http10: false,
  httpDelayedCloseTimeoutMs: 1000,
  gatewayStripHostPort: false,
  routeCollapse: true,
  authz: true,
  authn: true,
  extAuthz: true,
  remoteJwks: false,
  traceSampling: 1,
});

const settingsKeys = new WeakMap<GeneratorSettings, string>();

/** A short key for memo keys of values that read the settings (one string per settings object). */
export function settingsKey(settings: GeneratorSettings): string {
  let k = settingsKeys.get(settings);
  if (k === undefined) {
    k = JSON.stringify(settings);
    settingsKeys.set(settings, k);
  }
  return k;
}

/** Everything a generator reads. Generators are pure functions of this input. */
export interface GenerateInput {
  readonly proxy: Proxy;
  readonly push: PushContext;
  readonly endpoints: EndpointIndex;
  /** Requested names; undefined for a wildcard subscription. */
  readonly names: ReadonlySet<string> | undefined;
  /**
   * `names` are a few names just added to a (delta) subscription: their resources are built name
   * by name, not as a list of the scope's memo (which would cost the size of the whole subscription).
   */
  readonly few?: boolean;
  readonly cache: ResourceCache;
  readonly settings: GeneratorSettings;
}

export type Generator = (input: GenerateInput) => ReadonlyArray<EncodedResource>;

export type GeneratorSet = Readonly<Record<XdsTypeUrl, Generator>>;
