/**
 * ServiceEntry analyzers: a ServiceEntry without ports gives proxies nothing to route to
 * (MESH0106); TCP-level ports need addresses (MESH0134); the services defining one host agree on
 * each port's protocol (MESH0135).
 */
import { join } from '../../config/validation/common.js';
import type { ServiceEntry } from '../../config/spec-types.js';
import { resolveHost } from '../../model/host.js';
import { parseProtocol } from '../../model/service.js';
import { MESSAGES, finding } from '../messages.js';
import type { AnalysisContext, AnalysisInput, Analyzer, Finding } from '../types.js';

export const serviceEntryPortsAnalyzer: Analyzer = {
  name: 'serviceentry.ports',
  description: 'Checks that every ServiceEntry declares at least one port.',
  codes: [MESSAGES.ServiceEntryWithoutPorts.code],
  analyze(input: AnalysisInput): Finding[] {
    const out: Finding[] = [];
    for (const se of input.configs.list<ServiceEntry>('ServiceEntry')) {
      if ((se.spec.ports ?? []).length > 0) continue;
      out.push(
        finding(MESSAGES.ServiceEntryWithoutPorts, se, `ServiceEntry declares no ports: proxies get no listener or cluster for ${se.spec.hosts.join(', ')}`, 'spec.ports'),
      );
    }
    return out;
  },
};

/** Protocols whose traffic the proxy can tell apart without an address (HTTP by Host, TLS by SNI). */
const ADDRESS_FREE = new Set(['HTTP', 'HTTPS', 'HTTP2', 'GRPC', 'GRPC-WEB', 'TLS']);

export const serviceEntryAddressesAnalyzer: Analyzer = {
  name: 'serviceentry.addresses',
  description: 'Checks that ServiceEntries with TCP-level ports have addresses.',
  codes: [MESSAGES.ServiceEntryAddressesRequired.code],
  analyze(input: AnalysisInput): Finding[] {
    const out: Finding[] = [];
    for (const se of input.configs.list<ServiceEntry>('ServiceEntry')) {
      if ((se.spec.addresses ?? []).length > 0) continue;
      (se.spec.ports ?? []).forEach((p, i) => {
        const protocol = (p.protocol ?? '').toUpperCase();
        if (ADDRESS_FREE.has(protocol)) return;
        out.push(
          finding(
            MESSAGES.ServiceEntryAddressesRequired,
            se,
            `port ${p.number} (${protocol || 'no protocol'}) is matched by address only, but the ServiceEntry has no addresses: its traffic mixes with any other to port ${p.number}`,
            join('spec.ports', i, 'protocol'),
          ),
        );
      });
    }
    return out;
  },
};

export const serviceProtocolsAnalyzer: Analyzer = {
  name: 'service.protocols',
  description: 'Checks that the services defining one host agree on the protocol of each port.',
  codes: [MESSAGES.ConflictingServiceProtocols.code],
  analyze(input: AnalysisInput, ctx: AnalysisContext): Finding[] {
    const out: Finding[] = [];
    for (const se of input.configs.list<ServiceEntry>('ServiceEntry')) {
      for (const h of se.spec.hosts ?? []) {
        const host = resolveHost(h, se.meta.namespace, input.mesh.domain);
        const others = ctx.servicesOf(host).filter((s) => !(s.registry === 'ServiceEntry' && s.name === se.meta.name && s.namespace === se.meta.namespace));
        (se.spec.ports ?? []).forEach((p, i) => {
          const mine = parseProtocol(p.protocol);
          for (const o of others) {
            const theirs = o.ports.find((x) => x.port === p.number);
            if (!theirs || theirs.protocol === mine || theirs.protocol === 'UNSUPPORTED' || mine === 'UNSUPPORTED') continue;
            const what = o.registry === 'ServiceEntry' ? `ServiceEntry ${o.namespace}/${o.name}` : `Service ${o.namespace}/${o.name}`;
            out.push(finding(MESSAGES.ConflictingServiceProtocols, se, `port ${p.number} of ${host} is ${mine} here but ${theirs.protocol} in ${what}`, join('spec.ports', i, 'protocol')));
          }
        });
      }
    }
    return out;
  },
};
