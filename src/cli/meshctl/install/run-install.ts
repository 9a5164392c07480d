/**
 * What `meshctl install` (alias `apply`, also `manifest install`) does, behind the command module
 * (src/cli/meshctl/commands/install.ts), which declares the flags and imports this lazily:
 *
 *  1. resolve the spec (profile, `-f`, `--set`, `-r`) and render it; any problem stops here, before
 *     the cluster is touched;
 *  2. ask for confirmation (not with `-y` or `--dry-run`);
 *  3. apply the MeshOperator CRD, then call the installation reconciler once
 *     (src/controllers/installation/installation.ts, the one the operator uses) and wait for
 *     readiness, with a live progress display;
 *  4. store the applied spec in `installed-state[-R]` unless an object failed to apply;
 *  5. with `--verify`, check every object again and list the unready ones.
 * The exit code is 1 when any component is not Healthy or verification fails.
 *
 * `applyRendered` (steps 3–5) is shared with `upgrade` (run-upgrade.ts).
 */
import { planInstallation, reconcileInstallation, type Installation, type InstallationResult } from '../../../controllers/installation/installation.js';
import type { MeshOperatorSpec } from '../../../install/api.js';
import { DEFAULT_FIELD_MANAGER, describeError, verifyInstallation } from '../../../install/apply/engine.js';
import { MESH_OPERATOR_CRD_NAME, ensureMeshOperatorCrd } from '../../../install/apply/operator-crd.js';
import { cliOwner, writeInstalledState } from '../../../install/apply/state.js';
import { InstallError } from '../../../install/errors.js';
import type { ComponentManifest } from '../../../install/render/index.js';
import { resolveRequest, type SpecRequest } from '../../../install/generate.js';
import type { ResolvedSpec } from '../../../install/resolve.js';
import { readCrds, type ManifestSource } from '../../../install/sources.js';
import type { KubeClient } from '../../../kube/client.js';
import { getBuildInfo } from '../../../version/build-info.js';
import type { CliIO, CommandOutcome } from '../../runner.js';
import { confirm } from '../confirm.js';
import type { ClientFactory } from '../kube.js';
import { CHECK, CROSS, createProgress } from './progress.js';

export type { ClientFactory };

/** The flags that choose a spec: as `manifest generate` has them. */
export type SpecFlags = SpecRequest;

/** A resolved spec planned as meshctl installs it (owner `installed-state[-R]`), with where it came from. */
export interface Rendered extends Installation {
  readonly source: ManifestSource;
  readonly namespace: string;
  readonly warnings: string[];
}

/** Plans `spec` as meshctl installs it (owner `installed-state[-R]`). */
export async function planSpec(spec: MeshOperatorSpec, source: ManifestSource): Promise<Installation> {
  return planInstallation(spec, cliOwner(spec), await readCrds(source));
}

/** The manifests of `spec` as meshctl installs it. */
export async function renderSpec(spec: MeshOperatorSpec, source: ManifestSource): Promise<readonly ComponentManifest[]> {
  return (await planSpec(spec, source)).manifests;
}

async function renderedOf(resolved: ResolvedSpec, warnings: string[]): Promise<Rendered> {
  const installation = await planSpec(resolved.spec, resolved.source);
  return { ...installation, source: resolved.source, namespace: installation.owner.namespace, warnings };
}

/** Steps 1: resolve and render (throws InstallError for bad input). */
export async function renderFlags(flags: SpecFlags): Promise<Rendered> {
  const { resolved, warnings } = await resolveRequest(flags);
  return renderedOf(resolved, warnings);
}

export function describeTarget(r: Pick<Rendered, 'revision' | 'namespace'>): string {
  return `revision "${r.revision || 'default'}" in namespace "${r.namespace}"`;
}

export interface ApplyRequest {
  readonly dryRun: boolean;
  readonly readinessTimeoutMs: number;
  readonly verify: boolean;
  /** Words of the summary: "Installation" or "Upgrade". */
  readonly what: string;
}

export interface ApplyDeps {
  readonly io: CliIO;
  /** Redraw progress in place (a terminal). */
  readonly live: boolean;
}

function names(label: string, list: readonly string[]): string[] {
  return list.length === 0 ? [] : [`${label}:`, ...list.map((n) => `  ${n}`)];
}

function summaryLines(result: InstallationResult): string[] {
  const c = result.counts;
  const all = (f: (x: InstallationResult['components'][number]) => string[]) => result.components.flatMap(f);
  const lines: string[] = [];
  if (result.dryRun) {
    lines.push('Dry run: the API server checked every change (dryRun=All); nothing was changed.');
    lines.push(...names('Would create', all((x) => x.created)), ...names('Would update', all((x) => x.updated)), ...names('Would prune', all((x) => x.pruned)));
    lines.push(`Objects: ${c.created} to create, ${c.updated} to update, ${c.unchanged} unchanged, ${c.pruned} to prune`);
  } else {
    lines.push(...names('Updated', all((x) => x.updated)), ...names('Pruned', all((x) => x.pruned)));
    lines.push(`Objects: ${c.created} created, ${c.updated} updated, ${c.unchanged} unchanged, ${c.pruned} pruned`);
  }
  if (result.kept.length > 0) lines.push(...names('Kept (not pruned)', result.kept.map((k) => `${k.object}: ${k.reason}`)));
  return lines;
}

/** Steps 3–5 on a rendered spec. */
export async function applyRendered(client: KubeClient, r: Rendered, req: ApplyRequest, deps: ApplyDeps): Promise<CommandOutcome> {
  const stdout: string[] = [];
  try {
    await ensureMeshOperatorCrd(client, r.owner, r.revision, { fieldManager: DEFAULT_FIELD_MANAGER, dryRun: req.dryRun, timeoutMs: req.readinessTimeoutMs });
  } catch (err) {
    throw new InstallError(`cannot apply CustomResourceDefinition ${MESH_OPERATOR_CRD_NAME}: ${describeError(err)}\nnothing was applied`);
  }
  const progress = createProgress(deps.io.out, deps.live);
  let result: InstallationResult;
  try {
    result = await reconcileInstallation(client, r, {
      dryRun: req.dryRun,
      readinessTimeoutMs: req.readinessTimeoutMs,
      fieldManager: DEFAULT_FIELD_MANAGER,
      progress: progress.handle,
    });
  } finally {
    progress.stop();
  }
  stdout.push(...summaryLines(result));
  const problems: string[] = result.components.flatMap((c) => [...c.errors.map((e) => `${c.component}: ${e}`), ...c.notReady.map((n) => `${c.component}: not ready: ${n}`)]);

  if (!req.dryRun && result.counts.errors === 0) {
    try {
      await writeInstalledState(client, r.spec, getBuildInfo().version, { fieldManager: DEFAULT_FIELD_MANAGER });
    } catch (err) {
      problems.push(`cannot store the installed state (MeshOperator ${cliOwner(r.spec).name} in ${r.namespace}): ${describeError(err)}`);
    }
  }

  if (req.verify && !req.dryRun && result.counts.errors === 0) {
    const v = await verifyInstallation(client, r.manifests);
    const unready = v.objects.filter((o) => !o.ready);
    stdout.push(v.ok ? `${CHECK} Verified: all ${v.objects.length} objects are ready` : `${CROSS} Verification: ${unready.length} of ${v.objects.length} objects are not ready`);
    problems.push(...unready.map((o) => `verify: ${o.name}: ${o.reason}`));
  }

  if (problems.length === 0) {
    stdout.push(`${CHECK} ${req.what} ${req.dryRun ? 'checked' : 'complete'}: ${describeTarget(r)}`);
    return { stdout: `${stdout.join('\n')}\n` };
  }
  return {
    stdout: `${stdout.join('\n')}\n`,
    stderr: `error: ${req.what.toLowerCase()} failed (${describeTarget(r)}):\n${problems.map((p) => `  ${p}`).join('\n')}\n`,
    exitCode: 1,
  };
}

export interface InstallRequest extends SpecFlags {
  readonly dryRun: boolean;
  readonly skipConfirmation: boolean;
  readonly readinessTimeoutMs: number;
  readonly verify: boolean;
}

export async function runInstall(req: InstallRequest, deps: ApplyDeps & { readonly client: ClientFactory }): Promise<CommandOutcome> {
  const r = await renderFlags(req);
  for (const w of r.warnings) deps.io.err(`${w}\n`);
  const client = await deps.client();
  try {
    if (!req.dryRun) {
      const question = `This will install the mesh profile "${r.spec.profile ?? 'default'}" (${describeTarget(r)}) into the cluster at ${client.server}. Proceed?`;
      if (!(await confirm(deps.io, question, req.skipConfirmation))) return { stdout: 'Cancelled: nothing was changed.\n' };
    }
    return await applyRendered(client, r, { dryRun: req.dryRun, readinessTimeoutMs: req.readinessTimeoutMs, verify: req.verify, what: 'Installation' }, deps);
  } finally {
    client.close();
  }
}
