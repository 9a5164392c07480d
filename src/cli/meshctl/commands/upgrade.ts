/**
 * `meshctl upgrade` (spec part 2): checks that the installed control plane may be upgraded in
 * place (installed revision, version skew), shows what changes, asks, and applies. The work is in
 * src/cli/meshctl/install/run-upgrade.ts, loaded when the command runs.
 */
import type { Command } from 'commander';
import type { Cli } from '../../runner.js';
import { globalOptions } from '../global-flags.js';
import { kubeClientFor } from '../kube.js';
import { addApplyFlags, applyRequest, liveProgress, type ApplyFlags } from './install.js';

export function register(program: Command, cli: Cli): Command {
  const cmd = program
    .command('upgrade')
    .description('Checks eligibility and upgrades the control plane in place. Traffic may be disrupted; define disruption budgets.');
  addApplyFlags(cmd, 'upgrade');
  return cmd.action(
    cli.action(async (opts: ApplyFlags, self: Command) => {
      const req = applyRequest(opts);
      const globals = globalOptions(self);
      const { runUpgrade } = await import('../install/run-upgrade.js');
      return runUpgrade(req, { io: cli.io, live: liveProgress(cli.io), client: () => kubeClientFor(globals, cli.io.env) });
    }),
  );
}
