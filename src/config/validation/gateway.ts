/** Semantic checks of Gateway specs. */
import type { Gateway, Server, ServerTLSSettings } from '../../gen/config/schemas.js';
import {
  type ConfigIssue,
  Issues,
  checkHost,
  checkPortNumber,
  checkProtocol,
  checkUnique,
  isDns1123Label,
  join,
} from './common.js';

const TLS_PROTOCOLS = new Set(['HTTPS', 'TLS']);
const TLS_VERSIONS = ['TLS_AUTO', 'TLSV1_0', 'TLSV1_1', 'TLSV1_2', 'TLSV1_3'];

export function validateGateway(spec: Gateway, path = 'spec'): ConfigIssue[] {
  const issues = new Issues();
  spec.servers.forEach((s, i) => checkServer(issues, join(path, 'servers', i), s));
  checkUnique(issues, join(path, 'servers'), spec.servers, (s) => s.name || undefined, 'server name');
  // Servers that share a port number must agree on the protocol.
  const protocolByPort = new Map<number, string>();
  spec.servers.forEach((s, i) => {
    const proto = s.port.protocol.toUpperCase();
    const other = protocolByPort.get(s.port.number);
    if (other !== undefined && other !== proto && !(TLS_PROTOCOLS.has(other) && TLS_PROTOCOLS.has(proto))) {
      issues.add(join(path, 'servers', i, 'port', 'protocol'), `port ${s.port.number} is already declared with protocol ${other}`);
    }
    if (other === undefined) protocolByPort.set(s.port.number, proto);
  });
  return issues.list;
}

function checkServer(issues: Issues, path: string, server: Server): void {
  checkPortNumber(issues, join(path, 'port', 'number'), server.port.number);
  checkPortNumber(issues, join(path, 'port', 'targetPort'), server.port.targetPort);
  checkProtocol(issues, join(path, 'port', 'protocol'), server.port.protocol);
  server.hosts.forEach((h, i) => checkGatewayHost(issues, join(path, 'hosts', i), h));
  const protocol = server.port.protocol.toUpperCase();
  if (TLS_PROTOCOLS.has(protocol) && !server.tls) {
    issues.add(join(path, 'tls'), `a ${protocol} server needs tls settings`);
  }
  if (server.tls) checkServerTls(issues, join(path, 'tls'), server.tls, protocol);
}

/** `host` or `namespace/host`; the namespace may be `*` or `.`. */
function checkGatewayHost(issues: Issues, path: string, entry: string): void {
  const parts = entry.split('/');
  if (parts.length > 2) {
    issues.add(path, `"${entry}" has more than one "/": use "namespace/host"`);
    return;
  }
  if (parts.length === 2 && parts[0] !== '*' && parts[0] !== '.' && !isDns1123Label(parts[0])) {
    issues.add(path, `namespace "${parts[0]}" of "${entry}" is neither "*", "." nor a namespace name`);
  }
  checkHost(issues, path, parts[parts.length - 1], { wildcard: true, ip: true });
}

function checkServerTls(issues: Issues, path: string, tls: ServerTLSSettings, protocol: string): void {
  const mode = tls.mode ?? 'PASSTHROUGH';
  const onlyRedirect = Object.entries(tls).every(([k, v]) => k === 'httpsRedirect' || v === undefined);
  if (!TLS_PROTOCOLS.has(protocol)) {
    // Plain-text servers may only ask for the HTTPS redirect.
    if (!onlyRedirect) issues.add(path, `a ${protocol} server only accepts tls.httpsRedirect; use protocol HTTPS or TLS for TLS settings`);
    return;
  }
  const certificates = tls.tlsCertificates ?? [];
  const hasFiles = Boolean(tls.serverCertificate || tls.privateKey || tls.caCertificates);
  const hasCredential = Boolean(tls.credentialName) || (tls.credentialNames?.length ?? 0) > 0;
  if (tls.credentialName && (tls.credentialNames?.length ?? 0) > 0) {
    issues.add(join(path, 'credentialNames'), 'credentialName and credentialNames are mutually exclusive');
  }
  if (hasCredential && hasFiles && TLS_PROTOCOLS.has(protocol) && mode !== 'PASSTHROUGH' && mode !== 'AUTO_PASSTHROUGH' && mode !== 'MESH_MUTUAL') {
    issues.warn(join(path, 'credentialName'), 'credentialName is used: serverCertificate, privateKey and caCertificates are ignored');
  }
  if (certificates.length > 0) {
    const cp = join(path, 'tlsCertificates');
    if (hasCredential) issues.add(cp, 'tlsCertificates and credentialName(s) are mutually exclusive');
    if (tls.serverCertificate || tls.privateKey) issues.add(cp, 'tlsCertificates and serverCertificate/privateKey are mutually exclusive');
    if (certificates.length > 2) issues.add(cp, `at most 2 certificates (one RSA, one ECDSA) are allowed, got ${certificates.length}`);
    certificates.forEach((c, i) => {
      if (!c.serverCertificate) issues.add(join(cp, i, 'serverCertificate'), 'a certificate file is required');
      if (!c.privateKey) issues.add(join(cp, i, 'privateKey'), 'a private key file is required');
    });
  }
  if ((tls.credentialNames?.length ?? 0) > 2) issues.add(join(path, 'credentialNames'), `at most 2 credentials (one RSA, one ECDSA) are allowed, got ${tls.credentialNames?.length}`);
  const hasCertificate = hasCredential || certificates.length > 0 || Boolean(tls.serverCertificate && tls.privateKey);
  switch (mode) {
    case 'SIMPLE':
    case 'MUTUAL':
    case 'OPTIONAL_MUTUAL':
      if (!hasCertificate) {
        issues.add(path, `${mode} mode needs credentialName, or serverCertificate and privateKey`);
      }
      if (mode !== 'SIMPLE' && !hasCredential && (tls.serverCertificate || certificates.length > 0) && !tls.caCertificates && !certificates.some((c) => c.caCertificates)) {
        issues.add(join(path, 'caCertificates'), `${mode} mode with certificate files needs caCertificates to verify clients`);
      }
      break;
    case 'PASSTHROUGH':
    case 'AUTO_PASSTHROUGH':
    case 'MESH_MUTUAL':
      if (hasCredential || hasFiles || certificates.length > 0) {
        const unset = tls.mode === undefined ? ' (mode is unset)' : '';
        issues.add(path, `${mode} mode${unset} does not use certificates: set mode SIMPLE or MUTUAL, or remove credentialName and certificate files`);
      }
      if (mode === 'AUTO_PASSTHROUGH' && protocol !== 'TLS') issues.add(join(path, 'mode'), 'AUTO_PASSTHROUGH needs protocol TLS');
      break;
  }
  const min = TLS_VERSIONS.indexOf(tls.minProtocolVersion ?? 'TLS_AUTO');
  const max = TLS_VERSIONS.indexOf(tls.maxProtocolVersion ?? 'TLS_AUTO');
  if (min > 0 && max > 0 && min > max) {
    issues.add(join(path, 'minProtocolVersion'), `minProtocolVersion ${tls.minProtocolVersion} is above maxProtocolVersion ${tls.maxProtocolVersion}`);
  }
}
