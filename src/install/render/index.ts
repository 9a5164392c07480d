/**
 * `renderManifests(spec) → {component, objects}[]`: the Kubernetes objects of an installation,
 * computed by pure functions of the validated spec (and the CRDs, which are read beforehand). No
 * templating: each component is typed code. Components come in dependency order (Base, Meshd,
 * IngressGateways, EgressGateways); a component is rendered unless `enabled: false`, and a
 * component with no objects is left out. Each component's overlays are applied after it is
 * rendered (a gateway's overlays to that gateway's objects), then its objects are sorted by kind
 * order, namespace and name. The same input always gives the same output.
 */
import type { MeshOperatorSpec } from '../api.js';
import { InstallError } from '../errors.js';
import { renderBase } from './base.js';
import { renderContext } from './context.js';
import { gatewayComponent, renderGateway, type GatewayKind } from './gateways.js';
import { renderMeshd } from './meshd.js';
import { applyOverlays } from './overlay.js';
import { sortObjects } from './order.js';
import { COMPONENT_NAMES, type ComponentManifest, type ComponentName, type K8sObject, type Owner } from './types.js';

export { COMPONENT_NAMES, type ComponentManifest, type ComponentName, type K8sObject, type Owner };

export interface RenderOptions {
  readonly owner: Owner;
  /** The config-kind CRDs (src/install/sources.ts `readCrds`). */
  readonly crds: readonly K8sObject[];
}

function dedupe(objects: readonly K8sObject[]): K8sObject[] {
  const seen = new Map<string, K8sObject>();
  for (const o of objects) {
    const key = `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`;
    if (!seen.has(key)) seen.set(key, o);
    else if (o.kind !== 'Namespace') throw new InstallError(`two objects ${o.kind} ${o.metadata.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata.name} would be rendered; give them different names`);
  }
  return [...seen.values()];
}

function renderGateways(spec: MeshOperatorSpec, kind: GatewayKind, render: (gw: Parameters<typeof renderGateway>[2]) => K8sObject[]): K8sObject[] {
  const key = kind === 'ingress' ? 'ingressGateways' : 'egressGateways';
  const out: K8sObject[] = [];
  (spec.components?.[key] ?? []).forEach((gw, i) => {
    if (gw.enabled === false) return;
    out.push(...applyOverlays(render(gw), gw.k8s?.overlays, gatewayComponent(kind), `spec.components.${key}[${i}].k8s.overlays`));
  });
  return out;
}

export function renderManifests(spec: MeshOperatorSpec, opts: RenderOptions): ComponentManifest[] {
  const ctx = renderContext(spec, opts.owner);
  const comps = spec.components ?? {};
  const rendered: Array<[ComponentName, K8sObject[]]> = [];
  if (comps.base?.enabled !== false) {
    rendered.push(['Base', applyOverlays(renderBase(ctx, opts.crds), comps.base?.k8s?.overlays, 'Base', 'spec.components.base.k8s.overlays')]);
  }
  if (comps.meshd?.enabled !== false) {
    rendered.push(['Meshd', applyOverlays(renderMeshd(ctx), comps.meshd?.k8s?.overlays, 'Meshd', 'spec.components.meshd.k8s.overlays')]);
  }
  rendered.push(['IngressGateways', renderGateways(spec, 'ingress', (gw) => renderGateway(ctx, 'ingress', gw))]);
  rendered.push(['EgressGateways', renderGateways(spec, 'egress', (gw) => renderGateway(ctx, 'egress', gw))]);
  return rendered.filter(([, objects]) => objects.length > 0).map(([component, objects]) => ({ component, objects: sortObjects(dedupe(objects)) }));
}

/** Every object of the manifests, in order. */
export function allObjects(manifests: readonly ComponentManifest[]): K8sObject[] {
  return manifests.flatMap((m) => [...m.objects]);
}
