import type { Endpoint, Service } from './service.js';

/** What changed in a registry. `endpointsOnly` events take the fast path that keeps the snapshot. */
export interface RegistryEvent {
  readonly registry: string;
  /** Hostnames whose endpoints changed. */
  readonly endpointHosts: ReadonlyArray<string>;
  /** True when services themselves (hosts, ports, addresses) changed; the snapshot must be rebuilt. */
  readonly servicesChanged: boolean;
  /** When the change was observed (ms since epoch; ConfigEvent.observedAt); absent: when the event was emitted. */
  readonly observedAt?: number;
}

/** One contract for all registries; the aggregate combines them. */
export interface ServiceRegistry {
  readonly id: string;
  services(): ReadonlyArray<Service>;
  /** Endpoints of a service (hostname, namespace) for all its ports. */
  endpoints(service: Service): ReadonlyArray<Endpoint>;
  onEvent(handler: (event: RegistryEvent) => void): () => void;
  hasSynced(): boolean;
  /**
   * Services left out because another source defines the same host in the same namespace (an
   * aggregate of registries reports them; a single registry has none).
   */
  shadowedServices?(): ReadonlyArray<string>;
  /**
   * A change still being computed over turns (the ServiceEntry registry's large ones, docs/adr/0204):
   * resolves once its event is emitted; undefined when there is none.
   */
  computing?(): Promise<void> | undefined;
  /** Start watching (no-op for static registries). */
  start?(): Promise<void>;
  stop?(): void;
}

/** Small helper for registries: a set of listeners. */
export class EventHub<E> {
  private readonly handlers = new Set<(e: E) => void>();
  on(handler: (e: E) => void): () => void {
    this.handlers.add(handler);
    return () => this.handlers.delete(handler);
  }
  emit(event: E): void {
    for (const h of this.handlers) h(event);
  }
}
