/**
 * Mesh config and mesh networks from the cluster: the ConfigMap `mesh` (`mesh-<revision>` for a
 * named revision) in the daemon namespace, keys `mesh` (MeshConfig YAML, as the `--meshConfig`
 * file) and `meshNetworks` (as the `--networksConfig` file), watched by an informer limited to that
 * one object (field selector on the name).
 *
 * - ConfigMap or key absent → defaults (no networks); deleting it later restores the defaults.
 * - An edit → listeners get the new value (only when it differs from the one in force).
 * - Invalid YAML or field → logged with the ConfigMap, key, field and reason, reported through
 *   `onReject` (the daemon counts it), and the last good value stays in force (the defaults when
 *   the first value seen is already invalid: the daemon starts rather than crash-looping).
 *
 * `openMeshSources` applies the daemon's precedence: an existing `--meshConfig` file wins over the
 * ConfigMap (as does an existing `--networksConfig` file for networks); the ConfigMap is read only
 * with the Cluster registry. See docs/adr/0020-mesh-config-from-configmap.md.
 */
import { existsSync, unwatchFile, watchFile } from 'node:fs';
import { readFile } from 'node:fs/promises';
import type { V1ConfigMap } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { ConfigError } from '../util/config-error.js';
import { EMPTY_MESH_NETWORKS, parseMeshNetworks, type MeshNetworks } from '../config/mesh-networks.js';
import type { KubeClient } from '../kube/client.js';
import { dropManagedFields, Informer, resourceRef } from '../kube/informer.js';
import type { MeshSettings } from '../model/mesh-settings.js';
import { MeshConfigWatcher, SettingsFileFault, meshSettingsFrom, parseMeshConfig } from './mesh-config.js';

export const MESH_CONFIG_KEY = 'mesh';
export const MESH_NETWORKS_KEY = 'meshNetworks';
export type MeshConfigMapKey = typeof MESH_CONFIG_KEY | typeof MESH_NETWORKS_KEY;

/** `mesh`, or `mesh-<revision>` for a named revision other than `default`. */
export function meshConfigMapName(revision?: string): string {
  return revision && revision !== 'default' ? `mesh-${revision}` : 'mesh';
}

/** One refused key: which field and why (field `(yaml)` when the text is not YAML). */
export interface MeshConfigMapIssue {
  readonly field: string;
  readonly reason: string;
}

export interface MeshConfigMapOptions {
  readonly client: KubeClient;
  /** The daemon namespace (`--namespace`, else POD_NAMESPACE, else mesh-system). */
  readonly namespace: string;
  /** REVISION. */
  readonly revision?: string;
  /** What the mesh config does not carry (flags). */
  readonly base: { readonly domain: string; readonly clusterId: string };
  readonly log: Logger;
  /** A key's content was refused (already logged); the daemon counts it. */
  readonly onReject?: (key: MeshConfigMapKey, issues: ReadonlyArray<MeshConfigMapIssue>) => void;
  /** Failed list/watch requests (they are retried). */
  readonly onError?: (err: Error) => void;
}

/** A value that can change, and who to tell. */
export interface Watched<T> {
  current(): T;
  onChange(listener: (value: T) => void): () => void;
}

class Cell<T> implements Watched<T> {
  private readonly listeners = new Set<(value: T) => void>();
  constructor(private value: T) {}
  current(): T {
    return this.value;
  }
  onChange(listener: (value: T) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
  /** Sets the value; tells the listeners when it differs (by content). */
  set(value: T): boolean {
    if (JSON.stringify(value) === JSON.stringify(this.value)) return false;
    this.value = value;
    for (const l of this.listeners) l(value);
    return true;
  }
}

/** Splits `<origin>: <field>: <reason>` issues of parseMeshConfig/parseMeshNetworks. */
function issuesOf(err: unknown, origin: string): MeshConfigMapIssue[] {
  if (!(err instanceof ConfigError)) return [{ field: '(root)', reason: err instanceof Error ? err.message : String(err) }];
  return err.issues.map((line) => {
    const rest = line.startsWith(`${origin}: `) ? line.slice(origin.length + 2) : line;
    if (rest.startsWith('invalid YAML: ')) return { field: '(yaml)', reason: rest.slice('invalid YAML: '.length) };
    const at = rest.indexOf(': ');
    return at < 0 ? { field: '(root)', reason: rest } : { field: rest.slice(0, at), reason: rest.slice(at + 2) };
  });
}

/** The mesh ConfigMap, watched. `start()` resolves once the first list is in (absent counts). */
export class MeshConfigMapSource {
  readonly name: string;
  private readonly informer: Informer<V1ConfigMap>;
  private readonly meshCell: Cell<MeshSettings>;
  private readonly networksCell = new Cell<MeshNetworks>(EMPTY_MESH_NETWORKS);
  /** Text last judged per key, so a resync or an unrelated edit does not log the same rejection again. */
  private readonly seen = new Map<MeshConfigMapKey, string | undefined>();
  private unsubscribe: (() => void) | undefined;

  constructor(private readonly opts: MeshConfigMapOptions) {
    this.name = meshConfigMapName(opts.revision);
    this.meshCell = new Cell(meshSettingsFrom({}, opts.base));
    this.informer = new Informer<V1ConfigMap>(opts.client, {
      resource: resourceRef('v1', 'configmaps', { namespaced: true, kind: 'ConfigMap' }),
      namespace: opts.namespace,
      fieldSelector: `metadata.name=${this.name}`,
      transform: dropManagedFields,
      name: `configmap ${opts.namespace}/${this.name}`,
      onError: (err) => {
        opts.onError?.(err);
        opts.log.warn({ configMap: `${opts.namespace}/${this.name}`, err: err.message }, `mesh ConfigMap informer: ${err.message} (retrying)`);
      },
    });
  }

  get mesh(): Watched<MeshSettings> {
    return this.meshCell;
  }

  get networks(): Watched<MeshNetworks> {
    return this.networksCell;
  }

  async start(opts: { readonly signal?: AbortSignal; readonly timeoutMs?: number } = {}): Promise<void> {
    this.unsubscribe ??= this.informer.onEvent(() => this.refresh());
    this.informer.start();
    await this.informer.waitForSync(opts);
    this.refresh();
  }

  async stop(): Promise<void> {
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    await this.informer.stop();
  }

  private refresh(): void {
    const cm = this.informer.get(this.opts.namespace, this.name);
    const data = cm?.data ?? {};
    this.judge(MESH_CONFIG_KEY, data[MESH_CONFIG_KEY], (text, origin) => this.meshCell.set(meshSettingsFrom(parseMeshConfig(text, origin), this.opts.base)), () =>
      this.meshCell.set(meshSettingsFrom({}, this.opts.base)),
    );
    this.judge(MESH_NETWORKS_KEY, data[MESH_NETWORKS_KEY], (text, origin) => this.networksCell.set(parseMeshNetworks(text, origin)), () =>
      this.networksCell.set(EMPTY_MESH_NETWORKS),
    );
  }

  private judge(key: MeshConfigMapKey, text: string | undefined, apply: (text: string, origin: string) => boolean, defaults: () => boolean): void {
    if (this.seen.has(key) && this.seen.get(key) === text) return;
    this.seen.set(key, text);
    const where = { configMap: `${this.opts.namespace}/${this.name}`, key };
    if (text === undefined) {
      if (defaults()) this.opts.log.info(where, `mesh ConfigMap ${where.configMap} has no key ${key}: using the defaults`);
      return;
    }
    const origin = `ConfigMap ${where.configMap} key ${key}`;
    try {
      if (apply(text, origin)) this.opts.log.info(where, `${origin}: new settings in force`);
    } catch (err) {
      const issues = issuesOf(err, origin);
      this.opts.log.warn(
        { ...where, issues },
        `${origin} rejected: ${issues.map((i) => `${i.field}: ${i.reason}`).join('; ')}; keeping the last good settings`,
      );
      this.opts.onReject?.(key, issues);
    }
  }
}

/** The `--networksConfig` file, polled like the `--meshConfig` file; an invalid edit keeps the last good value. */
class MeshNetworksFile {
  private readonly cell: Cell<MeshNetworks>;
  private readonly fault: SettingsFileFault;
  constructor(
    private readonly path: string,
    initial: MeshNetworks,
    private readonly log: Logger,
    lost?: () => void,
  ) {
    this.cell = new Cell(initial);
    this.fault = new SettingsFileFault(path, 'mesh networks file', log, lost);
  }

  static async open(path: string, log: Logger, lost?: () => void): Promise<MeshNetworksFile> {
    const f = new MeshNetworksFile(path, parseMeshNetworks(await readFile(path, 'utf8'), path), log, lost);
    watchFile(path, { interval: 1000 }, () => void f.reload());
    return f;
  }

  get watched(): Watched<MeshNetworks> {
    return this.cell;
  }

  stop(): void {
    unwatchFile(this.path);
  }

  private async reload(): Promise<void> {
    try {
      // a file that cannot be read is a fault, not an empty file: the last good networks stay
      const text = await this.fault.read();
      if (text === undefined) return;
      if (this.cell.set(parseMeshNetworks(text, this.path))) this.log.info({ path: this.path }, 'mesh networks reloaded');
    } catch (e) {
      this.log.warn({ path: this.path, err: e instanceof Error ? e.message : String(e) }, 'mesh networks rejected; keeping the previous networks');
    }
  }
}

/** Where the daemon's mesh settings and networks come from, as chosen by `openMeshSources`. */
export interface MeshSources {
  readonly mesh: Watched<MeshSettings>;
  readonly networks: Watched<MeshNetworks>;
  /** `file` (the `--meshConfig` file or its defaults) or `configmap`. */
  readonly meshOrigin: 'file' | 'configmap';
  readonly networksOrigin: 'file' | 'configmap' | 'none';
  stop(): Promise<void>;
}

export interface OpenMeshSourcesOptions {
  readonly meshConfigFile: string;
  readonly networksConfigFile?: string;
  readonly base: { readonly domain: string; readonly clusterId: string };
  readonly log: Logger;
  /** A `--meshConfig` or `--networksConfig` file, once read, could no longer be read (its last good settings stay). */
  readonly onFileLost?: (flag: 'meshConfig' | 'networksConfig') => void;
  /** With the Cluster registry: the ConfigMap side (its client is created only when needed). */
  readonly cluster?: Omit<MeshConfigMapOptions, 'client' | 'base' | 'log'> & { readonly client: () => Promise<KubeClient>; readonly signal?: AbortSignal };
}

/**
 * Opens the sources in precedence order: an existing `--meshConfig` file (or, without the Cluster
 * registry, the file's defaults) for the mesh config; an existing `--networksConfig` file for
 * networks; the mesh ConfigMap for whichever is left when the Cluster registry is on.
 * Throws ConfigError when a file that exists is invalid (as before).
 */
export async function openMeshSources(opts: OpenMeshSourcesOptions): Promise<MeshSources> {
  const meshFromFile = existsSync(opts.meshConfigFile) || !opts.cluster;
  const networksFromFile = !!opts.networksConfigFile && existsSync(opts.networksConfigFile);
  const stops: Array<() => Promise<void> | void> = [];
  try {
    let fileMesh: Watched<MeshSettings> | undefined;
    if (meshFromFile) {
      const watcher = new MeshConfigWatcher(opts.meshConfigFile, opts.base, opts.log, () => opts.onFileLost?.('meshConfig'));
      const cell = new Cell(await watcher.load());
      watcher.onChange((m) => cell.set(m));
      stops.push(() => watcher.stop());
      fileMesh = cell;
    }
    let fileNetworks: Watched<MeshNetworks> | undefined;
    if (networksFromFile && opts.networksConfigFile) {
      const f = await MeshNetworksFile.open(opts.networksConfigFile, opts.log, () => opts.onFileLost?.('networksConfig'));
      stops.push(() => f.stop());
      fileNetworks = f.watched;
    }
    let cm: MeshConfigMapSource | undefined;
    if (opts.cluster && (!fileMesh || !fileNetworks)) {
      const { client, signal, ...rest } = opts.cluster;
      cm = new MeshConfigMapSource({ ...rest, client: await client(), base: opts.base, log: opts.log });
      stops.push(() => cm?.stop());
      opts.log.info(
        { configMap: `${rest.namespace}/${cm.name}`, mesh: !fileMesh, meshNetworks: !fileNetworks },
        `reading ${[!fileMesh && 'the mesh config', !fileNetworks && 'mesh networks'].filter(Boolean).join(' and ')} from ConfigMap ${rest.namespace}/${cm.name}`,
      );
      await cm.start({ signal });
    }
    const mesh = fileMesh ?? cm?.mesh;
    if (!mesh) throw new Error('openMeshSources: no mesh config source');
    return {
      mesh,
      networks: fileNetworks ?? cm?.networks ?? new Cell<MeshNetworks>(EMPTY_MESH_NETWORKS),
      meshOrigin: fileMesh ? 'file' : 'configmap',
      networksOrigin: fileNetworks ? 'file' : cm ? 'configmap' : 'none',
      async stop() {
        for (const s of stops.reverse()) await s();
      },
    };
  } catch (err) {
    for (const s of stops.reverse()) await s();
    throw err;
  }
}
