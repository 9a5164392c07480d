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
 * Cache of encoded resources keyed by the identities of everything that went into them, evicting
 * what was least recently used. Keys never need invalidation: a changed input has a new identity,
 * so the old entry simply ages out.
 *
 * Recency is kept in two generations rather than by moving every hit to the end of one map: a hit
 * in the young generation costs one read, a hit in the old one moves the entry to the young; when
 * the young generation holds half the entries it becomes the old one and the old one is dropped.
 * A connect storm reads the same entries for every scope and proxy (tens of thousands of hits per
 * scope at 5,000 services), and a delete and insert per hit on a map of that size cost more than
 * building many of the resources.
 */
export class ResourceCache {
  /** Whole resources and encoded pieces of resources (see getOrBuildFragment): recently used, and before. */
  private young = new Map<string, EncodedResource | Uint8Array>();
  private old = new Map<string, EncodedResource | Uint8Array>();

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
    return this.young.size + this.old.size;
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
    const enabled = this.enabled && !this.uncachedTypes.has(type) && this.maxEntries > 0;
    if (enabled) {
      const hit = this.young.get(key);
      if (hit) {
        this.stats?.hit(type);
        return hit as T;
      }
      const older = this.old.get(key);
      if (older) {
        this.old.delete(key);
        this.remember(key, older, type);
        this.stats?.hit(type);
        return older as T;
      }
      this.stats?.miss(type);
    }
    const res = build();
    if (enabled) {
      this.remember(key, res, type);
      this.stats?.size(this.size);
    }
    return res;
  }

  /** Puts an entry in the young generation; a full young generation replaces the old one. */
  private remember(key: string, value: EncodedResource | Uint8Array, type: string): void {
    this.young.set(key, value);
    // each generation holds at most half: together at most maxEntries
    if (this.young.size >= Math.max(1, Math.floor(this.maxEntries / 2))) {
      for (let i = 0; i < this.old.size; i++) this.stats?.evict(type);
      this.old = this.young;
      this.young = new Map();
    }
  }

  clear(): void {
    this.young.clear();
    this.old.clear();
    this.stats?.size(0);
  }
}
