/**
 * Where the self-signed CA keeps its root so that every replica and every restart signs with the
 * same one (docs/adr/0041). The seam is conflict-safe: `createIfAbsent` and `replace` return what
 * is stored afterwards, which is another replica's material when that one got there first.
 *
 * - `SecretCaStore` (./secret-store.ts): the Secret `mesh-ca-secret` of the mesh namespace.
 * - `DirectoryCaStore`: a local directory (a daemon with `--configDir` and no cluster).
 * - `MemoryCaStore`: nothing survives the process (a daemon with neither).
 */
import { createHash } from 'node:crypto';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CA_FILES, type CaFiles } from './material.js';

/** Stored entries and an opaque version that changes with every write. */
export interface StoredCa {
  readonly files: CaFiles;
  readonly version: string;
}

export interface CaStore {
  /** Where the material lives, for logs and errors ("Secret mesh-system/mesh-ca-secret"). */
  readonly description: string;
  /** Whether the material survives a restart. */
  readonly durable: boolean;
  load(): Promise<StoredCa | undefined>;
  /** Stores `files` unless something is stored already; returns what is stored afterwards. */
  createIfAbsent(files: CaFiles): Promise<StoredCa>;
  /**
   * Replaces the stored material if it is still at `previous.version`; otherwise leaves it and
   * returns what is there (another replica rotated first).
   */
  replace(previous: StoredCa, files: CaFiles): Promise<StoredCa>;
}

const versionOf = (files: CaFiles): string => {
  const h = createHash('sha256');
  for (const k of CA_FILES) h.update(k).update('\0').update(files[k]).update('\0');
  return h.digest('base64url').slice(0, 16);
};

export class MemoryCaStore implements CaStore {
  readonly description = 'memory (not kept across restarts)';
  readonly durable = false;
  private stored: StoredCa | undefined;

  async load(): Promise<StoredCa | undefined> {
    return this.stored;
  }

  async createIfAbsent(files: CaFiles): Promise<StoredCa> {
    this.stored ??= { files, version: versionOf(files) };
    return this.stored;
  }

  async replace(previous: StoredCa, files: CaFiles): Promise<StoredCa> {
    if (this.stored?.version === previous.version) this.stored = { files, version: versionOf(files) };
    return this.stored ?? previous;
  }
}

/**
 * The four entries as files of one directory (mode 0700, files 0600). A first write builds the
 * directory under a temporary name and renames it into place, which fails if another process
 * created it first; a replacement rewrites each file through a rename, the key and certificate
 * last, and a reader checks that they match (./material.ts).
 */
export class DirectoryCaStore implements CaStore {
  readonly durable = true;

  constructor(readonly dir: string) {}

  get description(): string {
    return `directory ${this.dir}`;
  }

  async load(): Promise<StoredCa | undefined> {
    const entries: Partial<Record<(typeof CA_FILES)[number], string>> = {};
    for (const name of CA_FILES) {
      try {
        entries[name] = await readFile(join(this.dir, name), 'utf8');
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
        throw err;
      }
    }
    const files = entries as CaFiles;
    return { files, version: versionOf(files) };
  }

  async createIfAbsent(files: CaFiles): Promise<StoredCa> {
    const existing = await this.load();
    if (existing) return existing;
    const tmp = `${this.dir}.tmp-${process.pid}-${Date.now()}`;
    await mkdir(tmp, { recursive: true, mode: 0o700 });
    try {
      for (const name of CA_FILES) await writeFile(join(tmp, name), files[name], { mode: 0o600 });
      await rename(tmp, this.dir);
    } catch (err) {
      await rm(tmp, { recursive: true, force: true });
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ENOTEMPTY' && code !== 'EEXIST') throw err;
    }
    const stored = await this.load();
    if (!stored) throw new Error(`${this.description}: exists but holds no CA files`);
    return stored;
  }

  async replace(previous: StoredCa, files: CaFiles): Promise<StoredCa> {
    const current = await this.load();
    if (!current || current.version !== previous.version) return current ?? previous;
    for (const name of [...CA_FILES].sort((a, b) => rank(a) - rank(b))) {
      const tmp = join(this.dir, `.${name}.tmp-${process.pid}`);
      await writeFile(tmp, files[name], { mode: 0o600 });
      await rename(tmp, join(this.dir, name));
    }
    return { files, version: versionOf(files) };
  }
}

/** The trust bundle first (so old and new roots are trusted before anything signs with the new key). */
function rank(name: string): number {
  return ['root-cert.pem', 'cert-chain.pem', 'ca-key.pem', 'ca-cert.pem'].indexOf(name);
}

export { versionOf as caFilesVersion };
