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
 * Services and ServiceExports, reconciles every Service, then follows changes until the signal
 * aborts (leadership lost or daemon stopping).
 */
import type { V1Service } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { sleep } from '../../kube/backoff.js';
import type { KubeClient } from '../../kube/client.js';
import { Controller } from '../../kube/controller.js';
import { isAlreadyExists, isNotFound } from '../../kube/errors.js';
import { dropManagedFields, Informer, resourceRef } from '../../kube/informer.js';
import { objectKey, splitKey, type KubeObject } from '../../kube/types.js';
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
  /** A create/delete failed (it is retried). */
  readonly onError?: (err: Error) => void;
}

interface ServiceExportObject extends KubeObject {
  readonly spec?: Record<string, never>;
}

export class ServiceExportController {
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
    const controller = new Controller({
      name: 'mcs-autoexport',
      reconcile: (key) => this.reconcile(key, services, exports),
      onError: (err, key, info) => {
        this.opts.onError?.(err);
        log?.warn({ key, retries: info.retries, err: err.message }, `mcs auto-export: ${key}: ${err.message}${info.willRetry ? ' (retrying)' : ''}`);
      },
    });
    controller.watch(services, (e) => (e.type === 'delete' ? undefined : objectKey(e.object)));
    // an export deleted or changed by hand is put back (or removed) on its Service's next reconcile
    controller.watch(exports);
    const offMesh = this.opts.onMeshChange?.(() => {
      for (const s of services.list()) controller.enqueue(objectKey(s));
    });
    services.start();
    exports.start();
    try {
      await Promise.all([services.waitForSync({ signal }), exports.waitForSync({ signal })]);
      for (const s of services.list()) controller.enqueue(objectKey(s));
      controller.start();
      log?.info({ services: services.list().length }, 'mcs auto-export: running (leader)');
      await new Promise<void>((resolve) => {
        if (signal.aborted) resolve();
        else signal.addEventListener('abort', () => resolve(), { once: true });
      });
    } catch (err) {
      if (!signal.aborted) throw err;
    } finally {
      offMesh?.();
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
