/**
 * `meshctl verify-install [-f <file>] [--revision <revision>]` (spec part 2): checks that every
 * object of the installation exists and is ready, against the files given or the installed state
 * (`installed-state[-R]` in the `-i/--meshNamespace` namespace). Exit code 1 names each object that
 * is not ready. The work is in src/cli/meshctl/install/run-verify.ts.
 */
import type { Command } from 'commander';
import type { Cli } from '../../runner.js';
import { globalOptions } from '../global-flags.js';
import { kubeClientFor } from '../kube.js';
import { collectSlice } from './install.js';

interface VerifyFlags {
  readonly filename: string[];
  readonly manifests?: string;
  readonly revision?: string;
}

export function register(program: Command, cli: Cli): Command {
  return program
    .command('verify-install')
    .description('Verifies the installation status against installation files, or against the installed state when no file is given.')
    .option('-f, --filename <files>', 'MeshOperator files of the installation, overlaid left to right; repeatable, comma-separated.', collectSlice, [])
    .option('-d, --manifests <dir>', 'Directory with profiles/ (and optionally crds/) to use instead of the built-in ones.')
    .option('-r, --revision <revision>', 'Control-plane revision to verify.')
    .action(
      cli.action(async (opts: VerifyFlags, self: Command) => {
        const globals = globalOptions(self);
        const { runVerifyInstall } = await import('../install/run-verify.js');
        return runVerifyInstall(
          { files: opts.filename, manifests: opts.manifests, revision: opts.revision, meshNamespace: globals.meshNamespace },
          { client: () => kubeClientFor(globals, cli.io.env) },
        );
      }),
    );
}
