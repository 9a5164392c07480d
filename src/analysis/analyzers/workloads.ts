/**
 * Analyzers of plain Kubernetes workloads as the mesh sees them: Service ports whose protocol
 * cannot be told (MESH0120), Deployments behind several Services that give one port number
 * different protocols (MESH0131), and application containers running as the proxy's uid 1337
 * (MESH0132).
 */
import { join } from '../../config/validation/common.js';
import { labelsMatch } from '../../model/service.js';
import { portProtocol } from '../../registry/kube/convert.js';
import { MESSAGES } from '../messages.js';
import type { AnalysisInput, Analyzer, Finding } from '../types.js';
import type { KubeContainer } from '../world.js';
import { PROXY_CONTAINER } from './injection.js';
import { findingAbout } from './util.js';

const PROXY_UID = 1337;

export const servicePortNamesAnalyzer: Analyzer = {
  name: 'service.portnames',
  description: 'Checks that Service ports declare their protocol by name (<protocol>[-<suffix>]) or appProtocol.',
  codes: [MESSAGES.PortNameIsNotUnderNamingConvention.code],
  analyze(input: AnalysisInput): Finding[] {
    const out: Finding[] = [];
    for (const svc of input.kube?.services ?? []) {
      if (svc.namespace === input.mesh.rootNamespace || svc.namespace === 'kube-system') continue;
      svc.ports.forEach((p, i) => {
        if (p.protocol !== 'TCP') return;
        if (portProtocol({ name: p.name, protocol: p.protocol, appProtocol: p.appProtocol }) !== 'UNSUPPORTED') return;
        const label = `port ${p.port}${p.name ? ` (${p.name})` : ''}`;
        out.push(
          findingAbout(
            MESSAGES.PortNameIsNotUnderNamingConvention,
            'Service',
            svc.namespace,
            svc.name,
            `${label} does not follow the naming convention <protocol>[-<suffix>] and has no appProtocol: the proxy has to detect its protocol`,
            join('spec.ports', i, 'name'),
          ),
        );
      });
    }
    return out;
  },
};

export const deploymentServicesAnalyzer: Analyzer = {
  name: 'deployment.services',
  description: 'Checks that the Services in front of a Deployment agree on the protocol of each port number.',
  codes: [MESSAGES.DeploymentAssociatedToMultipleServices.code],
  analyze(input: AnalysisInput): Finding[] {
    const kube = input.kube;
    if (!kube) return [];
    const out: Finding[] = [];
    for (const d of kube.deployments) {
      const services = kube.services.filter((s) => s.namespace === d.namespace && s.selector && Object.keys(s.selector).length > 0 && labelsMatch(s.selector, d.template.labels));
      if (services.length < 2) continue;
      const byPort = new Map<number, Map<string, string[]>>();
      for (const s of services) {
        for (const p of s.ports) {
          const protocol = p.protocol === 'UDP' ? 'UDP' : portProtocol({ name: p.name, protocol: p.protocol, appProtocol: p.appProtocol });
          const protocols = byPort.get(p.port) ?? new Map<string, string[]>();
          protocols.set(protocol, [...(protocols.get(protocol) ?? []), s.name]);
          byPort.set(p.port, protocols);
        }
      }
      for (const [port, protocols] of byPort) {
        if (protocols.size < 2) continue;
        const text = [...protocols].map(([proto, names]) => `${names.join(', ')} (${proto === 'UNSUPPORTED' ? 'unnamed' : proto})`).join('; ');
        out.push(findingAbout(MESSAGES.DeploymentAssociatedToMultipleServices, 'Deployment', d.namespace, d.name, `port ${port} of the pods is served by Services with different protocols: ${text}`, 'spec.template.metadata.labels'));
      }
    }
    return out;
  },
};

function uidProblems(containers: ReadonlyArray<KubeContainer>, base: string): Array<{ path: string; message: string }> {
  return containers.flatMap((c, i) =>
    c.name !== PROXY_CONTAINER && c.runAsUser === PROXY_UID
      ? [{ path: join(base, i, 'securityContext', 'runAsUser'), message: `container ${c.name} runs as uid ${PROXY_UID}, the proxy's uid: its traffic is not captured by the proxy` }]
      : [],
  );
}

export const applicationUidAnalyzer: Analyzer = {
  name: 'workload.uid',
  description: `Checks that application containers do not run as uid ${PROXY_UID}, the proxy's uid.`,
  codes: [MESSAGES.InvalidApplicationUID.code],
  analyze(input: AnalysisInput): Finding[] {
    const kube = input.kube;
    if (!kube) return [];
    const out: Finding[] = [];
    for (const p of kube.pods) for (const u of uidProblems(p.containers, 'spec.containers')) out.push(findingAbout(MESSAGES.InvalidApplicationUID, 'Pod', p.namespace, p.name, u.message, u.path));
    for (const d of kube.deployments) {
      for (const u of uidProblems(d.template.containers, 'spec.template.spec.containers')) out.push(findingAbout(MESSAGES.InvalidApplicationUID, 'Deployment', d.namespace, d.name, u.message, u.path));
    }
    return out;
  },
};

