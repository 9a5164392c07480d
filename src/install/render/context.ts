/**
 * What every render function needs from a validated spec, with its defaults applied once: the
 * namespace, revision and its name suffix, images, ownership, and helpers that build the metadata,
 * pod settings and autoscaling objects the components share. Everything here is pure.
 */
import { DEFAULT_NAMESPACE, type ComponentSpec, type EnvVar, type HpaSpec, type K8sSettings, type MeshOperatorSpec, type PodDisruptionBudgetSpec, type Values } from '../api.js';
import {
  COMPONENT_LABEL,
  DEFAULT_REVISION_LABEL_VALUE,
  OWNING_RESOURCE_LABEL,
  OWNING_RESOURCE_NAMESPACE_LABEL,
  REVISION_LABEL,
} from '../labels.js';
import type { ComponentName, K8sObject, Owner } from './types.js';

export const DEFAULT_HUB = 'docker.io/meshproject';
export const DEFAULT_CLUSTER_ID = 'Cluster';
export const DNS_DOMAIN = 'cluster.local';

export interface RenderContext {
  readonly spec: MeshOperatorSpec;
  readonly values: Values;
  /** Control-plane namespace. */
  readonly namespace: string;
  /** Revision, empty for the default one (`default` counts as empty). */
  readonly revision: string;
  /** Value of the revision label. */
  readonly revisionLabel: string;
  readonly owner: Owner;
  readonly clusterId: string;
  /** `name` or `name-<revision>`. */
  suffixed(name: string): string;
}

export function renderContext(spec: MeshOperatorSpec, owner: Owner): RenderContext {
  const revision = spec.revision === 'default' ? '' : (spec.revision ?? '');
  const values: Values = spec.values ?? {};
  return {
    spec,
    values,
    namespace: spec.namespace || DEFAULT_NAMESPACE,
    revision,
    revisionLabel: revision || DEFAULT_REVISION_LABEL_VALUE,
    owner,
    clusterId: values.global?.multiCluster?.clusterName || DEFAULT_CLUSTER_ID,
    suffixed: (name) => (revision ? `${name}-${revision}` : name),
  };
}

/** The ownership and revision labels of every rendered object, after `extra`. */
export function ownershipLabels(ctx: RenderContext, component: ComponentName, extra: Record<string, string> = {}): Record<string, string> {
  return {
    ...extra,
    [REVISION_LABEL]: ctx.revisionLabel,
    [OWNING_RESOURCE_LABEL]: ctx.owner.name,
    [OWNING_RESOURCE_NAMESPACE_LABEL]: ctx.owner.namespace,
    [COMPONENT_LABEL]: component,
  };
}

export interface MetaOptions {
  readonly namespace?: string;
  readonly labels?: Record<string, string>;
  readonly annotations?: Record<string, string>;
}

/** `apiVersion`, `kind` and `metadata` of an object of `component`. */
export function objectHead(ctx: RenderContext, component: ComponentName, apiVersion: string, kind: string, name: string, opts: MetaOptions = {}): K8sObject {
  const metadata: K8sObject['metadata'] = { name };
  if (opts.namespace) metadata.namespace = opts.namespace;
  metadata.labels = ownershipLabels(ctx, component, opts.labels);
  if (opts.annotations && Object.keys(opts.annotations).length > 0) metadata.annotations = { ...opts.annotations };
  return { apiVersion, kind, metadata };
}

/** `<hub>/<image>:<tag>`, the component's hub and tag winning over the spec's. */
export function imageOf(ctx: RenderContext, component: ComponentSpec | undefined, image: string): string {
  const hub = component?.hub || ctx.spec.hub || DEFAULT_HUB;
  const tag = component?.tag || ctx.spec.tag || 'latest';
  return `${hub}/${image}:${tag}`;
}

/** `base` variables, then the user's: a user variable with a base name replaces it in place. */
export function mergeEnv(base: readonly EnvVar[], user: readonly EnvVar[] = []): EnvVar[] {
  const out = base.map((e) => user.find((u) => u.name === e.name) ?? e);
  for (const u of user) if (!base.some((e) => e.name === u.name)) out.push(u);
  return out.map((e) => {
    const v: EnvVar = { name: e.name };
    if (e.value !== undefined) v.value = e.value;
    if (e.valueFrom !== undefined) v.valueFrom = e.valueFrom;
    return v;
  });
}

export function fieldEnv(name: string, fieldPath: string): EnvVar {
  return { name, valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath } } };
}

/** Pod-level settings of `k8s` (scheduling, security, pull secrets), omitting what is unset. */
export function podSettings(ctx: RenderContext, k8s: K8sSettings | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (k8s?.nodeSelector && Object.keys(k8s.nodeSelector).length > 0) out.nodeSelector = { ...k8s.nodeSelector };
  if (k8s?.affinity) out.affinity = k8s.affinity;
  if (k8s?.tolerations && k8s.tolerations.length > 0) out.tolerations = k8s.tolerations.map((t) => ({ ...t }));
  if (k8s?.priorityClassName) out.priorityClassName = k8s.priorityClassName;
  if (k8s?.securityContext) out.securityContext = k8s.securityContext;
  const secrets = ctx.values.global?.imagePullSecrets ?? [];
  if (secrets.length > 0) out.imagePullSecrets = secrets.map((name) => ({ name }));
  return out;
}

export function resourcesOf(k8s: K8sSettings | undefined): Record<string, unknown> | undefined {
  const r = k8s?.resources;
  if (!r) return undefined;
  const out: Record<string, unknown> = {};
  if (r.requests) out.requests = { ...r.requests };
  if (r.limits) out.limits = { ...r.limits };
  return out;
}

export function annotationsOf(base: Record<string, string>, user: Record<string, string> | undefined): Record<string, string> {
  return { ...base, ...(user ?? {}) };
}

/** autoscaling/v2 HorizontalPodAutoscaler for the Deployment `name`. */
export function renderHpa(ctx: RenderContext, component: ComponentName, name: string, namespace: string, labels: Record<string, string>, hpa: HpaSpec): K8sObject {
  const spec: Record<string, unknown> = {
    scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name },
    minReplicas: hpa.minReplicas ?? 1,
    maxReplicas: hpa.maxReplicas,
  };
  if (hpa.metrics) spec.metrics = hpa.metrics;
  if (hpa.behavior) spec.behavior = hpa.behavior;
  return { ...objectHead(ctx, component, 'autoscaling/v2', 'HorizontalPodAutoscaler', name, { namespace, labels }), spec };
}

/** policy/v1 PodDisruptionBudget over the pods that `selector` picks. */
export function renderPdb(ctx: RenderContext, component: ComponentName, name: string, namespace: string, labels: Record<string, string>, selector: Record<string, string>, pdb: PodDisruptionBudgetSpec): K8sObject {
  const spec: Record<string, unknown> = {};
  if (pdb.minAvailable !== undefined) spec.minAvailable = pdb.minAvailable;
  if (pdb.maxUnavailable !== undefined) spec.maxUnavailable = pdb.maxUnavailable;
  spec.selector = { matchLabels: { ...selector } };
  return { ...objectHead(ctx, component, 'policy/v1', 'PodDisruptionBudget', name, { namespace, labels }), spec };
}

/** Replicas of a Deployment: the explicit count, else none when autoscaled, else 1. */
export function replicasOf(k8s: K8sSettings | undefined): number | undefined {
  if (k8s?.replicaCount !== undefined) return k8s.replicaCount;
  return k8s?.hpaSpec ? undefined : 1;
}

/** The ServiceAccount, Role and RoleBinding subject of `account` in `namespace`. */
export function subject(account: string, namespace: string): Record<string, string> {
  return { kind: 'ServiceAccount', name: account, namespace };
}
