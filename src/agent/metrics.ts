/**
 * The agent's own metrics, served merged on the status port (./status.ts). A registry per agent,
 * so tests can run several in one process.
 */
import { Counter, Gauge, Registry } from 'prom-client';

export interface AgentMetrics {
  readonly registry: Registry;
  readonly certificateRequests: Counter<'result' | 'credential'>;
  readonly certificateExpiry: Gauge;
  readonly sdsStreams: Gauge;
  readonly scrapeFailures: Counter<'source'>;
  readonly dnsRequests: Counter<'answer' | 'transport'>;
  readonly dnsNames: Gauge;
}

export function agentMetrics(streams: () => number): AgentMetrics {
  const registry = new Registry();
  return {
    registry,
    certificateRequests: new Counter({ name: 'mesh_agent_certificate_requests_total', help: 'Certificate requests to the certificate service, by result and by the credential used (token, certificate).', labelNames: ['result', 'credential'], registers: [registry] }),
    certificateExpiry: new Gauge({ name: 'mesh_agent_certificate_expiry_timestamp_seconds', help: 'When the workload certificate the agent holds expires (Unix seconds).', registers: [registry] }),
    sdsStreams: new Gauge({
      name: 'mesh_agent_sds_streams',
      help: 'Open SDS streams on the agent socket.',
      registers: [registry],
      collect() {
        this.set(streams());
      },
    }),
    scrapeFailures: new Counter({ name: 'mesh_agent_scrape_failures_total', help: 'Merged-metrics scrapes of Envoy or the application that failed.', labelNames: ['source'], registers: [registry] }),
    dnsRequests: new Counter({
      name: 'mesh_agent_dns_requests_total',
      help: 'DNS messages the agent\'s DNS proxy handled, by answer (table, forwarded, upstream_failed, overloaded, malformed) and transport (udp, tcp).',
      labelNames: ['answer', 'transport'],
      registers: [registry],
    }),
    dnsNames: new Gauge({ name: 'mesh_agent_dns_names', help: 'Hostnames in the name table the agent last received from meshd.', registers: [registry] }),
  };
}
