#!/usr/bin/env node
/**
 * `mesh-agent`: the sidecar agent's executable, run by the injected containers of a pod
 * (docs/spec/CONVENTIONS.md). `capture` writes the traffic capture rules (the `mesh-init` step);
 * `version` prints build information. Each subcommand lives in its own module under mesh-agent/.
 */
import { Command } from 'commander';
import { AGENT_EXAMPLES } from './examples.js';
import { finishHelp } from './help.js';
import { registerCaptureCommand } from './mesh-agent/capture.js';
import { createCli, isMain, processIO, runCli, type Cli, type CliIO } from './runner.js';
import { registerVersionCommand } from './version.js';

export function buildAgentProgram(cli: Cli): Command {
  const program = new Command('mesh-agent').description('The mesh sidecar agent: traffic capture for an injected pod.');
  registerCaptureCommand(program, cli);
  registerVersionCommand(program, cli);
  return finishHelp(program, AGENT_EXAMPLES);
}

export async function main(argv: readonly string[] = process.argv.slice(2), io: CliIO = processIO()): Promise<number> {
  const cli = createCli(io);
  return runCli(buildAgentProgram(cli), cli, argv);
}

if (isMain(import.meta.url)) process.exitCode = await main();
