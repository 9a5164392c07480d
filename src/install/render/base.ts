/**
 * Component Base: what every control plane of the cluster shares. The config-kind CRDs (from
 * `crds/`, given as input), the control-plane Namespace, the service accounts
 * `meshd-service-account` and `mesh-reader-service-account`, the reader's ClusterRole and binding,
 * and the ValidatingWebhookConfiguration `mesh-<namespace>`. With meshd disabled and
 * `values.global.remoteMeshdAddress` set (profile `remote`), the webhooks point at that remote meshd,
 * and the injection webhook is rendered here.
 */
import { NETWORK_LABEL } from '../labels.js';
import { cloneTree } from '../tree.js';
import { objectHead, ownershipLabels, subject, type RenderContext } from './context.js';
import { readerClusterRules } from './rbac.js';
import type { K8sObject } from './types.js';
import { renderInjectorWebhook, renderValidatingWebhook, type WebhookTarget } from './webhooks.js';

export const MESHD_SERVICE_ACCOUNT = 'meshd-service-account';
export const READER_SERVICE_ACCOUNT = 'mesh-reader-service-account';
const COMPONENT = 'Base';

export function baseNamespace(ctx: RenderContext): string {
  return ctx.spec.components?.base?.namespace || ctx.namespace;
}

/** Where the webhooks send requests: the remote meshd when meshd is off here and an address is set. */
export function webhookTarget(ctx: RenderContext): WebhookTarget {
  const remote = ctx.values.global?.remoteMeshdAddress;
  if (ctx.spec.components?.meshd?.enabled === false && remote) return { remoteAddress: remote };
  return { service: ctx.suffixed('meshd'), namespace: ctx.spec.components?.meshd?.namespace || ctx.namespace };
}

function labelCrd(ctx: RenderContext, crd: K8sObject): K8sObject {
  const copy = cloneTree(crd);
  copy.metadata.labels = ownershipLabels(ctx, COMPONENT, copy.metadata.labels ?? {});
  return copy;
}

export function renderBase(ctx: RenderContext, crds: readonly K8sObject[]): K8sObject[] {
  const ns = baseNamespace(ctx);
  const nsLabels: Record<string, string> = {};
  if (ctx.values.global?.network) nsLabels[NETWORK_LABEL] = ctx.values.global.network;
  const readerName = `mesh-reader-clusterrole-${ns}`;
  const objects: K8sObject[] = [
    ...crds.map((c) => labelCrd(ctx, c)),
    objectHead(ctx, COMPONENT, 'v1', 'Namespace', ns, { labels: nsLabels }),
    objectHead(ctx, COMPONENT, 'v1', 'ServiceAccount', MESHD_SERVICE_ACCOUNT, { namespace: ns, labels: { app: 'meshd' } }),
    objectHead(ctx, COMPONENT, 'v1', 'ServiceAccount', READER_SERVICE_ACCOUNT, { namespace: ns, labels: { app: 'mesh-reader' } }),
    { ...objectHead(ctx, COMPONENT, 'rbac.authorization.k8s.io/v1', 'ClusterRole', readerName, { labels: { app: 'mesh-reader' } }), rules: readerClusterRules() },
    {
      ...objectHead(ctx, COMPONENT, 'rbac.authorization.k8s.io/v1', 'ClusterRoleBinding', readerName, { labels: { app: 'mesh-reader' } }),
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: readerName },
      subjects: [subject(READER_SERVICE_ACCOUNT, ns)],
    },
  ];
  const target = webhookTarget(ctx);
  objects.push(renderValidatingWebhook(ctx, COMPONENT, target));
  if ('remoteAddress' in target) objects.push(renderInjectorWebhook(ctx, COMPONENT, target));
  return objects;
}
