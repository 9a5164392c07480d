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

/** Namespaces no injection webhook selects, whatever their labels: the system's and the control plane's. */
export const NEVER_INJECTED_NAMESPACES: ReadonlyArray<string> = Object.freeze(['kube-system', 'kube-public', 'kube-node-lease']);
const NAMESPACE_NAME_LABEL = 'kubernetes.io/metadata.name';

/** The requirement that keeps the system namespaces and `meshNamespace` out of an injection webhook. */
export function outsideSystemNamespaces(meshNamespace: string): Requirement {
  return req(NAMESPACE_NAME_LABEL, 'NotIn', [...new Set([...NEVER_INJECTED_NAMESPACES, meshNamespace])]);
}

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
 * A pod labelled `sidecar.mesh.io/inject=false` is never injected, and no pod of the system
 * namespaces or of the control plane's own: with failurePolicy Fail, a meshd that is down only
 * delays the pods of the namespaces that asked for the mesh, never the cluster's or its own.
 */
export function renderInjectorWebhook(ctx: RenderContext, component: ComponentName, target: WebhookTarget): K8sObject {
  const outside = outsideSystemNamespaces(ctx.namespace);
  const webhooks = ctx.revision
    ? [
        injectionWebhook('rev.namespace.sidecar-injector.mesh.io', target, [req(REVISION_LABEL, 'In', [ctx.revision]), req(INJECTION_NAMESPACE_LABEL, 'DoesNotExist'), outside], [req(INJECT_POD_LABEL, 'NotIn', ['false'])]),
        injectionWebhook('rev.object.sidecar-injector.mesh.io', target, [req(REVISION_LABEL, 'DoesNotExist'), req(INJECTION_NAMESPACE_LABEL, 'DoesNotExist'), outside], [req(INJECT_POD_LABEL, 'NotIn', ['false']), req(REVISION_LABEL, 'In', [ctx.revision])]),
      ]
    : [
        injectionWebhook('namespace.sidecar-injector.mesh.io', target, [req(INJECTION_NAMESPACE_LABEL, 'In', ['enabled']), outside], [req(INJECT_POD_LABEL, 'NotIn', ['false'])]),
        injectionWebhook('object.sidecar-injector.mesh.io', target, [req(INJECTION_NAMESPACE_LABEL, 'DoesNotExist'), req(REVISION_LABEL, 'DoesNotExist'), outside], [req(INJECT_POD_LABEL, 'In', ['true']), req(REVISION_LABEL, 'DoesNotExist')]),
      ];
  return {
    ...objectHead(ctx, component, 'admissionregistration.k8s.io/v1', 'MutatingWebhookConfiguration', injectorWebhookName(ctx), { labels: { app: 'sidecar-injector' } }),
    webhooks,
  };
}

/**
 * ValidatingWebhookConfiguration `mesh-<namespace>` for create and update of the config kinds, named
 * one by one (not their groups' every resource). failurePolicy Ignore: a meshd that is down never
 * blocks a write; meshd validates what it reads in any case.
 */
export function renderValidatingWebhook(ctx: RenderContext, component: ComponentName, target: WebhookTarget): K8sObject {
  const groups = [...new Set(CONFIG_KINDS.map((k) => k.group))].sort();
  const rules = groups.map((g) => ({
    operations: ['CREATE', 'UPDATE'],
    apiGroups: [g],
    apiVersions: ['*'],
    resources: CONFIG_KINDS.filter((k) => k.group === g).map((k) => k.plural).sort(),
    scope: '*',
  }));
  return {
    ...objectHead(ctx, component, 'admissionregistration.k8s.io/v1', 'ValidatingWebhookConfiguration', validatingWebhookName(ctx), { labels: { app: 'meshd' } }),
    webhooks: [
      {
        name: 'validation.mesh.io',
        clientConfig: clientConfig(target, '/validate'),
        rules,
        failurePolicy: 'Ignore',
        sideEffects: 'None',
        admissionReviewVersions: ['v1'],
      },
    ],
  };
}
