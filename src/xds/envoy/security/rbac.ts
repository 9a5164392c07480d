/**
 * AuthorizationPolicy rules → Envoy RBAC policies (docs/adr/0082). One rule is one RBAC policy: its
 * permissions are the rule's operations (any of them) AND its destination conditions; its principals
 * the rule's sources (any of them) AND its source conditions. Inside a source or operation every set
 * field must match, and inside a field any value; `not…` fields must match none.
 *
 * Where an attribute cannot be evaluated (an HTTP-only one on a TCP port, one gRPC's engine lacks on a
 * proxyless server) an ALLOW rule is dropped (it allows less) and a DENY, AUDIT or CUSTOM rule loses
 * that attribute (it matches more): the public API's rule for TCP, applied to gRPC the same way.
 */
import type { Condition, Operation, Rule, Source } from '../../../gen/config/schemas.js';
import type { Permission, Policy, Principal } from '../../../gen/envoy/config/rbac/v3/rbac.js';
import type { StringMatcher } from '../../../gen/envoy/type/matcher/v3/string.js';
import type { ValueMatcher } from '../../../gen/envoy/type/matcher/v3/value.js';
import type { CidrRange } from '../../../gen/envoy/config/core/v3/address.js';
import { OPERATION_FIELDS, SOURCE_FIELDS, conditionSupport, parseConditionKey, type AttributeSupport } from '../../../model/policy/attributes.js';
import type { AuthzAction } from '../../../model/policy/index.js';
import type { Shape } from '../pack.js';
import { JWT_METADATA_NAMESPACE, JWT_PAYLOAD_KEY } from './names.js';

type Perm = Shape<Permission>;
type Prin = Shape<Principal>;
export type RbacPolicyShape = Shape<Policy>;

/** What a translation targets. */
export interface RbacContext {
  /** HTTP request attributes are visible (HCM) or not (a TCP port). */
  readonly protocol: 'http' | 'tcp';
  /** gRPC's RBAC engine (proxyless servers). */
  readonly proxyless: boolean;
  /** The mesh trust domain and its aliases: a principal written for one matches all. */
  readonly trustDomain: string;
  readonly trustDomainAliases: ReadonlyArray<string>;
}

const ANY_PERM: Perm = { any: true };
const ANY_PRIN: Prin = { any: true };
const NEVER_PRIN: Prin = { notId: { any: true } };
const NEVER_PERM: Perm = { notRule: { any: true } };

const orPerm = (l: Perm[]): Perm => (l.length === 0 ? NEVER_PERM : l.length === 1 ? l[0] : { orRules: { rules: l } });
const andPerm = (l: Perm[]): Perm => (l.length === 0 ? ANY_PERM : l.length === 1 ? l[0] : { andRules: { rules: l } });
const orPrin = (l: Prin[]): Prin => (l.length === 0 ? NEVER_PRIN : l.length === 1 ? l[0] : { orIds: { ids: l } });
const andPrin = (l: Prin[]): Prin => (l.length === 0 ? ANY_PRIN : l.length === 1 ? l[0] : { andIds: { ids: l } });

/** Escapes a literal for RE2. */
const reEscape = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** `*`, `prefix*`, `*suffix` or an exact value, as a string matcher (empty prefixes and suffixes made presence). */
export function wildcardMatcher(value: string, opts: { ignoreCase?: boolean; prefix?: string } = {}): Shape<StringMatcher> {
  const pre = opts.prefix ?? '';
  const ic = opts.ignoreCase ? { ignoreCase: true } : {};
  if (value === '*') return { safeRegex: { regex: pre ? `${reEscape(pre)}.*` : '.+' } };
  if (value.endsWith('*')) {
    const p = pre + value.slice(0, -1);
    return p === '' ? { safeRegex: { regex: '.+' } } : { prefix: p, ...ic };
  }
  if (value.startsWith('*')) return { suffix: value.slice(1), ...ic };
  return { exact: pre + value, ...ic };
}

/** An address or CIDR block as a CidrRange. */
export function cidr(value: string): Shape<CidrRange> {
  const [addr, len] = value.split('/');
  return { addressPrefix: addr, prefixLen: len !== undefined ? Number(len) : addr.includes(':') ? 128 : 32 };
}

export class RbacTranslator {
  constructor(private readonly ctx: RbacContext) {}

  /** Whether the target cannot evaluate an attribute with this support. */
  private unsupported(s: AttributeSupport): boolean {
    return (this.ctx.protocol === 'tcp' && s.httpOnly) || (this.ctx.proxyless && s.grpcUnsupported);
  }

  /**
   * One rule as an RBAC policy, or undefined when it is dropped (an ALLOW rule using attributes the
   * target cannot evaluate, or a condition that names no attribute).
   */
  rulePolicy(rule: Rule, action: AuthzAction): RbacPolicyShape | undefined {
    const strict = action === 'ALLOW';
    const principals: Prin[] = [];
    const permissions: Perm[] = [];
    // sources: any of them
    const from = rule.from ?? [];
    if (from.length > 0) {
      const alternatives: Prin[] = [];
      for (const f of from) {
        const p = this.sourcePrincipal(f.source ?? {}, strict);
        if (p === 'drop') return undefined;
        alternatives.push(p);
      }
      principals.push(orPrin(alternatives));
    }
    const to = rule.to ?? [];
    if (to.length > 0) {
      const alternatives: Perm[] = [];
      for (const t of to) {
        const p = this.operationPermission(t.operation ?? {}, strict);
        if (p === 'drop') return undefined;
        alternatives.push(p);
      }
      permissions.push(orPerm(alternatives));
    }
    for (const c of rule.when ?? []) {
      const m = this.condition(c);
      if (m === 'drop') return undefined;
      if (m === 'ignore') {
        if (strict) return undefined;
        continue;
      }
      if (m.principal) principals.push(m.principal);
      if (m.permission) permissions.push(m.permission);
    }
    return { permissions: [andPerm(permissions)], principals: [andPrin(principals)] };
  }

  private sourcePrincipal(s: Source, strict: boolean): Prin | 'drop' {
    const parts: Prin[] = [];
    for (const [field, values] of Object.entries(s) as Array<[keyof Source, string[] | undefined]>) {
      if (!values || values.length === 0) continue;
      if (this.unsupported(SOURCE_FIELDS[field])) {
        if (strict) return 'drop';
        continue;
      }
      const negated = field.startsWith('not');
      const one = (v: string): Prin => this.sourceValue(field, v);
      const any = orPrin(values.map(one));
      parts.push(negated ? { notId: any } : any);
    }
    return andPrin(parts);
  }

  private sourceValue(field: keyof Source, v: string): Prin {
    switch (field) {
      case 'principals':
      case 'notPrincipals':
        return this.peerPrincipal(v);
      case 'requestPrincipals':
      case 'notRequestPrincipals':
        return requestPrincipal(v);
      case 'namespaces':
      case 'notNamespaces':
        return v === '*' ? authenticated({ safeRegex: { regex: '.+' } }) : authenticated({ safeRegex: { regex: `spiffe://[^/]+/ns/${globRe(v)}/sa/[^/]+` } });
      case 'serviceAccounts':
      case 'notServiceAccounts': {
        const [ns, sa] = v.split('/');
        return orPrin(this.trustDomains().map((td) => authenticated({ exact: `spiffe://${td}/ns/${ns}/sa/${sa}` })));
      }
      case 'trustDomains':
      case 'notTrustDomains':
        return v === '*' ? authenticated({ safeRegex: { regex: '.+' } }) : authenticated(wildcardMatcher(`${v}/*`, { prefix: 'spiffe://' }));
      case 'ipBlocks':
      case 'notIpBlocks':
        return { directRemoteIp: cidr(v) };
      case 'remoteIpBlocks':
      case 'notRemoteIpBlocks':
        return { remoteIp: cidr(v) };
    }
  }

  private trustDomains(): string[] {
    return [...new Set([this.ctx.trustDomain, ...this.ctx.trustDomainAliases])];
  }

  /** A peer principal `<td>/ns/<ns>/sa/<sa>` (wildcards allowed), matched in the mesh's trust domain and its aliases alike. */
  private peerPrincipal(v: string): Prin {
    if (v === '*') return authenticated({ safeRegex: { regex: '.+' } });
    const slash = v.indexOf('/');
    const td = slash > 0 ? v.slice(0, slash) : '';
    const domains = this.trustDomains();
    if (!v.startsWith('*') && domains.includes(td) && domains.length > 1) {
      const rest = v.slice(slash);
      return orPrin(domains.map((d) => authenticated(wildcardMatcher(`${d}${rest}`, { prefix: 'spiffe://' }))));
    }
    return authenticated(v.startsWith('*') ? wildcardMatcher(v) : wildcardMatcher(v, { prefix: 'spiffe://' }));
  }

  private operationPermission(o: Operation, strict: boolean): Perm | 'drop' {
    const parts: Perm[] = [];
    for (const [field, values] of Object.entries(o) as Array<[keyof Operation, string[] | undefined]>) {
      if (!values || values.length === 0) continue;
      if (this.unsupported(OPERATION_FIELDS[field])) {
        if (strict) return 'drop';
        continue;
      }
      const any = orPerm(values.map((v) => this.operationValue(field, v)));
      parts.push(field.startsWith('not') ? { notRule: any } : any);
    }
    return andPerm(parts);
  }

  private operationValue(field: keyof Operation, v: string): Perm {
    switch (field) {
      case 'hosts':
      case 'notHosts':
        return { header: hostHeader(v) };
      case 'methods':
      case 'notMethods':
        return { header: { name: ':method', stringMatch: wildcardMatcher(v) } };
      case 'paths':
      case 'notPaths':
        return { urlPath: { path: v === '*' ? { safeRegex: { regex: '.*' } } : wildcardMatcher(v) } };
      case 'ports':
      case 'notPorts':
        return { destinationPort: Number(v) };
    }
  }

  /** A `when` condition: a principal or permission matcher, 'ignore' when the target cannot see it, 'drop' for an unknown key. */
  private condition(c: Condition): { principal?: Prin; permission?: Perm } | 'ignore' | 'drop' {
    const key = parseConditionKey(c.key);
    if (!key) return 'drop';
    if (this.unsupported(conditionSupport(key))) return 'ignore';
    const values = c.values ?? [];
    const notValues = c.notValues ?? [];
    const principal = (f: (v: string) => Prin): { principal: Prin } => ({
      principal: andPrin([...(values.length > 0 ? [orPrin(values.map(f))] : []), ...(notValues.length > 0 ? [{ notId: orPrin(notValues.map(f)) }] : [])]),
    });
    const permission = (f: (v: string) => Perm): { permission: Perm } => ({
      permission: andPerm([...(values.length > 0 ? [orPerm(values.map(f))] : []), ...(notValues.length > 0 ? [{ notRule: orPerm(notValues.map(f)) }] : [])]),
    });
    switch (key.attribute) {
      case 'request.headers':
        return principal((v) => ({ header: { name: key.path[0], ...(v === '*' ? { presentMatch: true } : { stringMatch: wildcardMatcher(v) }) } }));
      case 'source.ip':
        return principal((v) => ({ directRemoteIp: cidr(v) }));
      case 'remote.ip':
        return principal((v) => ({ remoteIp: cidr(v) }));
      case 'source.namespace':
        return principal((v) => this.sourceValue('namespaces', v));
      case 'source.principal':
        return principal((v) => this.peerPrincipal(v));
      case 'request.auth.principal':
        return principal((v) => requestPrincipal(v));
      case 'request.auth.audiences':
        return principal((v) => claimMatcher(['aud'], v));
      case 'request.auth.presenter':
        return principal((v) => claimMatcher(['azp'], v));
      case 'request.auth.claims':
        return principal((v) => claimMatcher(key.path, v));
      case 'destination.ip':
        return permission((v) => ({ destinationIp: cidr(v) }));
      case 'destination.port':
        return permission((v) => ({ destinationPort: Number(v) }));
      case 'connection.sni':
        return permission((v) => ({ requestedServerName: wildcardMatcher(v) }));
    }
  }
}

function authenticated(m: Shape<StringMatcher>): Prin {
  return { authenticated: { principalName: m } };
}

/** Glob (only `*`) to an RE2 fragment. */
function globRe(v: string): string {
  return v.split('*').map(reEscape).join('[^/]*');
}

/** Hosts compare without case, with or without a port. */
function hostHeader(v: string): Shape<Permission>['header'] {
  if (v === '*') return { name: ':authority', presentMatch: true };
  const body = v.startsWith('*') ? `.*${reEscape(v.slice(1))}` : v.endsWith('*') ? `${reEscape(v.slice(0, -1))}.*` : reEscape(v);
  return { name: ':authority', stringMatch: { safeRegex: { regex: `(?i)${body}(:[0-9]+)?` } } };
}

/** A verified token's payload field (path inside the payload), as jwt_authn writes it to dynamic metadata. */
function payloadMatcher(path: ReadonlyArray<string>, value: Shape<ValueMatcher>): Prin {
  return { metadata: { filter: JWT_METADATA_NAMESPACE, path: [JWT_PAYLOAD_KEY, ...path].map((key) => ({ key })), value } };
}

/** A claim equal to `v` (wildcards allowed), or a list claim containing it. */
function claimMatcher(path: ReadonlyArray<string>, v: string): Prin {
  const m = v === '*' ? { safeRegex: { regex: '.+' } } : wildcardMatcher(v);
  return orPrin([payloadMatcher(path, { stringMatch: m }), payloadMatcher(path, { listMatch: { oneOf: { stringMatch: m } } })]);
}

const present = (path: string): Prin => payloadMatcher([path], { presentMatch: true });
const claim = (path: string, m: Shape<StringMatcher>): Prin => payloadMatcher([path], { stringMatch: m });

/**
 * A request principal `<iss>/<sub>` with `*` wildcards, against the verified payload's `iss` and
 * `sub`. The issuer may contain `/`, so every split of the value at a `/` is an alternative:
 * `a/b/c` is (iss a/b and sub c) or (iss a and sub b/c); `P*` is iss starting with P, or iss equal
 * to the part of P before some `/` and sub starting with the rest; `*S` the mirror image.
 */
export function requestPrincipal(v: string): Prin {
  if (v === '*') return present('iss');
  const alternatives: Prin[] = [];
  const slashes = [...v.matchAll(/\//g)].map((m) => m.index);
  if (v.endsWith('*')) {
    const p = v.slice(0, -1);
    if (p !== '') alternatives.push(claim('iss', { prefix: p }));
    for (const i of slashes.filter((i) => i < p.length)) {
      const rest = p.slice(i + 1);
      alternatives.push(andPrin([claim('iss', { exact: p.slice(0, i) }), rest === '' ? present('sub') : claim('sub', { prefix: rest })]));
    }
    return orPrin(alternatives);
  }
  if (v.startsWith('*')) {
    const s = v.slice(1);
    if (s !== '') alternatives.push(claim('sub', { suffix: s }));
    for (const i of slashes.map((i) => i - 1).filter((i) => i >= 0)) {
      const head = s.slice(0, i);
      alternatives.push(andPrin([head === '' ? present('iss') : claim('iss', { suffix: head }), claim('sub', { exact: s.slice(i + 1) })]));
    }
    return orPrin(alternatives);
  }
  for (const i of slashes) {
    if (i === 0 || i === v.length - 1) continue;
    alternatives.push(andPrin([claim('iss', { exact: v.slice(0, i) }), claim('sub', { exact: v.slice(i + 1) })]));
  }
  return orPrin(alternatives);
}

/** `ns[<ns>]-policy[<name>]-rule[<i>]`: an RBAC policy's name says where it came from. */
export function rbacPolicyName(namespace: string, name: string, rule: number): string {
  return `ns[${namespace}]-policy[${name}]-rule[${rule}]`;
}
