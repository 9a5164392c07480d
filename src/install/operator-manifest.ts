/**
 * The controller manifest of `meshctl operator dump` (and what `operator init` applies): the
 * MeshOperator CRD (src/install/apply/operator-crd.ts), the operator Namespace, ServiceAccount, RBAC, a monitoring Service and the
 * Deployment `mesh-operator[-R]` running `mesh-operator server`.
 *
 * RBAC is least privilege, derived from what the controller installs: every built-in profile is
 * rendered (with the operator's revision), and each rendered kind, and each kind the apply engine
 * lists when it prunes (src/install/apply/objects.ts OWNED_KINDS), gets the verbs the engine uses
 * (get, list, watch, create, update, patch, delete) on exactly that resource; the rules of
 * every rendered ClusterRole and Role are added, because Kubernetes only lets a subject create a
 * role that grants what the subject holds itself (the alternative, the `escalate` and `bind`
 * verbs, would let the operator grant anything). On top: MeshOperator resources, their status and
 * finalizers, events, and the leader-election Lease
 * in the operator namespace (a Role). No rule uses a `*` wildcard.
 */
import { getBuildInfo } from '../version/build-info.js';
import { INSTALL_GROUP } from './api.js';
import { InstallError } from './errors.js';
import { DEFAULT_REVISION_LABEL_VALUE, REVISION_LABEL } from './labels.js';
import { DEFAULT_HUB } from './render/context.js';
import { allObjects, renderManifests, type K8sObject } from './render/index.js';
import { sortObjects } from './render/order.js';
import type { PolicyRule } from './render/rbac.js';
import { checkSpecTree } from './resolve.js';
import { DEFAULT_PROFILE, listProfiles, readCrds, readProfile, type ManifestSource } from './sources.js';
import { deepMerge, type Tree } from './tree.js';
import { OWNED_KINDS } from './apply/objects.js';
import { MESH_OPERATOR_PLURAL, meshOperatorCrd } from './apply/operator-crd.js';
import {
  DEFAULT_MONITORING_ADDR,
  OPERATOR_MANAGED_LABEL,
  leaseName,
  normalRevision,
  operatorName,
} from './operator-names.js';

export interface OperatorManifestOptions {
  /** `--hub`; `unknown` or empty means the default registry. */
  readonly hub?: string;
  /** `--tag`; `unknown` or empty means the version of meshctl. */
  readonly tag?: string;
  readonly imagePullSecrets?: readonly string[];
  readonly operatorNamespace: string;
  readonly watchedNamespaces: readonly string[];
  /** Operator revision: it reconciles only MeshOperators of this control-plane revision. */
  readonly revision?: string;
  readonly source: ManifestSource;
}

export const OPERATOR_IMAGE = 'operator';
const MONITORING_PORT = Number(DEFAULT_MONITORING_ADDR.slice(1));
const ENGINE_VERBS = ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'];
const READ = ['get', 'list', 'watch'];

/** group and plural of the kinds rendering produces; other kinds fall back to the English plural of the kind. */
const KNOWN_RESOURCES: Readonly<Record<string, { group: string; plural: string }>> = {
  CustomResourceDefinition: { group: 'apiextensions.k8s.io', plural: 'customresourcedefinitions' },
  Namespace: { group: '', plural: 'namespaces' },
  ServiceAccount: { group: '', plural: 'serviceaccounts' },
  ConfigMap: { group: '', plural: 'configmaps' },
  Secret: { group: '', plural: 'secrets' },
  Service: { group: '', plural: 'services' },
  ClusterRole: { group: 'rbac.authorization.k8s.io', plural: 'clusterroles' },
  ClusterRoleBinding: { group: 'rbac.authorization.k8s.io', plural: 'clusterrolebindings' },
  Role: { group: 'rbac.authorization.k8s.io', plural: 'roles' },
  RoleBinding: { group: 'rbac.authorization.k8s.io', plural: 'rolebindings' },
  Deployment: { group: 'apps', plural: 'deployments' },
  HorizontalPodAutoscaler: { group: 'autoscaling', plural: 'horizontalpodautoscalers' },
  PodDisruptionBudget: { group: 'policy', plural: 'poddisruptionbudgets' },
  MutatingWebhookConfiguration: { group: 'admissionregistration.k8s.io', plural: 'mutatingwebhookconfigurations' },
  ValidatingWebhookConfiguration: { group: 'admissionregistration.k8s.io', plural: 'validatingwebhookconfigurations' },
};

function resourceOf(o: K8sObject): { group: string; plural: string } {
  const known = KNOWN_RESOURCES[o.kind];
  if (known) return known;
  const group = o.apiVersion.includes('/') ? o.apiVersion.slice(0, o.apiVersion.lastIndexOf('/')) : '';
  const lower = o.kind.toLowerCase();
  const plural = lower.endsWith('y') ? `${lower.slice(0, -1)}ies` : lower.endsWith('s') ? `${lower}es` : `${lower}s`;
  return { group, plural };
}

/** `hub`/`tag` flags with `unknown` meaning "the default". */
export function operatorImage(hub: string | undefined, tag: string | undefined): string {
  const h = !hub || hub === 'unknown' ? DEFAULT_HUB : hub;
  const t = !tag || tag === 'unknown' ? getBuildInfo().version : tag;
  return `${h}/${OPERATOR_IMAGE}:${t}`;
}

/** Every object any built-in (or `-d`) profile renders for `revision`: what the controller may have to create. */
export async function renderAllProfiles(source: ManifestSource, revision: string): Promise<K8sObject[]> {
  const crds = await readCrds(source);
  const base = await readProfile(source, DEFAULT_PROFILE);
  const out: K8sObject[] = [];
  for (const name of await listProfiles(source)) {
    let tree = deepMerge({}, base) as Tree;
    if (name !== DEFAULT_PROFILE) tree = deepMerge(tree, await readProfile(source, name)) as Tree;
    Object.assign(tree, { profile: name, revision: revision || undefined, namespace: (tree.namespace as string | undefined) ?? 'mesh-system', tag: 'rbac' });
    // A profile that needs more input than it has (remote: a meshd address) is rendered with
    // a placeholder, so that its kinds count too.
    const values = (tree.values ?? {}) as Tree;
    tree.values = deepMerge(values, { global: { remoteMeshdAddress: 'meshd.invalid' } });
    let spec;
    try {
      spec = checkSpecTree(tree, new Map(), true).spec;
    } catch (err) {
      throw new InstallError(`profile ${name}: ${(err as Error).message}`);
    }
    out.push(...allObjects(renderManifests(spec, { owner: { name: 'rbac', namespace: 'mesh-system' }, crds })));
  }
  return out;
}

function ruleKey(r: PolicyRule): string {
  return JSON.stringify([r.apiGroups, r.resources, r.verbs, r.resourceNames ?? []]);
}

/** The controller's cluster-wide rules, from the objects it may render and the kinds the engine lists when it prunes. */
export function operatorClusterRules(rendered: readonly K8sObject[]): PolicyRule[] {
  const byGroup = new Map<string, Set<string>>();
  const engineKinds: K8sObject[] = OWNED_KINDS.map((k) => ({ apiVersion: k.apiVersion, kind: k.kind, metadata: { name: '' } }));
  for (const o of [...rendered, ...engineKinds]) {
    const { group, plural } = resourceOf(o);
    if (!byGroup.has(group)) byGroup.set(group, new Set());
    byGroup.get(group)?.add(plural);
  }
  const rules: PolicyRule[] = [];
  for (const group of [...byGroup.keys()].sort()) {
    rules.push({ apiGroups: [group], resources: [...(byGroup.get(group) ?? [])].sort(), verbs: ENGINE_VERBS });
  }
  rules.push({ apiGroups: [INSTALL_GROUP], resources: [MESH_OPERATOR_PLURAL], verbs: [...READ, 'update', 'patch'] });
  rules.push({ apiGroups: [INSTALL_GROUP], resources: [`${MESH_OPERATOR_PLURAL}/status`], verbs: ['get', 'update', 'patch'] });
  rules.push({ apiGroups: [INSTALL_GROUP], resources: [`${MESH_OPERATOR_PLURAL}/finalizers`], verbs: ['update'] });
  rules.push({ apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] });
  // Whatever rendered roles grant, the operator must hold to create them.
  const seen = new Set(rules.map(ruleKey));
  for (const o of rendered) {
    if (o.kind !== 'ClusterRole' && o.kind !== 'Role') continue;
    for (const r of (o.rules as PolicyRule[] | undefined) ?? []) {
      const copy: PolicyRule = { apiGroups: [...r.apiGroups], resources: [...r.resources], verbs: [...r.verbs] };
      if (r.resourceNames) copy.resourceNames = [...r.resourceNames];
      const key = ruleKey(copy);
      if (!seen.has(key)) {
        seen.add(key);
        rules.push(copy);
      }
    }
  }
  for (const r of rules) {
    if ([...r.apiGroups, ...r.resources, ...r.verbs].includes('*')) throw new Error(`operator RBAC: a rendered role grants a wildcard (${ruleKey(r)})`);
  }
  return rules;
}

/** The objects of the controller manifest, in apply order. */
export async function operatorManifest(opts: OperatorManifestOptions): Promise<K8sObject[]> {
  const revision = normalRevision(opts.revision);
  const name = operatorName(revision);
  const ns = opts.operatorNamespace;
  const revLabel = revision || DEFAULT_REVISION_LABEL_VALUE;
  const labels = { app: name, [REVISION_LABEL]: revLabel, [OPERATOR_MANAGED_LABEL]: revLabel };
  const meta = (n: string, namespaced: boolean): K8sObject['metadata'] => (namespaced ? { name: n, namespace: ns, labels: { ...labels } } : { name: n, labels: { ...labels } });
  const rbac = 'rbac.authorization.k8s.io/v1';
  const subject = { kind: 'ServiceAccount', name, namespace: ns };
  const rendered = await renderAllProfiles(opts.source, revision);
  const selector = { name };
  const args = ['server', '--operatorNamespace', ns, '--watchedNamespaces', opts.watchedNamespaces.join(','), '--monitoringAddr', DEFAULT_MONITORING_ADDR];
  if (revision) args.push('--revision', revision);
  const pullSecrets = (opts.imagePullSecrets ?? []).filter((s) => s !== '');
  const podSpec: Record<string, unknown> = {
    serviceAccountName: name,
    containers: [
      {
        name: 'mesh-operator',
        image: operatorImage(opts.hub, opts.tag),
        command: ['mesh-operator'],
        args,
        env: [
          { name: 'POD_NAME', valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.name' } } },
          { name: 'POD_NAMESPACE', valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } } },
        ],
        ports: [{ name: 'http-monitoring', containerPort: MONITORING_PORT, protocol: 'TCP' }],
        readinessProbe: { httpGet: { path: '/ready', port: MONITORING_PORT }, initialDelaySeconds: 1, periodSeconds: 5 },
        resources: { requests: { cpu: '50m', memory: '128Mi' }, limits: { cpu: '500m', memory: '512Mi' } },
        securityContext: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, runAsNonRoot: true, runAsUser: 1337, capabilities: { drop: ['ALL'] } },
      },
    ],
  };
  if (pullSecrets.length > 0) podSpec.imagePullSecrets = pullSecrets.map((s) => ({ name: s }));
  const objects: K8sObject[] = [
    // The one MeshOperator CRD of the project (meshctl install applies the same), labelled as
    // the Base of the operator's own "installation" so that only `x uninstall --purge` removes it.
    meshOperatorCrd({ name, namespace: ns }, revision),
    { apiVersion: 'v1', kind: 'Namespace', metadata: meta(ns, false) },
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: meta(name, true) },
    { apiVersion: rbac, kind: 'ClusterRole', metadata: meta(name, false), rules: operatorClusterRules(rendered) },
    { apiVersion: rbac, kind: 'ClusterRoleBinding', metadata: meta(name, false), roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name }, subjects: [subject] },
    {
      apiVersion: rbac,
      kind: 'Role',
      metadata: meta(name, true),
      rules: [
        { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] },
        { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'update'], resourceNames: [leaseName(revision)] },
      ],
    },
    { apiVersion: rbac, kind: 'RoleBinding', metadata: meta(name, true), roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name }, subjects: [subject] },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: meta(name, true),
      spec: { selector, ports: [{ name: 'http-monitoring', port: MONITORING_PORT, targetPort: MONITORING_PORT, protocol: 'TCP' }] },
    },
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: meta(name, true),
      spec: {
        replicas: 1,
        revisionHistoryLimit: 3,
        selector: { matchLabels: selector },
        template: {
          metadata: { labels: { ...selector, ...labels, 'sidecar.mesh.io/inject': 'false' }, annotations: { 'prometheus.io/port': String(MONITORING_PORT), 'prometheus.io/scrape': 'true' } },
          spec: podSpec,
        },
      },
    },
  ];
  return sortObjects(objects);
}
