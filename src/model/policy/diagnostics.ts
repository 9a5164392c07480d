/**
 * What the translation of a policy leaves out or changes, said once per policy version (the model
 * logs each diagnostic the first snapshot it appears in): rules that cannot apply to TCP ports and
 * what happens to them, CUSTOM actions and RequestAuthentications this mesh does not translate yet,
 * targets that select nothing here. The generators apply the same rules silently.
 */
import type { ConfigObject } from '../../config/types.js';
import { unknownConditionKeys, unsupportedAttributes } from './attributes.js';
import type { AuthzPolicy } from './types.js';

export interface PolicyDiagnostic {
  readonly kind: 'AuthorizationPolicy' | 'RequestAuthentication' | 'DestinationRule' | 'Gateway';
  readonly namespace: string;
  readonly name: string;
  /** What happens, in a sentence naming the rule or field. */
  readonly message: string;
}

/** What a CUSTOM policy does until external authorization is translated (docs/adr/0082). */
export const CUSTOM_NOT_SUPPORTED = 'action CUSTOM (external authorization) is not supported yet: requests its rules match are denied';
/** What a RequestAuthentication does until JWT verification is translated (docs/adr/0082). */
export const REQUEST_AUTHN_NOT_SUPPORTED =
  'RequestAuthentication is not supported yet: tokens are not verified, so requestPrincipals and request.auth.* in AuthorizationPolicies match no request';

interface Targeted {
  readonly targetRef?: { readonly group?: string; readonly kind?: string; readonly name?: string };
  readonly targetRefs?: ReadonlyArray<{ readonly group?: string; readonly kind?: string; readonly name?: string }>;
}

function waypointTargets(spec: Targeted): string[] {
  const targets = [...(spec.targetRefs ?? []), ...(spec.targetRef ? [spec.targetRef] : [])];
  return targets
    .filter((t) => t.group !== 'gateway.networking.k8s.io')
    .map((t) => `targetRef ${t.kind ?? ''}/${t.name ?? ''} binds the policy to waypoints, which this mesh does not run: it applies to no workload`);
}

export function policyDiagnostics(policies: ReadonlyArray<AuthzPolicy>, requestAuthn: Iterable<ConfigObject<Targeted>>): PolicyDiagnostic[] {
  const out: PolicyDiagnostic[] = [];
  for (const p of policies) {
    const say = (message: string): void => void out.push({ kind: 'AuthorizationPolicy', namespace: p.namespace, name: p.name, message });
    if (p.action === 'CUSTOM') say(CUSTOM_NOT_SUPPORTED);
    for (const m of waypointTargets(p.source.spec)) say(m);
    p.rules.forEach((rule, i) => {
      const unknown = unknownConditionKeys(rule);
      if (unknown.length > 0) say(`rule ${i}: condition key${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')} name${unknown.length > 1 ? '' : 's'} no attribute: the rule is dropped`);
      const tcp = unsupportedAttributes(rule, 'tcp');
      if (tcp.length > 0) {
        say(
          p.action === 'ALLOW'
            ? `rule ${i} uses HTTP-only attributes (${tcp.join(', ')}): on TCP ports the rule is dropped, so it allows nothing there`
            : `rule ${i} uses HTTP-only attributes (${tcp.join(', ')}): on TCP ports they are ignored, so the rule matches more there`,
        );
      }
    });
  }
  for (const ra of requestAuthn) {
    const say = (message: string): void => void out.push({ kind: 'RequestAuthentication', namespace: ra.meta.namespace, name: ra.meta.name, message });
    say(REQUEST_AUTHN_NOT_SUPPORTED);
    for (const m of waypointTargets(ra.spec)) say(m);
  }
  return out;
}

/** What a DestinationRule's `credentialName` does for proxies other than gateways (docs/adr/0105). */
export const CREDENTIAL_GATEWAYS_ONLY = 'is served over SDS to gateways only (Secrets of the gateway\'s namespace): a sidecar that uses this rule waits for that secret and its TLS does not come up';
/** What a `credentialName` of another namespace does (docs/adr/0105). */
export const CREDENTIAL_OTHER_NAMESPACE = 'names a Secret of another namespace, which is never served to a gateway: the server gets no filter chain';

interface TlsHolder {
  readonly tls?: { readonly credentialName?: string; readonly credentialNames?: ReadonlyArray<string> };
}
interface DestinationRuleLike {
  readonly trafficPolicy?: TlsHolder & { readonly portLevelSettings?: ReadonlyArray<TlsHolder> };
  readonly subsets?: ReadonlyArray<{ readonly name?: string; readonly trafficPolicy?: TlsHolder & { readonly portLevelSettings?: ReadonlyArray<TlsHolder> } }>;
}
interface GatewayLike {
  readonly servers?: ReadonlyArray<TlsHolder>;
}

const credentialsOf = (h: TlsHolder | undefined): string[] => [...(h?.tls?.credentialName ? [h.tls.credentialName] : []), ...(h?.tls?.credentialNames ?? [])];

/**
 * What `credentialName`s do not do: a DestinationRule's is served to gateways only; a Gateway's that
 * names another namespace (`ns/name`, as gateway-api certificate references are converted) is not
 * served at all.
 */
export function credentialDiagnostics(rules: Iterable<ConfigObject<DestinationRuleLike>>, gateways: Iterable<ConfigObject<GatewayLike>>): PolicyDiagnostic[] {
  const out: PolicyDiagnostic[] = [];
  for (const r of rules) {
    const policies = [r.spec.trafficPolicy, ...(r.spec.subsets ?? []).map((s) => s.trafficPolicy)];
    const names = new Set(policies.flatMap((p) => [...credentialsOf(p), ...(p?.portLevelSettings ?? []).flatMap(credentialsOf)]));
    for (const n of names) out.push({ kind: 'DestinationRule', namespace: r.meta.namespace, name: r.meta.name, message: `tls.credentialName "${n}" ${CREDENTIAL_GATEWAYS_ONLY}` });
  }
  for (const g of gateways) {
    const names = new Set((g.spec.servers ?? []).flatMap(credentialsOf));
    for (const n of names) if (n.includes('/')) out.push({ kind: 'Gateway', namespace: g.meta.namespace, name: g.meta.name, message: `tls.credentialName "${n}" ${CREDENTIAL_OTHER_NAMESPACE}` });
  }
  return out;
}

/** One line per diagnostic: `AuthorizationPolicy ns/name: message`. */
export function diagnosticText(d: PolicyDiagnostic): string {
  return `${d.kind} ${d.namespace}/${d.name}: ${d.message}`;
}
