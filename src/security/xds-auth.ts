/**
 * Who may open an xDS stream, per port (the ADS server calls this seam for each new stream and knows
 * nothing else of it). With authentication on (XDS_AUTH for the secured port, XDS_AUTH_PLAINTEXT
 * for the plaintext one) a stream must carry a client certificate or a service-account token; with
 * DISC_ENABLE_XDS_IDENTITY_CHECK the proxy it speaks for must be in the identity's own namespace.
 * Refusals are UNAUTHENTICATED or PERMISSION_DENIED and counted in
 * ca_server_authentication_failure_count with a reason starting `xds_`.
 */
import * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import type { Proxy } from '../model/proxy.js';
import type { StreamAuthorizer, StreamDecision } from './stream-authorizer.js';
import { AuthError, callCredentials, type CallCredentials, type Caller } from './authn.js';
import { formatSpiffeId } from './spiffe.js';

export interface XdsAuthOptions {
  /**
   * Authenticate every stream of this port. When false, only streams that present a credential are
   * authenticated (XDS_AUTH=false with DISC_ENABLE_XDS_IDENTITY_CHECK): one that authenticates is
   * held to its namespace; one without a credential, or whose credential does not authenticate, is
   * served as anonymous, as the port would serve it with no credential at all.
   */
  readonly required: boolean;
  /** DISC_ENABLE_XDS_IDENTITY_CHECK. */
  readonly identityCheck: boolean;
  readonly authenticate: (credentials: CallCredentials) => Promise<Caller>;
  readonly failures: { inc(labels: { reason: string }): void };
  readonly log: Logger;
  /** The port's name in logs ("secured", "plaintext"). */
  readonly port: string;
}

/** The decision for one stream of `proxy` carrying `credentials`. */
export async function decideXdsStream(o: XdsAuthOptions, credentials: CallCredentials, proxy: Proxy, peer: string): Promise<StreamDecision> {
  const presented = credentials.peerCertificate !== undefined || credentials.authorization.length > 0;
  if (!o.required && (!o.identityCheck || !presented)) return { allowed: true };
  let caller: Caller;
  try {
    caller = await o.authenticate(credentials);
  } catch (err) {
    if (!(err instanceof AuthError)) throw err;
    if (!o.required) {
      o.log.debug({ port: o.port, peer, proxy: proxy.id, reason: err.reason }, 'xDS: a credential that does not authenticate; served as anonymous (XDS_AUTH=false)');
      return { allowed: true };
    }
    o.failures.inc({ reason: `xds_${err.reason}` });
    o.log.info({ port: o.port, peer, proxy: proxy.id, reason: err.reason }, `xDS: stream refused: ${err.message}`);
    return { allowed: false, code: err.unavailable ? grpc.status.UNAVAILABLE : err.identityError ? grpc.status.PERMISSION_DENIED : grpc.status.UNAUTHENTICATED, message: err.message };
  }
  const identity = formatSpiffeId(caller.identity);
  if (o.identityCheck && proxy.namespace !== caller.identity.namespace) {
    o.failures.inc({ reason: 'xds_namespace' });
    const message = `${identity} may act only for namespace ${caller.identity.namespace}, but node ${proxy.id} is in namespace ${JSON.stringify(proxy.namespace)}`;
    o.log.info({ port: o.port, peer, proxy: proxy.id, identity }, `xDS: stream refused: ${message}`);
    return { allowed: false, code: grpc.status.PERMISSION_DENIED, message };
  }
  return { allowed: true, identity };
}

export function xdsAuthorizer(o: XdsAuthOptions): StreamAuthorizer {
  return (call, proxy) => decideXdsStream(o, callCredentials(call), proxy, call.getPeer());
}
