/**
 * Experimental commands that read the daemons over the xDS debug channel (spec part 1):
 *
 *   x internal-debug <view>[?query]   a debug view of one meshd (every meshd with --all), as JSON
 *   x wait <type> <name>[.<ns>]       until a config generation is distributed (or deleted)
 *   x version                         client and control-plane versions (XG, -o, --remote, -s)
 *
 * and `x config list`, meshctl's own settings. Bodies in ../diag/.
 */
import { Option, type Command } from 'commander';
import { getBuildInfo } from '../../../version/build-info.js';
import { renderDocument, renderJson, renderTable } from '../../output.js';
import { boolOption, boolValue, CliError, type Cli } from '../../runner.js';
import { addVersionFlags, parseVersionOutput, versionLine } from '../../version.js';
import { addXdsFlags, durationFlag } from '../diag/flags.js';
import { globalOptions, resolveSettings } from '../global-flags.js';
import { kubeClientFor } from '../kube.js';

interface XgOpts {
  readonly timeout?: string;
  readonly xdsLabel?: string;
  readonly revision?: string;
}

async function connection(self: Command, opts: XgOpts, cli: Cli) {
  const globals = globalOptions(self);
  const { xdsFlags } = await import('../diag/xds-client.js');
  const { withLazyClient } = await import('../diag/lazy-client.js');
  return { globals, flags: xdsFlags(globals, opts, durationFlag('--timeout', opts.timeout ?? '30s')), client: () => kubeClientFor(globals, cli.io.env), withLazyClient };
}

function registerInternalDebug(parent: Command, cli: Cli): Command {
  const output = new Option('-o, --output <format>', 'Output format: json or yaml.').default('json');
  output.argChoices = ['json', 'yaml'];
  return addXdsFlags(parent.command('internal-debug'))
    .description('Fetches a debug view from meshd over the xDS debug channel (syncz, configz, config_dump?proxyID=<id>, distributionz …).')
    .argument('<view>', 'The debug view, with its query: syncz, connections, configz, registryz, endpointz, push_status, config_dump?proxyID=<proxy>[&format=envoy], distributionz[?ref=Kind/ns/name], version.')
    .addOption(boolOption('--all', 'Send the same request to every meshd instance.'))
    .addOption(output)
    .action(
      cli.action(async (view: string, opts: XgOpts & { all?: unknown; output: string }, self: Command) => {
        const { parseOutputFormat } = await import('../../output.js');
        const format = parseOutputFormat(opts.output, ['json', 'yaml'] as const);
        const all = boolValue(opts.all, '--all');
        const c = await connection(self, opts, cli);
        const { queryDebug, resolveTargets, answered } = await import('../diag/xds-client.js');
        const q = view.indexOf('?');
        const name = q < 0 ? view : view.slice(0, q);
        if (!/^[a-z_]+$/.test(name)) throw new CliError(`${JSON.stringify(view)}: a debug view is a name like syncz, optionally with ?query`);
        const query = Object.fromEntries(new URLSearchParams(q < 0 ? '' : view.slice(q + 1)));
        return c.withLazyClient(c.client, async (client) => {
          const targets = await resolveTargets(c.flags, client);
          const results = answered(await queryDebug(c.flags, all ? targets : targets.slice(0, 1), name, query, client));
          const body = all ? Object.fromEntries(results.map((r) => [r.target.name, r.body])) : results[0].body;
          return { stdout: await renderDocument(body, format) };
        });
      }),
    );
}

function registerWait(parent: Command, cli: Cli): Command {
  return parent
    .command('wait')
    .description('Waits until a config object is distributed to the proxies that need it (or deleted from every meshd).')
    .argument('<type>', 'Config kind: VirtualService, DestinationRule, Gateway … (or vs, dr, gw …).')
    .argument('<name>', 'Object as <name>[.<namespace>].')
    .addOption(new Option('--for <condition>', 'Condition: distribution or delete.').choices(['distribution', 'delete']).default('distribution'))
    .option('--generation <generation>', 'Wait for this generation instead of the latest.')
    .option('-r, --revision <revision>', 'Control plane revision.')
    .addOption(new Option('--threshold <ratio>', 'Required ratio of proxies that received the distribution (0 to 1).').default('1'))
    .addOption(new Option('--timeout <duration>', 'How long to wait before failing.').default('30s'))
    .action(
      cli.action(async (type: string, target: string, opts: XgOpts & { for: string; generation?: string; threshold: string }, self: Command) => {
        const { configKindOf, runWait } = await import('../diag/run-wait.js');
        const kind = configKindOf(type);
        const threshold = Number(opts.threshold);
        if (!Number.isFinite(threshold) || threshold < 0 || threshold > 1) throw new CliError(`--threshold: ${JSON.stringify(opts.threshold)} is not a ratio between 0 and 1`);
        let generation: number | undefined;
        if (opts.generation !== undefined) {
          generation = Number(opts.generation);
          if (!Number.isSafeInteger(generation) || generation < 1) throw new CliError(`--generation: ${JSON.stringify(opts.generation)} is not a positive integer`);
        }
        if (opts.for !== 'distribution' && opts.for !== 'delete') throw new CliError(`--for: invalid value ${JSON.stringify(opts.for)} (choose from distribution, delete)`);
        const c = await connection(self, opts, cli);
        const dot = target.lastIndexOf('.');
        const name = dot > 0 ? target.slice(0, dot) : target;
        const namespace = dot > 0 ? target.slice(dot + 1) : c.globals.namespace || 'default';
        const timeoutMs = durationFlag('--timeout', opts.timeout ?? '30s');
        return c.withLazyClient(c.client, (client) => runWait({ ...c.flags, timeoutMs: Math.min(c.flags.timeoutMs, 10_000) }, client, { kind, name, namespace, for: opts.for as 'distribution' | 'delete', generation, threshold, timeoutMs }));
      }),
    );
}

function registerXVersion(parent: Command, cli: Cli): Command {
  return addVersionFlags(addXdsFlags(parent.command('version').description('Prints the client version and, over the xDS debug channel, the version of every meshd.')))
    .addOption(boolOption('--remote', 'Use --remote=false to suppress the control plane check.', true))
    .action(
      cli.action(async (opts: XgOpts & { output?: string; short?: unknown; remote?: unknown }, self: Command) => {
        const output = parseVersionOutput(opts.output);
        const short = boolValue(opts.short, '--short');
        const remote = boolValue(opts.remote, '--remote', true);
        const info = getBuildInfo(cli.io.env);
        if (!remote) return { stdout: output === '' ? `${versionLine(info, short)}\n` : await renderDocument({ clientVersion: info }, output) };
        const c = await connection(self, opts, cli);
        const { queryDebug, resolveTargets } = await import('../diag/xds-client.js');
        return c.withLazyClient(c.client, async (client) => {
          let stderr: string | undefined;
          let meshd: Array<{ controlPlane: string; version: string; revision: string }> = [];
          try {
            const results = await queryDebug<{ controlPlane: string; version: string; revision: string }>(c.flags, await resolveTargets(c.flags, client), 'version', {}, client);
            meshd = results.filter((r) => r.body).map((r) => r.body!);
            const failed = results.filter((r) => !r.body).map((r) => `control plane version: meshd ${r.target.name}: ${r.error}\n`);
            if (failed.length > 0) stderr = failed.join('');
          } catch (err) {
            stderr = `control plane version: not available (${(err as Error).message})\n`;
          }
          if (output !== '') return { stdout: await renderDocument({ clientVersion: info, meshVersion: meshd }, output), stderr };
          const lines = [`client version: ${versionLine(info, short)}`];
          const versions = [...new Set(meshd.map((m) => m.version))];
          if (versions.length > 0) lines.push(`control plane version: ${versions.join(', ')}`);
          if (!short) for (const m of meshd) lines.push(`  ${m.controlPlane}: ${m.version} (revision ${m.revision})`);
          return { stdout: `${lines.join('\n')}\n`, stderr };
        });
      }),
    );
}

function registerConfig(parent: Command, cli: Cli): Command {
  const config = parent.command('config').description('Configures meshctl defaults.');
  const output = new Option('-o, --output <format>', 'Output format: table or json.').default('table');
  output.argChoices = ['table', 'json'];
  config
    .command('list')
    .description('Lists the configurable defaults of meshctl: each setting, its value in effect and where that came from.')
    .addOption(output)
    .action(
      cli.action(async (opts: { output: string }, self: Command) => {
        const { parseOutputFormat, colorEnabled } = await import('../../output.js');
        const format = parseOutputFormat(opts.output, ['table', 'json'] as const);
        const settings = Object.values(resolveSettings(self)).map((r) => ({
          flag: r.spec.name,
          value: r.value,
          default: r.spec.default,
          from: r.source === 'default' ? 'built-in' : r.from,
          env: r.spec.env ?? '',
        }));
        if (format === 'json') return { stdout: renderJson(settings) };
        const show = (v: unknown): string => (typeof v === 'string' ? JSON.stringify(v) : String(v));
        return { stdout: renderTable(['flag', 'value', 'default', 'from', 'variable'], settings.map((s) => [s.flag, show(s.value), show(s.default), s.from, s.env]), { empty: '""', color: colorEnabled(cli.io) }) };
      }),
    );
  return config;
}

export function register(parent: Command, cli: Cli): Command {
  registerInternalDebug(parent, cli);
  registerWait(parent, cli);
  registerXVersion(parent, cli);
  return registerConfig(parent, cli);
}
