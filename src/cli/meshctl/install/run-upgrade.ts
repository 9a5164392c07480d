/**
 * What `meshctl upgrade` does: an in-place upgrade of an installed revision.
 *
 * Eligibility, read from the installed state (`installed-state[-R]`, state.ts) of the target
 * revision and namespace (from `-r`, `-f` and `--set`, as for install):
 *  - nothing installed in the namespace → refused (use `install`);
 *  - the target revision is not installed but others are → refused as a revision mismatch (a
 *    new revision is installed beside the old ones with `install --revision`);
 *  - the installed meshctl version and this one differ by more than one minor version (or in the
 *    major version) → refused: upgrade one minor version at a time.
 * `--force` skips these checks (each skipped one is printed as a warning).
 *
 * Then it renders the installed spec and the new one, prints what changes (src/install/diff/render-diff.ts), asks
 * for confirmation (not with `-y` or `--dry-run`) and applies like install (run-install.ts).
 */
import { listInstalledStates, readInstalledState, stateName } from '../../../install/apply/state.js';
import { diffRenders } from '../../../install/diff/render-diff.js';
import { InstallError } from '../../../install/errors.js';
import { sortKeys } from '../../../install/tree.js';
import { getBuildInfo } from '../../../version/build-info.js';
import type { CommandOutcome } from '../../runner.js';
import { confirm } from '../confirm.js';
import { formatRenderDiff } from './format.js';
import { applyRendered, describeTarget, renderFlags, renderSpec, type ApplyDeps, type ClientFactory, type SpecFlags } from './run-install.js';

export interface UpgradeRequest extends SpecFlags {
  readonly dryRun: boolean;
  readonly skipConfirmation: boolean;
  readonly readinessTimeoutMs: number;
  readonly verify: boolean;
}

/** `major.minor` of a version text such as `1.4.2` or `v1.4.0-beta.1`; undefined when it has none. */
export function majorMinor(version: string): { major: number; minor: number } | undefined {
  const m = /^v?(\d+)\.(\d+)/.exec(version.trim());
  return m ? { major: Number(m[1]), minor: Number(m[2]) } : undefined;
}

/** Why upgrading from `installed` with meshctl `current` is not supported, or undefined when it is. */
export function skewProblem(installed: string, current: string): string | undefined {
  const a = majorMinor(installed);
  const b = majorMinor(current);
  if (!a) return `the installed version is unknown (${installed ? `"${installed}"` : 'not recorded'})`;
  if (!b) return `the version of this meshctl is unknown ("${current}")`;
  if (a.major !== b.major || Math.abs(a.minor - b.minor) > 1) {
    return `the installed control plane is version ${installed} and this meshctl is ${current}: more than one minor version apart; upgrade one minor version at a time`;
  }
  return undefined;
}

export async function runUpgrade(req: UpgradeRequest, deps: ApplyDeps & { readonly client: ClientFactory }): Promise<CommandOutcome> {
  const r = await renderFlags(req);
  for (const w of r.warnings) deps.io.err(`${w}\n`);
  const force = req.force ?? false;
  const refuse = (why: string) => {
    if (!force) throw new InstallError(`cannot upgrade ${describeTarget(r)}: ${why} (--force skips this check)`);
    deps.io.err(`warning: ${why} (ignored: --force)\n`);
  };
  const client = await deps.client();
  try {
    const installed = await readInstalledState(client, r.namespace, r.revision);
    if (!installed) {
      const others = await listInstalledStates(client, r.namespace);
      if (others.length === 0) {
        refuse(`no control plane is installed in namespace "${r.namespace}" (no MeshOperator ${stateName(r.revision)}); use meshctl install`);
      } else {
        const revs = others.map((s) => s.revision || 'default').join(', ');
        refuse(`revision mismatch: namespace "${r.namespace}" has revision(s) ${revs} installed, not "${r.revision || 'default'}"; to run a new revision beside them use meshctl install --revision ${r.revision || '<revision>'}`);
      }
    }
    const current = getBuildInfo().version;
    if (installed) {
      const skew = skewProblem(installed.version, current);
      if (skew) refuse(skew);
    }

    // The API server returns the stored spec with its map keys sorted, and rendered config map
    // texts follow key order: both sides are rendered from key-sorted specs so that only real
    // changes show.
    const before = installed ? await renderSpec(sortKeys(installed.spec), r.source) : [];
    const diff = diffRenders(before, await renderSpec(sortKeys(r.spec), r.source));
    deps.io.out(formatRenderDiff(diff));
    if (!req.dryRun) {
      const from = installed?.version ? ` from ${installed.version}` : '';
      const question = `Upgrade the control plane (${describeTarget(r)})${from} to ${current}? Traffic may be disrupted during the upgrade. Proceed?`;
      if (!(await confirm(deps.io, question, req.skipConfirmation))) return { stdout: 'Cancelled: nothing was changed.\n' };
    }
    return await applyRendered(client, r, { dryRun: req.dryRun, readinessTimeoutMs: req.readinessTimeoutMs, verify: req.verify, what: 'Upgrade' }, deps);
  } finally {
    client.close();
  }
}
