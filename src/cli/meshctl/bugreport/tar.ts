/**
 * A gzip-compressed tar archive (POSIX ustar, PAX headers for long paths) written from files on
 * disk, streamed: the archive never sits in memory whole. Regular files only, owner 0, mode 0644.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { PassThrough } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';

const BLOCK = 512;

function octal(n: number, width: number): string {
  return n.toString(8).padStart(width - 1, '0') + '\0';
}

function header(name: string, size: number, mtime: number, type: '0' | 'x', prefix = ''): Buffer {
  const h = Buffer.alloc(BLOCK);
  h.write(name, 0, 100, 'utf8');
  h.write(octal(0o644, 8), 100, 'ascii');
  h.write(octal(0, 8), 108, 'ascii');
  h.write(octal(0, 8), 116, 'ascii');
  h.write(octal(size, 12), 124, 'ascii');
  h.write(octal(Math.floor(mtime / 1000), 12), 136, 'ascii');
  h.write('        ', 148, 'ascii');
  h.write(type, 156, 'ascii');
  h.write('ustar\0', 257, 'ascii');
  h.write('00', 263, 'ascii');
  h.write(prefix, 345, 155, 'utf8');
  let sum = 0;
  for (const b of h) sum += b;
  h.write(octal(sum, 7) + ' ', 148, 'ascii');
  return h;
}

/** `path` as ustar name and prefix, or undefined when it does not fit (a PAX header carries it). */
function split(path: string): { name: string; prefix: string } | undefined {
  if (Buffer.byteLength(path) <= 100) return { name: path, prefix: '' };
  for (let i = path.indexOf('/'); i >= 0; i = path.indexOf('/', i + 1)) {
    const prefix = path.slice(0, i);
    const name = path.slice(i + 1);
    if (Buffer.byteLength(prefix) <= 155 && Buffer.byteLength(name) <= 100) return { name, prefix };
  }
  return undefined;
}

function pad(size: number): Buffer {
  const rest = size % BLOCK;
  return Buffer.alloc(rest === 0 ? 0 : BLOCK - rest);
}

function paxRecord(key: string, value: string): Buffer {
  const body = ` ${key}=${value}\n`;
  let len = Buffer.byteLength(body) + 1;
  while (String(len).length + Buffer.byteLength(body) !== len) len = String(len).length + Buffer.byteLength(body);
  return Buffer.from(`${len}${body}`);
}

export interface TarEntry {
  /** Path inside the archive (forward slashes). */
  readonly path: string;
  /** The file on disk holding its content. */
  readonly file: string;
}

/** Writes `entries` as a .tar.gz to `out`. */
export async function writeTarGz(out: string, entries: readonly TarEntry[], mtime = Date.now()): Promise<void> {
  const tar = new PassThrough();
  const done = pipeline(tar, createGzip(), createWriteStream(out));
  const write = (b: Buffer): Promise<void> | undefined => (tar.write(b) ? undefined : new Promise((r) => tar.once('drain', () => r())));
  try {
    for (const e of entries) {
      const { size } = await stat(e.file);
      const fit = split(e.path);
      if (!fit) {
        const pax = paxRecord('path', e.path);
        await write(header('PaxHeader', pax.length, mtime, 'x'));
        await write(pax);
        await write(pad(pax.length));
      }
      await write(header(fit?.name ?? e.path.slice(-100), size, mtime, '0', fit?.prefix ?? ''));
      let written = 0;
      for await (const chunk of createReadStream(e.file)) {
        const b = chunk as Buffer;
        // a file that grew since stat is cut at its recorded size
        const part = written + b.length > size ? b.subarray(0, size - written) : b;
        written += part.length;
        if (part.length > 0) await write(part);
        if (written >= size) break;
      }
      if (written < size) await write(Buffer.alloc(size - written));
      await write(pad(size));
    }
    await write(Buffer.alloc(BLOCK * 2));
  } finally {
    tar.end();
  }
  await done;
}
