/**
 * Spec types of the config kinds (and of their parts) that the model, the generators and the analyzers
 * read, from the generated config API (proto/ → src/gen/config).
 */
export type {
  VirtualService,
  DestinationRule,
  Gateway,
  Sidecar,
  ServiceEntry,
  WorkloadEntry,
} from '../gen/config/schemas.js';

import type { VirtualService, DestinationRule, Gateway, Sidecar } from '../gen/config/schemas.js';

type Item<T> = T extends ReadonlyArray<infer U> ? U : never;

export type HTTPRoute = Item<NonNullable<VirtualService['http']>>;
export type HTTPMatchRequest = Item<NonNullable<HTTPRoute['match']>>;
export type HTTPRouteDestination = Item<NonNullable<HTTPRoute['route']>>;
export type TCPRoute = Item<NonNullable<VirtualService['tcp']>>;
export type TLSRoute = Item<NonNullable<VirtualService['tls']>>;
export type TrafficPolicy = NonNullable<DestinationRule['trafficPolicy']>;
export type Subset = Item<NonNullable<DestinationRule['subsets']>>;
export type GatewayServer = Item<NonNullable<Gateway['servers']>>;
export type SidecarEgress = Item<NonNullable<Sidecar['egress']>>;
