/**
 * The authorization filters of one workload, in the public API's evaluation order (docs/adr/0082):
 * AUDIT (RBAC action LOG), DENY, then ALLOW (an RBAC ALLOW filter with no matching policy denies).
 * Dry-run policies become shadow rules of the filter of their action: evaluated and reported in
 * dynamic metadata and stats, never enforced. CUSTOM policies go first, to their provider's
 * ext_authz filter (./ext-authz.ts, docs/adr/0101); a CUSTOM policy whose provider cannot be had
 * (not declared, its service unknown to the proxy, `--plugins` without ext_authz) joins the DENY
 * filter: what it matches is refused rather than let through (fail closed).
 */
import { RBAC_Action, type RBAC as RbacRules } from '../../../gen/envoy/config/rbac/v3/rbac.js';
import { RBAC as HttpRbac } from '../../../gen/envoy/extensions/filters/http/rbac/v3/rbac.js';
import { RBAC as NetworkRbac } from '../../../gen/envoy/extensions/filters/network/rbac/v3/rbac.js';
import type { AuthzPolicy } from '../../../model/policy/index.js';
import { pack, type Shape } from '../pack.js';
import { DRY_RUN_ALLOW_PREFIX, DRY_RUN_DENY_PREFIX, SecurityFilters } from './names.js';
import { httpExtAuthzFilters, networkExtAuthzFilters, type CustomGroup, type ExtAuthzTarget } from './ext-authz.js';
import { RbacTranslator, rbacPolicyName, type RbacContext, type RbacPolicyShape } from './rbac.js';

export type FilterShape = { readonly name: string; readonly typedConfig: ReturnType<typeof pack> };

export interface AuthzInput {
  readonly policies: ReadonlyArray<AuthzPolicy>;
  /** CUSTOM providers resolved for this proxy, by name; a policy naming another fails closed. */
  readonly extAuthz?: ReadonlyMap<string, ExtAuthzTarget>;
  readonly ctx: RbacContext;
  /** Stat prefix of network filters (they need one). */
  readonly statPrefix: string;
}

type Policies = Record<string, RbacPolicyShape>;

const NO_PROVIDERS: ReadonlyMap<string, ExtAuthzTarget> = new Map();

/** The RBAC policies of a set of AuthorizationPolicies (rules dropped where they cannot apply). */
function policiesOf(list: ReadonlyArray<AuthzPolicy>, t: RbacTranslator, as?: AuthzPolicy['action']): Policies {
  const out: Policies = {};
  for (const p of list) {
    p.rules.forEach((rule, i) => {
      const policy = t.rulePolicy(rule, as ?? p.action);
      if (policy) out[rbacPolicyName(p.namespace, p.name, i)] = policy;
    });
  }
  return out;
}

/** What the policies of one workload come to for one kind of chain, before packing. */
interface Plan {
  readonly custom: ReadonlyArray<CustomGroup>;
  readonly audit: Policies;
  readonly deny: Policies;
  readonly allow: Policies | undefined;
  readonly dryDeny: Policies;
  readonly dryAllow: Policies | undefined;
}

function plan(policies: ReadonlyArray<AuthzPolicy>, ctx: RbacContext, providers: ReadonlyMap<string, ExtAuthzTarget>): Plan {
  const t = new RbacTranslator(ctx);
  const enforced = policies.filter((p) => !p.dryRun);
  const dry = policies.filter((p) => p.dryRun);
  const byAction = (a: AuthzPolicy['action'], list: ReadonlyArray<AuthzPolicy>): AuthzPolicy[] => list.filter((p) => p.action === a);
  const allow = byAction('ALLOW', enforced);
  const dryAllow = byAction('ALLOW', dry);
  // CUSTOM: to the provider's ext_authz when it can be had, else it fails closed (logged by the model)
  const groups = new Map<string, AuthzPolicy[]>();
  const failClosed: AuthzPolicy[] = [];
  for (const p of byAction('CUSTOM', enforced)) {
    const target = p.provider !== undefined ? providers.get(p.provider) : undefined;
    if (!target) failClosed.push(p);
    // an HTTP provider cannot check a TCP connection: the policy does not apply there (public API)
    else if (ctx.protocol === 'tcp' && target.kind === 'http') continue;
    else groups.set(p.provider!, [...(groups.get(p.provider!) ?? []), p]);
  }
  const custom = [...groups].map(([name, list]) => ({ target: providers.get(name)!, policies: policiesOf(list, t, 'CUSTOM') }));
  return {
    custom: custom.filter((g) => Object.keys(g.policies).length > 0),
    audit: policiesOf(byAction('AUDIT', enforced), t),
    deny: { ...policiesOf(byAction('DENY', enforced), t), ...policiesOf(failClosed, t, 'DENY') },
    allow: allow.length > 0 ? policiesOf(allow, t) : undefined,
    dryDeny: policiesOf(byAction('DENY', dry), t),
    dryAllow: dryAllow.length > 0 ? policiesOf(dryAllow, t) : undefined,
  };
}

const empty = (p: Policies | undefined): boolean => p === undefined || Object.keys(p).length === 0;

type RbacFilterConfig = { rules?: Shape<RbacRules>; shadowRules?: Shape<RbacRules>; shadowRulesStatPrefix?: string };

/** The enforced and shadow rules of one RBAC filter; undefined when it would do nothing. */
function rbacConfig(action: RBAC_Action, rules: Policies | undefined, shadow: Policies | undefined, shadowPrefix: string): RbacFilterConfig | undefined {
  // DENY and LOG filters without policies never act; an ALLOW filter with an empty set denies all
  const enforce = action === RBAC_Action.ALLOW ? rules !== undefined : !empty(rules);
  const shadowed = action === RBAC_Action.ALLOW ? shadow !== undefined : !empty(shadow);
  if (!enforce && !shadowed) return undefined;
  return {
    ...(enforce ? { rules: { action, policies: rules } } : {}),
    ...(shadowed ? { shadowRules: { action, policies: shadow }, shadowRulesStatPrefix: shadowPrefix } : {}),
  };
}

function filters(p: Plan, make: (suffix: string, config: RbacFilterConfig) => FilterShape, custom: (groups: ReadonlyArray<CustomGroup>) => FilterShape[]): FilterShape[] {
  const out: FilterShape[] = custom(p.custom);
  const audit = rbacConfig(RBAC_Action.LOG, p.audit, undefined, '');
  if (audit) out.push(make('audit', audit));
  const deny = rbacConfig(RBAC_Action.DENY, p.deny, p.dryDeny, DRY_RUN_DENY_PREFIX);
  if (deny) out.push(make('deny', deny));
  const allow = rbacConfig(RBAC_Action.ALLOW, p.allow, p.dryAllow, DRY_RUN_ALLOW_PREFIX);
  if (allow) out.push(make('allow', allow));
  return out;
}

/** The HTTP authorization filters of a workload's HTTP chain, to go first in the HTTP filter list. */
export function httpAuthzFilters(input: AuthzInput): FilterShape[] {
  if (input.policies.length === 0) return [];
  return filters(
    plan(input.policies, { ...input.ctx, protocol: 'http' }, input.extAuthz ?? NO_PROVIDERS),
    (suffix, config) => ({
      name: `${SecurityFilters.rbacHttp}.${suffix}`,
      typedConfig: pack('envoy.extensions.filters.http.rbac.v3.RBAC', HttpRbac, config),
    }),
    httpExtAuthzFilters,
  );
}

/** The network authorization filters of a workload's TCP chain, to go before tcp_proxy. */
export function networkAuthzFilters(input: AuthzInput): FilterShape[] {
  if (input.policies.length === 0) return [];
  return filters(
    plan(input.policies, { ...input.ctx, protocol: 'tcp' }, input.extAuthz ?? NO_PROVIDERS),
    (suffix, config) => ({
      name: `${SecurityFilters.rbacNetwork}.${suffix}`,
      typedConfig: pack('envoy.extensions.filters.network.rbac.v3.RBAC', NetworkRbac, { ...config, statPrefix: input.statPrefix }),
    }),
    (groups) => networkExtAuthzFilters(groups, input.statPrefix),
  );
}
