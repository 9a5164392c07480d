/**
 * The agent's client of meshd's certificate service (`mesh.v1.auth.MeshCertificateService/
 * CreateCertificate` on the secured port, 15012): sends a PEM CSR over TLS, verifying meshd's
 * serving certificate against the mesh root, and proves who the workload is either with the pod's
 * projected service-account token (`authorization: Bearer <token>`) or with a client certificate
 * meshd issued earlier. Returns the chain, leaf first. Tokens and keys never appear in an error.
 */
import * as grpc from '@grpc/grpc-js';
import { MeshCertificateRequest, MeshCertificateResponse } from '../gen/mesh/v1/auth/certificate.js';

export const CREATE_CERTIFICATE_PATH = '/mesh.v1.auth.MeshCertificateService/CreateCertificate';

/** How the workload proves its identity on one call. */
export type CaCredential = { readonly kind: 'token'; readonly token: string } | { readonly kind: 'certificate'; readonly certChainPem: string; readonly keyPem: string };

export interface CaClientOptions {
  /** `host:port` of the certificate service. */
  readonly address: string;
  /** The name meshd's certificate must carry (default: the host of `address`). */
  readonly serverName?: string;
  /** PEM roots meshd's serving certificate must chain to. */
  readonly rootPem: string;
  /** Deadline of one call. */
  readonly timeoutMs: number;
}

/** A refused or failed call: the gRPC status and meshd's message (never the credential). */
export class CaCallError extends Error {
  override readonly name = 'CaCallError';
  constructor(
    readonly code: grpc.status,
    message: string,
  ) {
    super(message);
  }
  /** Whether trying again later can help (transport trouble, overload), as opposed to a refusal. */
  get retryable(): boolean {
    return [grpc.status.UNAVAILABLE, grpc.status.DEADLINE_EXCEEDED, grpc.status.RESOURCE_EXHAUSTED, grpc.status.INTERNAL, grpc.status.UNKNOWN, grpc.status.ABORTED].includes(this.code);
  }
}

function hostOf(address: string): string {
  const m = /^\[([^\]]+)\]:\d+$/.exec(address) ?? /^([^:]+):\d+$/.exec(address);
  if (!m) throw new Error(`certificate service address ${JSON.stringify(address)} is not host:port`);
  return m[1] as string;
}

/** TLS to meshd, checked against the mesh roots, presenting the workload certificate. */
export function workloadCredentials(rootPem: string, keyPem: string, certChainPem: string): grpc.ChannelCredentials {
  return grpc.credentials.createSsl(Buffer.from(rootPem), Buffer.from(keyPem), Buffer.from(certChainPem));
}

/** Asks the certificate service to sign `csrPem` for `ttlSeconds`; resolves to the PEM chain, leaf first. */
export function createCertificate(o: CaClientOptions, credential: CaCredential, csrPem: string, ttlSeconds: number): Promise<string[]> {
  const serverName = o.serverName || hostOf(o.address);
  let channelCreds =
    credential.kind === 'certificate'
      ? workloadCredentials(o.rootPem, credential.keyPem, credential.certChainPem)
      : grpc.credentials.createSsl(Buffer.from(o.rootPem));
  if (credential.kind === 'token') {
    const bearer = `Bearer ${credential.token}`;
    channelCreds = channelCreds.compose(
      grpc.credentials.createFromMetadataGenerator((_params, done) => {
        const md = new grpc.Metadata();
        md.set('authorization', bearer);
        done(null, md);
      }),
    );
  }
  const client = new grpc.Client(o.address, channelCreds, {
    'grpc.ssl_target_name_override': serverName,
    'grpc.default_authority': serverName,
    'grpc.max_receive_message_length': 1 << 20,
  });
  return new Promise<string[]>((resolve, reject) => {
    client.makeUnaryRequest(
      CREATE_CERTIFICATE_PATH,
      (m: MeshCertificateRequest) => Buffer.from(MeshCertificateRequest.encode(m).finish()),
      (b: Buffer) => MeshCertificateResponse.decode(b),
      MeshCertificateRequest.fromPartial({ csr: csrPem, validityDuration: ttlSeconds }),
      new grpc.Metadata(),
      { deadline: Date.now() + o.timeoutMs },
      (err, res) => {
        client.close();
        if (err) return reject(new CaCallError(err.code ?? grpc.status.UNKNOWN, `certificate service ${o.address}: ${grpc.status[err.code] ?? err.code}: ${err.details || err.message}`));
        const chain = res?.certChain ?? [];
        if (chain.length === 0) return reject(new CaCallError(grpc.status.INTERNAL, `certificate service ${o.address}: the answer holds no certificate`));
        resolve(chain);
      },
    );
  });
}
