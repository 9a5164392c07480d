import { createHash } from 'node:crypto';

/** Short content hash used as a resource version. */
export function contentHash(...parts: ReadonlyArray<Uint8Array | string>): string {
  const h = createHash('sha1');
  for (const p of parts) h.update(p);
  return h.digest('base64url').slice(0, 16);
}
