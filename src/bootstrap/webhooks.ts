/**
 * Wiring of meshd's webhooks (docs/adr/0070, 0072): the HTTPS server on `--httpsAddr` with the
 * identity side's serving certificate, the injector's inputs (the injector ConfigMap watched in the
 * daemon's namespace, the mesh config's proxy defaults, the cluster's version), and the source of
 * the `caBundle` that the leader's webhook-ca-bundle controller keeps in the webhook configurations.
 */
import type { Logger } from 'pino';
import type { KubeClient } from '../kube/client.js';
import type { Metrics } from '../metrics/metrics.js';
import type { MeshSettings } from '../model/mesh-settings.js';
import { InjectorConfigSource, type InjectorState } from '../inject/source.js';
import type { ServingCertificate } from '../security/serving-cert.js';
import { WebhookServer } from '../server/webhooks.js';
import type { CaBundleSource } from '../controllers/webhook-ca-bundle/controller.js';
import type { DaemonConfig } from './daemon-config.js';

export interface WebhookSide {
  readonly port: number;
  /** The injector ConfigMap's name, when injection reads one. */
  readonly injectorConfigMap?: string;
  /** What the caBundle controller writes. */
  readonly caBundle: CaBundleSource;
  stop(): Promise<void>;
}

export interface WebhookInputs {
  readonly cfg: DaemonConfig;
  readonly serving: ServingCertificate;
  /** The cluster client, with `--registries Cluster`. */
  readonly client?: KubeClient;
  readonly mesh: () => MeshSettings;
  readonly metrics: Metrics;
  readonly log: Logger;
}

/** Starts the webhook server (and the injector's ConfigMap watch); resolves once it listens. */
export async function startWebhooks(i: WebhookInputs): Promise<WebhookSide | undefined> {
  const w = i.cfg.webhooks;
  if (!w.addr) return undefined;
  let source: InjectorConfigSource | undefined;
  let injector: (() => InjectorState) | undefined;
  if (!w.injectEnabled) {
    i.log.info('webhooks: sidecar injection is off (INJECT_ENABLED=false); /inject answers every request with an error, so the API server applies the failurePolicy');
  } else if (i.client) {
    source = new InjectorConfigSource({
      client: i.client,
      namespace: i.cfg.namespace,
      settings: { revision: i.cfg.env.REVISION ?? '', domain: i.cfg.domain, probeLocalhost: w.probeLocalhost, legacyFsGroup: w.legacyFsGroup },
      mesh: () => {
        const m = i.mesh();
        return { trustDomain: m.trustDomain, defaultConfig: m.proxyDefaults };
      },
      log: i.log,
    });
    await source.start();
    const s = source;
    injector = () => s.current();
  } else {
    const why = 'the injector reads its ConfigMap from the cluster, and this daemon has none (--registries Cluster)';
    injector = () => ({ unavailable: why });
    i.log.info(`webhooks: /inject answers with an error: ${why}`);
  }
  const serving = i.serving;
  const server = new WebhookServer({
    tls: { current: () => serving.credentials.current(), ciphers: i.cfg.security.ciphers },
    injector,
    metrics: i.metrics,
    log: i.log,
  });
  let port: number;
  try {
    port = await server.listen(w.addr);
  } catch (err) {
    await source?.stop();
    throw err;
  }
  return {
    port,
    injectorConfigMap: source?.configMapName,
    caBundle: { bundle: () => serving.caBundle(), onChange: (l) => serving.onChange(l) },
    async stop() {
      await server.close();
      await source?.stop();
    },
  };
}
