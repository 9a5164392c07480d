/**
 * Entry of the worker thread that parses one large configuration document (large-documents.ts):
 * the YAML parse of one document cannot be cut into turns, so a document of megabytes is read,
 * validated and hashed here, off the daemon's event loop. The results come back without their
 * specs, which are packed as JSON slices into one transferred buffer (src/util/packed-json.ts): the
 * daemon parses them a slice at a time instead of receiving one structured clone of a million
 * objects (docs/adr/0204).
 */
import { parentPort } from 'node:worker_threads';
import { packJson } from '../util/packed-json.js';
import { parseDocumentJob, type DocumentResult, type WorkerJob } from './parse.js';
import { contentHash } from './store.js';
import type { PackedResults } from './large-documents.js';

parentPort?.on('message', ({ bytes, ...job }: WorkerJob) => {
  const parsed = parseDocumentJob({ ...job, text: new TextDecoder('utf-8', { ignoreBOM: true }).decode(bytes) });
  if (parsed === 'unsplittable') {
    parentPort?.postMessage({ unsplittable: true });
    return;
  }
  // the store compares objects by this hash: computed here, the daemon's loop does not pay for it
  const hashes = parsed.map((r) => (r !== undefined && !('issues' in r) ? contentHash(r) : undefined));
  const specs = parsed.map(specOf);
  const { plans, buffer } = packJson(specs);
  const answer: PackedResults = { results: parsed.map(withoutSpec), hashes, specs: plans.map((p, k) => (specs[k] === undefined ? undefined : p)), buffer };
  parentPort?.postMessage(answer, [buffer]);
});

/** The spec a result carries: an object's, or the salvaged part of a rejection's. */
function specOf(r: DocumentResult): unknown {
  if (r === undefined) return undefined;
  if ('issues' in r) return r.salvaged?.spec;
  return r.spec;
}

function withoutSpec(r: DocumentResult): DocumentResult {
  if (r === undefined) return r;
  if ('issues' in r) return r.salvaged ? { ...r, salvaged: { ...r.salvaged, spec: null } } : r;
  return { ...r, spec: null };
}
