import { EventHub, type RegistryEvent, type ServiceRegistry } from '../model/registry.js';
import { NO_LOCALITY, type Endpoint, type Service } from '../model/service.js';

/**
 * The Mock registry: a fixed, documented set of services on loopback so a new user sees a working
 * mesh without a cluster (see docs/mock-registry.md). Endpoint ports are where `npm run demo` starts
 * its backends.
 */
interface MockEndpoint {
  readonly port: number;
  readonly labels: Record<string, string>;
}

interface MockService {
  readonly name: string;
  readonly namespace: string;
  readonly port: { name: string; port: number; protocol: Service['ports'][number]['protocol'] };
  readonly address: string;
  readonly serviceAccount: string;
  readonly endpoints: ReadonlyArray<MockEndpoint>;
}

export const MOCK_SERVICES: ReadonlyArray<MockService> = [
  {
    name: 'echo',
    namespace: 'default',
    port: { name: 'grpc', port: 7070, protocol: 'GRPC' },
    address: '10.96.0.10',
    serviceAccount: 'echo',
    endpoints: [
      { port: 17070, labels: { app: 'echo', version: 'v1' } },
      { port: 17071, labels: { app: 'echo', version: 'v2' } },
    ],
  },
  {
    name: 'ratings',
    namespace: 'default',
    port: { name: 'http', port: 9080, protocol: 'HTTP' },
    address: '10.96.0.11',
    serviceAccount: 'ratings',
    endpoints: [{ port: 19080, labels: { app: 'ratings', version: 'v1' } }],
  },
  {
    name: 'db',
    namespace: 'data',
    port: { name: 'tcp-postgres', port: 5432, protocol: 'TCP' },
    address: '10.96.0.12',
    serviceAccount: 'db',
    endpoints: [{ port: 15432, labels: { app: 'db' } }],
  },
];

export class MockRegistry implements ServiceRegistry {
  readonly id = 'Mock';
  private readonly hub = new EventHub<RegistryEvent>();
  private readonly list: ReadonlyArray<Service>;
  private readonly eps = new Map<string, ReadonlyArray<Endpoint>>();

  constructor(domain: string, clusterId: string) {
    this.list = MOCK_SERVICES.map((m) => {
      const hostname = `${m.name}.${m.namespace}.svc.${domain}`;
      const svc: Service = Object.freeze({
        hostname,
        namespace: m.namespace,
        name: m.name,
        ports: [m.port],
        addresses: [m.address],
        resolution: 'ClientSideLB',
        meshExternal: false,
        labels: { app: m.name },
        serviceAccounts: [`spiffe://cluster.local/ns/${m.namespace}/sa/${m.serviceAccount}`],
        clusterId,
        registry: 'Mock',
        creationTime: 0,
      });
      this.eps.set(
        hostname,
        m.endpoints.map((e, i) =>
          Object.freeze({
            address: '127.0.0.1',
            port: e.port,
            servicePortName: m.port.name,
            labels: e.labels,
            serviceAccount: m.serviceAccount,
            locality: NO_LOCALITY,
            network: '',
            clusterId,
            weight: 1,
            healthy: true,
            tlsMode: 'disabled' as const,
            workload: `${m.name}-${i}.${m.namespace}`,
          }),
        ),
      );
      return svc;
    });
  }

  services(): ReadonlyArray<Service> {
    return this.list;
  }

  endpoints(service: Service): ReadonlyArray<Endpoint> {
    return this.eps.get(service.hostname) ?? [];
  }

  onEvent(handler: (event: RegistryEvent) => void): () => void {
    return this.hub.on(handler);
  }

  hasSynced(): boolean {
    return true;
  }
}
