/**
 * Worker threads for the CA's CPU work (docs/adr/0067): reading a CSR (PEM and DER parsing, public
 * key import, signature check) and signing a certificate. The daemon's event loop serves xDS; with
 * this work on it, a storm of certificate requests delayed every push (bench/ca). Here the event
 * loop only posts a job and takes the answer.
 *
 * - Size: the CPUs less one (the event loop keeps a core), at least one, at most eight.
 * - Each worker holds at most `perWorker` jobs at a time (so one is ready when it finishes the
 *   last); further jobs wait in one FIFO, at most `maxQueued`, beyond which a job is refused at once
 *   (`SignerError('overloaded')`) rather than held.
 * - Signing keys are sent to a worker once (KeyObjects cross threads by structured clone) and then
 *   named by number.
 * - A worker that dies fails the jobs it held and is replaced; the pool never keeps the process
 *   alive on its own (the workers are unref'd).
 */
import type { KeyObject } from 'node:crypto';
import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import { SignerError } from './signer-error.js';
import type { CsrInfo, FromWorker, JobError, JobMessage, JobResult, ToWorker } from './crypto-jobs.js';
import { asBuffer, WORKER_ISSUERS } from './crypto-jobs.js';
import { CsrError, DerError, type CertificateTemplate, type Issuer } from './x509.js';

export interface CryptoPoolOptions {
  /** Worker threads (default: `defaultPoolSize()`). */
  readonly size?: number;
  /** Jobs one worker holds at once (default 4). */
  readonly perWorker?: number;
  /** Jobs allowed to wait for a worker (default 10,000). */
  readonly maxQueued?: number;
  /**
   * A worker that held no job for this long is stopped, and started again by the next job
   * (default 60 s; `<= 0`: never). Workers start on first use, so a mesh that issues no
   * certificate pays no thread (each costs about 15 MB of RSS).
   */
  readonly idleMs?: number;
  readonly log?: Logger;
}

/** The CPUs less one for the event loop; at least 1, at most 8. */
export function defaultPoolSize(cpus = availableParallelism()): number {
  return Math.min(8, Math.max(1, cpus - 1));
}

/**
 * The worker's entry: the compiled `crypto-worker.js` beside this module. Run from the sources (the
 * tests load src/ through a transpiler), Node strips the types of `crypto-worker.ts` itself and a
 * resolve hook maps the sources' `./x.js` import specifiers to their `./x.ts` files.
 */
function workerEntry(): URL {
  const compiled = new URL('./crypto-worker.js', import.meta.url);
  if (existsSync(fileURLToPath(compiled))) return compiled;
  const source = new URL('./crypto-worker.ts', import.meta.url);
  const hook =
    'export async function resolve(s, c, next) { try { return await next(s, c); } catch (e) { ' +
    "if (e && e.code === 'ERR_MODULE_NOT_FOUND' && s.startsWith('.') && s.endsWith('.js')) return next(s.slice(0, -3) + '.ts', c); throw e; } }";
  const boot = `import { register } from 'node:module';\nregister(${JSON.stringify(`data:text/javascript,${encodeURIComponent(hook)}`)});\nawait import(${JSON.stringify(source.href)});\n`;
  return new URL(`data:text/javascript,${encodeURIComponent(boot)}`);
}

interface Pending {
  readonly job: JobMessage;
  readonly issuer?: { readonly id: number; readonly issuer: Issuer };
  readonly resolve: (m: JobResult) => void;
  readonly reject: (err: Error) => void;
}

interface Slot {
  /** Started by the first job, stopped after `idleMs` without one. */
  worker: Worker | undefined;
  idle: NodeJS.Timeout | undefined;
  readonly held: Map<number, Pending>;
  readonly issuers: Set<number>;
  /** Messages not posted yet (one post per slot and turn of the event loop). */
  outbox: Array<ToWorker[number]>;
}

function rebuild(e: JobError): Error {
  if (e.name === 'CsrError') return new CsrError(e.message);
  if (e.name === 'DerError') return new DerError(e.message);
  return new SignerError('internal', `crypto worker: ${e.message}`);
}

export class CryptoPool {
  readonly size: number;
  private readonly perWorker: number;
  private readonly maxQueued: number;
  private readonly idleMs: number;
  private readonly slots: Slot[] = [];
  private readonly waiting: Pending[] = [];
  private readonly issuerIds = new WeakMap<KeyObject, number>();
  private nextIssuer = 1;
  private nextJob = 1;
  private closed = false;
  private readonly entry = workerEntry();

  constructor(private readonly opts: CryptoPoolOptions = {}) {
    this.size = Math.max(1, Math.floor(opts.size ?? defaultPoolSize()));
    this.perWorker = Math.max(1, opts.perWorker ?? 4);
    this.maxQueued = Math.max(0, opts.maxQueued ?? 10_000);
    this.idleMs = opts.idleMs ?? 60_000;
    for (let i = 0; i < this.size; i++) this.slots.push({ worker: undefined, idle: undefined, held: new Map(), issuers: new Set(), outbox: [] });
  }

  /** Jobs the workers hold at most (size × perWorker). */
  get capacity(): number {
    return this.size * this.perWorker;
  }

  /** Jobs waiting for a worker. */
  get queued(): number {
    return this.waiting.length;
  }

  /** Worker threads running now (they start on demand and stop when idle). */
  get threads(): number {
    return this.slots.filter((s) => s.worker !== undefined).length;
  }

  /** Jobs held by the workers. */
  get running(): number {
    return this.slots.reduce((n, s) => n + s.held.size, 0);
  }

  /** Reads a PEM CSR and checks its signature. Throws CsrError/DerError for a bad CSR, SignerError when busy. */
  async readCsr(pem: string): Promise<CsrInfo> {
    const m = await this.submit({ kind: 'csr', id: this.nextJob++, pem });
    if (!m.ok || !('csr' in m)) throw new SignerError('internal', 'crypto worker: unexpected answer');
    return { ...m.csr, spki: asBuffer(m.csr.spki) };
  }

  /** Builds and signs a certificate (DER). */
  async createCertificate(template: CertificateTemplate, issuer: Issuer): Promise<Buffer> {
    let id = this.issuerIds.get(issuer.key);
    if (id === undefined) this.issuerIds.set(issuer.key, (id = this.nextIssuer++));
    const m = await this.submit({ kind: 'sign', id: this.nextJob++, issuer: id, template }, { id, issuer });
    if (!m.ok || !('der' in m)) throw new SignerError('internal', 'crypto worker: unexpected answer');
    return asBuffer(m.der);
  }

  /** Stops the workers; jobs not answered yet fail. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const gone = new SignerError('unavailable', 'the certificate authority is stopping');
    for (const p of this.waiting.splice(0)) p.reject(gone);
    await Promise.all(
      this.slots.map(async (s) => {
        for (const p of s.held.values()) p.reject(gone);
        s.held.clear();
        clearTimeout(s.idle);
        const w = s.worker;
        s.worker = undefined;
        await w?.terminate();
      }),
    );
  }

  private submit(job: JobMessage, issuer?: Pending['issuer']): Promise<JobResult> {
    if (this.closed) return Promise.reject(new SignerError('unavailable', 'the certificate authority is stopping'));
    return new Promise<JobResult>((resolve, reject) => {
      const p: Pending = { job, issuer, resolve, reject };
      const slot = this.freeSlot();
      if (slot) {
        this.dispatch(slot, p);
        return;
      }
      if (this.waiting.length >= this.maxQueued) {
        reject(new SignerError('overloaded', `certificate authority busy: ${this.waiting.length} requests waiting; retry later`));
        return;
      }
      this.waiting.push(p);
    });
  }

  private freeSlot(): Slot | undefined {
    let best: Slot | undefined;
    for (const s of this.slots) if (s.held.size < this.perWorker && (!best || s.held.size < best.held.size)) best = s;
    return best;
  }

  private dispatch(slot: Slot, p: Pending): void {
    if (!slot.worker) this.start(slot);
    clearTimeout(slot.idle);
    slot.idle = undefined;
    slot.held.set(p.job.id, p);
    if (slot.outbox.length === 0) {
      setImmediate(() => {
        const batch = slot.outbox;
        slot.outbox = [];
        if (batch.length > 0) slot.worker?.postMessage(batch satisfies ToWorker);
      });
    }
    if (p.issuer && !slot.issuers.has(p.issuer.id)) {
      const { id, issuer } = p.issuer;
      slot.outbox.push({ kind: 'issuer', issuer: id, subjectRaw: issuer.subjectRaw, key: issuer.key, keyId: issuer.keyId });
      slot.issuers.add(id);
      // The worker keeps the last few; forget the older ones so they are sent again when needed.
      while (slot.issuers.size > WORKER_ISSUERS) slot.issuers.delete(slot.issuers.values().next().value!);
    }
    slot.outbox.push(p.job);
  }

  private start(slot: Slot): void {
    const w = new Worker(this.entry);
    slot.worker = w;
    slot.issuers.clear();
    w.unref();
    w.on('message', (batch: FromWorker) => {
      for (const m of batch) {
        const p = slot.held.get(m.id);
        if (!p) continue;
        slot.held.delete(m.id);
        if (m.ok) p.resolve(m);
        else p.reject(rebuild(m.error));
      }
      while (slot.held.size < this.perWorker) {
        const next = this.waiting.shift();
        if (!next) break;
        this.dispatch(slot, next);
      }
      if (slot.held.size === 0 && this.idleMs > 0) {
        slot.idle = setTimeout(() => this.retire(slot, w), this.idleMs);
        slot.idle.unref();
      }
    });
    const fail = (why: string): void => {
      if (slot.worker !== w) return;
      const err = new SignerError('internal', `crypto worker stopped: ${why}`);
      for (const p of slot.held.values()) p.reject(err);
      slot.held.clear();
      slot.issuers.clear();
      slot.outbox = [];
      slot.worker = undefined;
      clearTimeout(slot.idle);
      if (this.closed) return;
      this.opts.log?.error({ err: why }, 'CA: a crypto worker stopped; the next job starts another');
      for (let n = 0; n < this.perWorker; n++) {
        const next = this.waiting.shift();
        if (!next) break;
        this.dispatch(slot, next);
      }
    };
    w.on('error', (err) => fail(err.message));
    w.on('exit', (code) => fail(`exit code ${code}`));
  }

  /** Stops an idle worker; the next job starts another. */
  private retire(slot: Slot, w: Worker): void {
    slot.idle = undefined;
    if (slot.worker !== w || slot.held.size > 0 || slot.outbox.length > 0 || this.closed) return;
    slot.worker = undefined;
    slot.issuers.clear();
    void w.terminate();
  }
}
