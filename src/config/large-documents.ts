/**
 * Large configuration documents are parsed in a worker thread (docs/adr/0183). The YAML parse of one
 * document is one synchronous call that cannot be cut into turns, and a single document of 12 MB (a
 * ServiceEntry of 200,000 endpoints) takes tens of seconds of it; on the daemon's event loop that
 * would be one stall. A document of LARGE_DOCUMENT_CHARS or more is therefore read, validated and
 * hashed by parse-worker.ts, and comes back as plain data: the specs as JSON slices in one
 * transferred buffer, which the daemon parses a slice at a time (src/util/packed-json.ts,
 * docs/adr/0204), the rest (metadata, issues, hashes) as a small structured clone.
 *
 * Bounds: one worker at a time (jobs queue), a heap limit, and a time limit; a worker that fails,
 * runs out of memory or out of time is terminated and the document is refused with a message that
 * says so (the file source then keeps the file's last good configuration). Files themselves are
 * bounded by the file source (16 MiB).
 */
import { existsSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { PackPlan } from '../util/packed-json.js';

/** Documents of at least this many characters are parsed in the worker. */
export const LARGE_DOCUMENT_CHARS = 256 * 1024;

export interface LargeDocumentLimits {
  /** How long the worker may take for one document (default 120 s). */
  readonly timeoutMs?: number;
  /** Old-generation heap of the worker, MiB (default 2048; at least 64: a smaller one cannot even start, and takes the process down). */
  readonly maxHeapMb?: number;
}

const DEFAULT_TIMEOUT_MS = 120_000;
const DEFAULT_HEAP_MB = 2048;
const MIN_HEAP_MB = 64;

/**
 * The worker's results: each result with its spec (an object's, or a rejection's salvaged one) set to
 * null, the content hash of each object, and the specs packed into `buffer` (`specs[k]` lays out the
 * spec of `results[k]`, undefined when it has none).
 */
export interface PackedResults {
  readonly results: unknown[];
  readonly hashes: Array<string | undefined>;
  readonly specs: Array<PackPlan | undefined>;
  readonly buffer: ArrayBuffer;
}

/** What the worker answers: its results, or that the text is not one document. */
export type WorkerAnswer = { readonly unsplittable: true } | PackedResults;

/** Thrown when the worker could not parse the document; the message says why, in the user's terms. */
export class LargeDocumentError extends Error {}

/**
 * The worker's script: parse-worker.js next to this module; when this module runs from its
 * TypeScript source (the test runner), the built one under dist/.
 */
function workerScript(): URL {
  const here = new URL('./parse-worker.js', import.meta.url);
  if (!import.meta.url.endsWith('.ts') && existsSync(fileURLToPath(here))) return here;
  const built = fileURLToPath(here).replace(/([/\\])src([/\\])config([/\\])parse-worker\.js$/, '$1dist$2config$3parse-worker.js');
  return pathToFileURL(built);
}

let queue: Promise<unknown> = Promise.resolve();

/** Parses `job` in a worker thread, one job at a time. */
export function inWorker(job: object, limits: LargeDocumentLimits = {}, transfer: ArrayBuffer[] = []): Promise<WorkerAnswer> {
  const run = queue.then(() => runWorker(job, limits, transfer));
  queue = run.catch(() => undefined);
  return run;
}

function runWorker(job: object, limits: LargeDocumentLimits, transfer: ArrayBuffer[]): Promise<WorkerAnswer> {
  const timeoutMs = limits.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const heapMb = Math.max(MIN_HEAP_MB, limits.maxHeapMb ?? DEFAULT_HEAP_MB);
  return new Promise<WorkerAnswer>((resolve, reject) => {
    const worker = new Worker(workerScript(), { resourceLimits: { maxOldGenerationSizeMb: heapMb }, stdout: false, stderr: false });
    let settled = false;
    const finish = (outcome: { answer: WorkerAnswer } | { error: string }): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      void worker.terminate();
      if ('answer' in outcome) resolve(outcome.answer);
      else reject(new LargeDocumentError(outcome.error));
    };
    const timer = setTimeout(() => finish({ error: `parsing took longer than ${timeoutMs / 1000} s and was stopped` }), timeoutMs);
    worker.on('message', (answer: WorkerAnswer) => finish({ answer }));
    worker.on('error', (err: Error & { code?: string }) =>
      finish({ error: err.code === 'ERR_WORKER_OUT_OF_MEMORY' ? `parsing needed more than the parser's ${heapMb} MiB of memory and was stopped` : `the parser failed: ${err.message}` }),
    );
    worker.on('exit', (code) => finish({ error: `the parser stopped (exit code ${code}) without an answer` }));
    worker.postMessage(job, transfer);
  });
}
