/**
 * `meshctl admin` (alias `meshd`, spec part 1): commands that manage running meshd daemons.
 * Group flag `-l/--selector` (default `app=meshd`), the daemons' pods in the mesh namespace (`-i`).
 *
 *   admin log (l) [<pod-name>] [--level <scope>:<level>,…] [--stack-trace-level <scope>:<level>,…]
 *                 | [-r|--reset] [-o short|json|yaml] [--ctrlz_port 9876]
 *
 * lists the daemons' log scopes, or changes them at run time, through ControlZ (docs/adr/0061) on
 * each pod's `--ctrlz_port`, reached by a port-forward through the API server. The work is in
 * ../diag/run-admin-log.ts.
 */
import { Option, type Command } from 'commander';
import { colorEnabled, parseOutputFormat } from '../../output.js';
import { boolOption, boolValue, CliError, type Cli } from '../../runner.js';
import { globalOptions } from '../global-flags.js';
import { kubeClientFor, withKubeClient } from '../kube.js';

const FORMATS = ['short', 'json', 'yaml'] as const;
const DEFAULT_SELECTOR = 'app=meshd';
export const DEFAULT_CTRLZ_PORT = 9876;
/** Bound of each request to a daemon (the command has no --timeout flag). */
const ADMIN_TIMEOUT_MS = 30_000;

interface LogFlags {
  readonly ctrlz_port: string;
  readonly level?: string;
  readonly stackTraceLevel?: string;
  readonly output: string;
  readonly reset?: unknown;
}

function portFlag(flag: string, text: string): number {
  const n = Number(text);
  if (!/^\d+$/.test(text) || n < 1 || n > 65535) throw new CliError(`${flag}: ${JSON.stringify(text)} is not a port number (1-65535)`);
  return n;
}

export function register(program: Command, cli: Cli): Command {
  const admin = program
    .command('admin')
    .alias('meshd')
    .description('Manages the configuration of running meshd daemons.')
    .addOption(new Option('-l, --selector <selector>', 'Label selector of the meshd pods.').default(DEFAULT_SELECTOR));

  const output = new Option('-o, --output <format>', 'Output format: short, json or yaml.').default('short');
  output.argChoices = [...FORMATS];
  admin
    .command('log')
    .alias('l')
    .description('Lists the log scopes of meshd daemons and their levels, or changes them at run time (through ControlZ).')
    .argument('[pod-name]', 'One meshd pod of the mesh namespace (else every pod the selector matches).')
    .option('--ctrlz_port <port>', 'ControlZ (introspection) port of the meshd pods.', String(DEFAULT_CTRLZ_PORT))
    .option('--level <levels>', 'Comma-separated <scope>:<level> to set; levels none, error, warn, info, debug.')
    .option('--stack-trace-level <levels>', 'Comma-separated <scope>:<level> from which a log line carries a stack trace.')
    .addOption(output)
    .addOption(boolOption('-r, --reset', 'Resets every scope to level info, without stack traces.'))
    .action(
      cli.action(async (pod: string | undefined, opts: LogFlags, self: Command) => {
        const format = parseOutputFormat(opts.output, FORMATS);
        const ctrlzPort = portFlag('--ctrlz_port', opts.ctrlz_port);
        const { logChange, runAdminLog } = await import('../diag/run-admin-log.js');
        const change = logChange({ level: opts.level, stackTraceLevel: opts.stackTraceLevel, reset: boolValue(opts.reset, '--reset') });
        // -l/--selector is the admin group's flag; it may be given before or after `log`.
        const selector = (self.optsWithGlobals<{ selector?: string }>().selector ?? DEFAULT_SELECTOR).trim();
        if (pod !== undefined && self.parent?.getOptionValueSource('selector') === 'cli') throw new CliError('give a meshd pod name or -l/--selector, not both');
        if (selector === '') throw new CliError('-l/--selector: an empty selector would match every pod of the namespace');
        const globals = globalOptions(self);
        return withKubeClient(
          () => kubeClientFor(globals, cli.io.env),
          (kube) => runAdminLog(kube, { pod, selector, namespace: globals.meshNamespace, ctrlzPort, change, output: format, timeoutMs: ADMIN_TIMEOUT_MS }, colorEnabled(cli.io)),
        );
      }),
    );
  return admin;
}
