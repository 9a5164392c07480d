/** Semantic checks of Sidecar specs. */
import { isIP } from 'node:net';
import type { ServerTLSSettings, Sidecar } from '../../gen/config/schemas.js';
import { type ConfigIssue, Issues, checkHost, checkLabels, checkPortNumber, checkProtocol, checkUnique, isDns1123Label, join } from './common.js';

export function validateSidecar(spec: Sidecar, path = 'spec'): ConfigIssue[] {
  const issues = new Issues();
  checkLabels(issues, join(path, 'workloadSelector', 'labels'), spec.workloadSelector?.labels);

  (spec.ingress ?? []).forEach((l, i) => {
    const p = join(path, 'ingress', i);
    checkListenerPort(issues, join(p, 'port', 'number'), l.port.number, l.bind);
    if (l.port.number === undefined) issues.add(join(p, 'port', 'number'), 'an ingress listener needs a port number');
    if (l.tls) checkIngressTls(issues, join(p, 'tls'), l.tls);
    checkPortNumber(issues, join(p, 'port', 'targetPort'), l.port.targetPort);
    checkProtocol(issues, join(p, 'port', 'protocol'), l.port.protocol);
    checkBind(issues, join(p, 'bind'), l.bind);
    if (l.defaultEndpoint !== undefined) checkDefaultEndpoint(issues, join(p, 'defaultEndpoint'), l.defaultEndpoint);
  });
  checkUnique(issues, join(path, 'ingress'), spec.ingress, (l) => (l.port.number !== undefined ? String(l.port.number) : undefined), 'ingress port');

  const egress = spec.egress ?? [];
  egress.forEach((l, i) => {
    const p = join(path, 'egress', i);
    if (l.port) {
      checkListenerPort(issues, join(p, 'port', 'number'), l.port.number, l.bind);
      checkProtocol(issues, join(p, 'port', 'protocol'), l.port.protocol);
    } else if (i !== egress.length - 1) {
      issues.add(p, 'the egress listener without a port catches all ports and must be the last one');
    }
    checkBind(issues, join(p, 'bind'), l.bind);
    l.hosts.forEach((h, j) => checkEgressHost(issues, join(p, 'hosts', j), h));
  });
  checkUnique(issues, join(path, 'egress'), egress, (l) => (l.port?.number !== undefined ? String(l.port.number) : 'catch-all'), 'egress port');

  const otp = spec.outboundTrafficPolicy;
  if (otp?.egressProxy) {
    const p = join(path, 'outboundTrafficPolicy', 'egressProxy');
    if ((otp.mode ?? 'REGISTRY_ONLY') !== 'ALLOW_ANY') issues.add(p, 'egressProxy is only used with mode ALLOW_ANY');
    checkHost(issues, join(p, 'host'), otp.egressProxy.host, { wildcard: false, ip: false });
    if (otp.egressProxy.port?.number === undefined) issues.add(join(p, 'port', 'number'), 'egressProxy needs a port');
  }
  return issues.list;
}

/** `namespace/host`: namespace `*`, `.`, `~` or a name; host `*`, `*.suffix` or a DNS name. */
function checkEgressHost(issues: Issues, path: string, entry: string): void {
  const slash = entry.indexOf('/');
  if (slash < 0) {
    issues.add(path, `"${entry}" must have the form namespace/host (for example "./*" or "prod/api.example.com")`);
    return;
  }
  const ns = entry.slice(0, slash);
  const host = entry.slice(slash + 1);
  if (ns.startsWith('~') && ns !== '~' && isDns1123Label(ns.slice(1))) {
    issues.warn(path, `"${ns}" is no namespace: "~" alone means no namespace, so this entry imports nothing (did you mean "${ns.slice(1)}/${entry.slice(slash + 1)}"?)`);
  } else if (ns !== '*' && ns !== '.' && ns !== '~' && !isDns1123Label(ns)) {
    issues.add(path, `namespace "${ns}" of "${entry}" is neither "*", ".", "~" nor a namespace name`);
  }
  if (host.includes('/')) issues.add(path, `"${entry}" has more than one "/"`);
  else checkHost(issues, path, host, { wildcard: true, ip: false });
}

/** A listener port in 1..65535; 0 (or none) only for a listener bound to a Unix socket. */
function checkListenerPort(issues: Issues, path: string, port: number | undefined, bind: string | undefined): void {
  if (port === 0 && bind?.startsWith('unix://')) return;
  checkPortNumber(issues, path, port);
}

/** The proxy terminates TLS of inbound traffic with certificate files it is given. */
function checkIngressTls(issues: Issues, path: string, tls: ServerTLSSettings): void {
  const mode = tls.mode ?? 'PASSTHROUGH';
  if (tls.httpsRedirect) issues.add(join(path, 'httpsRedirect'), 'httpsRedirect is not supported on a Sidecar ingress listener');
  if (mode !== 'SIMPLE' && mode !== 'MUTUAL') {
    issues.add(join(path, 'mode'), `mode ${mode} is not supported on a Sidecar ingress listener: use SIMPLE or MUTUAL`);
    return;
  }
  if (tls.credentialName || (tls.credentialNames?.length ?? 0) > 0) issues.add(join(path, 'credentialName'), 'credentialName is not supported on a Sidecar ingress listener: give certificate files');
  if (!tls.serverCertificate) issues.add(join(path, 'serverCertificate'), `${mode} mode needs serverCertificate`);
  if (!tls.privateKey) issues.add(join(path, 'privateKey'), `${mode} mode needs privateKey`);
  if (mode === 'MUTUAL' && !tls.caCertificates) issues.add(join(path, 'caCertificates'), 'MUTUAL mode needs caCertificates to verify clients');
}

function checkBind(issues: Issues, path: string, bind: string | undefined): void {
  if (bind !== undefined && bind !== '' && !isIP(bind) && !bind.startsWith('unix://')) {
    issues.add(path, `bind "${bind}" is neither an IP address nor unix://path`);
  }
}

function checkDefaultEndpoint(issues: Issues, path: string, endpoint: string): void {
  if (endpoint.startsWith('unix://')) return;
  const m = /^(.*):(\d+)$/.exec(endpoint);
  const host = m?.[1].replace(/^\[(.*)\]$/, '$1');
  if (!m || !host || !['127.0.0.1', '0.0.0.0', '::1', '::'].includes(host)) {
    issues.add(path, `defaultEndpoint "${endpoint}" must be 127.0.0.1:PORT, 0.0.0.0:PORT, [::1]:PORT, [::]:PORT or unix://path`);
    return;
  }
  checkPortNumber(issues, path, Number(m[2]));
}
