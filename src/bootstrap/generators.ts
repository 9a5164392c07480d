import type { Proxy } from '../model/proxy.js';
import { gatewayGenerators } from '../xds/generators/gateway.js';
import { grpcGenerators } from '../xds/generators/grpc.js';
import { listenerConflicts, sidecarGenerators, type ListenerConflicts } from '../xds/generators/sidecar.js';
import type { EndpointIndex } from '../model/endpoint-index.js';
import type { PushContext } from '../model/push-context.js';
import type { GeneratorSet } from '../xds/generators/types.js';

/** The generator set for a proxy kind. */
export function generatorsFor(proxy: Proxy): GeneratorSet {
  switch (proxy.type) {
    case 'grpc':
      return grpcGenerators;
    case 'router':
      return gatewayGenerators;
    default:
      return sidecarGenerators;
  }
}

/** The listener conflicts of a proxy's listeners, for the generator set it gets (sidecars only have them). */
export function listenerConflictsFor(proxy: Proxy, push: PushContext, endpoints: EndpointIndex): ListenerConflicts | undefined {
  return generatorsFor(proxy) === sidecarGenerators ? listenerConflicts(proxy, push, endpoints) : undefined;
}
