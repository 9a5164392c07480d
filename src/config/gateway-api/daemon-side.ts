/**
 * The gateway-api part of the daemon, as the bootstrap (src/bootstrap/daemon.ts) uses it: the
 * source that reads the gateway-api kinds into the config store (DISC_ENABLED_SERVICE_APIS). The
 * leader's status writer is a controller (src/controllers/gateway-api-status/).
 */
import type { V1Namespace, V1Service } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { KubeClient } from '../../kube/client.js';
import type { ObjectCache } from '../../kube/types.js';
import type { MemoryConfigStore } from '../store.js';
import type { ConfigRejection } from '../types.js';
import { GatewayApiSource } from './source.js';

export interface GatewayApiSideInput {
  readonly client: KubeClient;
  readonly store: MemoryConfigStore;
  readonly caches: { readonly services: ObjectCache<V1Service>; readonly namespaces: ObjectCache<V1Namespace> };
  readonly domain: string;
  readonly resyncMs?: number;
  readonly log: Logger;
  readonly onReject?: (r: ConfigRejection) => void;
}

export interface GatewayApiSide {
  readonly source: GatewayApiSource;
  stop(): Promise<void>;
}

/** Starts the source; resolves once the gateway-api caches synced, or at once when the CRDs are absent. */
export async function startGatewayApiSide(input: GatewayApiSideInput, signal?: AbortSignal): Promise<GatewayApiSide> {
  const log = input.log;
  const source = new GatewayApiSource({
    client: input.client,
    store: input.store,
    services: input.caches.services,
    namespaces: input.caches.namespaces,
    domain: input.domain,
    resyncMs: input.resyncMs,
    onReject: input.onReject,
    log: { info: (m) => log.info(m), warn: (m) => log.warn(m) },
  });
  await source.start(signal);
  return { source, stop: () => source.stop() };
}
