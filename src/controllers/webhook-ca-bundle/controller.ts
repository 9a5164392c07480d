/**
 * The `caBundle` of meshd's webhook configurations, kept equal to the roots that verify its webhook
 * serving certificate (a leader duty, on the reconcile contract of src/controllers/runtime/):
 *
 *   MutatingWebhookConfiguration   INJECTION_WEBHOOK_CONFIG_NAME (`mesh-sidecar-injector[-<rev>]`),
 *                                  and the revision tags pointing at this revision (labels
 *                                  `mesh.io/tag` and `mesh.io/rev=<revision>`, src/install/tags.ts)
 *   ValidatingWebhookConfiguration VALIDATION_WEBHOOK_CONFIG_NAME (`mesh-mesh-system`; empty: none)
 *
 * Keys are `mutating/<name>` and `validating/<name>`. A configuration is reconciled when it appears or
 * changes (someone cleared the bundle, an upgrade re-applied it) and when the bundle changes (a new
 * serving certificate, a rotated root). Each of its webhooks gets the bundle with a JSON patch whose
 * `test` operations pin the webhook's position and name, so a concurrent edit fails the patch (retried)
 * instead of patching the wrong entry. A configuration that does not exist yet is waited for.
 * Counted: cfg_validation_config_load (reads), _load_error, cfg_validation_config_updates, _update_error.
 * No configuration is deleted here (uninstall removes them), so cfg_validation_config_delete_error stays 0.
 */
import type { Logger } from 'pino';
import { CONTENT_TYPE_JSON_PATCH, type KubeClient } from '../../kube/client.js';
import { dropManagedFields, Informer, resourceRef } from '../../kube/informer.js';
import type { KubeObject } from '../../kube/types.js';
import { Controller, fromCache, Trigger, type Duty, type SyncErrorCounter } from '../runtime/index.js';

export const WEBHOOK_CA_BUNDLE_CONTROLLER = 'webhook-ca-bundle';
const API = 'admissionregistration.k8s.io/v1';
const TAG_LABEL = 'mesh.io/tag';
const REVISION_LABEL = 'mesh.io/rev';

export interface WebhookConfiguration extends KubeObject {
  readonly webhooks?: ReadonlyArray<{ readonly name?: string; readonly clientConfig?: { readonly caBundle?: string; readonly service?: unknown; readonly url?: string } }>;
}

export interface CaBundleSource {
  /** PEM of the roots that verify the webhook serving certificate now. */
  bundle(): string;
  /** Calls `listener` after the bundle may have changed; returns the unsubscribe function. */
  onChange(listener: () => void): () => void;
}

export interface WebhookCaBundleOptions {
  readonly client: KubeClient;
  readonly source: CaBundleSource;
  /** INJECTION_WEBHOOK_CONFIG_NAME; empty: no mutating configuration is patched. */
  readonly mutatingName: string;
  /** VALIDATION_WEBHOOK_CONFIG_NAME; empty: no validating configuration is patched. */
  readonly validatingName: string;
  /** This daemon's revision (`default` for the default one): tags pointing at it are patched too. */
  readonly revision: string;
  readonly metrics?: {
    readonly load: { inc(): void };
    readonly loadError: { inc(): void };
    readonly updates: { inc(): void };
    readonly updateError: { inc(): void };
  };
  readonly syncErrors?: SyncErrorCounter;
  readonly log?: Logger;
}

type Kind = 'mutating' | 'validating';
const PLURAL: Record<Kind, string> = { mutating: 'mutatingwebhookconfigurations', validating: 'validatingwebhookconfigurations' };
const KIND: Record<Kind, string> = { mutating: 'MutatingWebhookConfiguration', validating: 'ValidatingWebhookConfiguration' };

/** The JSON patch that sets `bundle` (base64) on every webhook of `config`; empty when all have it. */
export function caBundlePatch(config: WebhookConfiguration, bundle: string): Array<Record<string, unknown>> {
  const ops: Array<Record<string, unknown>> = [];
  (config.webhooks ?? []).forEach((w, i) => {
    if (w.clientConfig?.caBundle === bundle) return;
    ops.push({ op: 'test', path: `/webhooks/${i}/name`, value: w.name });
    ops.push({ op: 'add', path: w.clientConfig ? `/webhooks/${i}/clientConfig/caBundle` : `/webhooks/${i}/clientConfig`, value: w.clientConfig ? bundle : { caBundle: bundle } });
  });
  return ops;
}

export class WebhookCaBundleController implements Duty {
  readonly name = WEBHOOK_CA_BUNDLE_CONTROLLER;

  constructor(private readonly o: WebhookCaBundleOptions) {}

  private ours(kind: Kind, c: WebhookConfiguration): boolean {
    const name = c.metadata?.name ?? '';
    if (kind === 'validating') return this.o.validatingName !== '' && name === this.o.validatingName;
    if (this.o.mutatingName !== '' && name === this.o.mutatingName) return true;
    const labels = c.metadata?.labels ?? {};
    return labels[TAG_LABEL] !== undefined && (labels[REVISION_LABEL] ?? 'default') === (this.o.revision || 'default');
  }

  async run(signal: AbortSignal): Promise<void> {
    const { client, log } = this.o;
    const informer = (kind: Kind): Informer<WebhookConfiguration> =>
      new Informer<WebhookConfiguration>(client, {
        resource: resourceRef(API, PLURAL[kind], { namespaced: false, kind: KIND[kind] }),
        transform: dropManagedFields,
        name: `webhook-ca-bundle ${PLURAL[kind]}`,
        onError: (err) => log?.warn({ err: err.message }, `webhook caBundle: ${KIND[kind]} informer: ${err.message} (retrying)`),
      });
    const caches = { mutating: informer('mutating'), validating: informer('validating') };
    const bundleChanged = new Trigger<string>();
    const keysOf = (kind: Kind) => (e: { readonly type: string; readonly object: WebhookConfiguration }) =>
      e.type !== 'delete' && this.ours(kind, e.object) ? `${kind}/${e.object.metadata?.name ?? ''}` : undefined;
    const allKeys = (): string[] => (['mutating', 'validating'] as const).flatMap((k) => caches[k].list().filter((c) => this.ours(k, c)).map((c) => `${k}/${c.metadata?.name ?? ''}`));
    const controller = new Controller<string>({
      name: WEBHOOK_CA_BUNDLE_CONTROLLER,
      reconciler: { reconcile: (key) => this.reconcile(key, caches) },
      sources: [fromCache(caches.mutating, keysOf('mutating')), fromCache(caches.validating, keysOf('validating')), bundleChanged],
      syncErrors: this.o.syncErrors,
      log,
    });
    const off = this.o.source.onChange(() => {
      for (const k of allKeys()) bundleChanged.enqueue(k);
    });
    caches.mutating.start();
    caches.validating.start();
    try {
      await Promise.all([caches.mutating.waitForSync({ signal }), caches.validating.waitForSync({ signal })]);
      const missing = [this.o.mutatingName && !caches.mutating.get('', this.o.mutatingName) ? `MutatingWebhookConfiguration ${this.o.mutatingName}` : '', this.o.validatingName && !caches.validating.get('', this.o.validatingName) ? `ValidatingWebhookConfiguration ${this.o.validatingName}` : ''].filter((x) => x);
      if (missing.length > 0) log?.info(`webhook caBundle: ${missing.join(' and ')} not found yet; patched when created`);
      await controller.run(signal);
    } catch (err) {
      if (!signal.aborted) throw err;
    } finally {
      off();
      await controller.stop();
      await Promise.all([caches.mutating.stop(), caches.validating.stop()]);
    }
  }

  private async reconcile(key: string, caches: Record<Kind, Informer<WebhookConfiguration>>): Promise<void> {
    const slash = key.indexOf('/');
    const kind = key.slice(0, slash) as Kind;
    const name = key.slice(slash + 1);
    const m = this.o.metrics;
    const path = `/apis/${API}/${PLURAL[kind]}/${encodeURIComponent(name)}`;
    let config: WebhookConfiguration | undefined = caches[kind].get('', name);
    if (!config) return; // deleted meanwhile; its next creation queues it again
    const bundle = Buffer.from(this.o.source.bundle()).toString('base64');
    if (caBundlePatch(config, bundle).length === 0) return;
    // Patch what the API server has now, not what the cache held.
    try {
      config = await this.o.client.request<WebhookConfiguration>({ method: 'GET', path });
      m?.load.inc();
    } catch (err) {
      m?.loadError.inc();
      throw err;
    }
    const ops = caBundlePatch(config, bundle);
    if (ops.length === 0) return;
    try {
      await this.o.client.request({ method: 'PATCH', path, body: ops, contentType: CONTENT_TYPE_JSON_PATCH });
    } catch (err) {
      m?.updateError.inc();
      throw err;
    }
    m?.updates.inc();
    this.o.log?.info({ configuration: `${KIND[kind]} ${name}`, webhooks: ops.length / 2 }, `webhook caBundle: ${KIND[kind]} ${name} updated`);
  }
}
