/**
 * `meshctl proxy-config` (spec part 2): a proxy's configuration from its admin port (through a
 * port-forward via the API server) or from a saved config dump (`-f`). Subcommands and aliases:
 * all (a), bootstrap (b), cluster (clusters, c), endpoint (endpoints, ep), listener (listeners, l),
 * log (o), route (routes, r), secret (secrets, s). Group flag `-o short|json|yaml`. Bodies in
 * ../diag/run-proxy-config.ts.
 */
import { Option, type Command } from 'commander';
import { colorEnabled, parseOutputFormat } from '../../output.js';
import { boolOption, boolValue, CliError, type Cli } from '../../runner.js';
import { parsePodRef } from '../diag/flags.js';
import { globalOptions } from '../global-flags.js';
import { kubeClientFor } from '../kube.js';

const FORMATS = ['short', 'json', 'yaml'] as const;

interface SectionOpts {
  readonly file?: string;
  readonly output: string;
  readonly address?: string;
  readonly direction?: string;
  readonly fqdn?: string;
  readonly name?: string;
  readonly port?: string;
  readonly subset?: string;
  readonly type?: string;
  readonly cluster?: string;
  readonly status?: string;
  readonly verbose?: unknown;
}

type Flag = 'address' | 'direction' | 'fqdn' | 'name' | 'port' | 'subset' | 'type' | 'cluster' | 'status' | 'verbose';

const FLAG_OPTIONS: Readonly<Record<Flag, () => Option>> = {
  address: () => new Option('--address <address>', 'Filter by address.'),
  direction: () => new Option('--direction <direction>', 'Filter clusters by direction (inbound, outbound).'),
  fqdn: () => new Option('--fqdn <fqdn>', 'Filter clusters by a substring of the service FQDN.'),
  name: () => new Option('--name <name>', 'Filter by route name.'),
  port: () => new Option('--port <port>', 'Filter by port.').default('0'),
  subset: () => new Option('--subset <subset>', 'Filter clusters by a substring of the subset.'),
  type: () => new Option('--type <type>', 'Filter listeners by type (HTTP, TCP).'),
  cluster: () => new Option('--cluster <cluster>', 'Filter endpoints by cluster name.'),
  status: () => new Option('--status <status>', 'Filter endpoints by status (HEALTHY, UNHEALTHY …).'),
  verbose: () => boolOption('--verbose', 'More detail.'),
};

const SECTIONS: ReadonlyArray<{ name: 'all' | 'bootstrap' | 'cluster' | 'endpoint' | 'listener' | 'route' | 'secret'; aliases: string[]; description: string; flags: Flag[] }> = [
  { name: 'all', aliases: ['a'], description: 'Clusters, listeners, routes and endpoints of a proxy.', flags: ['address', 'direction', 'fqdn', 'name', 'port', 'subset', 'type', 'verbose'] },
  { name: 'bootstrap', aliases: ['b'], description: 'The bootstrap of a proxy (its node).', flags: [] },
  { name: 'cluster', aliases: ['clusters', 'c'], description: 'The clusters of a proxy.', flags: ['direction', 'fqdn', 'port', 'subset'] },
  { name: 'endpoint', aliases: ['endpoints', 'ep'], description: 'The endpoints of a proxy.', flags: ['address', 'cluster', 'port', 'status'] },
  { name: 'listener', aliases: ['listeners', 'l'], description: 'The listeners of a proxy.', flags: ['address', 'port', 'type', 'verbose'] },
  { name: 'route', aliases: ['routes', 'r'], description: 'The routes of a proxy.', flags: ['name', 'verbose'] },
  { name: 'secret', aliases: ['secrets', 's'], description: 'The secrets (certificates) of a proxy; private keys are never shown. Under development.', flags: [] },
];

function portOf(text: string | undefined): number {
  const n = Number(text ?? '0');
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new CliError(`--port: ${JSON.stringify(text)} is not a port number`);
  return n;
}

export function register(program: Command, cli: Cli): Command {
  const output = new Option('-o, --output <format>', 'Output format: short, json or yaml.').default('short');
  output.argChoices = [...FORMATS];
  const group = program
    .command('proxy-config')
    .description('Retrieves a proxy\'s configuration from its admin port or a config dump file.')
    .addOption(output)
    .option('-f, --file <file>', 'A config dump (JSON, the admin /config_dump reply) to read instead of a proxy.');

  for (const s of SECTIONS) {
    const cmd = group.command(s.name).aliases(s.aliases).description(s.description).argument('[pod]', 'The proxy, as [<type>/]<name>[.<namespace>] (not with --file).');
    // under `all`, --name selects listeners by the route name they use (spec part 2)
    for (const f of s.flags) cmd.addOption(s.name === 'all' && f === 'name' ? new Option('--name <name>', 'Filter listeners by the route name their HTTP chains use.') : FLAG_OPTIONS[f]());
    cmd.action(
      cli.action(async (pod: string | undefined, _o: unknown, self: Command) => {
        const opts = self.optsWithGlobals<SectionOpts>();
        const format = parseOutputFormat(opts.output, FORMATS);
        const globals = globalOptions(self);
        if (pod !== undefined && opts.file) throw new CliError('give a proxy or --file, not both');
        const ref = pod !== undefined ? parsePodRef(pod, globals.namespace || 'default') : undefined;
        const { loadDump, runProxyConfig } = await import('../diag/run-proxy-config.js');
        const { withLazyClient } = await import('../diag/lazy-client.js');
        const direction = opts.direction;
        if (direction && direction !== 'inbound' && direction !== 'outbound') throw new CliError(`--direction: invalid value ${JSON.stringify(direction)} (choose from inbound, outbound)`);
        const flags = {
          fqdn: opts.fqdn,
          port: portOf(opts.port),
          subset: opts.subset,
          direction,
          type: opts.type,
          name: opts.name,
          cluster: opts.cluster,
          status: opts.status,
          verbose: boolValue(opts.verbose, '--verbose'),
          listenerAddress: opts.address,
          endpointAddress: opts.address,
        };
        if (flags.type && !['HTTP', 'TCP'].includes(flags.type.toUpperCase())) throw new CliError(`--type: invalid value ${JSON.stringify(flags.type)} (choose from HTTP, TCP)`);
        const path = s.name === 'endpoint' ? '/clusters?format=json' : '/config_dump?include_eds';
        return withLazyClient(
          () => kubeClientFor(globals, cli.io.env),
          async (client) => runProxyConfig(s.name, await loadDump({ file: opts.file, ref }, client, path), flags, format, colorEnabled(cli.io)),
        );
      }),
    );
  }

  group
    .command('log')
    .alias('o')
    .description('Reads and optionally sets the logging levels of proxies. Experimental.')
    .argument('[pod]', 'The proxy, as [<type>/]<name>[.<namespace>].')
    .option('--level <levels>', 'Comma-separated [<logger>:]<level>; without a logger it applies to all. Levels: trace, debug, info, warning, error, critical, off.')
    .addOption(boolOption('-r, --reset', 'Reset every logger to warning.'))
    .option('-l, --selector <selector>', 'Label selector of the proxies\' pods.')
    .action(
      cli.action(async (pod: string | undefined, _o: unknown, self: Command) => {
        const opts = self.optsWithGlobals<{ output: string; level?: string; reset?: unknown; selector?: string; file?: string }>();
        const format = parseOutputFormat(opts.output, FORMATS);
        if (opts.file) throw new CliError('proxy-config log reads a live proxy; --file does not apply');
        const globals = globalOptions(self);
        if (pod !== undefined && opts.selector) throw new CliError('give a proxy or -l/--selector, not both');
        const ref = pod !== undefined ? parsePodRef(pod, globals.namespace || 'default') : undefined;
        const { runProxyLog } = await import('../diag/run-proxy-config.js');
        const { withLazyClient } = await import('../diag/lazy-client.js');
        return withLazyClient(
          () => kubeClientFor(globals, cli.io.env),
          (client) => runProxyLog(client, { ref, selector: opts.selector, namespace: globals.namespace || 'default', level: opts.level, reset: boolValue(opts.reset, '--reset'), output: format }),
        );
      }),
    );
  return group;
}
