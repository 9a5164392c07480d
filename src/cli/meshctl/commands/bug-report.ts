/**
 * `meshctl bug-report` (spec part 1): cluster state, mesh configuration, meshd and proxy logs,
 * config dumps, meshd's debug views and analyze output in one .tar.gz (../bugreport/collect.ts,
 * docs/adr/0120), with progress on a terminal, bounded by `--timeout`, never failing whole because
 * one item cannot be read. `bug-report version` prints the build version. `--full-secrets` is
 * refused: Secret data never goes into a report.
 */
import { Option, type Command } from 'commander';
import { getBuildInfo } from '../../../version/build-info.js';
import { boolOption, boolValue, CliError, type Cli } from '../../runner.js';
import { addVersionFlags, parseVersionOutput, renderVersionDocument, versionLine } from '../../version.js';
import { durationFlag } from '../diag/flags.js';
import { globalOptions } from '../global-flags.js';
import { kubeClientFor } from '../kube.js';
import { DEFAULT_EXCLUDE } from '../bugreport/select.js';
import { collectReplacingDefault, collectSlice } from './install.js';

const NO_INCLUDE: readonly string[] = [];
const ARCHIVE = 'bug-report.tar.gz';

interface Flags {
  criticalErrs: string[];
  dir?: string;
  dryRun?: unknown;
  duration: string;
  endTime?: string;
  exclude: string[];
  filename?: string;
  fullSecrets?: unknown;
  ignoreErrs: string[];
  include: string[];
  istioNamespace: string;
  startTime?: string;
  timeout: string;
}

function addFlags(cmd: Command): Command {
  return cmd
    .addOption(new Option('--critical-errs <globs>', 'Glob patterns over log lines; logs with matches rank first in summary.json.').argParser(collectSlice).default([]))
    .option('--dir <dir>', 'Directory for temporary artifacts and the archive (default: the current directory).')
    .addOption(boolOption('--dry-run', 'Only print what would be collected.'))
    .addOption(new Option('--duration <duration>', 'How far back from --end-time logs are taken (0s: no limit); not with --start-time.').default('0s'))
    .option('--end-time <time>', 'End of the log window (RFC 3339; default now).')
    .addOption(
      new Option('--exclude <spec>', 'Proxy logs to leave out: ns/dep/pod/container/labels/annotations, commas within a part; repeatable, each value one spec; a value replaces the default.')
        .argParser(collectReplacingDefault(DEFAULT_EXCLUDE))
        .default(DEFAULT_EXCLUDE),
    )
    .option('-f, --filename <file>', 'YAML file of these settings (keys as the flags in camelCase), applied over the flags.')
    .addOption(boolOption('--full-secrets', 'Include Secret contents: refused, reports never hold Secret data.'))
    .addOption(new Option('--ignore-errs <globs>', 'Glob patterns of log lines not counted as errors in summary.json.').argParser(collectSlice).default([]))
    .addOption(
      new Option('--include <spec>', 'Proxy logs to include: ns/dep/pod/container/labels/annotations, commas within a part; repeatable, each value one spec (default all).')
        .argParser(collectReplacingDefault(NO_INCLUDE))
        .default(NO_INCLUDE),
    )
    .addOption(new Option('--istio-namespace <namespace>', 'Namespace of the control plane.').default('mesh-system'))
    .option('--start-time <time>', 'Start of the log window (RFC 3339; default the infinite past); not with --duration.')
    .addOption(new Option('--timeout <duration>', 'Longest time spent fetching; what was captured by then is archived.').default('30m0s'));
}

const FILE_KEYS: Readonly<Record<string, keyof Flags>> = {
  criticalErrs: 'criticalErrs',
  dir: 'dir',
  dryRun: 'dryRun',
  duration: 'duration',
  endTime: 'endTime',
  exclude: 'exclude',
  fullSecrets: 'fullSecrets',
  ignoreErrs: 'ignoreErrs',
  include: 'include',
  istioNamespace: 'istioNamespace',
  startTime: 'startTime',
  timeout: 'timeout',
};

/** The flags with `-f` applied over them (lists replace). */
async function withFile(flags: Flags): Promise<Flags> {
  if (!flags.filename) return flags;
  const { readFile } = await import('node:fs/promises');
  const { parse } = await import('yaml');
  const text = await readFile(flags.filename, 'utf8').catch((err: NodeJS.ErrnoException) => {
    throw new CliError(`--filename: cannot read ${flags.filename}: ${err.code === 'ENOENT' ? 'no such file' : (err.code ?? err.message)}`);
  });
  let doc: unknown;
  try {
    doc = parse(text);
  } catch (err) {
    throw new CliError(`--filename: ${flags.filename}: invalid YAML (${(err as Error).message.split('\n')[0]})`);
  }
  if (doc === null || doc === undefined) return flags;
  if (typeof doc !== 'object' || Array.isArray(doc)) throw new CliError(`--filename: ${flags.filename}: expected a mapping of settings`);
  const out: Record<string, unknown> = { ...flags };
  for (const [key, value] of Object.entries(doc)) {
    const flag = FILE_KEYS[key];
    if (!flag) throw new CliError(`--filename: ${flags.filename}: unknown setting ${JSON.stringify(key)} (known: ${Object.keys(FILE_KEYS).join(', ')})`);
    const isList = Array.isArray(flags[flag]);
    if (isList && !(Array.isArray(value) && value.every((v) => typeof v === 'string'))) throw new CliError(`--filename: ${flags.filename}: ${key} must be a list of strings`);
    if (!isList && typeof value !== 'string' && typeof value !== 'boolean') throw new CliError(`--filename: ${flags.filename}: ${key} must be a string`);
    out[flag] = typeof value === 'boolean' ? String(value) : value;
  }
  return out as unknown as Flags;
}

export function register(program: Command, cli: Cli): Command {
  const cmd = addFlags(program.command('bug-report').description('Captures cluster state, mesh configuration, meshd and proxy logs, config dumps and analysis into bug-report.tar.gz.'));
  cmd.action(
    cli.action(async (_opts: Flags, self: Command) => {
      const flags = await withFile(self.opts<Flags>());
      if (boolValue(flags.fullSecrets, '--full-secrets')) throw new CliError('--full-secrets is not supported: a bug report never holds Secret data (only names, types and keys)');
      const dryRun = boolValue(flags.dryRun, '--dry-run');
      const timeoutMs = durationFlag('--timeout', flags.timeout);
      if (timeoutMs <= 0) throw new CliError('--timeout: must be positive');
      const durationMs = durationFlag('--duration', flags.duration);
      const { timeWindow } = await import('../bugreport/logs.js');
      const { parseSelection } = await import('../bugreport/select.js');
      const window = timeWindow({ startTime: flags.startTime, endTime: flags.endTime, durationMs });
      const include = flags.include.map((s) => parseSelection(s, '--include'));
      const exclude = flags.exclude.map((s) => parseSelection(s, '--exclude'));
      const globals = globalOptions(self);
      const { xdsFlags } = await import('../diag/xds-client.js');
      const { withLazyClient } = await import('../diag/lazy-client.js');
      const { collectBugReport } = await import('../bugreport/collect.js');
      const { runAnalyze } = await import('../analyze/run.js');
      const { resolve } = await import('node:path');
      const { tmpdir } = await import('node:os');
      const makeClient = () => kubeClientFor(globals, cli.io.env);
      const dir = flags.dir ? resolve(flags.dir) : dryRun ? tmpdir() : process.cwd();
      const terminal = cli.io.isTTY === true;
      const started = Date.now();
      const report = await withLazyClient(makeClient, (client) =>
        collectBugReport({
          client,
          xds: { ...xdsFlags(globals, {}, 30_000), meshNamespace: flags.istioNamespace },
          meshNamespace: flags.istioNamespace,
          meshdSelector: 'app=meshd',
          include,
          exclude,
          window,
          criticalErrs: flags.criticalErrs,
          ignoreErrs: flags.ignoreErrs,
          dir,
          archiveName: ARCHIVE,
          timeoutMs,
          dryRun,
          analyze: async () => {
            const r = await runAnalyze({
              files: [],
              recursive: false,
              useCluster: true,
              allNamespaces: true,
              namespace: globals.namespace || 'default',
              meshNamespace: flags.istioNamespace,
              output: 'log',
              outputThreshold: 'Info',
              failureThreshold: 'Error',
              suppress: [],
              timeoutMs: 30_000,
              timeoutText: '30s',
              verbose: false,
              color: false,
              client: makeClient,
            });
            return `${r.stdout ?? ''}${r.stderr ?? ''}`;
          },
          progress: terminal ? (line) => cli.io.err(`[${((Date.now() - started) / 1000).toFixed(1)}s] ${line}\n`) : undefined,
        }),
      );
      if (dryRun) return { stdout: `Would collect:\n${report.planned.map((p) => `  ${p}\n`).join('')}` };
      const lines = [`Wrote ${report.archive} (${report.files.length} files).`];
      if (report.timedOut) lines.push(`--timeout (${flags.timeout}) reached: the archive holds what was captured by then.`);
      if (report.errors.length > 0) {
        lines.push(`${report.errors.length} item(s) could not be captured (summary.json lists them all):`);
        for (const e of report.errors.slice(0, 20)) lines.push(`  ${e.item}: ${e.error}`);
        if (report.errors.length > 20) lines.push(`  … and ${report.errors.length - 20} more`);
      }
      // the archive is written either way; a run missing meshd altogether, or what this user may
      // not read, is not a success
      const problems: string[] = [];
      const forbidden = report.errors.filter((e) => e.error.startsWith('forbidden:'));
      if (forbidden.length > 0) problems.push(`error: ${forbidden.length} item(s) are forbidden to this user (${forbidden[0].item}: ${forbidden[0].error}); the archive lacks them\n`);
      if (report.meshdUnreachable) problems.push(`error: no meshd answered over the xDS debug channel (${report.meshdUnreachable}); the archive lacks meshd's debug views and its view of the proxies\n`);
      if (problems.length > 0) return { stdout: `${lines.join('\n')}\n`, stderr: problems.join(''), exitCode: 1 };
      return { stdout: `${lines.join('\n')}\n` };
    }),
  );

  addVersionFlags(addFlags(cmd.command('version').description('Prints build version information.'))).action(
    cli.action(async (opts: { output?: string; short?: unknown }) => {
      const output = parseVersionOutput(opts.output);
      const short = boolValue(opts.short, '--short', false);
      const info = getBuildInfo(cli.io.env);
      if (output !== '') return { stdout: await renderVersionDocument({ clientVersion: info }, output) };
      return { stdout: `${versionLine(info, short)}\n` };
    }),
  );
  return cmd;
}
