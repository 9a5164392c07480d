/**
 * Resource discovery: maps (apiVersion, kind) to the REST resource (plural, scope) by reading the
 * API server's resource list of the group/version. Lists are cached; a kind the cached list lacks
 * (a CRD installed since) makes one fresh read before the lookup fails.
 */
import { KubeApiError, isNotFound } from './errors.js';
import type { KubeTransport } from './transport.js';

/** A REST resource of the API server. */
export interface ResourceInfo {
  /** '' for the core group. */
  readonly group: string;
  readonly version: string;
  readonly kind: string;
  readonly plural: string;
  readonly namespaced: boolean;
  readonly verbs: ReadonlyArray<string>;
}

interface ApiResourceList {
  readonly resources?: ReadonlyArray<{
    readonly name: string;
    readonly kind: string;
    readonly namespaced: boolean;
    readonly verbs?: ReadonlyArray<string>;
  }>;
}

export function splitApiVersion(apiVersion: string): { readonly group: string; readonly version: string } {
  const slash = apiVersion.indexOf('/');
  return slash < 0 ? { group: '', version: apiVersion } : { group: apiVersion.slice(0, slash), version: apiVersion.slice(slash + 1) };
}

export function groupVersionPath(group: string, version: string): string {
  return group === '' ? `/api/${version}` : `/apis/${group}/${version}`;
}

/** `/api/v1/namespaces/ns/pods/name/status` and friends; omit what does not apply. */
export function resourcePath(
  resource: Pick<ResourceInfo, 'group' | 'version' | 'plural' | 'namespaced'>,
  namespace?: string,
  name?: string,
  subresource?: string,
): string {
  let path = groupVersionPath(resource.group, resource.version);
  if (resource.namespaced && namespace) path += `/namespaces/${encodeURIComponent(namespace)}`;
  path += `/${resource.plural}`;
  if (name !== undefined) path += `/${encodeURIComponent(name)}`;
  if (subresource) path += `/${subresource}`;
  return path;
}

interface Entry {
  readonly at: number;
  readonly list: Promise<Map<string, ResourceInfo>>;
}

export class Discovery {
  private readonly cache = new Map<string, Entry>();
  private readonly known = new Map<string, ResourceInfo>();

  constructor(
    private readonly transport: KubeTransport,
    /** A cached list younger than this is not read again on a miss (default 2 s). */
    private readonly minRefreshMs = 2000,
  ) {}

  /** Adds a resource without asking the server (kinds whose coordinates are known). */
  register(info: ResourceInfo): void {
    this.known.set(`${info.group}/${info.version}\u0000${info.kind}`, info);
  }

  /** The resource serving `kind` in `apiVersion` (e.g. `networking.mesh.io/v1`, `VirtualService`). */
  async resolve(apiVersion: string, kind: string): Promise<ResourceInfo> {
    if (!apiVersion || !kind) throw new Error(`discovery: apiVersion and kind are required (got "${apiVersion}", "${kind}")`);
    const { group, version } = splitApiVersion(apiVersion);
    const gv = `${group}/${version}`;
    const registered = this.known.get(`${gv}\u0000${kind}`);
    if (registered) return registered;
    const cached = this.cache.get(gv);
    if (cached) {
      const hit = (await cached.list.catch(() => undefined))?.get(kind);
      if (hit) return hit;
      if (performance.now() - cached.at < this.minRefreshMs) return this.missing(apiVersion, kind, await cached.list);
    }
    const fresh = this.fetch(group, version);
    this.cache.set(gv, { at: performance.now(), list: fresh });
    fresh.catch(() => this.cache.delete(gv));
    const hit = (await fresh).get(kind);
    return hit ?? this.missing(apiVersion, kind, await fresh);
  }

  /** Forgets the cached lists (all, or of one group/version). */
  invalidate(apiVersion?: string): void {
    if (apiVersion === undefined) this.cache.clear();
    else {
      const { group, version } = splitApiVersion(apiVersion);
      this.cache.delete(`${group}/${version}`);
    }
  }

  private missing(apiVersion: string, kind: string, known: Map<string, ResourceInfo>): never {
    const kinds = [...known.keys()].sort();
    throw new KubeApiError({
      statusCode: 404,
      reason: 'NotFound',
      message: `the API server serves no kind ${kind} in ${apiVersion} (it serves: ${kinds.length ? kinds.join(', ') : 'nothing'})`,
      method: 'GET',
      path: groupVersionPath(splitApiVersion(apiVersion).group, splitApiVersion(apiVersion).version),
    });
  }

  private async fetch(group: string, version: string): Promise<Map<string, ResourceInfo>> {
    const path = groupVersionPath(group, version);
    let list: ApiResourceList;
    try {
      list = await this.transport.json<ApiResourceList>({ method: 'GET', path });
    } catch (err) {
      if (isNotFound(err)) {
        const e = err as KubeApiError;
        throw new KubeApiError({
          statusCode: 404,
          reason: 'NotFound',
          message: `the API server does not serve ${group ? `${group}/` : ''}${version} (is its CRD installed?)`,
          method: e.method,
          path: e.path,
        });
      }
      throw err;
    }
    const map = new Map<string, ResourceInfo>();
    for (const r of list.resources ?? []) {
      if (r.name.includes('/')) continue; // subresources (status, scale)
      if (!map.has(r.kind)) map.set(r.kind, { group, version, kind: r.kind, plural: r.name, namespaced: r.namespaced, verbs: r.verbs ?? [] });
    }
    return map;
  }
}
