/**
 * Hashing, decoding and encoding of texts of megabytes in slices, yielding the event loop through
 * the cooperative turn queue between slices (src/util/cooperative.ts): on a busy machine each of
 * them costs tens of milliseconds for a file of 12 MB when done at once (docs/adr/0204).
 */
import { createHash } from 'node:crypto';
import { yieldPoint } from './cooperative.js';

/** Bytes (or characters) handled between two looks at the turn's time. */
const SLICE = 1 << 20;

async function turn(): Promise<void> {
  const t = yieldPoint();
  if (t) await t;
}

/** The SHA-256 of `bytes`, base64url, as `createHash('sha256').update(bytes).digest('base64url')`. */
export async function sha256Yielding(bytes: Uint8Array): Promise<string> {
  const hash = createHash('sha256');
  for (let at = 0; at < bytes.length; at += SLICE) {
    if (at > 0) await turn();
    hash.update(bytes.subarray(at, at + SLICE));
  }
  return hash.digest('base64url');
}

/** `bytes` decoded as UTF-8, as Buffer's toString('utf8') decodes them (a BOM stays, invalid sequences become U+FFFD). */
export async function decodeUtf8Yielding(bytes: Buffer): Promise<string> {
  if (bytes.length <= SLICE) return bytes.toString('utf8');
  const decoder = new TextDecoder('utf-8', { ignoreBOM: true });
  const parts: string[] = [];
  for (let at = 0; at < bytes.length; at += SLICE) {
    if (at > 0) await turn();
    parts.push(decoder.decode(bytes.subarray(at, at + SLICE), { stream: at + SLICE < bytes.length }));
  }
  return parts.join('');
}

/** `text` encoded as UTF-8, into a buffer of its own (which can be transferred to a worker). */
export async function encodeUtf8Yielding(text: string): Promise<Uint8Array<ArrayBuffer>> {
  const out = new Uint8Array(Buffer.byteLength(text));
  const encoder = new TextEncoder();
  let written = 0;
  for (let at = 0; at < text.length; ) {
    if (at > 0) await turn();
    let end = Math.min(text.length, at + SLICE);
    // never between the two halves of a surrogate pair
    if (end < text.length && (text.charCodeAt(end - 1) & 0xfc00) === 0xd800) end--;
    written += encoder.encodeInto(text.slice(at, end), out.subarray(written)).written;
    at = end;
  }
  return out;
}
