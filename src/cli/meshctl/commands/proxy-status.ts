/**
 * `meshctl proxy-status` (alias `ps`, spec part 2) and `meshctl x proxy-status` (spec part 1, XG):
 * the sync state of every connected proxy from every meshd replica, over the xDS debug channel;
 * with `[<type>/]<name>[.<namespace>]`, the diff between what meshd would send and what that proxy
 * holds (`-f` a saved config dump, else its admin port through a port-forward). The top-level
 * command takes the connection settings from MESHCTL_* variables and the MESHCONFIG file; the
 * experimental one takes them as flags too. The work is in ../diag/run-proxy-status.ts.
 */
import { Option, type Command } from 'commander';
import { colorEnabled, parseOutputFormat } from '../../output.js';
import type { Cli } from '../../runner.js';
import { addXdsFlags, durationFlag, parsePodRef } from '../diag/flags.js';
import { globalOptions } from '../global-flags.js';
import { kubeClientFor } from '../kube.js';

const FORMATS = ['table', 'json', 'yaml'] as const;

interface Flags {
  readonly file?: string;
  readonly revision?: string;
  readonly output: string;
  readonly timeout?: string;
  readonly xdsLabel?: string;
}

function build(cmd: Command, cli: Cli): Command {
  const output = new Option('-o, --output <format>', 'Output format: table, json or yaml.').default('table');
  output.argChoices = [...FORMATS];
  return cmd
    .argument('[pod]', 'A proxy, as [<type>/]<name>[.<namespace>]: show its diff against meshd.')
    .option('-f, --file <file>', 'The proxy\'s config dump (JSON) to compare with, instead of reading its admin port.')
    .addOption(output)
    .action(
      cli.action(async (pod: string | undefined, opts: Flags, self: Command) => {
        const globals = globalOptions(self);
        const format = parseOutputFormat(opts.output, FORMATS);
        const { xdsFlags } = await import('../diag/xds-client.js');
        const flags = xdsFlags(globals, opts, durationFlag('--timeout', opts.timeout ?? '30s'));
        const client = () => kubeClientFor(globals, cli.io.env);
        const { withLazyClient } = await import('../diag/lazy-client.js');
        const run = await import('../diag/run-proxy-status.js');
        if (pod === undefined) {
          if (opts.file) throw new (await import('../../runner.js')).CliError('--file needs a proxy argument to compare with');
          return withLazyClient(client, (c) => run.runProxyStatusList(flags, c, { output: format, color: colorEnabled(cli.io) }));
        }
        const ref = parsePodRef(pod, globals.namespace || 'default');
        return withLazyClient(client, (c) => run.runProxyStatusDiff(flags, c, { ref, file: opts.file, output: format }));
      }),
    );
}

export function register(program: Command, cli: Cli): Command {
  const cmd = program
    .command('proxy-status')
    .alias('ps')
    .description('Shows the last sent and last acknowledged xDS sync from meshd to each proxy; with a proxy, its diff against meshd.')
    .option('-r, --revision <revision>', 'Control plane revision.');
  return build(cmd, cli);
}

export function registerExperimental(parent: Command, cli: Cli): Command {
  const cmd = addXdsFlags(
    parent.command('proxy-status').alias('ps').description('Shows the xDS sync state of each proxy from every meshd (over the xDS debug channel); with a proxy, its diff against meshd.'),
  );
  return build(cmd, cli);
}
