/**
 * `meshctl x precheck` (spec part 1, experimental): checks that a cluster meets the installation
 * and upgrade requirements (Kubernetes version, the user's permissions, installations already
 * present). Exit code 1 on a blocker. The work is in src/cli/meshctl/install/run-precheck.ts.
 */
import type { Command } from 'commander';
import { boolOption, boolValue, type Cli } from '../../runner.js';
import { globalOptions } from '../global-flags.js';
import { kubeClientFor } from '../kube.js';

interface PrecheckFlags {
  readonly revision?: string;
  readonly skipControlplane?: unknown;
}

export function register(parent: Command, cli: Cli): Command {
  return parent
    .command('precheck')
    .description('Checks that a cluster meets the installation and upgrade requirements.')
    .option('-r, --revision <revision>', 'Control-plane revision to check for.')
    .addOption(boolOption('--skip-controlplane', 'Skip the checks of the control planes already installed.'))
    .action(
      cli.action(async (opts: PrecheckFlags, self: Command) => {
        const globals = globalOptions(self);
        const { runPrecheck } = await import('../install/run-precheck.js');
        return runPrecheck(
          { revision: opts.revision, skipControlPlane: boolValue(opts.skipControlplane, '--skip-controlplane'), meshNamespace: globals.meshNamespace },
          { client: () => kubeClientFor(globals, cli.io.env) },
        );
      }),
    );
}
