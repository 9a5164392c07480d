/**
 * The JWT providers of one workload (docs/adr/0100): its RequestAuthentications' rules, each with
 * the keys the proxy gets.
 *
 * - Inline `jwks` is used as written (the unverifiable key set when it is not a usable one).
 * - A `jwksUri` gets the key set meshd's resolver fetched (read through `push.jwks`, which records
 *   the dependency, so a changed key set rebuilds exactly the listeners that inlined it).
 * - With DISC_JWT_ENABLE_REMOTE_JWKS, a `jwksUri` on a mesh service the proxy has an outbound
 *   cluster for is left to the proxy (remote_jwks through that cluster).
 * - Anything else — a fetch that failed, one still running, a URI in the mesh that this proxy has
 *   no cluster for, a rule with neither — gets the unverifiable key set: that issuer's tokens are
 *   rejected (fail closed), the configuration stays one Envoy accepts, and requests without a token
 *   still reach authorization.
 */
import type { Proxy } from '../../model/proxy.js';
import type { PushContext } from '../../model/push-context.js';
import { NO_AUTHN, type JwtRuleRef, type WorkloadAuthn } from '../../model/policy/index.js';
import { UNVERIFIABLE_JWKS } from '../../model/policy/jwks.js';
import { outboundClusterName } from '../envoy/names.js';
import type { JwtProviderInput, ProviderKeys } from '../envoy/security/jwt.js';
import type { GeneratorSettings } from './types.js';

export interface WorkloadJwt {
  readonly providers: ReadonlyArray<JwtProviderInput>;
  /** Equal keys, equal providers: the policies' identities and the versions of the key sets read. */
  readonly key: string;
}

const NONE: WorkloadJwt = Object.freeze({ providers: [], key: '' });

export function workloadJwt(proxy: Proxy, push: PushContext, settings: GeneratorSettings): WorkloadJwt {
  const authn: WorkloadAuthn = settings.authn ? push.policies.authnFor(proxy) : NO_AUTHN;
  if (authn.rules.length === 0) return NONE;
  const versions: string[] = [];
  const providers = authn.rules.map((ref): JwtProviderInput => {
    const keys = keysOf(ref, proxy, push, settings, versions);
    return { name: `${ref.namespace}/${ref.name}/${ref.index}`, rule: ref.rule, keys };
  });
  return { providers, key: `${authn.key}|${versions.join(',')}` };
}

function keysOf(ref: JwtRuleRef, proxy: Proxy, push: PushContext, settings: GeneratorSettings, versions: string[]): ProviderKeys {
  // inline key sets were checked once when the snapshot indexed the policy
  if (ref.rule.jwks !== undefined) return { kind: 'inline', jwks: ref.usableJwks ?? UNVERIFIABLE_JWKS };
  const uri = ref.rule.jwksUri;
  if (!uri) return { kind: 'inline', jwks: UNVERIFIABLE_JWKS };
  if (settings.remoteJwks) {
    const target = push.jwksInMesh(uri);
    if (target) {
      const visible = push.visibleServices(proxy).some((s) => s.hostname === target.host && s.ports.some((p) => p.port === target.port));
      versions.push(`remote:${visible}`);
      return visible ? { kind: 'remote', uri, cluster: outboundClusterName(target.port, '', target.host) } : { kind: 'inline', jwks: UNVERIFIABLE_JWKS };
    }
  }
  const entry = push.jwks(uri);
  versions.push(entry ? String(entry.version) : 'pending');
  return { kind: 'inline', jwks: entry?.state === 'keys' ? entry.jwks : UNVERIFIABLE_JWKS };
}
