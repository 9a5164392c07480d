#!/usr/bin/env node
/**
 * `mesh-discovery`: the control-plane daemon's executable. Commands: `discovery` (runs the
 * daemon), `request`, `version` and `completion <shell>`.
 *
 * Start-up stays light: the discovery flags (and zod, which validates them) are loaded only when
 * the `discovery` command, its help or a completion script needs them, and the daemon itself
 * only when `discovery` runs.
 */
import { Command } from 'commander';
import { registerCompletionCommand } from './completion.js';
import { DISCOVERY_EXAMPLES } from './examples.js';
import { finishHelp } from './help.js';
import { registerRequestCommand } from './request.js';
import { CliError, createCli, isMain, processIO, runCli, type Cli, type CliIO } from './runner.js';
import { registerVersionCommand } from './version.js';

export function buildProgram(cli: Cli): Command {
  const program = new Command('mesh-discovery').description('Mesh control-plane daemon and its tools.');

  const discovery = program.command('discovery').description('Starts the proxy discovery service.');
  let flagsLoaded: Promise<void> | undefined;
  const loadDiscoveryFlags = (): Promise<void> =>
    (flagsLoaded ??= (async () => {
      // In sequence: the second is already loaded by the first (parallel imports of one module
      // graph trip Jest's ESM loader).
      const { registerDiscoveryFlags } = await import('../config/discovery-flags.js');
      const { describeDaemonEnv } = await import('../config/daemon-env.js');
      registerDiscoveryFlags(discovery).addHelpText('after', `\nEnvironment variables:\n${describeDaemonEnv()}\n`);
    })());
  // Runs before the subcommand parses its options.
  program.hook('preSubcommand', async (_program, sub) => {
    if (sub === discovery) await loadDiscoveryFlags();
  });
  discovery.action(
    cli.action(async (_opts: unknown, cmd: Command) => {
      const { loadDiscoveryConfig } = await import('../config/discovery-flags.js');
      const { options, env } = loadDiscoveryConfig(cmd.opts(), cli.io.env);
      const { runDiscovery } = await import('../bootstrap/discovery.js');
      await runDiscovery(options, env);
    }),
  );

  registerRequestCommand(program, cli);
  registerVersionCommand(program, cli);
  registerCompletionCommand(program, cli, loadDiscoveryFlags);

  // Commander's own `help <command>` prints help without running hooks; this one loads the
  // discovery flags first.
  program.helpCommand(false);
  program
    .command('help [command]')
    .description('display help for command')
    .action(
      cli.action(async (name: string | undefined) => {
        const target = name === undefined ? program : program.commands.find((c) => c.name() === name || c.aliases().includes(name));
        if (target === undefined) throw new CliError(`unknown command ${JSON.stringify(name)}`);
        if (target === discovery) await loadDiscoveryFlags();
        target.outputHelp(); // with the text added after the options
      }),
    );
  return finishHelp(program, DISCOVERY_EXAMPLES);
}

/** Runs the program on `argv` (the arguments after the program name); returns the exit code. */
export async function main(argv: readonly string[] = process.argv.slice(2), io: CliIO = processIO()): Promise<number> {
  const cli = createCli(io);
  return runCli(buildProgram(cli), cli, argv);
}

if (isMain(import.meta.url)) {
  const code = await main();
  // A daemon that failed half-way may hold listeners or timers: a failure ends the process now.
  if (code !== 0) process.exit(code);
  process.exitCode = code;
}
