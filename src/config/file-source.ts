/**
 * Config source that serves the `*.yaml`, `*.yml` and `*.json` files of a directory tree
 * (`--configDir`).
 *
 * Change detection: a non-recursive fs.watch on every directory of the tree triggers a
 * debounced rescan; a periodic rescan catches what the watchers miss (every `rescanIntervalMs`
 * while they work, every `pollIntervalMs` when a watcher failed or `watch` is off). A rescan
 * stats every file and re-reads a file when its size, mtime, ctime or inode changed, or when it
 * was modified so recently that a same-size rewrite within the clock tick could hide; a file
 * whose content hash is unchanged causes no work. Edits, atomic renames and deletes are seen
 * within one debounce interval (default 30 ms) of the watch event.
 *
 * Files are read in path order (sorted per directory), which decides which of two files defining
 * the same object wins at start-up (see store.ts for the rule afterwards).
 *
 * Names starting with `.` are skipped (editor temporaries, the `..data` folders of mounted config
 * maps); symbolic links to files are followed, links to directories are not.
 *
 * Broken content: documents are judged one by one (see parse.ts). When the new version of a file
 * has an invalid document, the last valid version of that document stays in effect and the
 * rejection is reported. When a document is too broken to tell which object it is, every object
 * of the previous version of the file that the new version does not define stays in effect: a
 * syntax error never deletes configuration. Objects go away only when their file parses and no
 * longer defines them, or when the file is deleted. A refused document also keeps the object that
 * was valid at its place, so a typo in its `kind` deletes nothing. The directory itself going away
 * (or one of its directories becoming unreadable) is a fault, not a deletion: the configuration
 * stays, the source reports it (onError, onDirLost) and reads the files again when it is back.
 */
import { watch, type FSWatcher, type Stats } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import { extname, join, relative, sep } from 'node:path';
import type { LargeDocumentLimits } from './large-documents.js';
import { parseConfigDocumentsYielding, type DocumentCache } from './parse.js';
import { decodeUtf8Yielding, sha256Yielding } from '../util/yielding-bytes.js';
import { contentHash, type MemoryConfigStore } from './store.js';
import type { ConfigObject, ConfigRejection } from './types.js';
import { getLogger } from '../log/logger.js';
import { yieldPoint } from '../util/cooperative.js';

export interface FileConfigSourceOptions {
  readonly dir: string;
  readonly store: MemoryConfigStore;
  /** Namespace of documents that name none. */
  readonly defaultNamespace: string;
  /** Called for every refused document (once per content change of its file). */
  readonly onReject?: (rejection: ConfigRejection) => void;
  /** Called for every new or changed document the validation warns about (`issues` are the warnings). */
  readonly onWarn?: (warning: ConfigRejection) => void;
  /** Called when the directory itself disappears (its configuration is kept), once per disappearance. */
  readonly onDirLost?: () => void;
  /** Called on I/O and internal errors; the source keeps running. */
  readonly onError?: (error: Error) => void;
  /**
   * Told when a watch event starts the wait for a rescan; the function it returns is called once
   * that rescan is done (the store has the changes). The daemon holds certificate admission
   * meanwhile: the edit is on its way to a push (docs/adr/0180).
   */
  readonly onChangePending?: () => () => void;
  /** Use fs.watch (default true). */
  readonly watch?: boolean;
  /** Safety rescan period while watchers work (default 1000 ms). */
  readonly rescanIntervalMs?: number;
  /** Rescan period without working watchers (default 100 ms). */
  readonly pollIntervalMs?: number;
  /** Delay between a watch event and the rescan, to coalesce bursts (default 30 ms). */
  readonly debounceMs?: number;
  /** Files larger than this are refused (default 16 MiB). */
  readonly maxFileBytes?: number;
  /** Bounds of the worker thread that parses large documents (large-documents.ts; defaults there). */
  readonly largeDocuments?: LargeDocumentLimits;
}

const EXTENSIONS = new Set(['.yaml', '.yml', '.json']);
/** A file modified this close to our last read is read again even if its stat looks unchanged. */
const RACY_WINDOW_MS = 2000;

interface FileState {
  mtimeMs: number;
  ctimeMs: number;
  size: number;
  ino: number;
  /** When the content was last read. */
  readAt: number;
  hash: string;
  /** Objects the file contributes, by id: the valid ones of the current version plus kept ones. */
  objects: Map<string, ConfigObject>;
  /** The file's valid documents by index and text: an edit re-parses only the documents it changed. */
  docs: DocumentCache;
}

/** A document the store refused because another file holds the object; reported at the end of the scan. */
interface PendingRejection {
  readonly rejection: ConfigRejection;
  /** The file (store origin) the rejected document came from. */
  readonly origin: string;
}

function objectId(kind: string, namespace: string, name: string): string {
  return `${kind}\u0000${namespace}\u0000${name}`;
}

export class FileConfigSource {
  private readonly opts: Required<Omit<FileConfigSourceOptions, 'onReject' | 'onWarn' | 'onError' | 'onDirLost' | 'onChangePending' | 'largeDocuments'>> &
    Pick<FileConfigSourceOptions, 'onReject' | 'onWarn' | 'onError' | 'onDirLost' | 'onChangePending' | 'largeDocuments'>;
  private readonly files = new Map<string, FileState>();
  private readonly watchers = new Map<string, FSWatcher>();
  private watchFailed = false;
  /** The directory itself is gone; its files' configuration is kept. */
  private dirLost = false;
  private synced = false;
  private stopped = true;
  private scanning: Promise<void> | undefined;
  private rescanRequested = false;
  private debounceTimer: NodeJS.Timeout | undefined;
  /** When the latest watch event not yet taken by a scan arrived (ms since epoch). */
  private eventAt: number | undefined;
  /** The watch event the running scan was started for, if any. */
  private scanEventAt: number | undefined;
  /** Ends the `onChangePending` span, while one is open. */
  private pendingEnd: (() => void) | undefined;
  private periodicTimer: NodeJS.Timeout | undefined;

  constructor(options: FileConfigSourceOptions) {
    this.opts = {
      ...options,
      watch: options.watch ?? true,
      rescanIntervalMs: options.rescanIntervalMs ?? 1000,
      pollIntervalMs: options.pollIntervalMs ?? 100,
      debounceMs: options.debounceMs ?? 30,
      maxFileBytes: options.maxFileBytes ?? 16 * 1024 * 1024,
    };
  }

  /** Loads the directory (resolves once every file is in the store), then follows changes. */
  async start(): Promise<void> {
    const info = await stat(this.opts.dir).catch((err: NodeJS.ErrnoException) => {
      throw new Error(`config directory ${this.opts.dir}: ${err.code === 'ENOENT' ? 'does not exist' : err.message}`);
    });
    if (!info.isDirectory()) throw new Error(`config directory ${this.opts.dir} is not a directory`);
    this.stopped = false;
    await this.rescan();
    this.synced = true;
    this.opts.store.markSynced();
    this.schedulePeriodic();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.debounceTimer);
    clearTimeout(this.periodicTimer);
    this.endPending();
    for (const w of this.watchers.values()) w.close();
    this.watchers.clear();
    await this.scanning;
  }

  hasSynced(): boolean {
    return this.synced;
  }

  /** Scans now; concurrent calls share one scan, and a call during a scan queues one more. */
  rescan(): Promise<void> {
    if (this.scanning) {
      this.rescanRequested = true;
      return this.scanning;
    }
    this.scanning = this.runScans().finally(() => {
      this.scanning = undefined;
    });
    return this.scanning;
  }

  private async runScans(): Promise<void> {
    do {
      this.rescanRequested = false;
      // the watch events so far are this scan's; later ones set `eventAt` again (and ask for another scan)
      this.scanEventAt = this.eventAt;
      this.eventAt = undefined;
      try {
        await this.scanOnce();
      } catch (err) {
        this.reportError(err);
      } finally {
        this.scanEventAt = undefined;
      }
    } while (this.rescanRequested && !this.stopped);
  }

  private trigger(): void {
    if (this.stopped) return;
    this.eventAt = Date.now();
    clearTimeout(this.debounceTimer);
    this.pendingEnd ??= this.opts.onChangePending?.();
    this.debounceTimer = setTimeout(() => void this.rescan().finally(() => this.endPending()), this.opts.debounceMs);
  }

  private endPending(): void {
    const end = this.pendingEnd;
    this.pendingEnd = undefined;
    end?.();
  }

  private schedulePeriodic(): void {
    if (this.stopped) return;
    const watching = this.opts.watch && !this.watchFailed;
    const delay = watching ? this.opts.rescanIntervalMs : this.opts.pollIntervalMs;
    this.periodicTimer = setTimeout(() => {
      void this.rescan().finally(() => this.schedulePeriodic());
    }, delay);
    this.periodicTimer.unref();
  }

  /**
   * When the change a read is about to see was observed: the latest watch event so far (one that
   * came during the scan included), else now (a periodic rescan found it). The store's events carry
   * it, and the push's debounce counts from it (ConfigEvent.observedAt).
   */
  private observedAt(): number {
    return this.eventAt ?? this.scanEventAt ?? Date.now();
  }

  private async scanOnce(): Promise<void> {
    // The directory itself gone (deleted, unmounted, replaced by a file): that is a fault of the
    // source, not an edit. Its last good configuration stays, loudly, until it is back.
    const root = await stat(this.opts.dir).catch((err: NodeJS.ErrnoException) => err);
    if (this.stopped) return;
    if (root instanceof Error || !root.isDirectory()) {
      if (!this.dirLost) {
        this.dirLost = true;
        const why = root instanceof Error ? (root.code === 'ENOENT' ? 'does not exist any more' : root.message) : 'is not a directory any more';
        this.reportError(new Error(`config directory ${this.opts.dir} ${why}: keeping the last good configuration of its ${this.files.size} files until it is back`));
        this.opts.onDirLost?.();
      }
      return;
    }
    if (this.dirLost) {
      this.dirLost = false;
      getLogger('source').warn({ dir: this.opts.dir }, `config directory ${this.opts.dir} is back: its files are read again`);
    }
    const dirs: string[] = [];
    const found = new Map<string, Stats>();
    const unreadable: string[] = [];
    await this.walk(this.opts.dir, dirs, found, unreadable);
    if (this.stopped) return;
    this.syncWatchers(dirs);
    const pending: PendingRejection[] = [];
    for (const [path, st] of found) {
      await this.refreshFile(path, st, pending);
      if (this.stopped) return;
    }
    for (const path of [...this.files.keys()]) {
      // files under a directory that could not be read keep their configuration
      if (!found.has(path) && !unreadable.some((d) => path.startsWith(d + sep))) {
        this.files.delete(path);
        this.opts.store.removeSource(this.originOf(path), this.observedAt());
      }
    }
    // A renamed file shows up as a new file declaring objects its old name still held; once the
    // old name is removed the new one owns them, and the duplicate report is void.
    for (const p of pending) {
      const r = p.rejection;
      const settled = r.kind && r.name && this.opts.store.originOf(r.kind, r.namespace ?? '', r.name) === p.origin;
      if (!settled) this.reject(r);
    }
  }

  private async walk(dir: string, dirs: string[], found: Map<string, Stats>, unreadable: string[]): Promise<void> {
    let entries;
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch (err) {
      // A directory removed during the walk simply has no files any more; one that cannot be read
      // (permissions) keeps what it had.
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') {
        unreadable.push(dir);
        this.reportError(err);
      }
      return;
    }
    dirs.push(dir);
    // Sorted, so that at start-up "first loaded wins" means the alphabetically first file.
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const e of entries) {
      if (e.name.startsWith('.')) continue;
      const path = join(dir, e.name);
      if (e.isDirectory()) {
        await this.walk(path, dirs, found, unreadable);
      } else if ((e.isFile() || e.isSymbolicLink()) && EXTENSIONS.has(extname(e.name).toLowerCase())) {
        try {
          const st = await stat(path);
          if (st.isFile()) found.set(path, st);
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'ENOENT') this.reportError(err);
        }
      }
    }
  }

  private async refreshFile(path: string, st: Stats, pending: PendingRejection[]): Promise<void> {
    const prev = this.files.get(path);
    if (
      prev &&
      prev.mtimeMs === st.mtimeMs &&
      prev.ctimeMs === st.ctimeMs &&
      prev.size === st.size &&
      prev.ino === st.ino &&
      prev.mtimeMs < prev.readAt - RACY_WINDOW_MS
    ) {
      return;
    }
    const readAt = Date.now();
    const observedAt = this.observedAt();
    let content: Buffer;
    if (st.size > this.opts.maxFileBytes) {
      content = Buffer.alloc(0);
    } else {
      try {
        content = await readFile(path);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') this.reportError(err);
        return; // gone since the walk; the next scan sees it missing
      }
    }
    // a file of megabytes is hashed and decoded in slices, over turns (docs/adr/0204)
    const hash = st.size > this.opts.maxFileBytes ? `too-large:${st.size}` : await sha256Yielding(content);
    const fingerprint = { mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs, size: st.size, ino: st.ino, readAt };
    if (prev && prev.hash === hash) {
      Object.assign(prev, fingerprint);
      return;
    }
    const origin = this.originOf(path);
    const previous = prev?.objects ?? new Map<string, ConfigObject>();
    const docs: DocumentCache = prev?.docs ?? new Map();
    const { objects, rejections } =
      st.size > this.opts.maxFileBytes
        ? { objects: [], rejections: [{ origin, issues: [{ path: '', message: `file is larger than ${this.opts.maxFileBytes} bytes` }] }] }
        : await parseConfigDocumentsYielding(await decodeUtf8Yielding(content), origin, this.opts.defaultNamespace, docs, this.opts.largeDocuments);
    for (const o of objects) {
      if (o.warnings && previous.get(idOfObject(o)) !== o) this.warn(o);
      // the store compares objects by this hash; computed here over turns, the store's change of
      // the whole file (below, synchronous) does not pay for it (docs/adr/0163)
      const turn = yieldPoint();
      if (turn) await turn;
      contentHash(o);
    }
    if (this.stopped) return;
    const kept = this.keepLastGood(previous, objects, rejections);
    const contributed = [...objects, ...kept.objects];
    this.files.set(path, { ...fingerprint, hash, objects: new Map(contributed.map((o) => [idOfObject(o), o])), docs });
    const result = this.opts.store.applySource(origin, contributed, observedAt);
    for (const rejection of kept.rejections) this.reject(rejection);
    for (const rejection of result.rejections) pending.push({ rejection, origin });
  }

  /**
   * Objects of the previous version to keep because their new version is invalid, and the
   * rejections annotated with that outcome.
   */
  private keepLastGood(
    previous: Map<string, ConfigObject>,
    objects: ReadonlyArray<ConfigObject>,
    rejections: ReadonlyArray<ConfigRejection>,
  ): { objects: ConfigObject[]; rejections: ConfigRejection[] } {
    const defined = new Set(objects.map(idOfObject));
    const unidentified = rejections.some((r) => r.kind === undefined || r.name === undefined);
    const rejectedIds = new Set(rejections.filter((r) => r.kind && r.name).map((r) => objectId(r.kind ?? '', r.namespace ?? '', r.name ?? '')));
    // a refused document also keeps the object that was valid at its place (`file#index`): a typo in
    // `kind` or `name` changes the id the rejection names, not the document
    const rejectedDocs = new Set(rejections.map((r) => r.origin));
    const kept: ConfigObject[] = [];
    for (const [id, o] of previous) {
      if (!defined.has(id) && (unidentified || rejectedIds.has(id) || (o.meta.origin !== undefined && rejectedDocs.has(o.meta.origin)))) kept.push(o);
    }
    const keptIds = new Set(kept.map(idOfObject));
    const keptDocs = new Set(kept.map((o) => o.meta.origin));
    const annotated = rejections.map((r) => {
      const id = r.kind && r.name ? objectId(r.kind, r.namespace ?? '', r.name) : undefined;
      const keeps = id !== undefined ? keptIds.has(id) || keptDocs.has(r.origin) : kept.length > 0;
      if (!keeps) return r;
      const note = id !== undefined ? 'the last valid version stays in effect' : `the last valid version of this file's other objects (${kept.length}) stays in effect`;
      return { ...r, issues: [...r.issues, { path: '', message: note }] };
    });
    return { objects: kept, rejections: annotated };
  }

  private syncWatchers(dirs: ReadonlyArray<string>): void {
    if (!this.opts.watch || this.stopped) return;
    const wanted = new Set(dirs);
    for (const [dir, w] of this.watchers) {
      if (!wanted.has(dir)) {
        w.close();
        this.watchers.delete(dir);
      }
    }
    for (const dir of wanted) {
      if (this.watchers.has(dir)) continue;
      try {
        const w = watch(dir, { persistent: false }, () => this.trigger());
        w.on('error', (err) => {
          w.close();
          this.watchers.delete(dir);
          // A removed directory ends its watcher; anything else means events may be missed.
          if ((err as NodeJS.ErrnoException).code !== 'ENOENT' && (err as NodeJS.ErrnoException).code !== 'EPERM') this.degrade(err);
          this.trigger();
        });
        this.watchers.set(dir, w);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') this.degrade(err);
      }
    }
  }

  /** Watching failed: poll at the fast rate from now on. */
  private degrade(err: unknown): void {
    if (!this.watchFailed) {
      this.watchFailed = true;
      this.reportError(new Error(`watching ${this.opts.dir} failed, polling every ${this.opts.pollIntervalMs} ms: ${(err as Error).message}`));
      clearTimeout(this.periodicTimer);
      this.schedulePeriodic();
    }
  }

  private originOf(path: string): string {
    return relative(this.opts.dir, path).split(sep).join('/');
  }

  private warn(o: ConfigObject): void {
    const report: ConfigRejection = { origin: o.meta.origin ?? '', kind: o.meta.gvk.kind, name: o.meta.name, namespace: o.meta.namespace, issues: o.warnings ?? [] };
    try {
      this.opts.onWarn?.(report);
    } catch (err) {
      this.reportError(err);
    }
  }

  private reject(rejection: ConfigRejection): void {
    try {
      this.opts.onReject?.(rejection);
    } catch (err) {
      this.reportError(err);
    }
  }

  private reportError(err: unknown): void {
    const error = err instanceof Error ? err : new Error(String(err));
    if (this.opts.onError) this.opts.onError(error);
    else getLogger('source').error({ dir: this.opts.dir, err: error.message }, `config source ${this.opts.dir}: ${error.message}`);
  }
}

function idOfObject(o: ConfigObject): string {
  return objectId(o.meta.gvk.kind, o.meta.namespace, o.meta.name);
}
