/**
 * `meshctl install` (alias `apply`) and `meshctl manifest install` (alias `apply`), spec part 2:
 * generates the install manifest and applies it to the cluster. Both take the same flags; the
 * work is in src/cli/meshctl/install/run-install.ts, loaded when the command runs.
 */
import type { Command } from 'commander';
import { parseDuration } from '../../../util/duration.js';
import { boolOption, boolValue, CliError, type Cli, type CliIO } from '../../runner.js';
import { globalOptions } from '../global-flags.js';
import { kubeClientFor } from '../kube.js';

/** stringSlice: repeatable, comma-separated. */
export const collectSlice = (value: string, previous: string[]): string[] => [...previous, ...value.split(',').filter((v) => v !== '')];
/** stringArray: repeatable, taken whole. */
export const collectArray = (value: string, previous: string[]): string[] => [...previous, value];
/**
 * A repeatable flag whose values are taken whole (their commas are their own) and whose default
 * list is replaced by the first value given instead of added to. Give the same array to
 * `.default()`: the default is recognised by identity.
 */
export const collectReplacingDefault =
  (defaults: readonly string[]) =>
  (value: string, previous: readonly string[]): string[] =>
    previous === defaults ? [value] : [...previous, value];

export const DEFAULT_READINESS_TIMEOUT = '5m0s';

/** `--readiness-timeout` in milliseconds. */
export function readinessTimeoutMs(value: string | undefined): number {
  try {
    const ms = parseDuration(value ?? DEFAULT_READINESS_TIMEOUT);
    if (ms < 0) throw new Error('must not be negative');
    return ms;
  } catch (err) {
    throw new CliError(`--readiness-timeout: ${(err as Error).message}`);
  }
}

/** Redraw progress in place: standard output is a terminal and TERM is not `dumb`. */
export function liveProgress(io: CliIO): boolean {
  return io.isTTY === true && io.env.TERM !== 'dumb';
}

export interface ApplyFlags {
  readonly charts?: string;
  readonly dryRun?: unknown;
  readonly filename: string[];
  readonly force?: unknown;
  readonly manifests?: string;
  readonly readinessTimeout?: string;
  readonly revision?: string;
  readonly set: string[];
  readonly skipConfirmation?: unknown;
  readonly verify?: unknown;
}

/** The flags of install, manifest install and upgrade (upgrade's own wording where it differs). */
export function addApplyFlags(cmd: Command, what: 'install' | 'upgrade'): Command {
  return cmd
    .option('--charts <dir>', 'Deprecated; use --manifests.')
    .addOption(boolOption('--dry-run', 'Console output only, no changes: the API server checks every change (dryRun=All).'))
    .option('-f, --filename <files>', 'MeshOperator files, overlaid left to right; repeatable, comma-separated.', collectSlice, [])
    .addOption(
      boolOption(
        '--force',
        what === 'install' ? 'Proceed despite validation errors (unknown fields are dropped; type errors still stop).' : 'Apply without eligibility checks (installed revision and version skew).',
      ),
    )
    .option('-d, --manifests <dir>', 'Directory with profiles/ (and optionally crds/) to use instead of the built-in ones.')
    .option('--readiness-timeout <duration>', 'Maximum wait for the resources of each component to be ready.', DEFAULT_READINESS_TIMEOUT)
    .option('-r, --revision <revision>', 'Target control-plane revision.')
    .option('-s, --set <path=value>', 'Value override on the MeshOperator spec, e.g. components.meshd.enabled=false; repeatable.', collectArray, [])
    .addOption(boolOption('-y, --skip-confirmation', what === 'install' ? 'Skip the confirmation prompt and assume yes.' : 'Skip the confirmation of value changes and assume yes.'))
    .addOption(boolOption('--verify', 'Verify the control plane after installation or in-place upgrade.'));
}

/** The request fields every applying command reads from its flags. */
export function applyRequest(opts: ApplyFlags) {
  return {
    files: opts.filename,
    sets: opts.set,
    manifests: opts.manifests,
    charts: opts.charts,
    revision: opts.revision,
    force: boolValue(opts.force, '--force'),
    dryRun: boolValue(opts.dryRun, '--dry-run'),
    skipConfirmation: boolValue(opts.skipConfirmation, '--skip-confirmation'),
    verify: boolValue(opts.verify, '--verify'),
    readinessTimeoutMs: readinessTimeoutMs(opts.readinessTimeout),
  };
}

/** Adds `install` (alias `apply`) under `parent`: the program, or the `manifest` command. */
export function register(parent: Command, cli: Cli): Command {
  const cmd = parent.command('install').alias('apply').description('Generates an install manifest and applies it to the cluster.');
  addApplyFlags(cmd, 'install');
  return cmd.action(
    cli.action(async (opts: ApplyFlags, self: Command) => {
      const req = applyRequest(opts);
      const globals = globalOptions(self);
      const { runInstall } = await import('../install/run-install.js');
      return runInstall(req, { io: cli.io, live: liveProgress(cli.io), client: () => kubeClientFor(globals, cli.io.env) });
    }),
  );
}
