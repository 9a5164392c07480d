/** Semantic checks of PeerAuthentication, AuthorizationPolicy and RequestAuthentication specs. */
import type { AuthorizationPolicy, Operation, PeerAuthentication, RequestAuthentication, Source } from '../../gen/config/schemas.js';
import {
  type ConfigIssue,
  Issues,
  checkLabels,
  checkMinDuration,
  checkPortNumber,
  checkSelectorXorTargets,
  checkNoEmpty,
  checkTargetRefs,
  checkUnique,
  isDns1123Label,
  isDns1123Subdomain,
  isIpOrCidr,
  join,
  type ValidationContext,
} from './common.js';
import { CONDITION_ATTRIBUTES, parseConditionKey, peerPrincipalProblem } from './authz-keys.js';

export function validatePeerAuthentication(spec: PeerAuthentication, path = 'spec'): ConfigIssue[] {
  const issues = new Issues();
  checkLabels(issues, join(path, 'selector', 'matchLabels'), spec.selector?.matchLabels);
  const ports = Object.keys(spec.portLevelMtls ?? {});
  if (ports.length > 0 && Object.keys(spec.selector?.matchLabels ?? {}).length === 0) {
    issues.add(join(path, 'portLevelMtls'), 'port-level settings need a selector with labels (ports belong to workloads)');
  }
  for (const port of ports) {
    const p = join(path, 'portLevelMtls', port);
    checkPortNumber(issues, p, Number(port));
    if (spec.portLevelMtls?.[Number(port)]?.mode === undefined) issues.add(p, 'a port-level setting must set mode');
  }
  return issues.list;
}

export function validateAuthorizationPolicy(spec: AuthorizationPolicy, path = 'spec', ctx?: ValidationContext): ConfigIssue[] {
  const issues = new Issues();
  checkSelectorXorTargets(issues, path, spec);
  checkTargetRefs(issues, path, spec, ctx);
  checkLabels(issues, join(path, 'selector', 'matchLabels'), spec.selector?.matchLabels);
  const action = spec.action ?? 'ALLOW';
  if (action === 'CUSTOM' && !spec.provider?.name) issues.add(join(path, 'provider'), 'a CUSTOM policy needs provider.name');
  if (action !== 'CUSTOM' && spec.provider) issues.add(join(path, 'provider'), 'provider is only used with action CUSTOM');
  (spec.rules ?? []).forEach((rule, i) => {
    const p = join(path, 'rules', i);
    (rule.from ?? []).forEach((f, j) => {
      const fp = join(p, 'from', j, 'source');
      if (!f.source || isEmpty(f.source)) issues.add(fp, 'a source with no conditions is not allowed: remove the entry or add a condition');
      else checkSource(issues, fp, f.source);
    });
    (rule.to ?? []).forEach((t, j) => {
      const tp = join(p, 'to', j, 'operation');
      if (!t.operation || isEmpty(t.operation)) issues.add(tp, 'an operation with no conditions is not allowed: remove the entry or add a condition');
      else checkOperation(issues, tp, t.operation);
    });
    (rule.when ?? []).forEach((c, j) => {
      const cp = join(p, 'when', j);
      if ((c.values?.length ?? 0) === 0 && (c.notValues?.length ?? 0) === 0) {
        issues.add(cp, `condition on "${c.key}" needs values or notValues`);
      }
      checkNoEmpty(issues, join(cp, 'values'), c.values);
      checkNoEmpty(issues, join(cp, 'notValues'), c.notValues);
      checkConditionValues(issues, cp, c.key, c.values, c.notValues);
    });
  });
  return issues.list;
}

/**
 * A condition's key names an attribute, and its values are of that attribute's kind: ports are
 * numbers of 1..65535, addresses IPs or CIDR blocks; malformed peer principals are warned about
 * (accepted, as by the public API, but they match no peer).
 */
function checkConditionValues(issues: Issues, path: string, key: string, values: ReadonlyArray<string> | undefined, notValues: ReadonlyArray<string> | undefined): void {
  if (key === '') return; // the schema says it must not be empty
  const parsed = parseConditionKey(key);
  if (!parsed) {
    issues.add(join(path, 'key'), `unknown attribute "${key}" (known: ${CONDITION_ATTRIBUTES.map((a) => (a === 'request.headers' || a === 'request.auth.claims' ? `${a}[...]` : a)).join(', ')})`);
    return;
  }
  for (const f of ['values', 'notValues'] as const) {
    ((f === 'values' ? values : notValues) ?? []).forEach((v, k) => {
      if (v === '') return;
      const p = join(path, f, k);
      switch (parsed.attribute) {
        case 'source.ip':
        case 'remote.ip':
        case 'destination.ip':
          if (!isIpOrCidr(v)) issues.add(p, `"${v}" is neither an IP address nor a CIDR block`);
          break;
        case 'destination.port':
          checkPortText(issues, p, v);
          break;
        case 'source.principal': {
          const problem = peerPrincipalProblem(v);
          if (problem) issues.warn(p, problem);
          break;
        }
        default:
      }
    });
  }
}

/** A port written as text: digits only, 1..65535. */
function checkPortText(issues: Issues, path: string, port: string): void {
  if (!/^\d+$/.test(port)) issues.add(path, `port "${port}" is not a number`);
  else checkPortNumber(issues, path, Number(port));
}

function isEmpty(o: object): boolean {
  return Object.values(o).every((v) => v === undefined || (Array.isArray(v) && v.length === 0));
}

const SOURCE_LISTS = [
  'principals',
  'notPrincipals',
  'requestPrincipals',
  'notRequestPrincipals',
  'namespaces',
  'notNamespaces',
  'serviceAccounts',
  'notServiceAccounts',
  'trustDomains',
  'notTrustDomains',
] as const;
const OPERATION_LISTS = ['hosts', 'notHosts', 'methods', 'notMethods', 'paths', 'notPaths', 'ports', 'notPorts'] as const;

function checkSource(issues: Issues, path: string, s: Source): void {
  for (const f of SOURCE_LISTS) checkNoEmpty(issues, join(path, f), s[f]);
  for (const f of ['principals', 'notPrincipals'] as const) {
    (s[f] ?? []).forEach((v, i) => {
      const problem = peerPrincipalProblem(v);
      if (problem) issues.warn(join(path, f, i), problem);
    });
  }
  for (const f of ['ipBlocks', 'notIpBlocks', 'remoteIpBlocks', 'notRemoteIpBlocks'] as const) {
    (s[f] ?? []).forEach((b, i) => {
      if (!isIpOrCidr(b)) issues.add(join(path, f, i), b === '' ? 'empty value is not allowed' : `"${b}" is neither an IP address nor a CIDR block`);
    });
  }
  for (const f of ['serviceAccounts', 'notServiceAccounts'] as const) {
    (s[f] ?? []).forEach((sa, i) => {
      const parts = sa.split('/');
      if (sa !== '' && (parts.length !== 2 || !isDns1123Label(parts[0]) || !isDns1123Subdomain(parts[1]))) {
        issues.add(join(path, f, i), `"${sa}" is not <namespace>/<service-account>`);
      }
    });
  }
  if ((s.serviceAccounts?.length ?? 0) > 0 && ((s.principals?.length ?? 0) > 0 || (s.namespaces?.length ?? 0) > 0)) {
    issues.add(join(path, 'serviceAccounts'), 'serviceAccounts cannot be combined with principals or namespaces');
  }
}

function checkOperation(issues: Issues, path: string, o: Operation): void {
  for (const f of OPERATION_LISTS) checkNoEmpty(issues, join(path, f), o[f]);
  for (const f of ['ports', 'notPorts'] as const) {
    (o[f] ?? []).forEach((port, i) => {
      if (port !== '') checkPortText(issues, join(path, f, i), port);
    });
  }
  for (const f of ['paths', 'notPaths'] as const) {
    (o[f] ?? []).forEach((path0, i) => {
      if (path0 !== '' && path0 !== '*' && !path0.startsWith('/') && !path0.startsWith('*')) issues.add(join(path, f, i), `path "${path0}" must start with "/" or "*"`);
    });
  }
}

export function validateRequestAuthentication(spec: RequestAuthentication, path = 'spec', ctx?: ValidationContext): ConfigIssue[] {
  const issues = new Issues();
  checkSelectorXorTargets(issues, path, spec);
  checkTargetRefs(issues, path, spec, ctx);
  checkLabels(issues, join(path, 'selector', 'matchLabels'), spec.selector?.matchLabels);
  checkUnique(issues, join(path, 'jwtRules'), spec.jwtRules, (r) => r.issuer, 'issuer');
  (spec.jwtRules ?? []).forEach((r, i) => {
    const p = join(path, 'jwtRules', i);
    if (r.jwksUri !== undefined) {
      let ok: boolean;
      try {
        const u = new URL(r.jwksUri);
        ok = u.protocol === 'https:' || u.protocol === 'http:';
      } catch {
        ok = false;
      }
      if (!ok) issues.add(join(p, 'jwksUri'), `"${r.jwksUri}" is not an http(s) URL`);
    }
    if (r.jwks !== undefined) {
      try {
        JSON.parse(r.jwks);
      } catch {
        issues.add(join(p, 'jwks'), 'the inline key set is not valid JSON');
      }
    }
    checkMinDuration(issues, join(p, 'timeout'), r.timeout, 1);
    checkNoEmpty(issues, join(p, 'spaceDelimitedClaims'), r.spaceDelimitedClaims);
    checkNoEmpty(issues, join(p, 'audiences'), r.audiences);
    if (r.issuer === '' || r.issuer === undefined) issues.add(join(p, 'issuer'), 'issuer is required');
  });
  return issues.list;
}
