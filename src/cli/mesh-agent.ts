#!/usr/bin/env node
/**
 * `mesh-agent`: the sidecar agent's executable, run by the containers the injector adds
 * (src/inject/templates.ts). `proxy sidecar|router` runs a pod's proxy (certificates, SDS, Envoy
 * bootstrap, readiness, merged metrics, drain on stop; see src/agent/run.ts); `capture` writes the
 * traffic capture rules (the `mesh-init` step); `grpc-bootstrap` writes the gRPC xDS bootstrap of
 * the grpc-simple template; `version` prints build information. Heavy modules load only when a
 * command runs.
 */
import { Command } from 'commander';
import { AGENT_EXAMPLES } from './examples.js';
import { finishHelp } from './help.js';
import { registerCaptureCommand } from './mesh-agent/capture.js';
import { registerGrpcBootstrapCommand } from './mesh-agent/grpc-bootstrap.js';
import { registerProxyCommand } from './mesh-agent/proxy.js';
import { createCli, isMain, processIO, runCli, type Cli, type CliIO } from './runner.js';
import { registerVersionCommand } from './version.js';

export function buildAgentProgram(cli: Cli): Command {
  const program = new Command('mesh-agent').description("The mesh's sidecar agent: runs beside the proxy in every injected pod.");
  registerProxyCommand(program, cli);
  registerCaptureCommand(program, cli);
  registerGrpcBootstrapCommand(program, cli);
  registerVersionCommand(program, cli);
  return finishHelp(program, AGENT_EXAMPLES);
}

export async function main(argv: readonly string[] = process.argv.slice(2), io: CliIO = processIO()): Promise<number> {
  const cli = createCli(io);
  return runCli(buildAgentProgram(cli), cli, argv);
}

if (isMain(import.meta.url)) process.exitCode = await main();
