/**
 * A worker thread of the CA's crypto pool (./crypto-pool.ts): reads CSRs (parse, public key import,
 * signature check) and signs certificates, synchronously on this thread, so the event loop of the
 * daemon (which serves xDS) never does this work. Jobs come in batches and are answered in one
 * message per batch. The thread lowers its own scheduling priority (Linux keeps a nice value per
 * thread): when the machine is busy, the event loop runs first and certificates wait.
 */
import { setPriority } from 'node:os';
import { parentPort } from 'node:worker_threads';
import { asBuffer, readCsrSync, WORKER_ISSUERS, WORKER_NICE, type IssuerMessage, type JobMessage, type JobResult, type ToWorker } from './crypto-jobs.js';
import { createCertificateSync } from './x509.js';

const port = parentPort;
if (!port) throw new Error('crypto-worker: not started as a worker thread');
try {
  setPriority(WORKER_NICE);
} catch {
  // not permitted here: run at the process's priority
}

const issuers = new Map<number, IssuerMessage>();

function run(m: JobMessage): JobResult {
  try {
    if (m.kind === 'csr') return { id: m.id, ok: true, csr: readCsrSync(m.pem) };
    const issuer = issuers.get(m.issuer);
    if (!issuer) throw new Error(`issuer ${m.issuer} is not known to this worker`);
    const t = m.template;
    return { id: m.id, ok: true, der: createCertificateSync({ ...t, spki: asBuffer(t.spki), subjectRaw: asBuffer(t.subjectRaw) }, issuer) };
  } catch (err) {
    const e = err instanceof Error ? err : new Error(String(err));
    return { id: m.id, ok: false, error: { name: e.name, message: e.message } };
  }
}

port.on('message', (batch: ToWorker) => {
  const out: JobResult[] = [];
  for (const m of batch) {
    if (m.kind === 'issuer') {
      issuers.set(m.issuer, { ...m, subjectRaw: asBuffer(m.subjectRaw), keyId: asBuffer(m.keyId) });
      while (issuers.size > WORKER_ISSUERS) issuers.delete(issuers.keys().next().value!);
    } else {
      out.push(run(m));
    }
  }
  port.postMessage(out);
});
