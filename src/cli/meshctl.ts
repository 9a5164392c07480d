#!/usr/bin/env node
/**
 * `meshctl`: the mesh operator utility. Its commands live in src/cli/meshctl/commands/, one
 * module each; this file adds the global flags, registers the commands and runs the program.
 * Settings (global flags, environment, the MESHCONFIG file) are described in meshctl/env.ts.
 */
import { Command } from 'commander';
import { MESHCTL_EXAMPLES } from './examples.js';
import { finishHelp } from './help.js';
import { COMMANDS } from './meshctl/commands/index.js';
import { MESHCTL_COMPLETION } from './meshctl/complete-values.js';
import { globalOptions, loadSettings, registerGlobalFlags } from './meshctl/global-flags.js';
import { createCli, isMain, processIO, runCli, type Cli, type CliIO } from './runner.js';

export function buildMeshctl(cli: Cli): Command {
  const program = new Command('meshctl').description('Operator utility to install, inspect and debug a service mesh.');
  registerGlobalFlags(program, cli.io.env, cli.io.err);
  // Before any command runs: read the environment and the MESHCONFIG file, and check the global
  // flags, so that a bad value fails every command the same way.
  program.hook('preAction', async (_program, action) => {
    await loadSettings(action);
    globalOptions(action);
  });
  for (const register of COMMANDS) register(program, cli);
  return finishHelp(program, MESHCTL_EXAMPLES);
}

/** Runs meshctl on `argv` (the arguments after the program name); returns the exit code. */
export async function main(argv: readonly string[] = process.argv.slice(2), io: CliIO = processIO()): Promise<number> {
  const cli = createCli(io);
  return runCli(buildMeshctl(cli), cli, argv, { completion: MESHCTL_COMPLETION });
}

if (isMain(import.meta.url)) process.exitCode = await main();
