/**
 * Where the webhook's injector inputs come from: the ConfigMap `mesh-sidecar-injector[-<revision>]`
 * of meshd's namespace, watched (a change applies to the next request), the mesh config of the
 * running daemon, and the cluster's version (native sidecars from Kubernetes 1.29). A ConfigMap that
 * is missing leaves the injector unavailable, with a message naming it; an edit that does not parse
 * is logged and the last good content stays in force.
 */
import type { Logger } from 'pino';
import type { KubeClient } from '../kube/client.js';
import { dropManagedFields, Informer, resourceRef } from '../kube/informer.js';
import type { KubeObject } from '../kube/types.js';
import { injectorConfigMapContent, InjectionConfigError, type InjectionInputs, type InjectorConfig, type InjectionValues, type MeshView } from './config.js';

/** The injector ConfigMap of a revision (`mesh-sidecar-injector` for the default one). */
export function injectorConfigMapName(revision: string | undefined): string {
  return revision && revision !== 'default' ? `mesh-sidecar-injector-${revision}` : 'mesh-sidecar-injector';
}

/** Whether Kubernetes `gitVersion` (e.g. `v1.33.1`) runs native sidecars (1.29 and later). */
export function supportsNativeSidecars(gitVersion: string | undefined): boolean {
  const m = /^v?(\d+)\.(\d+)/.exec(gitVersion ?? '');
  if (!m) return false;
  return Number(m[1]) > 1 || (Number(m[1]) === 1 && Number(m[2]) >= 29);
}

/** The settings of the daemon that shape injection besides the ConfigMap. */
export interface InjectorSettings {
  readonly revision: string;
  readonly domain: string;
  readonly probeLocalhost: boolean;
  readonly legacyFsGroup: boolean;
}

export type InjectorState = { readonly inputs: InjectionInputs } | { readonly unavailable: string };

interface ConfigMap extends KubeObject {
  readonly data?: Record<string, string>;
}

export interface InjectorConfigSourceOptions {
  readonly client: KubeClient;
  readonly namespace: string;
  readonly settings: InjectorSettings;
  readonly mesh: () => MeshView;
  readonly log: Logger;
  /** A (re)load of the ConfigMap, and a failed one. */
  readonly onLoad?: () => void;
  readonly onLoadError?: () => void;
}

export class InjectorConfigSource {
  readonly configMapName: string;
  private readonly informer: Informer<ConfigMap>;
  private content: { config: InjectorConfig; values: InjectionValues } | undefined;
  private problem: string;
  private native = false;
  private lastVersion = '';

  constructor(private readonly o: InjectorConfigSourceOptions) {
    this.configMapName = injectorConfigMapName(o.settings.revision);
    this.problem = `the injector ConfigMap ${o.namespace}/${this.configMapName} has not been read yet`;
    this.informer = new Informer<ConfigMap>(o.client, {
      resource: resourceRef('v1', 'configmaps', { namespaced: true, kind: 'ConfigMap' }),
      namespace: o.namespace,
      fieldSelector: `metadata.name=${this.configMapName}`,
      transform: dropManagedFields,
      name: `configmap ${this.configMapName}`,
      onError: (err, phase) => o.log.warn({ phase, err: err.message }, `injector ConfigMap ${o.namespace}/${this.configMapName}: ${phase}: ${err.message} (retrying)`),
    });
    this.informer.onEvent((e) => {
      if (e.type === 'delete') this.apply(undefined);
      else this.apply(e.object);
    });
  }

  /** Starts watching; resolves once the first list is in (and the cluster's version is known). */
  async start(signal?: AbortSignal): Promise<void> {
    try {
      const v = await this.o.client.request<{ gitVersion?: string }>({ method: 'GET', path: '/version', signal, timeoutMs: 10_000 });
      this.native = supportsNativeSidecars(v.gitVersion);
      this.o.log.info({ version: v.gitVersion, nativeSidecars: this.native }, `injector: Kubernetes ${v.gitVersion ?? '?'}; proxies are injected as ${this.native ? 'native sidecars' : 'containers'} unless values.global.nativeSidecar says otherwise`);
    } catch (err) {
      this.o.log.warn({ err: (err as Error).message }, 'injector: the cluster version is unknown; proxies are injected as containers unless values.global.nativeSidecar is true');
    }
    this.informer.start();
    await this.informer.waitForSync({ signal });
    this.apply(this.informer.get(this.o.namespace, this.configMapName));
  }

  async stop(): Promise<void> {
    await this.informer.stop();
  }

  /** The inputs of the next injection, or why there are none. */
  current(): InjectorState {
    if (!this.content) return { unavailable: this.problem };
    return {
      inputs: {
        ...this.content,
        mesh: this.o.mesh(),
        revision: this.o.settings.revision || 'default',
        domain: this.o.settings.domain,
        clusterSupportsNativeSidecars: this.native,
        probeLocalhost: this.o.settings.probeLocalhost,
        legacyFsGroup: this.o.settings.legacyFsGroup,
      },
    };
  }

  private apply(cm: ConfigMap | undefined): void {
    const where = `ConfigMap ${this.o.namespace}/${this.configMapName}`;
    if (!cm) {
      this.content = undefined;
      this.lastVersion = '';
      this.problem = `the injector ConfigMap ${this.o.namespace}/${this.configMapName} does not exist (install the mesh with meshctl install, or create it with keys config and values)`;
      this.o.log.warn(`injector: ${this.problem}; injection requests fail until it exists`);
      this.o.onLoadError?.();
      return;
    }
    const version = cm.metadata?.resourceVersion ?? '';
    if (version !== '' && version === this.lastVersion) return;
    this.lastVersion = version;
    try {
      this.content = injectorConfigMapContent(cm.data, where);
      this.o.onLoad?.();
      this.o.log.info({ configMap: where, policy: this.content.config.policy, templates: this.content.config.defaultTemplates }, 'injector: configuration loaded');
    } catch (err) {
      if (!(err instanceof InjectionConfigError)) throw err;
      this.o.onLoadError?.();
      if (this.content) {
        this.o.log.warn({ err: err.message }, 'injector: the ConfigMap was changed but cannot be used; keeping the last good configuration');
      } else {
        this.problem = err.message;
        this.o.log.error({ err: err.message }, 'injector: the ConfigMap cannot be used; injection requests fail until it is fixed');
      }
    }
  }
}
