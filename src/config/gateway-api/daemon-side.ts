/**
 * The gateway-api part of the daemon, as the bootstrap (src/bootstrap/daemon.ts) uses it: the
 * source that reads the gateway-api kinds into the config store (DISC_ENABLED_SERVICE_APIS), and
 * the leader duty `gateway-api-status` that writes their status (DISC_ENABLE_GATEWAY_API_STATUS).
 */
import type { V1Namespace, V1Service } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { KubeClient } from '../../kube/client.js';
import type { ObjectCache } from '../../kube/types.js';
import type { MemoryConfigStore } from '../store.js';
import type { ConfigRejection } from '../types.js';
import { GatewayApiSource } from './source.js';
import { GatewayApiStatusWriter } from './status.js';

export interface GatewayApiSideInput {
  readonly client: KubeClient;
  readonly store: MemoryConfigStore;
  readonly caches: { readonly services: ObjectCache<V1Service>; readonly namespaces: ObjectCache<V1Namespace> };
  readonly domain: string;
  readonly resyncMs?: number;
  readonly log: Logger;
  readonly onReject?: (r: ConfigRejection) => void;
}

/** Leadership as the duty needs it (src/controllers/leadership.ts fits). */
export interface DutyHost {
  addDuty(name: string, run: (signal: AbortSignal) => Promise<void> | void): () => Promise<void>;
}

export interface GatewayApiSide {
  readonly source: GatewayApiSource;
  /** Registers the status duty with the leader election. */
  addStatusDuty(leadership: DutyHost, limits: { readonly qps: number; readonly burst: number }): GatewayApiStatusWriter;
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
  return {
    source,
    addStatusDuty(leadership, limits) {
      const writer = new GatewayApiStatusWriter({ client: input.client, source, qps: limits.qps, burst: limits.burst, log });
      leadership.addDuty('gateway-api-status', (s) => writer.run(s));
      return writer;
    },
    stop: () => source.stop(),
  };
}
