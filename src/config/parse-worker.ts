/**
 * Entry of the worker thread that parses one large configuration document (large-documents.ts):
 * the YAML parse of one document cannot be cut into turns, so a document of megabytes is read,
 * validated and hashed here, off the daemon's event loop, and handed back as plain data.
 */
import { parentPort } from 'node:worker_threads';
import { parseDocumentJob, type DocumentJob } from './parse.js';
import { contentHash } from './store.js';

parentPort?.on('message', (job: DocumentJob) => {
  const parsed = parseDocumentJob(job);
  if (parsed === 'unsplittable') {
    parentPort?.postMessage({ unsplittable: true });
    return;
  }
  // the store compares objects by this hash: computed here, the daemon's loop does not pay for it
  const hashes = parsed.map((r) => (r !== undefined && !('issues' in r) ? contentHash(r) : undefined));
  parentPort?.postMessage({ results: parsed, hashes });
});
