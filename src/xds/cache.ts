import { encodeAny } from './wire.js';
import { contentHash } from '../util/hash.js';

/** A resource ready to send: encoded once as `Any` bytes, shared by every proxy that receives it. */
export interface EncodedResource {
  readonly name: string;
  readonly any: Buffer;
  /** Content hash; equal versions mean equal bytes. */
  readonly version: string;
}

export interface CacheStats {
  hit(type: string): void;
  miss(type: string): void;
  evict(type: string): void;
  size(n: number): void;
}

/**
 * LRU cache of encoded resources keyed by the identities of everything that went into them.
 * Keys never need invalidation: a changed input has a new identity, so the old entry simply ages out.
 */
export class ResourceCache {
  /** Whole resources and encoded pieces of resources (see getOrBuildFragment), in recency order. */
  private readonly entries = new Map<string, EncodedResource | Uint8Array>();

  /**
   * @param uncachedTypes resource types kept out of the cache (CDS unless DISC_ENABLE_CDS_CACHE): they
   *   are still shared across proxies within one push through the snapshot's memo.
   */
  constructor(
    private readonly maxEntries: number,
    private readonly enabled: boolean,
    private readonly stats?: CacheStats,
    private readonly uncachedTypes: ReadonlySet<string> = new Set(),
  ) {}

  get size(): number {
    return this.entries.size;
  }

  getOrBuild(type: string, key: string, build: () => { name: string; typeUrl: string; bytes: Uint8Array }): EncodedResource {
    return this.cached(type, key, () => {
      const built = build();
      return { name: built.name, any: encodeAny(built.typeUrl, built.bytes), version: contentHash(built.bytes) };
    });
  }

  /**
   * An encoded piece of a resource (a virtual host of a route table), cached like whole resources, so
   * that a resource assembled from pieces re-encodes only the pieces whose inputs changed. Keys must
   * not collide with those of whole resources (use a prefix of their own).
   */
  getOrBuildFragment(type: string, key: string, build: () => Uint8Array): Uint8Array {
    return this.cached(type, key, build);
  }

  private cached<T extends EncodedResource | Uint8Array>(type: string, key: string, build: () => T): T {
    const enabled = this.enabled && !this.uncachedTypes.has(type);
    if (enabled) {
      const hit = this.entries.get(key);
      if (hit) {
        // refresh recency
        this.entries.delete(key);
        this.entries.set(key, hit);
        this.stats?.hit(type);
        return hit as T;
      }
      this.stats?.miss(type);
    }
    const res = build();
    if (enabled) {
      this.entries.set(key, res);
      while (this.entries.size > this.maxEntries) {
        const oldest = this.entries.keys().next().value as string;
        this.entries.delete(oldest);
        this.stats?.evict(type);
      }
      this.stats?.size(this.entries.size);
    }
    return res;
  }

  clear(): void {
    this.entries.clear();
    this.stats?.size(0);
  }
}
