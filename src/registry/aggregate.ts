import { EventHub, type RegistryEvent, type ServiceRegistry } from '../model/registry.js';
import type { Endpoint, Service } from '../model/service.js';

/** Combines registries behind the one contract; events are forwarded as they come. */
export class AggregateRegistry implements ServiceRegistry {
  readonly id = 'Aggregate';
  private readonly hub = new EventHub<RegistryEvent>();
  private readonly owners = new Map<string, ServiceRegistry>();

  constructor(private readonly registries: ReadonlyArray<ServiceRegistry>) {
    for (const r of registries) r.onEvent((e) => this.hub.emit(e));
  }

  async start(): Promise<void> {
    await Promise.all(this.registries.map((r) => r.start?.()));
  }

  stop(): void {
    for (const r of this.registries) r.stop?.();
  }

  services(): ReadonlyArray<Service> {
    this.owners.clear();
    const out: Service[] = [];
    for (const r of this.registries) {
      for (const s of r.services()) {
        out.push(s);
        this.owners.set(`${s.hostname}|${s.namespace}`, r);
      }
    }
    return out;
  }

  endpoints(service: Service): ReadonlyArray<Endpoint> {
    const owner = this.owners.get(`${service.hostname}|${service.namespace}`) ?? this.registries.find((r) => r.id === service.registry);
    return owner ? owner.endpoints(service) : [];
  }

  /** All endpoints of a hostname across registries and namespaces. */
  endpointsForHost(hostname: string, services: ReadonlyArray<Service>): Endpoint[] {
    const out: Endpoint[] = [];
    for (const s of services) if (s.hostname === hostname) out.push(...this.endpoints(s));
    return out;
  }

  onEvent(handler: (event: RegistryEvent) => void): () => void {
    return this.hub.on(handler);
  }

  hasSynced(): boolean {
    return this.registries.every((r) => r.hasSynced());
  }
}
