/**
 * MCS auto-export (ENABLE_MCS_AUTOEXPORT), a leader-only duty: every Service of the cluster gets a
 * ServiceExport (multicluster.x-k8s.io/v1alpha1) of the same name and namespace, owned by the
 * Service so the garbage collector removes it with the Service. Services whose hostname the mesh
 * config declares cluster-local (`serviceSettings[].settings.clusterLocal` with `hosts` patterns)
 * are not exported, and an export this controller made for one is deleted once the mesh config
 * declares it cluster-local. Exports made by someone else (no `mesh.io/auto-export` label) are
 * never touched.
 *
 * `run(signal)` waits for the ServiceExport CRD (checked every `crdPollMs`), starts informers on
 * Services and ServiceExports, then runs a controller keyed by Service (`namespace/name`, the
 * reconcile contract of src/controllers/runtime/) until the signal aborts (leadership lost or
 * daemon stopping). Sources: every Service, export changes (a hand-deleted export is put back), and
 * mesh config changes (every Service again).
 */
import type { V1Service } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { sleep } from '../../kube/backoff.js';
import type { KubeClient } from '../../kube/client.js';
import { isAlreadyExists, isNotFound } from '../../kube/errors.js';
import { dropManagedFields, Informer, resourceRef } from '../../kube/informer.js';
import { objectKey, splitKey, type KubeObject } from '../../kube/types.js';
import { Controller, fromCache, fromEvents, type Duty, type SyncErrorCounter } from '../runtime/index.js';
import { clusterLocalMatcher } from './cluster-local.js';

export const SERVICE_EXPORT_API_VERSION = 'multicluster.x-k8s.io/v1alpha1';
export const SERVICE_EXPORT_KIND = 'ServiceExport';
/** Label on the exports this controller creates (and so may delete). */
export const AUTO_EXPORT_LABEL = 'mesh.io/auto-export';

export interface ServiceExportControllerOptions {
  readonly client: KubeClient;
  /** `--domain`: Services are matched against cluster-local patterns as `<svc>.<ns>.svc.<domain>`. */
  readonly domain: string;
  /** Cluster-local host patterns of the mesh config in force. */
  readonly clusterLocalHosts: () => ReadonlyArray<string>;
  /** Subscribes to mesh config changes (every Service is reconciled again). */
  readonly onMeshChange?: (listener: () => void) => () => void;
  /** How often a missing ServiceExport CRD is looked for again (default 30 s). */
  readonly crdPollMs?: number;
  readonly log?: Logger;
  /** controller_sync_errors_total (label `mcs-autoexport`). */
  readonly syncErrors?: SyncErrorCounter;
}

interface ServiceExportObject extends KubeObject {
  readonly spec?: Record<string, never>;
}

export const SERVICE_EXPORT_CONTROLLER = 'mcs-autoexport';

export class ServiceExportController implements Duty {
  readonly name = SERVICE_EXPORT_CONTROLLER;

  constructor(private readonly opts: ServiceExportControllerOptions) {}

  /** The leader duty: resolves once `signal` aborts and everything stopped. */
  async run(signal: AbortSignal): Promise<void> {
    const { client, log } = this.opts;
    if (!(await this.waitForCrd(signal))) return;
    const informer = <T extends KubeObject>(apiVersion: string, plural: string, kind: string): Informer<T> =>
      new Informer<T>(client, {
        resource: resourceRef(apiVersion, plural, { namespaced: true, kind }),
        transform: dropManagedFields,
        name: `mcs-autoexport ${plural}`,
        onError: (err) => log?.warn({ err: err.message }, `mcs auto-export: ${kind} informer: ${err.message} (retrying)`),
      });
    const services = informer<V1Service>('v1', 'services', 'Service');
    const exports = informer<ServiceExportObject>(SERVICE_EXPORT_API_VERSION, 'serviceexports', SERVICE_EXPORT_KIND);
    const controller = new Controller<string>({
      name: SERVICE_EXPORT_CONTROLLER,
      reconciler: { reconcile: (key) => this.reconcile(key, services, exports) },
      sources: [
        fromCache(services, (e) => (e.type === 'delete' ? undefined : objectKey(e.object))),
        // an export deleted or changed by hand is put back (or removed) on its Service's next reconcile
        fromCache(exports),
        ...(this.opts.onMeshChange ? [fromEvents<string>((emit) => this.opts.onMeshChange!(() => emit(services.list().map((s) => objectKey(s)))))] : []),
      ],
      syncErrors: this.opts.syncErrors,
      log,
    });
    services.start();
    exports.start();
    try {
      await Promise.all([services.waitForSync({ signal }), exports.waitForSync({ signal })]);
      log?.info({ services: services.list().length }, 'mcs auto-export: running (leader)');
      await controller.run(signal);
    } catch (err) {
      if (!signal.aborted) throw err;
    } finally {
      await controller.stop();
      await Promise.all([services.stop(), exports.stop()]);
    }
  }

  private async waitForCrd(signal: AbortSignal): Promise<boolean> {
    let warned = false;
    while (!signal.aborted) {
      const found = await this.opts.client.resource(SERVICE_EXPORT_API_VERSION, SERVICE_EXPORT_KIND).then(
        () => true,
        () => false,
      );
      if (found) return true;
      if (!warned) this.opts.log?.warn(`mcs auto-export: the ${SERVICE_EXPORT_KIND} CRD (${SERVICE_EXPORT_API_VERSION}) is not installed; waiting for it`);
      warned = true;
      await sleep(this.opts.crdPollMs ?? 30_000, signal).catch(() => undefined);
    }
    return false;
  }

  private async reconcile(key: string, services: Informer<V1Service>, exports: Informer<ServiceExportObject>): Promise<void> {
    const { namespace, name } = splitKey(key);
    const svc = services.get(namespace, name);
    const existing = exports.get(namespace, name);
    if (!svc) return; // the garbage collector removes an owned export with its Service
    const host = `${name}.${namespace}.svc.${this.opts.domain}`;
    const local = clusterLocalMatcher(this.opts.clusterLocalHosts())(host);
    const ref = { apiVersion: SERVICE_EXPORT_API_VERSION, kind: SERVICE_EXPORT_KIND, namespace, name };
    if (local) {
      if (existing?.metadata?.labels?.[AUTO_EXPORT_LABEL] === 'true') {
        await this.opts.client.delete(ref).catch((err: unknown) => {
          if (!isNotFound(err)) throw err;
        });
        this.opts.log?.info({ service: key }, `mcs auto-export: ${host} is cluster-local; removed its ServiceExport`);
      }
      return;
    }
    if (existing) return;
    const uid = svc.metadata?.uid;
    if (!uid) return;
    const obj: ServiceExportObject = {
      apiVersion: SERVICE_EXPORT_API_VERSION,
      kind: SERVICE_EXPORT_KIND,
      metadata: {
        name,
        namespace,
        labels: { [AUTO_EXPORT_LABEL]: 'true' },
        ownerReferences: [{ apiVersion: 'v1', kind: 'Service', name, uid }],
      },
    };
    await this.opts.client.create(obj).catch((err: unknown) => {
      if (!isAlreadyExists(err)) throw err;
    });
    this.opts.log?.debug({ service: key }, 'mcs auto-export: ServiceExport created');
  }
}
