/**
 * What `meshctl operator dump|init|remove` do, behind the command module
 * (src/cli/meshctl/commands/operator.ts), which declares the flags and imports this lazily.
 *
 * - dump: prints the controller manifest (manifest.ts) as YAML.
 * - init: applies it by server-side apply (field manager `meshctl-operator`; the CRD first, and
 *   established before the rest), waits until the Deployment is available, then applies the
 *   MeshOperator of `-f` (its namespace must be watched; it is created when missing).
 * - remove: deletes what init created, found by the label `operator.mesh.io/managed=<revision>`:
 *   the Deployment, Service, ServiceAccount, RBAC, and the operator Namespace once no operator
 *   of another revision is left in it. It refuses while MeshOperator resources of the revision
 *   exist (nothing would process their finalizers); `--force` removes anyway and takes the
 *   finalizer off those resources (their installations stay as they are). The MeshOperator CRD
 *   is never removed here, not even with `--force`: meshctl install keeps its records in
 *   MeshOperator objects too, and deleting the CRD deletes every one of them (`x uninstall
 *   --purge` removes it).
 * `--dry-run` only prints what would be applied or deleted.
 */
import type { CommandOutcome } from '../../runner.js';
import type { KubeClient, ObjectRef } from '../../../kube/client.js';
import { isNotFound } from '../../../kube/errors.js';
import type { KubeObject } from '../../../kube/types.js';
import { INSTALL_API_VERSION, MESH_OPERATOR_KIND } from '../../../install/api.js';
import { ensureMeshOperatorCrd } from '../../../install/apply/operator-crd.js';
import { waitForReady } from '../../../install/apply/readiness.js';
import { CHARTS_DEPRECATED } from '../../../install/charts-warning.js';
import { InstallError } from '../../../install/errors.js';
import { DEFAULT_REVISION_LABEL_VALUE } from '../../../install/labels.js';
import type { K8sObject } from '../../../install/render/types.js';
import { manifestSource, operatorSpecFrom } from '../../../install/sources.js';
import { isMap } from '../../../install/tree.js';
import { parseYamlDocuments, toYamlDocuments } from '../../../install/yaml-io.js';
import { operatorManifest } from '../../../install/operator-manifest.js';
import {
  OPERATOR_FINALIZER,
  OPERATOR_INIT_FIELD_MANAGER,
  OPERATOR_MANAGED_LABEL,
  ignored,
  normalRevision,
  operatorName,
  parseNamespaceList,
  requestedRevision,
  type MeshOperatorLike,
} from '../../../install/operator-names.js';
import { readFile } from 'node:fs/promises';

export interface DumpRequest {
  readonly charts?: string;
  readonly manifests?: string;
  readonly hub?: string;
  readonly tag?: string;
  readonly imagePullSecrets?: readonly string[];
  readonly operatorNamespace: string;
  readonly revision?: string;
  /** Comma-separated (default mesh-system). */
  readonly watchedNamespaces?: string;
}

export interface InitRequest extends DumpRequest {
  readonly filename?: string;
  readonly dryRun?: boolean;
  /** Wait for the Deployment at most this long (default 5 min). */
  readonly readinessTimeoutMs?: number;
}

export interface RemoveRequest {
  readonly operatorNamespace: string;
  readonly revision?: string;
  readonly force?: boolean;
  readonly dryRun?: boolean;
}

const DEFAULT_READINESS_TIMEOUT_MS = 5 * 60_000;

const describe = (o: { kind?: string; metadata?: { name?: string; namespace?: string } }): string =>
  `${o.kind ?? '?'} ${o.metadata?.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata?.name ?? '?'}`;

function checkNamespace(ns: string, flag: string): void {
  parseNamespaceList(ns, flag);
}

async function controllerObjects(req: DumpRequest): Promise<{ objects: K8sObject[]; warnings: string[] }> {
  const warnings = req.charts ? [CHARTS_DEPRECATED] : [];
  checkNamespace(req.operatorNamespace, '--operatorNamespace');
  const watched = parseNamespaceList(req.watchedNamespaces ?? 'mesh-system');
  const source = await manifestSource(req.manifests || req.charts);
  const objects = await operatorManifest({
    hub: req.hub,
    tag: req.tag,
    imagePullSecrets: req.imagePullSecrets,
    operatorNamespace: req.operatorNamespace,
    watchedNamespaces: watched,
    revision: req.revision,
    source,
  });
  return { objects, warnings };
}

function stderrOf(warnings: readonly string[]): string | undefined {
  return warnings.length > 0 ? `${warnings.join('\n')}\n` : undefined;
}

export async function runOperatorDump(req: DumpRequest): Promise<CommandOutcome> {
  const { objects, warnings } = await controllerObjects(req);
  return { stdout: toYamlDocuments(objects), stderr: stderrOf(warnings) };
}

interface OperatorResourceFile {
  readonly object: K8sObject;
}

/** The MeshOperator of `-f`: checked like meshctl's files, placed in a watched namespace. */
async function readResourceFile(file: string, watched: readonly string[], revision: string): Promise<OperatorResourceFile> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw new InstallError(`${file}: cannot read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  const spec = operatorSpecFrom(text, file); // checks kind, apiVersion and every field
  const doc = parseYamlDocuments(text, file)[0] as Record<string, unknown> | undefined;
  if (!doc) throw new InstallError(`${file}: holds no MeshOperator document`);
  const meta = isMap(doc.metadata) ? doc.metadata : {};
  const name = typeof meta.name === 'string' && meta.name ? meta.name : revision ? `mesh-installation-${revision}` : 'mesh-installation';
  const namespace = typeof meta.namespace === 'string' && meta.namespace ? meta.namespace : watched[0];
  if (!watched.includes(namespace)) {
    throw new InstallError(`${file}: metadata.namespace: "${namespace}" is not watched by the operator (--watchedNamespaces ${watched.join(',')})`);
  }
  const specRev = normalRevision(typeof spec.revision === 'string' ? spec.revision : undefined);
  if (specRev !== revision) {
    throw new InstallError(`${file}: spec.revision: "${specRev || DEFAULT_REVISION_LABEL_VALUE}" is not the operator's revision "${revision || DEFAULT_REVISION_LABEL_VALUE}" (--revision); that operator would not reconcile it`);
  }
  const metadata: K8sObject['metadata'] = { name, namespace };
  if (isMap(meta.labels)) metadata.labels = meta.labels as Record<string, string>;
  if (isMap(meta.annotations)) metadata.annotations = meta.annotations as Record<string, string>;
  return { object: { apiVersion: INSTALL_API_VERSION, kind: MESH_OPERATOR_KIND, metadata, spec } };
}

export async function runOperatorInit(client: KubeClient | undefined, req: InitRequest): Promise<CommandOutcome> {
  const revision = normalRevision(req.revision);
  const watched = parseNamespaceList(req.watchedNamespaces ?? 'mesh-system');
  const resource = req.filename ? await readResourceFile(req.filename, watched, revision) : undefined;
  const { objects, warnings } = await controllerObjects(req);
  const lines: string[] = [];
  if (req.dryRun || !client) {
    for (const o of objects) lines.push(`would apply ${describe(o)}`);
    if (resource) lines.push(`would apply ${describe(resource.object)}`);
    return { stdout: `${lines.join('\n')}\n`, stderr: stderrOf(warnings) };
  }
  const timeoutMs = req.readinessTimeoutMs ?? DEFAULT_READINESS_TIMEOUT_MS;
  const name = operatorName(revision);
  const [crd, ...rest] = objects;
  await ensureMeshOperatorCrd(client, { name, namespace: req.operatorNamespace }, revision, { fieldManager: OPERATOR_INIT_FIELD_MANAGER, timeoutMs });
  lines.push(`applied ${describe(crd)}`);
  for (const o of rest) {
    await client.applyObject(o, { fieldManager: OPERATOR_INIT_FIELD_MANAGER, force: true });
    lines.push(`applied ${describe(o)}`);
  }
  const deployment: ObjectRef = { apiVersion: 'apps/v1', kind: 'Deployment', namespace: req.operatorNamespace, name };
  const notReady = await waitForReady(client, [deployment], { timeoutMs });
  if (notReady.length > 0) {
    throw new InstallError(`${lines.join('\n')}\nthe operator did not get ready within ${Math.round(timeoutMs / 1000)} s: ${notReady.join('; ')}`);
  }
  lines.push(`operator ${name} is ready in namespace ${req.operatorNamespace}, watching ${watched.join(', ')}`);
  if (resource) {
    const ns = resource.object.metadata.namespace ?? '';
    if (!(await client.find({ apiVersion: 'v1', kind: 'Namespace', name: ns }))) {
      await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
      lines.push(`created Namespace ${ns}`);
    }
    await client.applyObject(resource.object, { fieldManager: OPERATOR_INIT_FIELD_MANAGER, force: true });
    lines.push(`applied ${describe(resource.object)}; the operator installs it (kubectl get meshoperators -n ${ns} ${resource.object.metadata.name})`);
  }
  return { stdout: `${lines.join('\n')}\n`, stderr: stderrOf(warnings) };
}

const NAMESPACED_KINDS = [
  { apiVersion: 'apps/v1', kind: 'Deployment' },
  { apiVersion: 'v1', kind: 'Service' },
  { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding' },
  { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role' },
  { apiVersion: 'v1', kind: 'ServiceAccount' },
];
const CLUSTER_KINDS = [
  { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding' },
  { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole' },
];

/** MeshOperator resources the operator of `revision` would reconcile, in all namespaces. */
async function resourcesOf(client: KubeClient, revision: string): Promise<MeshOperatorLike[]> {
  try {
    const list = await client.list<MeshOperatorLike>(INSTALL_API_VERSION, MESH_OPERATOR_KIND);
    return list.items.filter((cr) => !ignored(cr) && requestedRevision(cr) === revision);
  } catch (err) {
    if (isNotFound(err)) return [];
    throw err;
  }
}

export async function runOperatorRemove(client: KubeClient, req: RemoveRequest): Promise<CommandOutcome> {
  checkNamespace(req.operatorNamespace, '--operatorNamespace');
  const revision = normalRevision(req.revision);
  const revLabel = revision || DEFAULT_REVISION_LABEL_VALUE;
  const selector = `${OPERATOR_MANAGED_LABEL}=${revLabel}`;
  const found: Array<KubeObject & { apiVersion: string; kind: string }> = [];
  for (const k of NAMESPACED_KINDS) {
    const list = await client.list(k.apiVersion, k.kind, { namespace: req.operatorNamespace, labelSelector: selector });
    found.push(...list.items.map((o) => ({ ...o, apiVersion: k.apiVersion, kind: k.kind })));
  }
  for (const k of CLUSTER_KINDS) {
    const list = await client.list(k.apiVersion, k.kind, { labelSelector: selector });
    found.push(...list.items.map((o) => ({ ...o, apiVersion: k.apiVersion, kind: k.kind })));
  }
  const ns = await client.find({ apiVersion: 'v1', kind: 'Namespace', name: req.operatorNamespace });
  const others = (await client.list('apps/v1', 'Deployment', { namespace: req.operatorNamespace, labelSelector: OPERATOR_MANAGED_LABEL })).items.filter(
    (d) => d.metadata?.labels?.[OPERATOR_MANAGED_LABEL] !== revLabel,
  );
  const dropNamespace = ns?.metadata?.labels?.[OPERATOR_MANAGED_LABEL] !== undefined && others.length === 0;
  if (found.length === 0) {
    return { stdout: `nothing to remove: no operator of revision ${revLabel} in namespace ${req.operatorNamespace}\n` };
  }
  const crs = await resourcesOf(client, revision);
  if (crs.length > 0 && !req.force) {
    throw new InstallError(
      `MeshOperator resources of revision ${revLabel} still exist: ${crs.map((c) => `${c.metadata?.namespace}/${c.metadata?.name}`).join(', ')}.\n` +
        'Delete them first (the operator uninstalls what they installed), or pass --force to remove the operator anyway ' +
        '(their installations stay in place, nothing reconciles them, and their finalizers are removed).',
    );
  }
  const lines: string[] = [];
  const verb = req.dryRun ? 'would delete' : 'deleted';
  if (req.force) {
    for (const cr of crs.filter((c) => c.metadata?.finalizers?.includes(OPERATOR_FINALIZER))) {
      if (!req.dryRun) {
        const finalizers = (cr.metadata?.finalizers ?? []).filter((f) => f !== OPERATOR_FINALIZER);
        await client.mergePatch({ apiVersion: INSTALL_API_VERSION, kind: MESH_OPERATOR_KIND, namespace: cr.metadata?.namespace, name: cr.metadata?.name ?? '' }, { metadata: { finalizers: finalizers.length > 0 ? finalizers : null } });
      }
      lines.push(`${req.dryRun ? 'would remove' : 'removed'} the finalizer of MeshOperator ${cr.metadata?.namespace}/${cr.metadata?.name} (its installation stays)`);
    }
  }
  for (const o of found) {
    if (!req.dryRun) await client.delete({ apiVersion: o.apiVersion, kind: o.kind, namespace: o.metadata?.namespace, name: o.metadata?.name ?? '' }, { propagationPolicy: 'Background' });
    lines.push(`${verb} ${describe(o)}`);
  }
  if (dropNamespace) {
    if (!req.dryRun) await client.delete({ apiVersion: 'v1', kind: 'Namespace', name: req.operatorNamespace });
    lines.push(`${verb} Namespace ${req.operatorNamespace}`);
  }
  lines.push('the MeshOperator CRD is kept (meshctl install records use it; x uninstall --purge removes it)');
  return { stdout: `${lines.join('\n')}\n` };
}
