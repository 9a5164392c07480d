/**
 * The admission webhook configurations served by meshd on its webhook port (15017, exposed as port
 * 443 of the meshd Service): sidecar injection (mutating, `/inject`) and validation of the config
 * kinds (validating, `/validate`). No CA bundle is rendered: meshd patches it in at start-up
 * (INJECTION_WEBHOOK_CONFIG_NAME, VALIDATION_WEBHOOK_CONFIG_NAME), which is why validation starts
 * with failurePolicy Ignore.
 */
import { CONFIG_KINDS } from '../../config/kinds.js';
import { INJECTION_NAMESPACE_LABEL, INJECT_POD_LABEL, REVISION_LABEL } from '../labels.js';
import { objectHead, type RenderContext } from './context.js';
import type { ComponentName, K8sObject } from './types.js';

export const WEBHOOK_PORT = 15017;
export const WEBHOOK_SERVICE_PORT = 443;

/** Where the API server sends admission requests: the meshd Service, or a URL for a remote meshd. */
export type WebhookTarget = { readonly service: string; readonly namespace: string } | { readonly remoteAddress: string };

function clientConfig(target: WebhookTarget, path: string): Record<string, unknown> {
  if ('remoteAddress' in target) {
    const hasPort = /:\d+$/.test(target.remoteAddress);
    return { url: `https://${target.remoteAddress}${hasPort ? '' : `:${WEBHOOK_PORT}`}${path}` };
  }
  return { service: { name: target.service, namespace: target.namespace, path, port: WEBHOOK_SERVICE_PORT } };
}

export function injectorWebhookName(ctx: RenderContext): string {
  return ctx.suffixed('mesh-sidecar-injector');
}

export function validatingWebhookName(ctx: RenderContext): string {
  return `mesh-${ctx.namespace}`;
}

type Requirement = { key: string; operator: 'In' | 'NotIn' | 'DoesNotExist' | 'Exists'; values?: string[] };
const req = (key: string, operator: Requirement['operator'], values?: string[]): Requirement => (values ? { key, operator, values } : { key, operator });

function injectionWebhook(name: string, target: WebhookTarget, namespaceSelector: Requirement[], objectSelector: Requirement[]): Record<string, unknown> {
  return {
    name,
    clientConfig: clientConfig(target, '/inject'),
    rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }],
    failurePolicy: 'Fail',
    sideEffects: 'None',
    reinvocationPolicy: 'Never',
    admissionReviewVersions: ['v1'],
    namespaceSelector: { matchExpressions: namespaceSelector },
    objectSelector: { matchExpressions: objectSelector },
  };
}

/**
 * MutatingWebhookConfiguration `mesh-sidecar-injector[-R]`. The default revision injects pods of
 * namespaces labelled `mesh-injection=enabled`, and pods labelled `sidecar.mesh.io/inject=true`
 * in unlabelled namespaces; revision R does the same for `mesh.io/rev=R` on the namespace or pod.
 * A pod labelled `sidecar.mesh.io/inject=false` is never injected.
 */
export function renderInjectorWebhook(ctx: RenderContext, component: ComponentName, target: WebhookTarget): K8sObject {
  const webhooks = ctx.revision
    ? [
        injectionWebhook('rev.namespace.sidecar-injector.mesh.io', target, [req(REVISION_LABEL, 'In', [ctx.revision]), req(INJECTION_NAMESPACE_LABEL, 'DoesNotExist')], [req(INJECT_POD_LABEL, 'NotIn', ['false'])]),
        injectionWebhook('rev.object.sidecar-injector.mesh.io', target, [req(REVISION_LABEL, 'DoesNotExist'), req(INJECTION_NAMESPACE_LABEL, 'DoesNotExist')], [req(INJECT_POD_LABEL, 'NotIn', ['false']), req(REVISION_LABEL, 'In', [ctx.revision])]),
      ]
    : [
        injectionWebhook('namespace.sidecar-injector.mesh.io', target, [req(INJECTION_NAMESPACE_LABEL, 'In', ['enabled'])], [req(INJECT_POD_LABEL, 'NotIn', ['false'])]),
        injectionWebhook('object.sidecar-injector.mesh.io', target, [req(INJECTION_NAMESPACE_LABEL, 'DoesNotExist'), req(REVISION_LABEL, 'DoesNotExist')], [req(INJECT_POD_LABEL, 'In', ['true']), req(REVISION_LABEL, 'DoesNotExist')]),
      ];
  return {
    ...objectHead(ctx, component, 'admissionregistration.k8s.io/v1', 'MutatingWebhookConfiguration', injectorWebhookName(ctx), { labels: { app: 'sidecar-injector' } }),
    webhooks,
  };
}

/** ValidatingWebhookConfiguration `mesh-<namespace>` for create and update of every config kind. */
export function renderValidatingWebhook(ctx: RenderContext, component: ComponentName, target: WebhookTarget): K8sObject {
  const groups = [...new Set(CONFIG_KINDS.map((k) => k.group))].sort();
  return {
    ...objectHead(ctx, component, 'admissionregistration.k8s.io/v1', 'ValidatingWebhookConfiguration', validatingWebhookName(ctx), { labels: { app: 'meshd' } }),
    webhooks: [
      {
        name: 'validation.mesh.io',
        clientConfig: clientConfig(target, '/validate'),
        rules: [{ operations: ['CREATE', 'UPDATE'], apiGroups: groups, apiVersions: ['*'], resources: ['*'], scope: '*' }],
        failurePolicy: 'Ignore',
        sideEffects: 'None',
        admissionReviewVersions: ['v1'],
      },
    ],
  };
}
