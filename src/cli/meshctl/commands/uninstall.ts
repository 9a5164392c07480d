/**
 * `meshctl x uninstall` (spec part 1, experimental): removes a revision of the mesh, or with
 * `--purge` every mesh object of every revision (CRDs included). The work is in
 * src/cli/meshctl/install/run-uninstall.ts, loaded when the command runs.
 */
import type { Command } from 'commander';
import { boolOption, boolValue, type Cli } from '../../runner.js';
import { globalOptions } from '../global-flags.js';
import { kubeClientFor } from '../kube.js';
import { collectArray, liveProgress } from './install.js';

interface UninstallFlags {
  readonly dryRun?: unknown;
  readonly filename?: string;
  readonly force?: unknown;
  readonly manifests?: string;
  readonly purge?: unknown;
  readonly revision?: string;
  readonly set: string[];
  readonly skipConfirmation?: unknown;
  readonly verbose?: unknown;
}

export function register(parent: Command, cli: Cli): Command {
  return parent
    .command('uninstall')
    .description('Removes the mesh from a cluster: one revision (-r, or the spec of -f), or everything with --purge.')
    .addOption(boolOption('--dry-run', 'List what would be removed; change nothing.'))
    .option('-f, --filename <file>', 'The MeshOperator file of the installation to remove (its revision and namespace).')
    .addOption(boolOption('--force', 'Proceed despite validation errors in -f and --set.'))
    .option('-d, --manifests <dir>', 'Directory with profiles/ to use instead of the built-in ones.')
    .addOption(boolOption('--purge', 'Delete all mesh resources of all versions and revisions, CRDs included.'))
    .option('-r, --revision <revision>', 'Control-plane revision to remove ("default" for the default revision).')
    .option('-s, --set <path=value>', 'Value overrides, e.g. revision=canary or namespace=mesh-system; repeatable.', collectArray, [])
    .addOption(boolOption('-y, --skip-confirmation', 'Skip the confirmation prompt and assume yes.'))
    .addOption(boolOption('-v, --verbose', 'List the objects that are kept, with the reason.'))
    .action(
      cli.action(async (opts: UninstallFlags, self: Command) => {
        const globals = globalOptions(self);
        const req = {
          file: opts.filename,
          sets: opts.set,
          manifests: opts.manifests,
          revision: opts.revision,
          purge: boolValue(opts.purge, '--purge'),
          dryRun: boolValue(opts.dryRun, '--dry-run'),
          force: boolValue(opts.force, '--force'),
          skipConfirmation: boolValue(opts.skipConfirmation, '--skip-confirmation'),
          verbose: boolValue(opts.verbose, '--verbose'),
          meshNamespace: globals.meshNamespace,
        };
        const { runUninstall } = await import('../install/run-uninstall.js');
        return runUninstall(req, { io: cli.io, live: liveProgress(cli.io), client: () => kubeClientFor(globals, cli.io.env) });
      }),
    );
}
