/** Semantic checks of PeerAuthentication, AuthorizationPolicy and RequestAuthentication specs. */
import type { AuthorizationPolicy, Operation, PeerAuthentication, RequestAuthentication, Source } from '../../gen/config/schemas.js';
import {
  type ConfigIssue,
  Issues,
  checkLabels,
  checkMinDuration,
  checkPortNumber,
  checkSelectorXorTargets,
  checkUnique,
  isIpOrCidr,
  join,
} from './common.js';

export function validatePeerAuthentication(spec: PeerAuthentication, path = 'spec'): ConfigIssue[] {
  const issues = new Issues();
  checkLabels(issues, join(path, 'selector', 'matchLabels'), spec.selector?.matchLabels);
  const ports = Object.keys(spec.portLevelMtls ?? {});
  if (ports.length > 0 && Object.keys(spec.selector?.matchLabels ?? {}).length === 0) {
    issues.add(join(path, 'portLevelMtls'), 'port-level settings need a selector with labels (ports belong to workloads)');
  }
  for (const port of ports) checkPortNumber(issues, join(path, 'portLevelMtls', port), Number(port));
  return issues.list;
}

export function validateAuthorizationPolicy(spec: AuthorizationPolicy, path = 'spec'): ConfigIssue[] {
  const issues = new Issues();
  checkSelectorXorTargets(issues, path, spec);
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
      if ((c.values?.length ?? 0) === 0 && (c.notValues?.length ?? 0) === 0) {
        issues.add(join(p, 'when', j), `condition on "${c.key}" needs values or notValues`);
      }
    });
  });
  return issues.list;
}

function isEmpty(o: object): boolean {
  return Object.values(o).every((v) => v === undefined || (Array.isArray(v) && v.length === 0));
}

function checkSource(issues: Issues, path: string, s: Source): void {
  for (const f of ['ipBlocks', 'notIpBlocks', 'remoteIpBlocks', 'notRemoteIpBlocks'] as const) {
    (s[f] ?? []).forEach((b, i) => {
      if (!isIpOrCidr(b)) issues.add(join(path, f, i), `"${b}" is neither an IP address nor a CIDR block`);
    });
  }
}

function checkOperation(issues: Issues, path: string, o: Operation): void {
  for (const f of ['ports', 'notPorts'] as const) {
    (o[f] ?? []).forEach((port, i) => {
      const p = join(path, f, i);
      if (!/^\d+$/.test(port)) issues.add(p, `port "${port}" is not a number`);
      else checkPortNumber(issues, p, Number(port));
    });
  }
  for (const f of ['paths', 'notPaths'] as const) {
    (o[f] ?? []).forEach((path0, i) => {
      if (path0 !== '*' && !path0.startsWith('/') && !path0.startsWith('*')) issues.add(join(path, f, i), `path "${path0}" must start with "/" or "*"`);
    });
  }
}

export function validateRequestAuthentication(spec: RequestAuthentication, path = 'spec'): ConfigIssue[] {
  const issues = new Issues();
  checkSelectorXorTargets(issues, path, spec);
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
  });
  return issues.list;
}
