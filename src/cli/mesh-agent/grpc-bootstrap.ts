/**
 * `mesh-agent grpc-bootstrap`: writes the gRPC xDS bootstrap of a proxyless gRPC application (the
 * init step of the `grpc-simple` template; see src/agent/grpc-bootstrap.ts) and exits.
 */
import type { Command } from 'commander';
import { CliError, type Cli } from '../runner.js';

export function registerGrpcBootstrapCommand(program: Command, cli: Cli): void {
  program
    .command('grpc-bootstrap')
    .description("Writes the gRPC xDS bootstrap of a proxyless gRPC application, pointing at meshd's plaintext xDS port, and exits.")
    .requiredOption('--xds-address <host:port>', "meshd's plaintext xDS address (port 15010).")
    .requiredOption('--out <file>', 'Where to write the bootstrap (the file GRPC_XDS_BOOTSTRAP names).')
    .option('--domain <domain>', 'DNS domain of the pod, <namespace>.svc.<cluster domain> (default: $POD_NAMESPACE.svc.cluster.local).')
    .action(
      cli.action(async (flags: { xdsAddress: string; out: string; domain?: string }) => {
        const { grpcBootstrapSettings, grpcXdsBootstrap } = await import('../../agent/grpc-bootstrap.js');
        const { AgentSettingsError } = await import('../../agent/settings.js');
        const { writeFileAtomic } = await import('../../agent/run.js');
        let settings;
        try {
          settings = grpcBootstrapSettings(flags, cli.io.env);
        } catch (err) {
          if (err instanceof AgentSettingsError) throw new CliError(err.message, 2);
          throw err;
        }
        try {
          await writeFileAtomic(flags.out, `${JSON.stringify(grpcXdsBootstrap(settings), null, 2)}\n`);
        } catch (err) {
          throw new CliError(`--out ${flags.out}: ${(err as Error).message}`);
        }
        return { stderr: `wrote the gRPC xDS bootstrap for ${settings.nodeId} to ${flags.out}\n` };
      }),
    );
}
