/**
 * The CUSTOM providers of one workload's AuthorizationPolicies, resolved for its proxy (docs/adr/0101):
 * the mesh config's `extensionProviders` entry and the outbound cluster of its service
 * (`[<namespace>/]<hostname>` and port). A provider that is not declared, whose service the proxy
 * cannot see, or any provider while `--plugins` leaves out ext_authz, is absent: policies naming it
 * fail closed (authz.ts).
 */
import type { Proxy } from '../../model/proxy.js';
import type { PushContext } from '../../model/push-context.js';
import type { WorkloadAuthz } from '../../model/policy/index.js';
import { outboundClusterName } from '../envoy/names.js';
import type { ExtAuthzTarget } from '../envoy/security/ext-authz.js';
import type { GeneratorSettings } from './types.js';

export interface WorkloadExtAuthz {
  readonly targets: ReadonlyMap<string, ExtAuthzTarget>;
  /** Equal keys, equal targets (provider names and clusters, or `-` for one that fails closed). */
  readonly key: string;
}

const NONE: WorkloadExtAuthz = Object.freeze({ targets: new Map(), key: '' });

/** `[<namespace>/]<hostname>` of a provider's service. */
export function providerService(service: string): { namespace?: string; host: string } {
  const slash = service.indexOf('/');
  return slash < 0 ? { host: service } : { namespace: service.slice(0, slash), host: service.slice(slash + 1) };
}

export function workloadExtAuthz(proxy: Proxy, push: PushContext, settings: GeneratorSettings, authz: WorkloadAuthz): WorkloadExtAuthz {
  const names = new Set(authz.policies.filter((p) => p.action === 'CUSTOM' && p.provider !== undefined).map((p) => p.provider!));
  if (names.size === 0 || !settings.extAuthz) return NONE;
  const targets = new Map<string, ExtAuthzTarget>();
  const keys: string[] = [];
  for (const name of [...names].sort()) {
    const provider = push.mesh.extensionProviders?.find((p) => p.name === name);
    const spec = provider?.envoyExtAuthzHttp ?? provider?.envoyExtAuthzGrpc;
    if (!provider || !spec) {
      keys.push(`${name}=-`);
      continue;
    }
    const { namespace, host } = providerService(spec.service);
    const visible = push.visibleServices(proxy).some((s) => s.hostname === host && (namespace === undefined || s.namespace === namespace) && s.ports.some((p) => p.port === spec.port));
    if (!visible) {
      keys.push(`${name}=-`);
      continue;
    }
    const cluster = outboundClusterName(spec.port, '', host);
    targets.set(name, { provider, kind: provider.envoyExtAuthzHttp ? 'http' : 'grpc', host, port: spec.port, cluster });
    keys.push(`${name}=${cluster}`);
  }
  return { targets, key: keys.join(',') };
}
