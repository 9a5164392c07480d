/**
 * Who may have which credential over SDS (docs/adr/0105, 0152): gateways (router proxies) and
 * sidecars, only the Secrets of their own namespace (the SDS generator serves a sidecar only those
 * its workload-selecting DestinationRules name) (a stream's namespace is its authenticated identity's
 * under XDS_AUTH with the identity check). Every refused name is counted in
 * disc_sds_certificate_errors_total and logged (names only, rate-limited).
 */
import type { Logger } from 'pino';
import { parseCredentialName } from '../model/credentials.js';
import type { Proxy } from '../model/proxy.js';
import { LogRateLimit } from '../log/rate-limit.js';
import type { ResourceAccess } from './stream-authorizer.js';

/** The SDS type URL (the transport's TypeUrl.Secret, spelled here so this layer needs no xds import). */
export const SECRET_TYPE_URL = 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret';

const NONE: ReadonlySet<string> = new Set();

/** Why `proxy` may not have the SDS resource `name`; undefined when it may. */
export function credentialRefusal(proxy: Pick<Proxy, 'type' | 'namespace'>, name: string): string | undefined {
  if (proxy.type !== 'router' && proxy.type !== 'sidecar') return `only gateways and sidecars are served credentials over SDS; this is a ${proxy.type}`;
  const ref = parseCredentialName(name);
  if (!ref) return 'not a credential name (want kubernetes://[<namespace>/]<name>[-cacert])';
  const who = proxy.type === 'router' ? 'gateway' : 'sidecar';
  if (ref.namespace !== undefined && ref.namespace !== proxy.namespace) return `the Secret is in namespace ${ref.namespace}, the ${who} in ${proxy.namespace}`;
  return undefined;
}

/** The daemon's ResourceAccess: credential rules for SDS, everything else allowed. */
export function credentialAccess(counter: { inc(): void }, log: Logger): ResourceAccess {
  const lines = new LogRateLimit(10, 20);
  return (proxy, typeUrl, names) => {
    if (typeUrl !== SECRET_TYPE_URL) return NONE;
    let refused: Set<string> | undefined;
    for (const n of names) {
      const why = credentialRefusal(proxy, n);
      if (why === undefined) continue;
      (refused ??= new Set()).add(n);
      counter.inc();
      const held = lines.take();
      if (held !== undefined) log.warn({ proxy: proxy.id, resource: n, reason: why, ...(held > 0 ? { suppressed: held } : {}) }, `SDS: refused ${n} for ${proxy.id}: ${why}`);
    }
    return refused ?? NONE;
  };
}
