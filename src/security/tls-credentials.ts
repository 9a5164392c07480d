/**
 * gRPC server credentials for the secured port whose key, certificate chain and trusted client
 * roots can be replaced while the server runs (a renewed serving certificate, a rotated root): new
 * handshakes use the new context, open connections keep theirs. A client certificate is asked for
 * but not required (a client may authenticate with a token instead); the handshake checks one that
 * is sent against the trusted roots, and only a verified one reaches the call's auth context.
 * `ciphers` (`--tls-cipher-suites`) and the TLS 1.2 floor belong to every context.
 */
import * as grpc from '@grpc/grpc-js';
import type { SecureContextOptions } from 'node:tls';

export interface ServingMaterial {
  /** PEM: private key of the serving certificate. */
  readonly keyPem: string;
  /** PEM: the serving certificate and its chain. */
  readonly certChainPem: string;
  /** PEM: roots a client certificate must chain to. */
  readonly clientRootsPem: string;
}

export class ReloadableServerCredentials extends grpc.ServerCredentials {
  private material: ServingMaterial;

  constructor(
    material: ServingMaterial,
    private readonly ciphers: string | undefined,
  ) {
    super({ requestCert: true, rejectUnauthorized: false }, ReloadableServerCredentials.context(material, ciphers));
    this.material = material;
  }

  private static context(m: ServingMaterial, ciphers: string | undefined): SecureContextOptions {
    return { key: m.keyPem, cert: m.certChainPem, ca: m.clientRootsPem, minVersion: 'TLSv1.2', ...(ciphers ? { ciphers } : {}) };
  }

  current(): ServingMaterial {
    return this.material;
  }

  /** Switches to new material; servers bound with these credentials use it for new handshakes. */
  update(material: ServingMaterial): void {
    this.material = material;
    this.updateSecureContextOptions(ReloadableServerCredentials.context(material, this.ciphers));
  }

  _equals(other: grpc.ServerCredentials): boolean {
    return other === this;
  }
}
