import { EventHub, type RegistryEvent, type ServiceRegistry } from '../model/registry.js';
import type { Endpoint, Service } from '../model/service.js';

/**
 * Combines registries behind the one contract; events are forwarded as they come. When two registries
 * define the same hostname in the same namespace, the earlier registry in the list wins and the other
 * definition is left out (its endpoints are not mixed in).
 */
export class AggregateRegistry implements ServiceRegistry {
  readonly id = 'Aggregate';
  private readonly hub = new EventHub<RegistryEvent>();
  private readonly byId: ReadonlyMap<string, ServiceRegistry>;
  private shadowed: string[] = [];

  constructor(private readonly registries: ReadonlyArray<ServiceRegistry>) {
    this.byId = new Map(registries.map((r) => [r.id, r]));
    for (const r of registries) r.onEvent((e) => this.hub.emit(e));
  }

  async start(): Promise<void> {
    await Promise.all(this.registries.map((r) => r.start?.()));
  }

  stop(): void {
    for (const r of this.registries) r.stop?.();
  }

  services(): ReadonlyArray<Service> {
    const seen = new Set<string>();
    const shadowed: string[] = [];
    const out: Service[] = [];
    for (const r of this.registries) {
      for (const s of r.services()) {
        const key = `${s.namespace}/${s.hostname}`;
        if (seen.has(key)) {
          shadowed.push(`${key} (${r.id})`);
          continue;
        }
        seen.add(key);
        out.push(s);
      }
    }
    this.shadowed = shadowed;
    return out;
  }

  /** Services left out because an earlier registry defines the same host in the same namespace. */
  shadowedServices(): ReadonlyArray<string> {
    return this.shadowed;
  }

  endpoints(service: Service): ReadonlyArray<Endpoint> {
    return this.byId.get(service.registry)?.endpoints(service) ?? [];
  }

  onEvent(handler: (event: RegistryEvent) => void): () => void {
    return this.hub.on(handler);
  }

  hasSynced(): boolean {
    return this.registries.every((r) => r.hasSynced());
  }
}
