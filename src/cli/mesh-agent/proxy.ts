/**
 * `mesh-agent proxy sidecar|router`: the command the injector's templates run in the mesh-proxy
 * container (src/inject/templates.ts). Flags and variables are read by src/agent/settings.ts; this
 * module only wires the process: logging to standard error, SIGTERM/SIGINT to a graceful stop,
 * and the exit code.
 */
import type { Command } from 'commander';
import { CERT_OUTPUT_DIR, POD_INFO_DIR, PROXY_CONFIG_DIR, ROOT_CERT_PATH, SDS_SOCKET_PATH, TOKEN_PATH } from '../../agent/names.js';
import { CliError, type Cli } from '../runner.js';

export function registerProxyCommand(program: Command, cli: Cli): void {
  program
    .command('proxy')
    .description('Runs the proxy of a pod: gets the workload certificate, serves it to Envoy over SDS, writes the Envoy bootstrap, starts Envoy and answers readiness (15021) and merged metrics (15020).')
    .argument('<type>', 'sidecar or router (a gateway)')
    .option('--mode <mode>', 'grpc: proxyless gRPC (no Envoy: writes the certificate files and the gRPC xDS bootstrap); default: Envoy.')
    .option('--domain <domain>', 'DNS domain of the pod, <namespace>.svc.<cluster domain> (default: $POD_NAMESPACE.svc.cluster.local).')
    .option('--proxyLogLevel <level>', "Envoy's log level (trace, debug, info, warning, error, critical, off).", 'warning')
    .option('--proxyComponentLogLevel <levels>', "Envoy's per-component log levels, <component>:<level>,...")
    .option('--log_output_level <levels>', "The agent's log level, default:<level> (debug, info, warn, error, fatal, none); a capture:<level> entry is the init step's and is skipped here.", 'default:info')
    .option('--statusPort <port>', 'Port of merged metrics (/stats/prometheus) and rewritten application probes (/app-health/...) (default: PROXY_CONFIG.statusPort, else 15020).')
    .option('--healthPort <port>', 'Port of the readiness endpoint /healthz/ready.', '15021')
    .option('--envoyBinary <path>', 'The Envoy executable (default: PROXY_CONFIG.binaryPath, else /usr/local/bin/envoy).')
    .option('--tokenPath <path>', 'The projected service-account token for audience mesh-ca.', TOKEN_PATH)
    .option('--rootCertPath <path>', 'The mesh root bundle (ConfigMap mesh-ca-root-cert).', ROOT_CERT_PATH)
    .option('--sdsSocket <path>', "The SDS socket the agent serves and Envoy's bootstrap names.", SDS_SOCKET_PATH)
    .option('--configDir <dir>', 'Where the Envoy bootstrap (envoy-rev.json), or in --mode grpc the gRPC bootstrap (grpc-bootstrap.json), is written.', PROXY_CONFIG_DIR)
    .option('--certDir <dir>', 'Where --mode grpc writes cert-chain.pem, key.pem and root-cert.pem.', CERT_OUTPUT_DIR)
    .option('--podInfoDir <dir>', "The downward-API files of the pod (labels: the node metadata's LABELS).", POD_INFO_DIR)
    .option('--xdsServerName <name>', "The name meshd's certificate must carry (default: the host of the discovery address).")
    .option('--caServerName <name>', "The name the certificate service's certificate must carry (default: the host of CA_ADDR; --xdsServerName when that is meshd's host).")
    .option('--secretTtl <duration>', 'Lifetime asked for the workload certificate.', '24h')
    .option('--secretGracePeriodRatio <ratio>', 'Renew once this fraction of the lifetime has passed (0.1 to 0.9; jittered).', '0.5')
    .action(
      cli.action(async (type: string, flags: Record<string, string | undefined>) => {
        const { agentSettings, parseDownwardMap, AgentSettingsError } = await import('../../agent/settings.js');
        const { readFile } = await import('node:fs/promises');
        const { join } = await import('node:path');
        let settings;
        try {
          const podInfoDir = flags.podInfoDir ?? POD_INFO_DIR;
          const labels = await readFile(join(podInfoDir, 'labels'), 'utf8').then(parseDownwardMap, () => ({}));
          settings = agentSettings(type, flags, cli.io.env, labels);
        } catch (err) {
          if (err instanceof AgentSettingsError) throw new CliError(err.message, 2);
          throw err;
        }
        const { default: pino } = await import('pino');
        const log = pino({ level: settings.agentLogLevel, base: { component: 'mesh-agent' } }, pino.destination(2));
        const stop = new AbortController();
        const onSignal = (sig: string): void => {
          log.info({ signal: sig }, 'stop requested');
          stop.abort();
        };
        process.once('SIGTERM', onSignal);
        process.once('SIGINT', onSignal);
        const { runProxyAgent } = await import('../../agent/run.js');
        try {
          const code = await runProxyAgent({ settings, log, stop: stop.signal });
          return { exitCode: code };
        } catch (err) {
          log.error(`agent failed: ${(err as Error).message}`);
          throw new CliError((err as Error).message, 1);
        } finally {
          process.removeListener('SIGTERM', onSignal);
          process.removeListener('SIGINT', onSignal);
        }
      }),
    );
}
