/**
 * Gateway analyzers: a Gateway's selector matches some workload (MESH0104); its credential Secrets
 * exist where the gateway workloads run and hold a certificate (MESH0112); Gateways that select
 * the same workloads do not declare the same port and host twice (MESH0113) nor serve one
 * certificate for different hosts (MESH0114); every server port is a port of a Service in front of
 * the gateway workloads (MESH0115). The workload and Kubernetes checks stay silent when those are
 * not known.
 */
import type { ConfigObject } from '../../config/types.js';
import { join } from '../../config/validation/common.js';
import type { Gateway } from '../../config/spec-types.js';
import { labelsMatch } from '../../model/service.js';
import { MESSAGES, finding } from '../messages.js';
import type { AnalysisInput, Analyzer, Finding, WorkloadInfo } from '../types.js';
import type { KubeSecret } from '../world.js';
import { selectorText } from './util.js';

/** The workloads a Gateway's selector picks. */
function gatewayWorkloads(input: AnalysisInput, gw: ConfigObject<Gateway>): WorkloadInfo[] {
  const selector = gw.spec.selector ?? {};
  const scoped = input.scopeGatewayToNamespace === true;
  return (input.workloads ?? []).filter((w) => (!scoped || w.namespace === gw.meta.namespace) && labelsMatch(selector, w.labels));
}

export const gatewaySelectorAnalyzer: Analyzer = {
  name: 'gateway.selector',
  description: 'Checks that the selector of each Gateway matches at least one workload.',
  codes: [MESSAGES.GatewaySelectorMatchesNothing.code],
  analyze(input: AnalysisInput): Finding[] {
    if (!input.workloads) return [];
    const out: Finding[] = [];
    for (const gw of input.configs.list<Gateway>('Gateway')) {
      const selector = gw.spec.selector;
      if (!selector || Object.keys(selector).length === 0) continue;
      if (gatewayWorkloads(input, gw).length === 0) {
        const where = input.scopeGatewayToNamespace ? ` in namespace ${gw.meta.namespace}` : '';
        out.push(finding(MESSAGES.GatewaySelectorMatchesNothing, gw, `selector ${selectorText(selector)} matches no workload${where}`, 'spec.selector'));
      }
    }
    return out;
  },
};

const CERT_KEYS: ReadonlyArray<[string, string]> = [
  ['tls.crt', 'tls.key'],
  ['cert', 'key'],
];

function secretProblem(secret: KubeSecret, mutual: boolean, secrets: ReadonlyArray<KubeSecret>): string | undefined {
  const keys = new Set(secret.keys);
  if (!CERT_KEYS.some(([c, k]) => keys.has(c) && keys.has(k))) return `Secret ${secret.namespace}/${secret.name} holds no certificate and key (tls.crt/tls.key or cert/key)`;
  if (mutual && !keys.has('ca.crt') && !keys.has('cacert') && !secrets.some((s) => s.namespace === secret.namespace && s.name === `${secret.name}-cacert`)) {
    return `Secret ${secret.namespace}/${secret.name} holds no CA certificate (ca.crt or cacert, or a Secret ${secret.name}-cacert) to verify clients`;
  }
  return undefined;
}

export const gatewayCredentialsAnalyzer: Analyzer = {
  name: 'gateway.credentials',
  description: 'Checks that the credential Secrets of Gateway servers exist in the namespace of the gateway workloads and hold certificates.',
  codes: [MESSAGES.InvalidGatewayCredential.code],
  analyze(input: AnalysisInput): Finding[] {
    const kube = input.kube;
    // Without any Secret in view (files without Secrets, or Secrets the user may not list) nothing can be told.
    if (!kube || kube.secrets.length === 0) return [];
    const out: Finding[] = [];
    for (const gw of input.configs.list<Gateway>('Gateway')) {
      const picked = gatewayWorkloads(input, gw);
      const namespaces = picked.length > 0 ? [...new Set(picked.map((w) => w.namespace))] : [gw.meta.namespace];
      gw.spec.servers.forEach((server, i) => {
        const tls = server.tls;
        if (!tls) return;
        const names = [...(tls.credentialName ? [tls.credentialName] : []), ...(tls.credentialNames ?? [])];
        const mutual = tls.mode === 'MUTUAL' || tls.mode === 'OPTIONAL_MUTUAL';
        names.forEach((credential, k) => {
          const path = tls.credentialName ? join('spec.servers', i, 'tls', 'credentialName') : join('spec.servers', i, 'tls', 'credentialNames', k);
          for (const ns of namespaces) {
            const secret = kube.secrets.find((s) => s.namespace === ns && s.name === credential);
            const problem = secret ? secretProblem(secret, mutual, kube.secrets) : `Secret ${ns}/${credential} does not exist (credentials are read from the gateway workload's namespace)`;
            if (problem) out.push(finding(MESSAGES.InvalidGatewayCredential, gw, problem, path));
          }
        });
      });
    }
    return out;
  },
};

const hostOf = (entry: string): string => entry.slice(entry.indexOf('/') + 1);

export const gatewayConflictsAnalyzer: Analyzer = {
  name: 'gateway.conflicts',
  description: 'Checks that Gateways selecting the same workloads neither declare one port and host twice nor share a certificate across hosts.',
  codes: [MESSAGES.ConflictingGateways.code, MESSAGES.GatewayDuplicateCertificate.code],
  analyze(input: AnalysisInput): Finding[] {
    const out: Finding[] = [];
    const gateways = input.configs.list<Gateway>('Gateway');
    const bySelector = new Map<string, Array<ConfigObject<Gateway>>>();
    for (const gw of gateways) {
      const key = `${input.scopeGatewayToNamespace ? gw.meta.namespace : ''}|${selectorText(Object.fromEntries(Object.entries(gw.spec.selector ?? {}).sort()))}`;
      const list = bySelector.get(key);
      if (list) list.push(gw);
      else bySelector.set(key, [gw]);
    }
    for (const group of bySelector.values()) {
      if (group.length < 2) continue;
      // port + host → the first Gateway declaring it
      const seen = new Map<string, ConfigObject<Gateway>>();
      for (const gw of group) {
        gw.spec.servers.forEach((s, i) => {
          s.hosts.forEach((h, j) => {
            const key = `${s.port.number}|${hostOf(h)}`;
            const first = seen.get(key);
            if (!first) seen.set(key, gw);
            else if (first !== gw) {
              out.push(
                finding(
                  MESSAGES.ConflictingGateways,
                  gw,
                  `port ${s.port.number} host ${hostOf(h)} is also declared by Gateway ${first.meta.namespace}/${first.meta.name}, which selects the same workloads (${selectorText(gw.spec.selector ?? {}) || 'all'})`,
                  join('spec.servers', i, 'hosts', j),
                ),
              );
            }
          });
        });
      }
    }
    // One certificate served by several Gateways for different hosts.
    const byCert = new Map<string, Array<{ gw: ConfigObject<Gateway>; path: string; hosts: string }>>();
    for (const gw of gateways) {
      gw.spec.servers.forEach((s, i) => {
        const cert = s.tls?.credentialName ? `credential:${s.tls.credentialName}` : s.tls?.serverCertificate ? `file:${s.tls.serverCertificate}` : undefined;
        if (!cert || s.tls?.mode === 'PASSTHROUGH' || s.tls?.mode === 'AUTO_PASSTHROUGH') return;
        const list = byCert.get(cert) ?? [];
        list.push({ gw, path: join('spec.servers', i, 'tls', s.tls?.credentialName ? 'credentialName' : 'serverCertificate'), hosts: s.hosts.map(hostOf).sort().join(',') });
        byCert.set(cert, list);
      });
    }
    for (const [cert, uses] of byCert) {
      const owners = new Set(uses.map((u) => `${u.gw.meta.namespace}/${u.gw.meta.name}`));
      if (owners.size < 2 || new Set(uses.map((u) => u.hosts)).size < 2) continue;
      for (const u of uses) {
        const others = [...owners].filter((o) => o !== `${u.gw.meta.namespace}/${u.gw.meta.name}`).join(', ');
        out.push(finding(MESSAGES.GatewayDuplicateCertificate, u.gw, `certificate ${cert.slice(cert.indexOf(':') + 1)} is also served by Gateway ${others} for other hosts`, u.path));
      }
    }
    return out;
  },
};

export const gatewayServicePortsAnalyzer: Analyzer = {
  name: 'gateway.serviceports',
  description: 'Checks that every Gateway server port is exposed by a Service in front of the gateway workloads.',
  codes: [MESSAGES.GatewayPortNotDefinedOnService.code],
  analyze(input: AnalysisInput): Finding[] {
    const kube = input.kube;
    if (!kube || !input.workloads) return [];
    const out: Finding[] = [];
    for (const gw of input.configs.list<Gateway>('Gateway')) {
      const picked = gatewayWorkloads(input, gw);
      if (picked.length === 0) continue;
      const services = kube.services.filter((s) => s.selector && Object.keys(s.selector).length > 0 && picked.some((w) => w.namespace === s.namespace && labelsMatch(s.selector, w.labels)));
      if (services.length === 0) continue;
      const ports = new Set(services.flatMap((s) => s.ports.flatMap((p) => [p.port, ...(typeof p.targetPort === 'number' ? [p.targetPort] : [])])));
      gw.spec.servers.forEach((s, i) => {
        if (!ports.has(s.port.number)) {
          const names = services.map((x) => `${x.namespace}/${x.name}`).join(', ');
          out.push(finding(MESSAGES.GatewayPortNotDefinedOnService, gw, `port ${s.port.number} is not a port of Service ${names} in front of the gateway workloads`, join('spec.servers', i, 'port', 'number')));
        }
      });
    }
    return out;
  },
};
