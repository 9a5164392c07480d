/**
 * The messages between the CA's crypto pool (./crypto-pool.ts) and its worker threads
 * (./crypto-worker.ts), and the one piece of work both sides share: reading a CSR. Values cross the
 * thread boundary by structured clone (Buffers, Dates, KeyObjects).
 */
import type { KeyObject } from 'node:crypto';
import { parseCsrPem, type AltNames, type CertificateTemplate, type KeyType } from './x509.js';

/** What the certificate service needs of a CSR, read and checked. */
export interface CsrInfo {
  readonly spki: Buffer;
  readonly keyType: KeyType;
  readonly altNames: AltNames;
  /** Whether the request's self-signature verifies with its own public key. */
  readonly signatureValid: boolean;
}

/** Reads a PEM CSR and checks its signature on this thread (a worker's, or a test's). Throws CsrError/DerError. */
export function readCsrSync(pem: string): CsrInfo {
  const csr = parseCsrPem(pem);
  return { spki: csr.spki, keyType: csr.keyType, altNames: csr.altNames, signatureValid: csr.verifySignatureSync() };
}

/** The same with the signature checked in libuv's thread pool (the CA without a worker pool). */
export async function readCsr(pem: string): Promise<CsrInfo> {
  const csr = parseCsrPem(pem);
  return { spki: csr.spki, keyType: csr.keyType, altNames: csr.altNames, signatureValid: await csr.verifySignature() };
}

/** Structured clone turns a Buffer into a plain Uint8Array: a Buffer view of the same bytes again. */
export function asBuffer(bytes: Uint8Array): Buffer;
export function asBuffer(bytes: Uint8Array | undefined): Buffer | undefined;
export function asBuffer(bytes: Uint8Array | undefined): Buffer | undefined {
  if (bytes === undefined || Buffer.isBuffer(bytes)) return bytes;
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** An issuer as the workers keep it: sent once per worker, then named by `issuer` in sign jobs. */
export interface IssuerMessage {
  readonly kind: 'issuer';
  readonly issuer: number;
  readonly subjectRaw: Buffer;
  readonly key: KeyObject;
  readonly keyId?: Buffer;
}

export type JobMessage =
  | { readonly kind: 'csr'; readonly id: number; readonly pem: string }
  | { readonly kind: 'sign'; readonly id: number; readonly issuer: number; readonly template: CertificateTemplate };

/** What the pool posts: issuers and jobs, in order, batched per turn of the event loop. */
export type ToWorker = ReadonlyArray<IssuerMessage | JobMessage>;

/** An error as it crosses the boundary: its class name (CsrError, DerError, …) and message. */
export interface JobError {
  readonly name: string;
  readonly message: string;
}

export type JobResult =
  | { readonly id: number; readonly ok: true; readonly csr: CsrInfo }
  | { readonly id: number; readonly ok: true; readonly der: Buffer }
  | { readonly id: number; readonly ok: false; readonly error: JobError };

/** The answers to one batch, in order. */
export type FromWorker = ReadonlyArray<JobResult>;

/** Issuers a worker keeps (the current signing key and a few before it, during a rotation). */
export const WORKER_ISSUERS = 4;

/** Niceness of the worker threads: under contention the event loop (xDS) gets the CPU first. */
export const WORKER_NICE = 10;
