/**
 * What `meshctl x uninstall` does. The target is one of:
 *  - `--purge`: every object any installation labelled, of every revision and namespace, CRDs
 *    included (with the CRDs go all custom resources of those kinds), and every installed state;
 *  - a revision of a control-plane namespace: `-r <revision>` (`-r default` for the default one)
 *    in the namespace of `-i/--meshNamespace`, or the revision and namespace of the spec given by
 *    `-f <file>` and `--set`. Base objects shared with another revision of the namespace stay.
 * Namespaces are never deleted, CRDs only with `--purge`; objects without the ownership labels are
 * never touched (engine.ts `uninstallInstallation`).
 *
 * It first lists what would go (a plan, also the whole output of `--dry-run`), asks for
 * confirmation (not with `-y`), removes the installed state, then the objects.
 */
import { uninstall } from '../../../controllers/installation/installation.js';
import { describeError, type UninstallOptions, type UninstallResult } from '../../../install/apply/engine.js';
import { deleteInstalledState, listInstalledStates, readInstalledState, revisionOf, stateName, type InstalledState } from '../../../install/apply/state.js';
import { resolveSpec } from '../../../install/resolve.js';
import { CliError, type CommandOutcome } from '../../runner.js';
import { confirm } from '../confirm.js';
import { CHECK, createProgress } from './progress.js';
import { describeTarget, type ApplyDeps, type ClientFactory } from './run-install.js';

export interface UninstallRequest {
  readonly file?: string;
  readonly sets?: readonly string[];
  readonly manifests?: string;
  readonly revision?: string;
  readonly purge: boolean;
  readonly dryRun: boolean;
  readonly force: boolean;
  readonly skipConfirmation: boolean;
  readonly verbose: boolean;
  /** `-i/--meshNamespace`: the namespace when no spec names one. */
  readonly meshNamespace: string;
}

interface Target {
  readonly revision: string;
  readonly namespace: string;
}

async function targetOf(req: UninstallRequest): Promise<Target | undefined> {
  if (req.purge) return undefined;
  const sets = req.sets ?? [];
  const setsRevision = sets.some((s) => /^revision=/.test(s.trim()));
  if (!req.revision && !req.file && !setsRevision) {
    throw new CliError('name what to remove: --revision <revision> (--revision default for the default revision), -f <file> with the installed spec, or --purge to remove every revision');
  }
  if (req.file || sets.length > 0) {
    const resolved = await resolveSpec({ files: req.file ? [req.file] : [], sets, revision: req.revision, manifests: req.manifests, force: req.force });
    return { revision: revisionOf(resolved.spec), namespace: resolved.spec.namespace ?? req.meshNamespace };
  }
  return { revision: revisionOf({ revision: req.revision }), namespace: req.meshNamespace };
}

function list(title: string, items: readonly string[]): string[] {
  return items.length === 0 ? [] : [title, ...items.map((i) => `  ${i}`)];
}

function planText(plan: UninstallResult, states: readonly InstalledState[], target: Target | undefined, verbose: boolean): string {
  const lines: string[] = [];
  const where = target ? describeTarget(target) : 'every revision in every namespace (purge)';
  const stateNames = states.map((s) => `MeshOperator ${s.namespace}/${s.name}`);
  if (plan.deleted.length === 0 && states.length === 0) {
    lines.push(`Nothing to remove: no objects of ${where}.`);
  } else {
    lines.push(...list(`Objects to remove (${where}):`, [...stateNames, ...plan.deleted]));
  }
  if (plan.kept.length > 0) {
    if (verbose) lines.push(...list('Kept:', plan.kept.map((k) => `${k.object}: ${k.reason}`)));
    else {
      const reasons = [...new Set(plan.kept.map((k) => k.reason))];
      lines.push(`Kept ${plan.kept.length} objects (-v lists them): ${reasons.join('; ')}`);
    }
  }
  return `${lines.join('\n')}\n`;
}

export async function runUninstall(req: UninstallRequest, deps: ApplyDeps & { readonly client: ClientFactory }): Promise<CommandOutcome> {
  const target = await targetOf(req);
  const client = await deps.client();
  try {
    const base: UninstallOptions = target ? { revision: target.revision, namespace: target.namespace } : { purge: true };
    const states = target ? [await readInstalledState(client, target.namespace, target.revision)].filter((s): s is InstalledState => s !== undefined) : await listInstalledStates(client);
    const plan = await uninstall(client, { ...base, dryRun: true });
    const text = planText(plan, states, target, req.verbose);
    if (req.dryRun) return { stdout: `${text}Dry run: nothing was removed.\n` };
    deps.io.out(text);
    if (plan.deleted.length === 0 && states.length === 0) return {};
    const question = req.purge
      ? `Remove every mesh object of every revision from the cluster at ${client.server}, CRDs included (all custom resources of the mesh kinds go with them)?`
      : `Remove these objects from the cluster at ${client.server}?`;
    if (!(await confirm(deps.io, question, req.skipConfirmation))) return { stdout: 'Cancelled: nothing was removed.\n' };

    const errors: string[] = [];
    let removedStates = 0;
    for (const s of states) {
      try {
        if (await deleteInstalledState(client, s.namespace, s.revision)) removedStates++;
      } catch (err) {
        errors.push(`MeshOperator ${s.namespace}/${stateName(s.revision)}: cannot delete: ${describeError(err)}`);
      }
    }
    const progress = createProgress(deps.io.out, deps.live);
    let result: UninstallResult;
    try {
      result = await uninstall(client, { ...base, progress: progress.handle });
    } finally {
      progress.stop();
    }
    errors.push(...result.errors);
    const summary = `${CHECK} Removed ${result.deleted.length + removedStates} objects`;
    if (errors.length === 0) return { stdout: `${summary}\n` };
    return { stdout: `${summary}\n`, stderr: `error: uninstall incomplete:\n${errors.map((e) => `  ${e}`).join('\n')}\n`, exitCode: 1 };
  } finally {
    client.close();
  }
}
