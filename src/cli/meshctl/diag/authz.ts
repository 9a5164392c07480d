/**
 * The authorization a proxy enforces, read from its own configuration (a config dump): the RBAC
 * filters the generators put on each listener's filter chains (docs/adr/0082), per chain, in the
 * order the proxy evaluates them (AUDIT, DENY, ALLOW), with the AuthorizationPolicy each RBAC policy
 * came from (`ns[<ns>]-policy[<name>]-rule[<i>]`) and a readable summary of what its rules match.
 * Plain data: `meshctl x authz check` formats it.
 */
import type { ConfigDump } from './config-dump.js';

type Json = Record<string, unknown>;

const obj = (v: unknown): Json => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Json) : {});
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const str = (v: unknown): string => (typeof v === 'string' ? v : typeof v === 'number' ? String(v) : '');

export type AuthzAction = 'ALLOW' | 'DENY' | 'AUDIT';

export interface AuthzRow {
  readonly listener: string;
  /** The filter chain (its name, else its match), `default` for a listener's default chain. */
  readonly chain: string;
  /** HTTP (an HTTP RBAC filter inside the connection manager) or TCP (a network RBAC filter). */
  readonly protocol: 'HTTP' | 'TCP';
  readonly action: AuthzAction;
  /** Enforced rules, or shadow rules of a dry-run policy (evaluated, never enforced). */
  readonly mode: 'enforced' | 'dry-run';
  /** `<namespace>/<name>` of the AuthorizationPolicy, or empty for an ALLOW filter without any (denies all). */
  readonly policy: string;
  /** Rule indices of that policy present on the chain. */
  readonly rules: readonly number[];
  /** What the rules match, one line per rule. */
  readonly matches: readonly string[];
}

const POLICY_NAME = /^ns\[([^\]]*)\]-policy\[([^\]]*)\]-rule\[(\d+)\]$/;

/** The RBAC action enum as proto JSON writes it (ALLOW, the zero value, is omitted). */
function actionOf(rules: Json): AuthzAction {
  const a = str(rules.action) || 'ALLOW';
  return a === 'LOG' ? 'AUDIT' : a === 'DENY' ? 'DENY' : 'ALLOW';
}

function matcherText(m: Json): string {
  if (m.exact !== undefined) return str(m.exact);
  if (m.prefix !== undefined) return `${str(m.prefix)}*`;
  if (m.suffix !== undefined) return `*${str(m.suffix)}`;
  if (m.contains !== undefined) return `*${str(m.contains)}*`;
  if (m.safeRegex !== undefined) return str(obj(m.safeRegex).regex) === '.+' ? '*' : `~${str(obj(m.safeRegex).regex)}`;
  return '?';
}

const cidrText = (c: Json): string => `${str(c.addressPrefix)}/${str(c.prefixLen) || '32'}`;

function headerText(h: Json): string {
  const name = str(h.name);
  const value = h.stringMatch !== undefined ? matcherText(obj(h.stringMatch)) : h.presentMatch !== undefined ? '*' : h.exactMatch !== undefined ? str(h.exactMatch) : '?';
  if (h.invertMatch === true) return `${name === ':method' ? 'method' : name === ':authority' ? 'host' : `header ${name}`} not ${value}`;
  if (name === ':method') return `method ${value}`;
  if (name === ':authority') return `host ${value}`;
  return `header ${name}=${value}`;
}

const join = (parts: string[], op: string): string => (parts.length === 1 ? parts[0] : `(${parts.join(` ${op} `)})`);

/** One RBAC Permission as text. */
export function permissionText(p: Json): string {
  if (p.any === true) return 'any';
  if (p.andRules !== undefined) return join(arr(obj(p.andRules).rules).map((x) => permissionText(obj(x))), 'and');
  if (p.orRules !== undefined) return join(arr(obj(p.orRules).rules).map((x) => permissionText(obj(x))), 'or');
  if (p.notRule !== undefined) {
    const inner = obj(p.notRule);
    return inner.any === true ? 'nothing' : `not ${permissionText(inner)}`;
  }
  if (p.header !== undefined) return headerText(obj(p.header));
  if (p.urlPath !== undefined) return `path ${matcherText(obj(obj(p.urlPath).path))}`;
  if (p.destinationPort !== undefined) return `port ${str(p.destinationPort)}`;
  if (p.destinationPortRange !== undefined) return `ports ${str(obj(p.destinationPortRange).start)}-${Number(obj(p.destinationPortRange).end) - 1}`;
  if (p.destinationIp !== undefined) return `destination ip ${cidrText(obj(p.destinationIp))}`;
  if (p.requestedServerName !== undefined) return `sni ${matcherText(obj(p.requestedServerName))}`;
  if (p.metadata !== undefined) return 'metadata';
  return Object.keys(p)[0] ?? '?';
}

/** One RBAC Principal as text. */
export function principalText(p: Json): string {
  if (p.any === true) return 'any';
  if (p.andIds !== undefined) return join(arr(obj(p.andIds).ids).map((x) => principalText(obj(x))), 'and');
  if (p.orIds !== undefined) return join(arr(obj(p.orIds).ids).map((x) => principalText(obj(x))), 'or');
  if (p.notId !== undefined) {
    const inner = obj(p.notId);
    return inner.any === true ? 'nobody' : `not ${principalText(inner)}`;
  }
  if (p.authenticated !== undefined) {
    const name = obj(obj(p.authenticated).principalName);
    return Object.keys(name).length === 0 ? 'authenticated' : `principal ${matcherText(name)}`;
  }
  if (p.directRemoteIp !== undefined) return `ip ${cidrText(obj(p.directRemoteIp))}`;
  if (p.remoteIp !== undefined) return `remote ip ${cidrText(obj(p.remoteIp))}`;
  if (p.sourceIp !== undefined) return `ip ${cidrText(obj(p.sourceIp))}`;
  if (p.header !== undefined) return headerText(obj(p.header));
  if (p.metadata !== undefined) return 'request principal (metadata)';
  return Object.keys(p)[0] ?? '?';
}

/** `to <permissions>, from <principals>` of one RBAC policy. */
export function ruleText(policy: Json): string {
  const to = join(arr(policy.permissions).map((x) => permissionText(obj(x))), 'or');
  const from = join(arr(policy.principals).map((x) => principalText(obj(x))), 'or');
  return `to ${to}, from ${from}`;
}

interface RbacFilter {
  readonly protocol: 'HTTP' | 'TCP';
  readonly config: Json;
}

function chainFilters(chain: Json): RbacFilter[] {
  const out: RbacFilter[] = [];
  for (const f of arr(chain.filters).map(obj)) {
    const typed = obj(f.typedConfig);
    const type = str(typed['@type']);
    if (type.endsWith('network.rbac.v3.RBAC')) out.push({ protocol: 'TCP', config: typed });
    if (type.endsWith('HttpConnectionManager')) {
      for (const h of arr(typed.httpFilters).map(obj)) {
        const ht = obj(h.typedConfig);
        if (str(ht['@type']).endsWith('http.rbac.v3.RBAC')) out.push({ protocol: 'HTTP', config: ht });
      }
    }
  }
  return out;
}

function chainLabel(chain: Json, isDefault: boolean): string {
  if (str(chain.name)) return str(chain.name);
  if (isDefault) return 'default';
  const m = obj(chain.filterChainMatch);
  const parts: string[] = [];
  if (m.destinationPort !== undefined) parts.push(`port ${str(m.destinationPort)}`);
  for (const r of arr(m.prefixRanges).map(obj)) parts.push(cidrText(r));
  if (arr(m.serverNames).length > 0) parts.push(arr(m.serverNames).map(str).join(','));
  return parts.length > 0 ? parts.join(' ') : 'all';
}

/** Rows of one set of RBAC rules (enforced or shadow), grouped by AuthorizationPolicy. */
function rulesRows(base: Omit<AuthzRow, 'action' | 'mode' | 'policy' | 'rules' | 'matches'>, rules: Json, mode: AuthzRow['mode']): AuthzRow[] {
  const action = actionOf(rules);
  const byPolicy = new Map<string, { rules: number[]; matches: string[] }>();
  for (const [name, policy] of Object.entries(obj(rules.policies))) {
    const m = POLICY_NAME.exec(name);
    const key = m ? `${m[1]}/${m[2]}` : name;
    const entry = byPolicy.get(key) ?? { rules: [], matches: [] };
    if (m) entry.rules.push(Number(m[3]));
    entry.matches.push(ruleText(obj(policy)));
    byPolicy.set(key, entry);
  }
  if (byPolicy.size === 0) {
    // an ALLOW filter with no policy left admits nothing; DENY and LOG filters without policies are never generated
    return [{ ...base, action, mode, policy: '', rules: [], matches: [action === 'ALLOW' ? 'no rule applies here: every request is denied' : 'no rule'] }];
  }
  return [...byPolicy].sort(([a], [b]) => a.localeCompare(b)).map(([policy, e]) => ({ ...base, action, mode, policy, rules: e.rules, matches: e.matches }));
}

const ORDER: Readonly<Record<AuthzAction, number>> = { AUDIT: 0, DENY: 1, ALLOW: 2 };

/** Every RBAC rule the proxy enforces (or shadows), per listener and chain, in evaluation order. */
export function authzRows(dump: ConfigDump): AuthzRow[] {
  const rows: AuthzRow[] = [];
  for (const l of dump.listeners) {
    const chains = arr(l.filterChains).map((c) => ({ chain: obj(c), isDefault: false }));
    if (l.defaultFilterChain !== undefined) chains.push({ chain: obj(l.defaultFilterChain), isDefault: true });
    for (const { chain, isDefault } of chains) {
      const filters = chainFilters(chain);
      const chainRows: AuthzRow[] = [];
      for (const f of filters) {
        const base = { listener: str(l.name), chain: chainLabel(chain, isDefault), protocol: f.protocol };
        if (f.config.rules !== undefined) chainRows.push(...rulesRows(base, obj(f.config.rules), 'enforced'));
        if (f.config.shadowRules !== undefined) chainRows.push(...rulesRows(base, obj(f.config.shadowRules), 'dry-run'));
      }
      chainRows.sort((a, b) => ORDER[a.action] - ORDER[b.action] || (a.mode === b.mode ? 0 : a.mode === 'enforced' ? -1 : 1));
      rows.push(...chainRows);
    }
  }
  return rows;
}
