/**
 * What a proxy's HTTP connection managers record (docs/adr/0176): trace sampling when the mesh
 * config's `enableTracing` is on, and the mesh config's `accessLogFile`. The share of requests
 * traced is the proxy's own (`tracing.sampling` of the ProxyConfig its agent sends as PROXY_CONFIG
 * node metadata), else DISC_TRACE_SAMPLING. A pure function of (proxy, mesh settings, generator
 * settings), with a short key for the caches of the listeners that embed it.
 */
import type { MeshSettings } from '../../model/mesh-settings.js';
import type { Proxy } from '../../model/proxy.js';
import { isRecord } from '../../util/record.js';
import type { HcmObservability } from '../envoy/listeners.js';
import type { GeneratorSettings } from './types.js';

/** Envoy's default for the longest path kept in a span tag. */
const DEFAULT_MAX_PATH_TAG_LENGTH = 256;

export interface ObservabilityChoice {
  readonly value: HcmObservability | undefined;
  /** Distinguishes every different `value` (for cache keys). */
  readonly key: string;
}

const NONE: ObservabilityChoice = Object.freeze({ value: undefined, key: 'o-' });

/** The ProxyConfig tracing values the proxy's agent sent, where they are well-formed. */
function proxyTracing(proxy: Proxy): { sampling?: number; maxPathTagLength?: number } {
  const config = proxy.metadata.PROXY_CONFIG;
  const tracing = isRecord(config) ? config.tracing : undefined;
  if (!isRecord(tracing)) return {};
  const sampling = typeof tracing.sampling === 'number' && tracing.sampling >= 0 && tracing.sampling <= 100 ? tracing.sampling : undefined;
  const length = tracing.maxPathTagLength;
  const maxPathTagLength = typeof length === 'number' && Number.isInteger(length) && length > 0 ? length : undefined;
  return { sampling, maxPathTagLength };
}

export function hcmObservability(proxy: Proxy, mesh: MeshSettings, settings: GeneratorSettings): ObservabilityChoice {
  const accessLogPath = mesh.accessLogFile !== '' ? mesh.accessLogFile : undefined;
  if (!mesh.enableTracing && accessLogPath === undefined) return NONE;
  let traceSampling: number | undefined;
  let maxPathTagLength: number | undefined;
  if (mesh.enableTracing) {
    const own = proxyTracing(proxy);
    traceSampling = own.sampling ?? settings.traceSampling;
    maxPathTagLength = own.maxPathTagLength ?? DEFAULT_MAX_PATH_TAG_LENGTH;
  }
  return {
    value: { traceSampling, maxPathTagLength, accessLogPath },
    key: `o${traceSampling ?? '-'}/${maxPathTagLength ?? '-'}/${accessLogPath ?? '-'}`,
  };
}
