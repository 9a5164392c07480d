/**
 * `mesh.v1.auth.MeshCertificateService/CreateCertificate` (proto/mesh/v1/auth/certificate.proto):
 * authenticates the caller, reads its CSR, and has the signer issue a certificate for the caller's
 * own identity. Each outcome is counted where it happens (ca_server_* metrics) and answered with a
 * gRPC status that says what went wrong:
 *
 * | outcome                                     | status              | counted in                                  |
 * |---------------------------------------------|---------------------|---------------------------------------------|
 * | no or bad credential                        | UNAUTHENTICATED     | ca_server_authentication_failure_count      |
 * | credential without a workload identity      | PERMISSION_DENIED   | ca_server_id_extraction_err_count           |
 * | CSR asking for another identity             | PERMISSION_DENIED   | ca_server_id_extraction_err_count           |
 * | CSR that does not parse or verify           | INVALID_ARGUMENT    | ca_server_csr_parsing_err_count             |
 * | signer busy / failed                        | RESOURCE_EXHAUSTED / INTERNAL | ca_server_csr_sign_err_count      |
 * | too many requests waiting (admission)       | RESOURCE_EXHAUSTED  | ca_server_csr_sign_err_count{reason="overloaded"} |
 * | the token could not be reviewed             | UNAVAILABLE         | ca_server_authentication_failure_count      |
 *
 * After authentication a request passes the admission gate (./admission.ts) before its CSR is read
 * and signed; with the daemon's crypto pool both happen in worker threads (docs/adr/0067).
 */
import * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { MeshCertificateRequest, MeshCertificateResponse } from '../gen/mesh/v1/auth/certificate.js';
import { SignerError, type WorkloadSigner } from '../ca/authority.js';
import type { CaMetrics } from '../ca/metrics.js';
import { readCsr, type CsrInfo } from '../ca/crypto-jobs.js';
import { CsrError, DerError } from '../ca/x509.js';
import { AdmissionRefused, type Admission } from './admission.js';
import { AuthError, callCredentials, type CallCredentials, type Caller } from './authn.js';
import { formatSpiffeId } from './spiffe.js';

export const CERTIFICATE_SERVICE = 'mesh.v1.auth.MeshCertificateService';
const MAX_CSR_BYTES = 64 * 1024;

export interface CertificateServiceDeps {
  readonly authenticate: (credentials: CallCredentials) => Promise<Caller>;
  readonly signer: WorkloadSigner;
  readonly metrics: CaMetrics;
  readonly log: Logger;
  /** DEFAULT_WORKLOAD_CERT_TTL and MAX_WORKLOAD_CERT_TTL, ms. */
  readonly defaultTtlMs: number;
  readonly maxTtlMs: number;
  /** Reads and checks a CSR (the daemon: in its crypto pool's workers); default: on this thread. */
  readonly readCsr?: (pem: string) => Promise<CsrInfo>;
  /** The admission gate; default: none (every authenticated request goes on at once). */
  readonly admission?: Admission;
}

class Refusal extends Error {
  constructor(
    readonly code: grpc.status,
    message: string,
  ) {
    super(message);
  }
}

/** The lifetime to issue: the default for zero or less, cut to the maximum. */
export function workloadTtlMs(requestedSeconds: number, defaultTtlMs: number, maxTtlMs: number): number {
  const asked = requestedSeconds > 0 ? requestedSeconds * 1000 : defaultTtlMs;
  return Math.min(asked, maxTtlMs);
}

/** The gRPC definition of `CreateCertificate` (protobuf on the wire). */
export const CERTIFICATE_SERVICE_DEFINITION: grpc.ServiceDefinition = {
  CreateCertificate: {
    path: `/${CERTIFICATE_SERVICE}/CreateCertificate`,
    requestStream: false,
    responseStream: false,
    requestSerialize: (m: MeshCertificateRequest) => Buffer.from(MeshCertificateRequest.encode(m).finish()),
    requestDeserialize: (b: Buffer) => MeshCertificateRequest.decode(b),
    responseSerialize: (m: MeshCertificateResponse) => Buffer.from(MeshCertificateResponse.encode(m).finish()),
    responseDeserialize: (b: Buffer) => MeshCertificateResponse.decode(b),
  },
};

export class CertificateService {
  constructor(private readonly deps: CertificateServiceDeps) {}

  serviceDefinition(): grpc.ServiceDefinition {
    return CERTIFICATE_SERVICE_DEFINITION;
  }

  handlers(): grpc.UntypedServiceImplementation {
    return {
      CreateCertificate: (call: grpc.ServerUnaryCall<MeshCertificateRequest, MeshCertificateResponse>, callback: grpc.sendUnaryData<MeshCertificateResponse>) => {
        this.create(call).then(
          (certChain) => callback(null, { certChain }),
          (err: unknown) => {
            const refusal = err instanceof Refusal ? err : new Refusal(grpc.status.INTERNAL, 'internal error');
            if (!(err instanceof Refusal)) this.deps.log.error({ err: err instanceof Error ? err.stack : String(err) }, 'CA: CreateCertificate failed');
            callback({ code: refusal.code, details: refusal.message });
          },
        );
      },
    };
  }

  private async create(call: grpc.ServerUnaryCall<MeshCertificateRequest, MeshCertificateResponse>): Promise<string[]> {
    const m = this.deps.metrics;
    m.csrCount.inc();
    const peer = call.getPeer();
    const refuse = (code: grpc.status, counter: { inc(labels: { reason: string }): void }, reason: string, message: string, caller?: string): never => {
      counter.inc({ reason });
      this.deps.log.info({ peer, reason, caller }, `CA: refused: ${message}`);
      throw new Refusal(code, message);
    };

    let caller: Caller;
    try {
      caller = await this.deps.authenticate(callCredentials(call));
    } catch (err) {
      if (!(err instanceof AuthError)) throw err;
      if (err.identityError) return refuse(grpc.status.PERMISSION_DENIED, m.idExtractionErrors, err.reason, err.message);
      return refuse(err.unavailable ? grpc.status.UNAVAILABLE : grpc.status.UNAUTHENTICATED, m.authenticationFailures, err.reason, err.message);
    }
    const identity = formatSpiffeId(caller.identity);

    const pem = call.request.csr;
    if (pem.length > MAX_CSR_BYTES) return refuse(grpc.status.INVALID_ARGUMENT, m.csrParsingErrors, 'too_large', `csr: larger than ${MAX_CSR_BYTES} bytes`, identity);

    let leave: (() => void) | undefined;
    if (this.deps.admission) {
      const gone = new AbortController();
      const onCancel = (): void => gone.abort();
      call.once('cancelled', onCancel);
      try {
        leave = await this.deps.admission.enter(pem.length, gone.signal);
      } catch (err) {
        if (!(err instanceof AdmissionRefused)) throw err;
        if (gone.signal.aborted) throw new Refusal(grpc.status.CANCELLED, err.message);
        return refuse(grpc.status.RESOURCE_EXHAUSTED, m.csrSignErrors, 'overloaded', err.message, identity);
      } finally {
        call.removeListener('cancelled', onCancel);
      }
    }
    try {
      return await this.issue(call, pem, identity, caller.method, refuse);
    } finally {
      leave?.();
    }
  }

  private async issue(
    call: grpc.ServerUnaryCall<MeshCertificateRequest, MeshCertificateResponse>,
    pem: string,
    identity: string,
    via: Caller['method'],
    refuse: (code: grpc.status, counter: { inc(labels: { reason: string }): void }, reason: string, message: string, caller?: string) => never,
  ): Promise<string[]> {
    const m = this.deps.metrics;
    let csr: CsrInfo;
    try {
      csr = await (this.deps.readCsr ?? readCsr)(pem);
    } catch (err) {
      if (err instanceof CsrError || err instanceof DerError) return refuse(grpc.status.INVALID_ARGUMENT, m.csrParsingErrors, err instanceof CsrError ? 'unsupported' : 'malformed', `csr: ${err.message}`, identity);
      if (err instanceof SignerError) {
        const code = err.code === 'overloaded' ? grpc.status.RESOURCE_EXHAUSTED : err.code === 'unavailable' ? grpc.status.UNAVAILABLE : grpc.status.INTERNAL;
        return refuse(code, m.csrSignErrors, err.code, err.message, identity);
      }
      throw err;
    }
    if (!csr.signatureValid) return refuse(grpc.status.INVALID_ARGUMENT, m.csrParsingErrors, 'signature', 'csr: its signature does not verify with its own public key', identity);

    const other = [...csr.altNames.uris.filter((u) => u !== identity), ...csr.altNames.dnsNames, ...csr.altNames.ips];
    if (other.length > 0) {
      return refuse(grpc.status.PERMISSION_DENIED, m.idExtractionErrors, 'csr_identity', `csr: asks for ${other.map((o) => JSON.stringify(o)).join(', ')} but the caller is ${identity}; a workload gets only its own identity`, identity);
    }

    if (this.deps.signer.csrMustNameIdentity && !csr.altNames.uris.includes(identity)) {
      return refuse(grpc.status.INVALID_ARGUMENT, m.csrParsingErrors, 'no_identity', `csr: must name ${identity} as its URI subject alternative name (the external signer issues what the CSR asks for)`, identity);
    }
    const ttlMs = workloadTtlMs(call.request.validityDuration, this.deps.defaultTtlMs, this.deps.maxTtlMs);
    let chain: string[];
    try {
      chain = await this.deps.signer.sign({ csrPem: pem, spki: csr.spki, identity, ttlMs });
    } catch (err) {
      if (err instanceof SignerError) {
        const code = err.code === 'overloaded' ? grpc.status.RESOURCE_EXHAUSTED : err.code === 'unavailable' ? grpc.status.UNAVAILABLE : grpc.status.INTERNAL;
        return refuse(code, m.csrSignErrors, err.code, err.message, identity);
      }
      m.csrSignErrors.inc({ reason: 'internal' });
      throw err;
    }
    m.successIssuance.inc();
    this.deps.log.debug({ peer: call.getPeer(), identity, via, ttlSeconds: Math.round(ttlMs / 1000) }, 'CA: issued');
    return chain;
  }
}
