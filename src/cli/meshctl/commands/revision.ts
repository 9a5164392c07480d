/**
 * `meshctl x revision list|describe|tag` (spec part 1, "revision"): a revision-centric view of the
 * mesh. Group flags: `-d/--manifests` (accepted; the view is read from the cluster), `-o/--output`
 * (`table` or `json`, default table), `-v/--verbose` (list: the version column; describe: the pods
 * of the namespaces that use the revision). `tag` has the subcommands of `meshctl tag` (tag.ts).
 * The work is in src/cli/meshctl/revision/run-revision.ts, loaded when a subcommand runs.
 */
import { Option, type Command } from 'commander';
import { colorEnabled, parseOutputFormat } from '../../output.js';
import { boolOption, boolValue, type Cli } from '../../runner.js';
import { globalOptions } from '../global-flags.js';
import { kubeClientFor } from '../kube.js';
import { addTagCommands } from './tag.js';

const FORMATS = ['table', 'json'] as const;

interface GroupFlags {
  readonly manifests?: string;
  readonly output: string;
  readonly verbose?: unknown;
}

function groupOf(self: Command): { output: 'table' | 'json'; verbose: boolean } {
  const opts = self.optsWithGlobals<GroupFlags>();
  return { output: parseOutputFormat(opts.output, FORMATS), verbose: boolValue(opts.verbose, '--verbose') };
}

export function register(parent: Command, cli: Cli): Command {
  const output = new Option('-o, --output <format>', 'Output format: table or json.').default('table');
  output.argChoices = [...FORMATS];
  const revision = parent
    .command('revision')
    .description('Revision-centric view of the mesh: installed control-plane and gateway revisions, and their tags.')
    .option('-d, --manifests <dir>', 'Accepted for compatibility; revisions are read from the cluster.')
    .addOption(output)
    .addOption(boolOption('-v, --verbose', 'More detail: the version (list), the pods of injected namespaces (describe).'));

  const client = (self: Command) => {
    const globals = globalOptions(self);
    return () => kubeClientFor(globals, cli.io.env);
  };

  revision
    .command('list')
    .description('Lists installed control-plane and gateway revisions with their tags.')
    .action(
      cli.action(async (_opts: unknown, self: Command) => {
        const group = groupOf(self);
        const [{ withKubeClient }, { runRevisionList }] = [await import('../kube.js'), await import('../revision/run-revision.js')];
        return withKubeClient(client(self), (c) => runRevisionList(c, { ...group, color: colorEnabled(cli.io) }));
      }),
    );

  revision
    .command('describe')
    .description('Describes a revision: version, customizations, webhook, tags, control-plane and gateway pods, namespaces that use it.')
    .argument('<revision>', 'Revision ("default" for the default revision).')
    .action(
      cli.action(async (rev: string, _opts: unknown, self: Command) => {
        const group = groupOf(self);
        const [{ withKubeClient }, { runRevisionDescribe }] = [await import('../kube.js'), await import('../revision/run-revision.js')];
        return withKubeClient(client(self), (c) => runRevisionDescribe(c, rev, { ...group, color: colorEnabled(cli.io) }));
      }),
    );

  addTagCommands(revision.command('tag').description('Manages revision tags (same as meshctl tag).'), cli, { output: (self) => groupOf(self).output });
  return revision;
}
