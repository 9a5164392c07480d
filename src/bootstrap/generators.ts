import type { Proxy } from '../model/proxy.js';
import { gatewayGenerators } from '../xds/generators/gateway.js';
import { grpcGenerators } from '../xds/generators/grpc.js';
import { sidecarGenerators } from '../xds/generators/sidecar.js';
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
