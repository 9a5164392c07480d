/**
 * What the translation of a policy leaves out or changes, said once per policy version (the model
 * logs each diagnostic the first snapshot it appears in): rules that cannot apply to TCP ports and
 * what happens to them, CUSTOM actions and RequestAuthentications this mesh does not translate yet,
 * targets that select nothing here. The generators apply the same rules silently.
 */
import type { ConfigObject } from '../../config/types.js';
import type { JWTRule, Rule } from '../../gen/config/schemas.js';
import type { MeshSettings } from '../mesh-settings.js';
import { parseConditionKey, unknownConditionKeys, unsupportedAttributes } from './attributes.js';
import { jwksProblem } from './jwks.js';
import type { AuthzPolicy } from './types.js';

export interface PolicyDiagnostic {
  readonly kind: 'AuthorizationPolicy' | 'RequestAuthentication' | 'DestinationRule' | 'Gateway';
  readonly namespace: string;
  readonly name: string;
  /** What happens, in a sentence naming the rule or field. */
  readonly message: string;
  /**
   * `info` for what only matters to proxyless gRPC workloads, which the snapshot cannot tell
   * exist: said once per policy like the rest, without a warning's weight. Default `warn`.
   */
  readonly level?: 'info';
}

/** What a CUSTOM policy naming no known provider does (docs/adr/0101). */
export function customProviderMissing(name: string | undefined): string {
  return `provider "${name ?? ''}" is not among the mesh config's extensionProviders: requests its rules match are denied (fail closed) on the workloads it selects`;
}

/** A JWT rule whose key set cannot be had (docs/adr/0100). */
export const JWT_RULE_FAILS_CLOSED = 'tokens of this issuer are rejected (fail closed); requests without a token still reach authorization';

interface Targeted {
  readonly jwtRules?: ReadonlyArray<JWTRule>;
  readonly targetRef?: { readonly group?: string; readonly kind?: string; readonly name?: string };
  readonly targetRefs?: ReadonlyArray<{ readonly group?: string; readonly kind?: string; readonly name?: string }>;
}

function waypointTargets(spec: Targeted): string[] {
  const targets = [...(spec.targetRefs ?? []), ...(spec.targetRef ? [spec.targetRef] : [])];
  return targets
    .filter((t) => t.group !== 'gateway.networking.k8s.io')
    .map((t) => `targetRef ${t.kind ?? ''}/${t.name ?? ''} binds the policy to waypoints, which this mesh does not run: it applies to no workload`);
}

/**
 * Request principals (`<iss>/<sub>`) that can match no token: an exact value with no `/` between
 * an issuer and a subject.
 */
export function malformedRequestPrincipals(rule: Rule): string[] {
  const bad = (v: string): boolean => v !== '*' && !v.startsWith('*') && !v.endsWith('*') && !/.\/./.test(v);
  const out: string[] = [];
  for (const f of rule.from ?? []) {
    for (const v of [...(f.source?.requestPrincipals ?? []), ...(f.source?.notRequestPrincipals ?? [])]) if (bad(v)) out.push(v);
  }
  for (const c of rule.when ?? []) {
    if (parseConditionKey(c.key)?.attribute !== 'request.auth.principal') continue;
    for (const v of [...(c.values ?? []), ...(c.notValues ?? [])]) if (bad(v)) out.push(v);
  }
  return out;
}

/** What `mesh.io/dry-run` does to an AUDIT or CUSTOM policy: nothing is generated for it. */
export const DRY_RUN_IGNORED = (action: string): string =>
  `mesh.io/dry-run applies to ALLOW and DENY policies only: this ${action} policy is neither enforced nor evaluated in dry run on any workload`;

/**
 * What proxyless gRPC servers (gRPC's RBAC engine, no ext_authz) make of a policy, in one line per
 * policy: CUSTOM fails closed; rules using attributes gRPC cannot evaluate are dropped (ALLOW: it
 * allows less) or lose those attributes (DENY: it matches more). Undefined when gRPC servers
 * apply the policy as written or never act on it (AUDIT, dry run).
 */
export function grpcDiagnostic(p: AuthzPolicy): string | undefined {
  // gRPC ignores LOG filters and shadow rules (docs/adr/0103): nothing of these reaches a decision
  if (p.dryRun || p.action === 'AUDIT') return undefined;
  if (p.action === 'CUSTOM') {
    return `on proxyless gRPC servers, which cannot call an external authorizer, requests its rules match are denied (fail closed)`;
  }
  const parts: string[] = [];
  p.rules.forEach((rule, i) => {
    const attrs = unsupportedAttributes(rule, 'grpc');
    if (attrs.length > 0) parts.push(`rule ${i} (${attrs.join(', ')})`);
  });
  if (parts.length === 0) return undefined;
  const what = p.action === 'ALLOW' ? 'is dropped there, so it allows nothing' : 'ignores those attributes there, so it matches more';
  return `on proxyless gRPC servers, whose authorization cannot evaluate some of its attributes, ${parts.join(', ')} ${what}`;
}

/** Whether a service `[<namespace>/]<hostname>` with that port exists in the snapshot. */
export type ServiceExists = (service: string, port: number) => boolean;

export function policyDiagnostics(policies: ReadonlyArray<AuthzPolicy>, requestAuthn: Iterable<ConfigObject<Targeted>>, mesh?: MeshSettings, serviceExists?: ServiceExists): PolicyDiagnostic[] {
  const out: PolicyDiagnostic[] = [];
  const providers = new Map((mesh?.extensionProviders ?? []).map((p) => [p.name, p]));
  for (const p of policies) {
    const say = (message: string): void => void out.push({ kind: 'AuthorizationPolicy', namespace: p.namespace, name: p.name, message });
    const provider = p.action === 'CUSTOM' && p.provider !== undefined ? providers.get(p.provider) : undefined;
    if (p.action === 'CUSTOM' && !provider) say(customProviderMissing(p.provider));
    const spec = provider?.envoyExtAuthzHttp ?? provider?.envoyExtAuthzGrpc;
    if (spec && serviceExists && !serviceExists(spec.service, spec.port)) {
      say(`provider "${provider!.name}": service ${spec.service} port ${spec.port} is not in the mesh: requests its rules match are denied (fail closed) on the workloads it selects`);
    }
    if (provider?.envoyExtAuthzHttp) say(`provider "${provider.name}" is an HTTP authorizer, which cannot check TCP connections: on TCP ports the policy does not apply`);
    for (const m of waypointTargets(p.source.spec)) say(m);
    if (p.dryRun && (p.action === 'AUDIT' || p.action === 'CUSTOM')) say(DRY_RUN_IGNORED(p.action));
    const grpc = grpcDiagnostic(p);
    if (grpc) out.push({ kind: 'AuthorizationPolicy', namespace: p.namespace, name: p.name, message: grpc, level: 'info' });
    p.rules.forEach((rule, i) => {
      const unknown = unknownConditionKeys(rule);
      if (unknown.length > 0) say(`rule ${i}: condition key${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')} name${unknown.length > 1 ? '' : 's'} no attribute: the rule is dropped`);
      const malformed = malformedRequestPrincipals(rule);
      if (malformed.length > 0) say(`rule ${i}: request principal${malformed.length > 1 ? 's' : ''} ${malformed.map((v) => JSON.stringify(v)).join(', ')} ${malformed.length > 1 ? 'are' : 'is'} not <issuer>/<subject>: ${malformed.length > 1 ? 'they match' : 'it matches'} no request`);
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
    for (const m of waypointTargets(ra.spec)) say(m);
    (ra.spec.jwtRules ?? []).forEach((r, i) => {
      if (r.jwks !== undefined) {
        const problem = jwksProblem(r.jwks);
        if (problem) say(`jwtRules[${i}] (issuer ${r.issuer}): the inline jwks is not a usable key set (${problem}): ${JWT_RULE_FAILS_CLOSED}`);
      } else if (!r.jwksUri) {
        say(`jwtRules[${i}] (issuer ${r.issuer}) has neither jwks nor jwksUri, and OpenID discovery from the issuer is not supported: ${JWT_RULE_FAILS_CLOSED}`);
      }
    });
  }
  return out;
}

/** What a DestinationRule's `credentialName` does for sidecars when the rule has no workloadSelector (docs/adr/0152). */
export const CREDENTIAL_GATEWAYS_ONLY = 'applies at gateways only: the rule has no workloadSelector, so sidecars use its certificate files';
/** What a `credentialName` of another namespace does in a DestinationRule (docs/adr/0152). */
export const CREDENTIAL_RULE_OTHER_NAMESPACE = 'names a Secret of another namespace than the workloads the rule selects, which is never served to them: they use the rule\'s certificate files';
/** What a `credentialName` of another namespace does (docs/adr/0105). */
export const CREDENTIAL_OTHER_NAMESPACE = 'names a Secret of another namespace, which is never served to a gateway: the server gets no filter chain';

interface TlsHolder {
  readonly tls?: { readonly credentialName?: string; readonly credentialNames?: ReadonlyArray<string> };
}
interface DestinationRuleLike {
  readonly workloadSelector?: { readonly matchLabels?: Readonly<Record<string, string>> };
  readonly trafficPolicy?: TlsHolder & { readonly portLevelSettings?: ReadonlyArray<TlsHolder> };
  readonly subsets?: ReadonlyArray<{ readonly name?: string; readonly trafficPolicy?: TlsHolder & { readonly portLevelSettings?: ReadonlyArray<TlsHolder> } }>;
}
interface GatewayLike {
  readonly servers?: ReadonlyArray<TlsHolder>;
}

const credentialsOf = (h: TlsHolder | undefined): string[] => [...(h?.tls?.credentialName ? [h.tls.credentialName] : []), ...(h?.tls?.credentialNames ?? [])];

/**
 * What `credentialName`s do not do: a DestinationRule's reaches sidecars only through a
 * workloadSelector, and one naming `ns/name` (another namespace for some proxy) is never served; a Gateway's that
 * names another namespace (`ns/name`, as gateway-api certificate references are converted) is not
 * served at all.
 */
export function credentialDiagnostics(rules: Iterable<ConfigObject<DestinationRuleLike>>, gateways: Iterable<ConfigObject<GatewayLike>>): PolicyDiagnostic[] {
  const out: PolicyDiagnostic[] = [];
  for (const r of rules) {
    const policies = [r.spec.trafficPolicy, ...(r.spec.subsets ?? []).map((s) => s.trafficPolicy)];
    const names = new Set(policies.flatMap((p) => [...credentialsOf(p), ...(p?.portLevelSettings ?? []).flatMap(credentialsOf)]));
    const selects = Object.keys(r.spec.workloadSelector?.matchLabels ?? {}).length > 0;
    for (const n of names) {
      const slash = n.indexOf('/');
      // a rule with a selector selects workloads of its own namespace: their Secrets are of that namespace
      if (selects && slash >= 0 && n.slice(0, slash) !== r.meta.namespace) {
        out.push({ kind: 'DestinationRule', namespace: r.meta.namespace, name: r.meta.name, message: `tls.credentialName "${n}" ${CREDENTIAL_RULE_OTHER_NAMESPACE}` });
      } else if (!selects) {
        out.push({ kind: 'DestinationRule', namespace: r.meta.namespace, name: r.meta.name, message: `tls.credentialName "${n}" ${CREDENTIAL_GATEWAYS_ONLY}` });
      }
    }
  }
  for (const g of gateways) {
    const names = new Set((g.spec.servers ?? []).flatMap(credentialsOf));
    for (const n of names) if (n.includes('/')) out.push({ kind: 'Gateway', namespace: g.meta.namespace, name: g.meta.name, message: `tls.credentialName "${n}" ${CREDENTIAL_OTHER_NAMESPACE}` });
  }
  return out;
}

interface ModeHolder {
  readonly tls?: { readonly mode?: string };
}
interface DestinationRuleModes {
  readonly trafficPolicy?: ModeHolder & { readonly portLevelSettings?: ReadonlyArray<ModeHolder> };
  readonly subsets?: ReadonlyArray<{ readonly trafficPolicy?: ModeHolder & { readonly portLevelSettings?: ReadonlyArray<ModeHolder> } }>;
}

/** What proxyless gRPC clients make of a DestinationRule's SIMPLE or MUTUAL TLS (docs/adr/0154). */
export const PROXYLESS_DR_TLS =
  'proxyless gRPC clients cannot load certificate files or Secrets: toward this destination they verify the server against the mesh roots and subjectAltNames and present no client certificate, so servers with certificates of another CA are refused';

/** One line per DestinationRule whose TLS proxyless gRPC clients apply in their own form. */
export function proxylessTlsDiagnostics(rules: Iterable<ConfigObject<DestinationRuleModes>>): PolicyDiagnostic[] {
  const out: PolicyDiagnostic[] = [];
  for (const r of rules) {
    const policies = [r.spec.trafficPolicy, ...(r.spec.subsets ?? []).map((s) => s.trafficPolicy)];
    const modes = new Set(policies.flatMap((p) => [p?.tls?.mode, ...(p?.portLevelSettings ?? []).map((l) => l.tls?.mode)]).filter((m) => m === 'SIMPLE' || m === 'MUTUAL'));
    if (modes.size > 0) out.push({ kind: 'DestinationRule', namespace: r.meta.namespace, name: r.meta.name, message: `tls.mode ${[...modes].sort().join(' and ')}: ${PROXYLESS_DR_TLS}`, level: 'info' });
  }
  return out;
}

/** One line per diagnostic: `AuthorizationPolicy ns/name: message`. */
export function diagnosticText(d: PolicyDiagnostic): string {
  return `${d.kind} ${d.namespace}/${d.name}: ${d.message}`;
}
