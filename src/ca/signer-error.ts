/** Why signing failed; `code` maps to a gRPC status in the certificate service. */
export class SignerError extends Error {
  override readonly name = 'SignerError';
  constructor(
    readonly code: 'overloaded' | 'unavailable' | 'internal',
    message: string,
  ) {
    super(message);
  }
}
