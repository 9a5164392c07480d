/**
 * `meshctl x create-remote-secret` (spec part 1): prints a Secret (YAML) that lets another
 * cluster's meshd read this cluster with a service account's credentials. The work is in
 * ../diag/run-remote-secret.ts; `--manifests/-d` is refused (the RBAC comes from the built-in
 * charts).
 */
import type { Command } from 'commander';
import { Option } from 'commander';
import { renderYaml } from '../../output.js';
import { boolOption, boolValue, CliError, type Cli } from '../../runner.js';
import { globalOptions } from '../global-flags.js';
import { kubeClientFor, withKubeClient } from '../kube.js';

interface Flags {
  readonly authPluginConfig?: string;
  readonly authPluginName?: string;
  readonly authType: string;
  readonly createServiceAccount?: unknown;
  readonly manifests?: string;
  readonly name?: string;
  readonly secretName?: string;
  readonly server?: string;
  readonly serviceAccount?: string;
  readonly type: string;
}

export function register(parent: Command, cli: Cli): Command {
  return parent
    .command('create-remote-secret')
    .description('Prints a Secret with credentials that let the meshd of another cluster read this cluster\'s API server.')
    .option('--auth-plugin-config <key=value,...>', 'Authenticator plug-in config; needs --auth-type=plugin.', '[]')
    .option('--auth-plugin-name <name>', 'Authenticator plug-in name; needs --auth-type=plugin.')
    .addOption(new Option('--auth-type <type>', 'How the other cluster authenticates: bearer-token or plugin.').choices(['bearer-token', 'plugin']).default('bearer-token'))
    .addOption(boolOption('--create-service-account', 'Create the service account (and its read-only role) when it is missing.'))
    .option('-d, --manifests <dir>', 'Charts and profiles directory or release URL (not supported: the service account and role are built in; giving it is refused).')
    .option('--name <name>', 'ID of this cluster (default: the UID of the kube-system namespace).')
    .option('--secret-name <name>', 'The token Secret to use when the service account has several.')
    .option('--server <address>', 'Address of this cluster\'s API server as the other cluster reaches it (default: the one of the kubeconfig).')
    .option('--service-account <name>', 'Service account whose credentials are used (default mesh-reader-service-account for --type remote, meshd-service-account for config).')
    .addOption(new Option('--type <type>', 'Secret type: remote or config.').choices(['remote', 'config']).default('remote'))
    .action(
      cli.action(async (opts: Flags, self: Command) => {
        if (opts.manifests !== undefined) throw new CliError('--manifests: not supported; create-remote-secret uses its built-in service account and role and reads no charts');
        const { checkRemoteSecretInput, parseStringMap, remoteSecret } = await import('../diag/run-remote-secret.js');
        const globals = globalOptions(self);
        const input = {
          name: opts.name,
          type: opts.type as 'remote' | 'config',
          serviceAccount: opts.serviceAccount,
          createServiceAccount: boolValue(opts.createServiceAccount, '--create-service-account'),
          secretName: opts.secretName,
          server: opts.server,
          authType: opts.authType as 'bearer-token' | 'plugin',
          pluginName: opts.authPluginName,
          pluginConfig: parseStringMap('--auth-plugin-config', opts.authPluginConfig),
          meshNamespace: globals.meshNamespace,
        };
        checkRemoteSecretInput(input);
        return withKubeClient(
          () => kubeClientFor(globals, cli.io.env),
          async (kube) => ({ stdout: await renderYaml(await remoteSecret(kube, input)) }),
        );
      }),
    );
}
