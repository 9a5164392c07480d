/**
 * `meshctl tag generate|list|set|remove` (spec part 2, "tag"), with the same semantics as
 * `meshctl x revision tag` (revision.ts adds the same subcommands there). A tag T of revision R is
 * the MutatingWebhookConfiguration `mesh-revision-tag-T`, a copy of R's injector webhook that
 * selects namespaces labelled `mesh.io/rev=T`; see src/install/tags.ts for the rules. The work is
 * loaded when a subcommand runs.
 *
 * `-y` on generate and set is accepted for compatibility: they never ask (a conflict is an error
 * that names the flag to pass). `--manifests` is accepted on generate and set but not needed: the
 * tag is copied from the revision's installed webhook, so the revision must be installed.
 */
import type { Command } from 'commander';
import { colorEnabled } from '../../output.js';
import { boolOption, boolValue, type Cli } from '../../runner.js';
import { globalOptions } from '../global-flags.js';
import { kubeClientFor } from '../kube.js';

interface SetFlags {
  readonly manifests?: string;
  readonly overwrite?: unknown;
  readonly revision?: string;
  readonly skipConfirmation?: unknown;
  readonly webhookName?: string;
}

interface RemoveFlags {
  readonly skipConfirmation?: unknown;
}

export interface TagCommandOptions {
  /** The `-o/--output` of a parent command (x revision), if any. */
  readonly output?: (cmd: Command) => 'table' | 'json';
}

function addSetFlags(cmd: Command, withManifests: boolean): Command {
  if (withManifests) cmd.option('-d, --manifests <dir>', 'Accepted for compatibility; the tag is copied from the installed revision.');
  return cmd
    .addOption(boolOption('--overwrite', 'Point an existing tag to another revision (otherwise that is refused).'))
    .option('-r, --revision <revision>', 'Control-plane revision the tag points to.', 'default')
    .addOption(boolOption('-y, --skip-confirmation', 'Assume yes (set and generate never ask).'))
    .option('--webhook-name <name>', 'Name of the tag\'s MutatingWebhookConfiguration (default mesh-revision-tag-<tag>).');
}

function setRequest(tag: string, opts: SetFlags) {
  boolValue(opts.skipConfirmation, '--skip-confirmation');
  return { tag, revision: opts.revision ?? 'default', overwrite: boolValue(opts.overwrite, '--overwrite'), webhookName: opts.webhookName };
}

/** Adds generate, list, remove and set under `parent` (`tag`, or `x revision tag`). */
export function addTagCommands(parent: Command, cli: Cli, options: TagCommandOptions = {}): Command {
  const client = (self: Command) => {
    const globals = globalOptions(self);
    return () => kubeClientFor(globals, cli.io.env);
  };
  const ownManifests = options.output === undefined; // under x revision, -d belongs to the group
  const { output } = options;

  addSetFlags(parent.command('generate').description('Prints the webhook configuration of a revision tag without applying it.').argument('<revision-tag>', 'Tag name.'), ownManifests).action(
    cli.action(async (tag: string, opts: SetFlags, self: Command) => {
      const req = setRequest(tag, opts);
      const [{ withKubeClient }, { runTagGenerate }] = [await import('../kube.js'), await import('../tag/run-tag.js')];
      return withKubeClient(client(self), (c) => runTagGenerate(c, req));
    }),
  );

  parent
    .command('list')
    .alias('show')
    .description('Lists revision tags: TAG, REVISION, NAMESPACES.')
    .action(
      cli.action(async (_opts: unknown, self: Command) => {
        const format = output ? output(self) : 'table';
        const [{ withKubeClient }, { runTagList }] = [await import('../kube.js'), await import('../tag/run-tag.js')];
        return withKubeClient(client(self), (c) => runTagList(c, { output: format, color: colorEnabled(cli.io) }));
      }),
    );

  parent
    .command('remove')
    .alias('delete')
    .description('Removes a revision tag; disrupts injection in namespaces that use it (refused unless -y).')
    .argument('<revision-tag>', 'Tag name.')
    .addOption(boolOption('-y, --skip-confirmation', 'Remove the tag although namespaces use it.'))
    .action(
      cli.action(async (tag: string, opts: RemoveFlags, self: Command) => {
        const yes = boolValue(opts.skipConfirmation, '--skip-confirmation');
        const [{ withKubeClient }, { runTagRemove }] = [await import('../kube.js'), await import('../tag/run-tag.js')];
        return withKubeClient(client(self), (c) => runTagRemove(c, tag, { yes }));
      }),
    );

  addSetFlags(parent.command('set').description('Creates a revision tag, or points it to another revision with --overwrite.').argument('<revision-tag>', 'Tag name.'), ownManifests).action(
    cli.action(async (tag: string, opts: SetFlags, self: Command) => {
      const req = setRequest(tag, opts);
      const [{ withKubeClient }, { runTagSet }] = [await import('../kube.js'), await import('../tag/run-tag.js')];
      return withKubeClient(client(self), (c) => runTagSet(c, req));
    }),
  );
  return parent;
}

export function register(program: Command, cli: Cli): Command {
  return addTagCommands(program.command('tag').description('Manages revision tags: mutable aliases of control-plane revisions for sidecar injection.'), cli);
}
