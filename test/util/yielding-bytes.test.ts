/**
 * Texts of megabytes hashed, decoded and encoded in slices (docs/adr/0204) give exactly what the
 * one-piece calls give, also where a slice ends inside a character of several bytes.
 */
import { createHash } from 'node:crypto';
import { decodeUtf8Yielding, encodeUtf8Yielding, sha256Yielding } from '../../src/util/yielding-bytes.js';

describe('yielding-bytes', () => {
  // 3 MB with a BOM, characters of 2, 3 and 4 bytes (a surrogate pair in UTF-16) at every offset
  const text = `\uFEFF${'aé€😀b'.repeat(300_000)}`;
  const bytes = Buffer.from(text, 'utf8');

  it('decodes as Buffer#toString does, keeping the BOM', async () => {
    expect(await decodeUtf8Yielding(bytes)).toBe(bytes.toString('utf8'));
    const broken = Buffer.concat([bytes.subarray(0, 1 << 20), Buffer.from([0xff, 0xc3]), bytes.subarray(1 << 20)]);
    expect(await decodeUtf8Yielding(broken)).toBe(broken.toString('utf8'));
  });

  it('encodes as Buffer.from does', async () => {
    expect(Buffer.from(await encodeUtf8Yielding(text)).equals(bytes)).toBe(true);
  });

  it('hashes as createHash does', async () => {
    expect(await sha256Yielding(bytes)).toBe(createHash('sha256').update(bytes).digest('base64url'));
    expect(await sha256Yielding(Buffer.alloc(0))).toBe(createHash('sha256').digest('base64url'));
  });
});
