/** PEM blocks (RFC 7468): `-----BEGIN <label>-----`, base64, `-----END <label>-----`. */

export class PemError extends Error {
  override readonly name = 'PemError';
}

const BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----([\s\S]*?)-----END \1-----/g;

export interface PemBlock {
  readonly label: string;
  readonly der: Buffer;
}

/** Every block of `text`, in order. Text between blocks is ignored; a block whose base64 is broken is an error. */
export function decodePem(text: string, what: string): PemBlock[] {
  const out: PemBlock[] = [];
  for (const m of text.matchAll(BLOCK)) {
    const body = m[2].replace(/\s+/g, '');
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(body) || body.length % 4 !== 0) throw new PemError(`${what}: ${m[1]} block is not valid base64`);
    out.push({ label: m[1], der: Buffer.from(body, 'base64') });
  }
  return out;
}

/** The DER of every block labelled `label`; an error when there is none. */
export function decodePemAll(text: string, label: string, what: string): Buffer[] {
  const blocks = decodePem(text, what).filter((b) => b.label === label);
  if (blocks.length === 0) throw new PemError(`${what}: no ${label} PEM block`);
  return blocks.map((b) => b.der);
}

/** The DER of the one block labelled `label`; an error when there is none or more than one. */
export function decodePemOne(text: string, label: string, what: string): Buffer {
  const blocks = decodePemAll(text, label, what);
  if (blocks.length > 1) throw new PemError(`${what}: ${blocks.length} ${label} blocks, want one`);
  return blocks[0];
}

export function encodePem(label: string, der: Buffer): string {
  const b64 = der.toString('base64');
  const lines: string[] = [];
  for (let i = 0; i < b64.length; i += 64) lines.push(b64.slice(i, i + 64));
  return `-----BEGIN ${label}-----\n${lines.join('\n')}\n-----END ${label}-----\n`;
}

export const certificatePem = (der: Buffer): string => encodePem('CERTIFICATE', der);
