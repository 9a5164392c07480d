/** Semantic checks of ServiceEntry, WorkloadEntry and WorkloadGroup specs. */
import { isIP } from 'node:net';
import type { ServiceEntry, WorkloadEntry, WorkloadGroup } from '../../gen/config/schemas.js';
import {
  type ConfigIssue,
  Issues,
  checkExportTo,
  checkHost,
  checkLabels,
  checkNonNegative,
  checkPortNumber,
  checkProtocol,
  checkUnique,
  hostProblem,
  isCidr,
  isIpOrCidr,
  join,
} from './common.js';

export function validateServiceEntry(spec: ServiceEntry, path = 'spec'): ConfigIssue[] {
  const issues = new Issues();
  const resolution = spec.resolution ?? 'NONE';
  const endpoints = spec.endpoints ?? [];
  const dns = resolution === 'DNS' || resolution === 'DNS_ROUND_ROBIN';

  spec.hosts.forEach((h, i) => {
    const p = join(path, 'hosts', i);
    checkHost(issues, p, h, { wildcard: true, ip: false });
    if (h === '*') issues.add(p, 'host "*" would capture all traffic: name the hosts');
    else if (dns && endpoints.length === 0 && h.startsWith('*.')) {
      issues.add(p, `wildcard host "${h}" cannot be resolved with ${resolution}: give endpoints or use resolution NONE`);
    }
  });
  checkUnique(issues, join(path, 'hosts'), spec.hosts, (h) => h, 'host');

  (spec.addresses ?? []).forEach((a, i) => {
    const p = join(path, 'addresses', i);
    if (!isIpOrCidr(a)) issues.add(p, `"${a}" is neither an IP address nor a CIDR block`);
    else if (dns && isCidr(a)) issues.add(p, `CIDR block "${a}" is only allowed with resolution NONE or STATIC`);
  });

  (spec.ports ?? []).forEach((port, i) => {
    const p = join(path, 'ports', i);
    checkPortNumber(issues, join(p, 'number'), port.number);
    checkPortNumber(issues, join(p, 'targetPort'), port.targetPort);
    checkProtocol(issues, join(p, 'protocol'), port.protocol);
  });
  checkUnique(issues, join(path, 'ports'), spec.ports, (p) => String(p.number), 'port number');
  checkUnique(issues, join(path, 'ports'), spec.ports, (p) => p.name, 'port name');

  if (endpoints.length > 0 && spec.workloadSelector) {
    issues.add(join(path, 'workloadSelector'), 'endpoints and workloadSelector are mutually exclusive');
  }
  switch (resolution) {
    case 'NONE':
      if (endpoints.length > 0) issues.add(join(path, 'endpoints'), 'resolution NONE forwards to the original destination: endpoints are not allowed');
      break;
    case 'DYNAMIC_DNS':
      if (endpoints.length > 0) issues.add(join(path, 'endpoints'), 'resolution DYNAMIC_DNS resolves the requested host: endpoints are not allowed');
      if (spec.workloadSelector) issues.add(join(path, 'workloadSelector'), 'resolution DYNAMIC_DNS cannot select workloads');
      if ((spec.addresses?.length ?? 0) > 0) issues.add(join(path, 'addresses'), 'resolution DYNAMIC_DNS cannot have addresses');
      spec.hosts.forEach((h, i) => {
        if (!h.startsWith('*.')) issues.add(join(path, 'hosts', i), `resolution DYNAMIC_DNS is for wildcard hosts ("*.example.com"), not "${h}"`);
      });
      break;
    case 'STATIC':
      if (endpoints.length === 0 && !spec.workloadSelector) {
        issues.add(path, 'resolution STATIC needs endpoints or a workloadSelector');
      }
      break;
    case 'DNS':
    case 'DNS_ROUND_ROBIN':
      if (resolution === 'DNS_ROUND_ROBIN' && endpoints.length > 1) {
        issues.add(join(path, 'endpoints'), 'resolution DNS_ROUND_ROBIN allows at most one endpoint');
      }
      break;
  }

  const portNames = new Set((spec.ports ?? []).map((p) => p.name));
  endpoints.forEach((e, i) => {
    const p = join(path, 'endpoints', i);
    checkWorkloadEntry(issues, p, e);
    if (resolution === 'STATIC' && e.address && !isIP(e.address) && !e.address.startsWith('unix://')) {
      issues.add(join(p, 'address'), `resolution STATIC needs IP addresses or unix sockets, not "${e.address}"`);
    }
    for (const name of Object.keys(e.ports ?? {})) {
      if (!portNames.has(name)) issues.add(join(p, 'ports', name), `port name "${name}" is not declared in spec.ports`);
    }
  });
  checkLabels(issues, join(path, 'workloadSelector', 'labels'), spec.workloadSelector?.labels);
  checkExportTo(issues, join(path, 'exportTo'), spec.exportTo);
  (spec.subjectAltNames ?? []).forEach((san, i) => {
    if (san === '') issues.add(join(path, 'subjectAltNames', i), 'must not be empty');
  });
  return issues.list;
}

export function validateWorkloadEntry(spec: WorkloadEntry, path = 'spec'): ConfigIssue[] {
  const issues = new Issues();
  checkWorkloadEntry(issues, path, spec);
  return issues.list;
}

function checkWorkloadEntry(issues: Issues, path: string, e: WorkloadEntry): void {
  const address = e.address ?? '';
  if (address === '') {
    if (!e.network) issues.add(join(path, 'address'), 'an address is required (it may be left out only when network is set)');
  } else if (address.startsWith('unix://')) {
    if (!address.slice('unix://'.length).startsWith('/')) issues.add(join(path, 'address'), `unix socket "${address}" needs an absolute path`);
    if (e.ports && Object.keys(e.ports).length > 0) issues.add(join(path, 'ports'), 'a unix socket address has no ports');
  } else if (!isIP(address)) {
    const problem = hostProblem(address, { wildcard: false, ip: true });
    if (problem) issues.add(join(path, 'address'), `"${address}" is neither an IP address, a DNS name nor unix://path`);
  }
  for (const [name, port] of Object.entries(e.ports ?? {})) checkPortNumber(issues, join(path, 'ports', name), port);
  checkLabels(issues, join(path, 'labels'), e.labels);
  if (e.locality !== undefined && e.locality.split('/').length > 3) {
    issues.add(join(path, 'locality'), `locality "${e.locality}" has more than region/zone/subzone`);
  }
  checkNonNegative(issues, join(path, 'weight'), e.weight);
}

export function validateWorkloadGroup(spec: WorkloadGroup, path = 'spec'): ConfigIssue[] {
  const issues = new Issues();
  const t = spec.template;
  const tp = join(path, 'template');
  if (t.address) issues.add(join(tp, 'address'), 'the template must not set an address: each workload brings its own');
  for (const [name, port] of Object.entries(t.ports ?? {})) checkPortNumber(issues, join(tp, 'ports', name), port);
  checkLabels(issues, join(tp, 'labels'), t.labels);
  checkLabels(issues, join(path, 'metadata', 'labels'), spec.metadata?.labels);
  const probe = spec.probe;
  if (probe) {
    const pp = join(path, 'probe');
    if (!probe.httpGet && !probe.tcpSocket && !probe.exec) issues.add(pp, 'a probe needs one of httpGet, tcpSocket or exec');
    for (const f of ['initialDelaySeconds', 'timeoutSeconds', 'periodSeconds', 'successThreshold', 'failureThreshold'] as const) {
      checkNonNegative(issues, join(pp, f), probe[f]);
    }
    checkPortNumber(issues, join(pp, 'httpGet', 'port'), probe.httpGet?.port);
    checkPortNumber(issues, join(pp, 'tcpSocket', 'port'), probe.tcpSocket?.port);
    const scheme = probe.httpGet?.scheme;
    if (scheme !== undefined && scheme !== 'HTTP' && scheme !== 'HTTPS') issues.add(join(pp, 'httpGet', 'scheme'), `scheme "${scheme}" is neither HTTP nor HTTPS`);
    if (probe.exec && (probe.exec.command?.length ?? 0) === 0) issues.add(join(pp, 'exec', 'command'), 'a command is required');
  }
  return issues.list;
}
