/** Semantic checks of EnvoyFilter and ProxyConfig specs. */
import type { EnvoyFilter, ProxyConfig } from '../../gen/config/schemas.js';
import { type ConfigIssue, Issues, checkLabels, checkNonNegative, checkRegex, checkTargetRefs, join, type ValidationContext } from './common.js';

const LISTENER_TARGETS = new Set(['LISTENER', 'FILTER_CHAIN', 'NETWORK_FILTER', 'HTTP_FILTER', 'LISTENER_FILTER']);
const ROUTE_TARGETS = new Set(['ROUTE_CONFIGURATION', 'VIRTUAL_HOST', 'HTTP_ROUTE']);

export function validateEnvoyFilter(spec: EnvoyFilter, path = 'spec', ctx?: ValidationContext): ConfigIssue[] {
  const issues = new Issues();
  if (spec.workloadSelector && (spec.targetRefs?.length ?? 0) > 0) {
    issues.add(join(path, 'targetRefs'), 'workloadSelector and targetRefs are mutually exclusive');
  }
  checkTargetRefs(issues, path, spec, ctx, ['Gateway', 'GatewayClass']);
  checkLabels(issues, join(path, 'workloadSelector', 'labels'), spec.workloadSelector?.labels);
  spec.configPatches.forEach((cp, i) => {
    const p = join(path, 'configPatches', i);
    const applyTo = cp.applyTo ?? 'INVALID';
    if (applyTo === 'INVALID') issues.add(join(p, 'applyTo'), 'applyTo is required');
    const operation = cp.patch?.operation ?? 'INVALID';
    if (!cp.patch) issues.add(join(p, 'patch'), 'a patch is required');
    else if (operation === 'INVALID') issues.add(join(p, 'patch', 'operation'), 'operation is required');
    else if (operation !== 'REMOVE' && cp.patch.value === undefined) {
      issues.add(join(p, 'patch', 'value'), `operation ${operation} needs a value`);
    }
    if (cp.patch?.filterClass !== undefined && cp.patch.filterClass !== 'UNSPECIFIED' && applyTo !== 'HTTP_FILTER') {
      issues.add(join(p, 'patch', 'filterClass'), 'filterClass only applies to HTTP_FILTER patches');
    }
    const m = cp.match;
    if (m) {
      if (m.listener && !LISTENER_TARGETS.has(applyTo)) issues.add(join(p, 'match', 'listener'), `a listener match does not fit applyTo ${applyTo}`);
      if (m.routeConfiguration && !ROUTE_TARGETS.has(applyTo)) {
        issues.add(join(p, 'match', 'routeConfiguration'), `a routeConfiguration match does not fit applyTo ${applyTo}`);
      }
      if (m.cluster && applyTo !== 'CLUSTER') issues.add(join(p, 'match', 'cluster'), `a cluster match does not fit applyTo ${applyTo}`);
      checkRegex(issues, join(p, 'match', 'proxy', 'proxyVersion'), m.proxy?.proxyVersion);
    }
  });
  return issues.list;
}

export function validateProxyConfig(spec: ProxyConfig, path = 'spec'): ConfigIssue[] {
  const issues = new Issues();
  checkLabels(issues, join(path, 'selector', 'matchLabels'), spec.selector?.matchLabels);
  checkNonNegative(issues, join(path, 'concurrency'), spec.concurrency);
  for (const name of Object.keys(spec.environmentVariables ?? {})) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) issues.add(join(path, 'environmentVariables', name), `"${name}" is not a valid environment variable name`);
  }
  return issues.list;
}
