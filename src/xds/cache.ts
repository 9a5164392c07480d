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
  private readonly entries = new Map<string, EncodedResource>();

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
    const enabled = this.enabled && !this.uncachedTypes.has(type);
    if (enabled) {
      const hit = this.entries.get(key);
      if (hit) {
        // refresh recency
        this.entries.delete(key);
        this.entries.set(key, hit);
        this.stats?.hit(type);
        return hit;
      }
      this.stats?.miss(type);
    }
    const built = build();
    const any = encodeAny(built.typeUrl, built.bytes);
    const res: EncodedResource = { name: built.name, any, version: contentHash(built.bytes) };
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
