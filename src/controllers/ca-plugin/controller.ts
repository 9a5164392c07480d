/**
 * Plug-in CA reload (docs/adr/0066): a daemon that started with a plug-in CA (the `cacerts` Secret
 * of its namespace, or the four files in ROOT_CA_DIR) follows changes of it without a restart. One
 * key, `plugin`, on the reconcile contract of src/controllers/runtime/; sources: the Secret's
 * events (an informer limited to that one Secret) when it came from the cluster, a poll of the
 * directory every `pollMs` when it came from files.
 *
 * The reconcile reads the plug-in CA again (src/ca/plugin.ts): changed and valid → the CA switches
 * to it (its listeners follow: the serving certificate, trust distribution); unchanged → nothing;
 * incomplete or inconsistent → a TerminalError naming what is wrong (logged, counted in
 * controller_sync_errors_total{controller="ca-plugin"}) once per distinct problem, the CA keeps
 * signing with what it has, and the next change is read again; removed → logged, the CA keeps its material (going back to a
 * self-signed root needs a restart, so that no workload silently changes trust). Every replica runs
 * it: each signs with its own copy.
 */
import type { Logger } from 'pino';
import type { CertificateAuthority } from '../../ca/authority.js';
import { caFilesOf, CaMaterialError, type SigningMaterial } from '../../ca/material.js';
import { loadPluginCa, type PluginCa, type PluginCaOptions } from '../../ca/plugin.js';
import { PLUGIN_SECRET, type SecretObject } from '../../ca/secret-store.js';
import { dropManagedFields, Informer, resourceRef } from '../../kube/informer.js';
import { Controller, every, fromCache, TerminalError, type EventSource, type SyncErrorCounter } from '../runtime/index.js';

export const CA_PLUGIN_CONTROLLER = 'ca-plugin';
const KEY = 'plugin';

export interface PluginReloadOptions extends PluginCaOptions {
  readonly ca: Pick<CertificateAuthority, 'current' | 'update'>;
  /** Where the CA was loaded from at start: the cluster's Secret or ROOT_CA_DIR. */
  readonly from: PluginCa['from'];
  /** Poll interval of ROOT_CA_DIR (default 10 s). */
  readonly pollMs?: number;
  readonly log?: Logger;
  readonly syncErrors?: SyncErrorCounter;
}

const sameMaterial = (a: SigningMaterial, b: SigningMaterial): boolean => {
  const x = caFilesOf(a);
  const y = caFilesOf(b);
  return x['ca-cert.pem'] === y['ca-cert.pem'] && x['ca-key.pem'] === y['ca-key.pem'] && x['cert-chain.pem'] === y['cert-chain.pem'] && x['root-cert.pem'] === y['root-cert.pem'];
};

/** The reload controller and what it needs started and stopped with it. */
export class PluginReload {
  readonly controller: Controller<string>;
  private readonly secrets: Informer<SecretObject> | undefined;
  private removedLogged = false;
  /** The last refusal, reported once (the directory poll would repeat it every interval). */
  private lastRefusal: string | undefined;

  constructor(private readonly o: PluginReloadOptions) {
    const sources: EventSource<string>[] = [];
    if (o.from === 'secret' && o.client) {
      this.secrets = new Informer<SecretObject>(o.client, {
        resource: resourceRef('v1', 'secrets', { namespaced: true, kind: 'Secret' }),
        namespace: o.namespace,
        fieldSelector: `metadata.name=${PLUGIN_SECRET}`,
        transform: dropManagedFields,
        name: `${CA_PLUGIN_CONTROLLER} secrets`,
        onError: (err) => o.log?.warn({ err: err.message }, `${CA_PLUGIN_CONTROLLER}: Secret informer: ${err.message} (retrying)`),
      });
      sources.push(fromCache(this.secrets, () => KEY));
    } else {
      sources.push(every(o.pollMs ?? 10_000, () => [KEY]));
    }
    this.controller = new Controller<string>({
      name: CA_PLUGIN_CONTROLLER,
      reconciler: { reconcile: () => this.reconcile() },
      sources,
      syncErrors: o.syncErrors,
      log: o.log,
    });
  }

  start(): void {
    this.secrets?.start();
    this.controller.start();
  }

  async stop(): Promise<void> {
    await this.controller.stop();
    await this.secrets?.stop();
  }

  private async reconcile(): Promise<void> {
    let loaded: PluginCa | undefined;
    try {
      loaded = await loadPluginCa(this.o);
    } catch (err) {
      if (!(err instanceof CaMaterialError)) throw err;
      if (err.message === this.lastRefusal) return;
      this.lastRefusal = err.message;
      throw new TerminalError(`${err.message}; still signing with the plug-in CA loaded before`);
    }
    this.lastRefusal = undefined;
    if (!loaded) {
      if (!this.removedLogged) this.o.log?.warn(`${CA_PLUGIN_CONTROLLER}: the plug-in CA is gone; still signing with the one loaded before (a self-signed root needs a restart)`);
      this.removedLogged = true;
      return;
    }
    this.removedLogged = false;
    if (sameMaterial(loaded.material, this.o.ca.current())) return;
    this.o.ca.update(loaded.material);
    this.o.log?.info({ source: loaded.source, notAfter: loaded.material.signingCert.notAfter.toISOString() }, `${CA_PLUGIN_CONTROLLER}: plug-in CA changed; signing with the new one`);
  }
}
