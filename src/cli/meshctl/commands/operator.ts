/**
 * `meshctl operator dump|init|remove` (spec part 2, "operator"): the operator controller's
 * manifest, installing it, removing it. The work is in src/cli/meshctl/operator/run-operator.ts, loaded when
 * a subcommand runs.
 *
 * `--hub` and `--tag` default to `unknown`, which stands for the default registry and the version
 * of meshctl. `init --watchedNamespaces` sets the namespaces the controller watches (dump always
 * uses the default, mesh-system). `remove` keeps the MeshOperator CRD (see run-operator.ts).
 */
import type { Command } from 'commander';
import { boolOption, boolValue, type Cli } from '../../runner.js';
import { globalOptions } from '../global-flags.js';
import { kubeClientFor } from '../kube.js';
import { collectSlice } from './install.js';

interface DumpFlags {
  readonly charts?: string;
  readonly dryRun?: unknown;
  readonly hub: string;
  readonly imagePullSecrets: string[];
  readonly manifests?: string;
  readonly operatorNamespace: string;
  readonly revision?: string;
  readonly tag: string;
}

interface InitFlags extends DumpFlags {
  readonly filename?: string;
  readonly watchedNamespaces: string;
}

interface RemoveFlags {
  readonly dryRun?: unknown;
  readonly force?: unknown;
  readonly operatorNamespace: string;
  readonly revision?: string;
}

function addDumpFlags(cmd: Command): Command {
  return cmd
    .option('--charts <dir>', 'Deprecated; use --manifests.')
    .addOption(boolOption('--dry-run', 'Console output only, no changes.'))
    .option('--hub <hub>', 'Registry of the operator image ("unknown": the default registry).', 'unknown')
    .option('--imagePullSecrets <secrets>', 'Secrets to pull the operator image with; comma-separated, repeatable.', collectSlice, [])
    .option('-d, --manifests <dir>', 'Directory with profiles/ (and crds/); the RBAC of the operator covers what its profiles render.')
    .option('--operatorNamespace <namespace>', 'Namespace of the operator controller.', 'mesh-operator')
    .option('-r, --revision <revision>', 'Control-plane revision whose MeshOperator resources the operator reconciles.')
    .option('--tag <tag>', 'Tag of the operator image ("unknown": the version of meshctl).', 'unknown');
}

function dumpRequest(opts: DumpFlags) {
  return {
    charts: opts.charts,
    manifests: opts.manifests,
    hub: opts.hub,
    tag: opts.tag,
    imagePullSecrets: opts.imagePullSecrets,
    operatorNamespace: opts.operatorNamespace,
    revision: opts.revision,
  };
}

export function register(program: Command, cli: Cli): Command {
  const operator = program.command('operator').description('Installs, dumps and removes the operator controller.');

  addDumpFlags(operator.command('dump').description('Prints the operator controller manifest.')).action(
    cli.action(async (opts: DumpFlags) => {
      boolValue(opts.dryRun, '--dry-run');
      const { runOperatorDump } = await import('../operator/run-operator.js');
      return runOperatorDump(dumpRequest(opts));
    }),
  );

  addDumpFlags(operator.command('init').description('Installs the operator controller (and, with -f, a MeshOperator for it to reconcile).'))
    .option('-f, --filename <file>', 'A MeshOperator file, applied once the controller is ready.')
    .option('--watchedNamespaces <namespaces>', 'Namespaces whose MeshOperator resources the controller reconciles, comma-separated.', 'mesh-system')
    .action(
      cli.action(async (opts: InitFlags, self: Command) => {
        const dryRun = boolValue(opts.dryRun, '--dry-run');
        const req = { ...dumpRequest(opts), filename: opts.filename, watchedNamespaces: opts.watchedNamespaces, dryRun };
        const { runOperatorInit } = await import('../operator/run-operator.js');
        if (dryRun) return runOperatorInit(undefined, req);
        const { withKubeClient } = await import('../kube.js');
        const globals = globalOptions(self);
        return withKubeClient(() => kubeClientFor(globals, cli.io.env), (client) => runOperatorInit(client, req));
      }),
    );

  operator
    .command('remove')
    .description('Removes the operator controller (the MeshOperator CRD and the installations stay).')
    .addOption(boolOption('--dry-run', 'Console output only, no changes.'))
    .addOption(boolOption('--force', 'Remove even while MeshOperator resources of the revision exist (their finalizers are removed; their installations stay).'))
    .option('--operatorNamespace <namespace>', 'Namespace of the operator controller.', 'mesh-operator')
    .option('-r, --revision <revision>', 'Revision of the operator to remove.')
    .action(
      cli.action(async (opts: RemoveFlags, self: Command) => {
        const req = { operatorNamespace: opts.operatorNamespace, revision: opts.revision, force: boolValue(opts.force, '--force'), dryRun: boolValue(opts.dryRun, '--dry-run') };
        const { runOperatorRemove } = await import('../operator/run-operator.js');
        const { withKubeClient } = await import('../kube.js');
        const globals = globalOptions(self);
        return withKubeClient(() => kubeClientFor(globals, cli.io.env), (client) => runOperatorRemove(client, req));
      }),
    );

  return operator;
}
