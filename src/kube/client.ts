/**
 * The Kubernetes client the product uses: one rate-limited transport (QPS/burst of
 * `--clusterApiQPS`/`--clusterApiBurst`) under our own generic calls on any (apiVersion, kind): get, list, create, delete, server-side apply, merge
 * patch, and the status subresource. Failed calls throw `KubeApiError` (errors.ts). client-node
 * serves the kubeconfig (kubeconfig.ts, loaded on first use) and, for callers that want them, its
 * typed API clients over this transport (typed-api.ts).
 */
import type { KubeConfig } from '@kubernetes/client-node';
import { Discovery, resourcePath, splitApiVersion, type ResourceInfo } from './discovery.js';
import { isNotFound } from './errors.js';
import { loadKubeConfig, type LoadKubeConfigOptions, type LoadedKubeConfig } from './kubeconfig.js';
import { TokenBucket } from './rate-limiter.js';
import { KubeTransport, type RequestObserver } from './transport.js';
import type { KubeObject } from './types.js';

export { loadKubeConfig, KubeConfigError, type LoadKubeConfigOptions, type LoadedKubeConfig } from './kubeconfig.js';
export type { ResourceInfo } from './discovery.js';

/** Spec defaults of `--clusterApiQPS` and `--clusterApiBurst`. */
export const DEFAULT_QPS = 80;
export const DEFAULT_BURST = 160;

export const CONTENT_TYPE_JSON = 'application/json';
export const CONTENT_TYPE_MERGE_PATCH = 'application/merge-patch+json';
export const CONTENT_TYPE_JSON_PATCH = 'application/json-patch+json';
export const CONTENT_TYPE_APPLY_PATCH = 'application/apply-patch+yaml';

export interface KubeClientOptions {
  /** Requests per second (default 80); `<= 0` turns limiting off. */
  readonly qps?: number;
  /** Requests allowed at once above the steady rate (default 160). */
  readonly burst?: number;
  readonly userAgent?: string;
  /** Whole-request timeout of ordinary requests (default 60 s). */
  readonly timeoutMs?: number;
  readonly onRequest?: RequestObserver;
  /** Give `onRequest` the (redacted) request and response headers too. */
  readonly observeHeaders?: boolean;
}

/** Names one object of any kind. */
export interface ObjectRef {
  readonly apiVersion: string;
  readonly kind: string;
  readonly name: string;
  /** Ignored for cluster-scoped kinds. */
  readonly namespace?: string;
}

export interface ApplyOptions {
  /** Owner of the applied fields (required by the API server). */
  readonly fieldManager: string;
  /** Take over fields other managers own instead of failing with a conflict. */
  readonly force?: boolean;
  readonly dryRun?: boolean;
  readonly signal?: AbortSignal;
}

export interface PatchOptions {
  readonly fieldManager?: string;
  readonly dryRun?: boolean;
  readonly signal?: AbortSignal;
}

export interface DeleteOptions {
  readonly propagationPolicy?: 'Foreground' | 'Background' | 'Orphan';
  readonly gracePeriodSeconds?: number;
  readonly signal?: AbortSignal;
}

export interface ListOptions {
  readonly namespace?: string;
  readonly labelSelector?: string;
  readonly fieldSelector?: string;
  readonly limit?: number;
  readonly continue?: string;
  readonly resourceVersion?: string;
  readonly signal?: AbortSignal;
}

export interface ObjectList<T> {
  readonly apiVersion?: string;
  readonly kind?: string;
  readonly metadata: { readonly resourceVersion?: string; readonly continue?: string; readonly remainingItemCount?: number };
  readonly items: T[];
}

export type QueryValue = string | number | boolean | undefined;

/** `?a=1&b=x` from the defined entries, or '' when none. */
export function queryString(params: Readonly<Record<string, QueryValue>>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== '') q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : '';
}


export class KubeClient {
  readonly transport: KubeTransport;
  readonly discovery: Discovery;
  readonly limiter: TokenBucket;

  constructor(
    readonly config: KubeConfig,
    options: KubeClientOptions = {},
  ) {
    const qps = options.qps ?? DEFAULT_QPS;
    const burst = options.burst ?? DEFAULT_BURST;
    if (!Number.isFinite(qps) && qps !== Infinity) throw new Error(`clusterApiQPS: ${qps} is not a number`);
    if (!Number.isInteger(burst) || burst < 1) throw new Error(`clusterApiBurst: ${burst} must be a positive integer`);
    this.limiter = new TokenBucket(qps, burst);
    this.transport = new KubeTransport(config, {
      limiter: this.limiter,
      userAgent: options.userAgent,
      timeoutMs: options.timeoutMs,
      onRequest: options.onRequest,
      observeHeaders: options.observeHeaders,
    });
    this.discovery = new Discovery(this.transport);
  }

  /** Loads the configuration (see kubeconfig.ts for the order) and builds a client. */
  static async create(options: LoadKubeConfigOptions & KubeClientOptions = {}): Promise<{ client: KubeClient; loaded: LoadedKubeConfig }> {
    const loaded = await loadKubeConfig(options);
    return { client: new KubeClient(loaded.config, options), loaded };
  }

  /** The API server URL. */
  get server(): string {
    return this.transport.server.href.replace(/\/$/, '');
  }

  /** Any request; parses the JSON answer, throws KubeApiError unless 2xx. */
  request<T>(req: {
    readonly method: string;
    readonly path: string;
    readonly query?: Readonly<Record<string, QueryValue>>;
    readonly body?: unknown;
    readonly contentType?: string;
    readonly signal?: AbortSignal;
    readonly timeoutMs?: number;
  }): Promise<T> {
    const body = req.body === undefined ? undefined : typeof req.body === 'string' ? req.body : JSON.stringify(req.body);
    return this.transport.json<T>({
      method: req.method,
      path: req.path + queryString(req.query ?? {}),
      headers: body === undefined ? undefined : { 'Content-Type': req.contentType ?? CONTENT_TYPE_JSON },
      body,
      signal: req.signal,
      timeoutMs: req.timeoutMs,
    });
  }

  /** The REST resource of a kind (discovery, cached). */
  resource(apiVersion: string, kind: string): Promise<ResourceInfo> {
    return this.discovery.resolve(apiVersion, kind);
  }

  async get<T extends KubeObject = KubeObject>(ref: ObjectRef, signal?: AbortSignal): Promise<T> {
    const path = await this.objectPath(ref);
    return this.request<T>({ method: 'GET', path, signal });
  }

  /** Like `get`, but undefined when the object does not exist. */
  async find<T extends KubeObject = KubeObject>(ref: ObjectRef, signal?: AbortSignal): Promise<T | undefined> {
    try {
      return await this.get<T>(ref, signal);
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  async list<T extends KubeObject = KubeObject>(apiVersion: string, kind: string, opts: ListOptions = {}): Promise<ObjectList<T>> {
    const info = await this.resource(apiVersion, kind);
    return this.request<ObjectList<T>>({
      method: 'GET',
      path: resourcePath(info, opts.namespace),
      query: {
        labelSelector: opts.labelSelector,
        fieldSelector: opts.fieldSelector,
        limit: opts.limit,
        continue: opts.continue,
        resourceVersion: opts.resourceVersion,
      },
      signal: opts.signal,
    });
  }

  async create<T extends KubeObject>(obj: T, opts: PatchOptions = {}): Promise<T> {
    const ref = refOf(obj, 'create');
    const info = await this.resource(ref.apiVersion, ref.kind);
    return this.request<T>({
      method: 'POST',
      path: resourcePath(info, ref.namespace),
      query: { fieldManager: opts.fieldManager, dryRun: opts.dryRun ? 'All' : undefined },
      body: obj,
      signal: opts.signal,
    });
  }

  /** PUT of the whole object; `metadata.resourceVersion`, when set, makes it conditional (409 on a race). */
  async replace<T extends KubeObject>(obj: T, opts: PatchOptions & { readonly subresource?: string } = {}): Promise<T> {
    const ref = refOf(obj, 'replace');
    const path = await this.objectPath(ref, opts.subresource);
    return this.request<T>({
      method: 'PUT',
      path,
      query: { fieldManager: opts.fieldManager, dryRun: opts.dryRun ? 'All' : undefined },
      body: obj,
      signal: opts.signal,
    });
  }

  /** Deletes an object; false when it did not exist. */
  async delete(ref: ObjectRef, opts: DeleteOptions = {}): Promise<boolean> {
    const path = await this.objectPath(ref);
    try {
      await this.request<unknown>({
        method: 'DELETE',
        path,
        body:
          opts.propagationPolicy || opts.gracePeriodSeconds !== undefined
            ? { apiVersion: 'v1', kind: 'DeleteOptions', propagationPolicy: opts.propagationPolicy, gracePeriodSeconds: opts.gracePeriodSeconds }
            : undefined,
        signal: opts.signal,
      });
      return true;
    } catch (err) {
      if (isNotFound(err)) return false;
      throw err;
    }
  }

  /**
   * Server-side apply: the object states the fields `fieldManager` owns; the server merges them
   * (PATCH with content type application/apply-patch+yaml). Applying the same content again
   * changes nothing, not even the resourceVersion.
   */
  async applyObject<T extends KubeObject>(obj: T, opts: ApplyOptions): Promise<T> {
    return this.apply(obj, opts, undefined);
  }

  /** Server-side apply of the status subresource (the object's `status`, with apiVersion/kind/metadata). */
  async applyStatus<T extends KubeObject>(obj: T, opts: ApplyOptions): Promise<T> {
    return this.apply(obj, opts, 'status');
  }

  /** JSON merge patch (RFC 7386): null deletes a field; lists are replaced whole. */
  async mergePatch<T extends KubeObject = KubeObject>(ref: ObjectRef, patch: unknown, opts: PatchOptions & { readonly subresource?: string } = {}): Promise<T> {
    const path = await this.objectPath(ref, opts.subresource);
    return this.request<T>({
      method: 'PATCH',
      path,
      query: { fieldManager: opts.fieldManager, dryRun: opts.dryRun ? 'All' : undefined },
      body: patch,
      contentType: CONTENT_TYPE_MERGE_PATCH,
      signal: opts.signal,
    });
  }

  /** Merge patch of the status subresource, e.g. `{status: {conditions: [...]}}`. */
  patchStatus<T extends KubeObject = KubeObject>(ref: ObjectRef, patch: unknown, opts: PatchOptions = {}): Promise<T> {
    return this.mergePatch<T>(ref, patch, { ...opts, subresource: 'status' });
  }

  /** Closes idle connections. */
  close(): void {
    this.transport.close();
  }

  private async apply<T extends KubeObject>(obj: T, opts: ApplyOptions, subresource: string | undefined): Promise<T> {
    if (!opts.fieldManager) throw new Error('server-side apply: fieldManager is required');
    const ref = refOf(obj, 'apply');
    const path = await this.objectPath(ref, subresource);
    // managedFields in an apply body is refused by the server; it is never meant to be sent.
    const meta = obj.metadata as (Record<string, unknown> & { managedFields?: unknown }) | undefined;
    const body = meta && 'managedFields' in meta ? { ...obj, metadata: { ...meta, managedFields: undefined } } : obj;
    return this.request<T>({
      method: 'PATCH',
      path,
      query: { fieldManager: opts.fieldManager, force: opts.force ? 'true' : undefined, dryRun: opts.dryRun ? 'All' : undefined },
      body: JSON.stringify(body),
      contentType: CONTENT_TYPE_APPLY_PATCH,
      signal: opts.signal,
    });
  }

  private async objectPath(ref: ObjectRef, subresource?: string): Promise<string> {
    if (!ref.name) throw new Error(`${ref.kind || 'object'}: metadata.name is required`);
    const info = await this.resource(ref.apiVersion, ref.kind);
    if (info.namespaced && !ref.namespace) throw new Error(`${ref.kind} ${ref.name}: metadata.namespace is required (${ref.kind} is namespaced)`);
    return resourcePath(info, ref.namespace, ref.name, subresource);
  }
}

function refOf(obj: KubeObject, what: string): ObjectRef {
  const missing = !obj.apiVersion ? 'apiVersion' : !obj.kind ? 'kind' : !obj.metadata?.name ? 'metadata.name' : undefined;
  if (missing) throw new Error(`${what}: ${missing} is required`);
  return { apiVersion: obj.apiVersion ?? '', kind: obj.kind ?? '', name: obj.metadata?.name ?? '', namespace: obj.metadata?.namespace };
}

export { splitApiVersion, resourcePath };
