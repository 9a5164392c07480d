/**
 * What `meshctl x precheck` does: checks that a cluster can take an installation, before anything
 * is applied. Blockers (exit code 1):
 *  - the API server cannot be reached, or its Kubernetes version is older than MIN_KUBERNETES;
 *  - the user lacks a permission that install needs: for each kind and namespace of the default
 *    profile's render (plus the MeshOperator CRD and state) `get`, `create`, `patch` and `delete`,
 *    and `list` across all namespaces (pruning and uninstall list by label), each asked with a
 *    SelfSubjectAccessReview, so the answer is the API server's own.
 * Notes (no blocker), unless `--skip-controlplane`: the installations already present (installed
 * states and meshd Deployments of every namespace), and whether the target revision is among them.
 */
import { INSTALL_API_VERSION, MESH_OPERATOR_KIND } from '../../../install/api.js';
import { describeError } from '../../../install/apply/engine.js';
import { meshOperatorCrd } from '../../../install/apply/operator-crd.js';
import { listLabelled } from '../../../install/apply/ownership.js';
import { cliOwner, listInstalledStates, revisionOf } from '../../../install/apply/state.js';
import { COMPONENT_LABEL, OWNING_RESOURCE_LABEL, OWNING_RESOURCE_NAMESPACE_LABEL, REVISION_LABEL } from '../../../install/labels.js';
import { resolveSpec } from '../../../install/resolve.js';
import type { KubeClient } from '../../../kube/client.js';
import { getBuildInfo } from '../../../version/build-info.js';
import type { CommandOutcome } from '../../runner.js';
import { CHECK, CROSS } from './progress.js';
import { describeTarget, renderSpec, type ClientFactory } from './run-install.js';
import { skewProblem } from './run-upgrade.js';

export const MIN_KUBERNETES = { major: 1, minor: 29 } as const;
const WRITE_VERBS = ['get', 'create', 'patch', 'delete'] as const;

export interface PrecheckRequest {
  readonly revision?: string;
  readonly skipControlPlane: boolean;
  /** `-i/--meshNamespace`: the control-plane namespace to check. */
  readonly meshNamespace: string;
}

interface Report {
  readonly lines: string[];
  blockers: number;
}

interface AccessCheck {
  readonly group: string;
  readonly resource: string;
  /** '' for cluster-scoped resources and for "all namespaces". */
  readonly namespace: string;
  readonly verb: string;
}

async function allowed(client: KubeClient, c: AccessCheck): Promise<boolean> {
  const review = await client.request<{ status?: { allowed?: boolean } }>({
    method: 'POST',
    path: '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews',
    body: {
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SelfSubjectAccessReview',
      spec: { resourceAttributes: { group: c.group, resource: c.resource, verb: c.verb, ...(c.namespace ? { namespace: c.namespace } : {}) } },
    },
  });
  return review.status?.allowed === true;
}

async function checkVersion(client: KubeClient, report: Report): Promise<boolean> {
  let info: { major?: string; minor?: string; gitVersion?: string };
  try {
    info = await client.request({ method: 'GET', path: '/version' });
  } catch (err) {
    report.lines.push(`${CROSS} Cluster: cannot reach the API server at ${client.server}: ${describeError(err)}`);
    report.blockers++;
    return false;
  }
  const major = parseInt(info.major ?? '', 10);
  const minor = parseInt(info.minor ?? '', 10);
  const text = info.gitVersion ?? `${info.major}.${info.minor}`;
  const min = `${MIN_KUBERNETES.major}.${MIN_KUBERNETES.minor}`;
  if (!Number.isFinite(major) || !Number.isFinite(minor)) {
    report.lines.push(`! Kubernetes version: cannot read it ("${text}"); version ${min} or newer is required`);
  } else if (major < MIN_KUBERNETES.major || (major === MIN_KUBERNETES.major && minor < MIN_KUBERNETES.minor)) {
    report.lines.push(`${CROSS} Kubernetes version: ${text} is not supported; version ${min} or newer is required`);
    report.blockers++;
  } else {
    report.lines.push(`${CHECK} Kubernetes version: ${text} is supported (${min} or newer)`);
  }
  return true;
}

async function checkPermissions(client: KubeClient, req: PrecheckRequest, report: Report): Promise<void> {
  const revision = revisionOf({ revision: req.revision });
  const resolved = await resolveSpec({ sets: [`namespace=${req.meshNamespace}`], revision: revision || undefined });
  const objects = [...(await renderSpec(resolved.spec, resolved.source)).flatMap((m) => m.objects), meshOperatorCrd(cliOwner(resolved.spec), revision)];
  const checks = new Map<string, AccessCheck>();
  const add = (c: AccessCheck) => checks.set(`${c.group}|${c.resource}|${c.namespace}|${c.verb}`, c);
  const stateRef = { apiVersion: INSTALL_API_VERSION, kind: MESH_OPERATOR_KIND, namespace: req.meshNamespace };
  const targets: Array<{ apiVersion: string; kind: string; namespace?: string }> = [...objects.map((o) => ({ apiVersion: o.apiVersion, kind: o.kind, namespace: o.metadata.namespace })), stateRef];
  for (const t of targets) {
    let group: string;
    let resource: string;
    let namespaced: boolean;
    if (t.kind === MESH_OPERATOR_KIND) {
      // Its CRD may not exist yet: the coordinates are known.
      [group, resource, namespaced] = ['install.mesh.io', 'meshoperators', true];
    } else {
      const info = await client.resource(t.apiVersion, t.kind);
      [group, resource, namespaced] = [info.group, info.plural, info.namespaced];
    }
    const namespace = namespaced ? (t.namespace ?? '') : '';
    for (const verb of WRITE_VERBS) add({ group, resource, namespace, verb });
    add({ group, resource, namespace: '', verb: 'list' });
  }
  const all = [...checks.values()];
  const answers = await Promise.all(all.map(async (c) => [c, await allowed(client, c)] as const));
  const missing = new Map<string, string[]>();
  for (const [c, ok] of answers) {
    if (ok) continue;
    const what = `${c.resource}${c.group ? `.${c.group}` : ''} ${c.namespace ? `in namespace ${c.namespace}` : c.verb === 'list' ? 'in all namespaces' : '(cluster-scoped)'}`;
    const verbs = missing.get(what) ?? [];
    verbs.push(c.verb);
    missing.set(what, verbs);
  }
  if (missing.size === 0) {
    report.lines.push(`${CHECK} Permissions: the user may create, update and delete everything install needs (${all.length} access reviews)`);
    return;
  }
  report.blockers++;
  report.lines.push(`${CROSS} Permissions: the user lacks ${[...missing.values()].reduce((n, v) => n + v.length, 0)} of ${all.length} permissions install needs:`);
  for (const [what, verbs] of [...missing.entries()].sort(([a], [b]) => a.localeCompare(b))) report.lines.push(`    cannot ${verbs.join(', ')} ${what}`);
}

async function checkInstallations(client: KubeClient, req: PrecheckRequest, report: Report): Promise<void> {
  const revision = revisionOf({ revision: req.revision });
  try {
    const states = await listInstalledStates(client);
    const meshd = await listLabelled(client, [{ apiVersion: 'apps/v1', kind: 'Deployment' }], `${OWNING_RESOURCE_LABEL},${COMPONENT_LABEL}=Meshd`);
    const found = new Map<string, string>();
    for (const s of states) found.set(`${s.namespace}|${s.revision || 'default'}`, `revision "${s.revision || 'default'}" in namespace "${s.namespace}" (installed by meshctl ${s.version || 'of unknown version'})`);
    for (const d of meshd) {
      const ns = d.metadata.labels?.[OWNING_RESOURCE_NAMESPACE_LABEL] ?? d.metadata.namespace ?? '';
      const rev = d.metadata.labels?.[REVISION_LABEL] ?? 'default';
      const key = `${ns}|${rev}`;
      if (!found.has(key)) found.set(key, `revision "${rev}" in namespace "${ns}" (Deployment ${d.metadata.namespace}/${d.metadata.name}, owner ${d.metadata.labels?.[OWNING_RESOURCE_LABEL] ?? 'unknown'})`);
    }
    if (found.size === 0) {
      report.lines.push(`${CHECK} Control plane: no installation found`);
      return;
    }
    report.lines.push(`! Control plane: ${found.size} installation${found.size === 1 ? '' : 's'} found:`, ...[...found.values()].map((t) => `    ${t}`));
    const target = `${req.meshNamespace}|${revision || 'default'}`;
    if (found.has(target)) {
      report.lines.push(`! ${describeTarget({ revision, namespace: req.meshNamespace })} is already installed: install would change it in place; meshctl upgrade checks eligibility first, or install beside it with --revision <new>`);
      const state = states.find((s) => `${s.namespace}|${s.revision || 'default'}` === target);
      const skew = state ? skewProblem(state.version, getBuildInfo().version) : undefined;
      if (skew) report.lines.push(`! ${skew}`);
    }
  } catch (err) {
    report.lines.push(`! Control plane: cannot list existing installations: ${describeError(err)}`);
  }
}

export async function runPrecheck(req: PrecheckRequest, deps: { readonly client: ClientFactory }): Promise<CommandOutcome> {
  const client = await deps.client();
  const report: Report = { lines: [], blockers: 0 };
  try {
    if (await checkVersion(client, report)) {
      await checkPermissions(client, req, report);
      if (!req.skipControlPlane) await checkInstallations(client, req, report);
    }
  } finally {
    client.close();
  }
  if (report.blockers === 0) {
    report.lines.push(`${CHECK} No blockers: the cluster is ready for an installation in namespace "${req.meshNamespace}"`);
    return { stdout: `${report.lines.join('\n')}\n` };
  }
  return {
    stdout: `${report.lines.join('\n')}\n`,
    stderr: `error: ${report.blockers} blocker${report.blockers === 1 ? '' : 's'} found: fix ${report.blockers === 1 ? 'it' : 'them'} before installing\n`,
    exitCode: 1,
  };
}
