/**
 * Global flags of `meshctl` (spec part 1, "Global flags"): accepted by every command, before or
 * after the command name, and read by commands through `globalOptions(cmd)`.
 *
 * `globalOptions` resolves every setting of env.ts's `SETTINGS` — the global flags and the xDS
 * connection settings — as flag > environment variable > MESHCONFIG file > built-in default.
 * A command that declares a setting's flag itself (say `--xds-port`) gets that flag honoured the
 * same way. The MESHCONFIG file is read by `loadSettings`, which the program runs before every
 * action (meshctl.ts); without it, `globalOptions` sees flags, variables and defaults only.
 */
import { Command, Option } from 'commander';
import { CliError } from '../runner.js';
import { readDefaultsFile, type DefaultsFile } from './defaults-file.js';
import {
  BUILTIN_SETTINGS,
  SETTINGS,
  convertSetting,
  parseMeshctlEnv,
  type MeshctlEnv,
  type SettingAttr,
  type SettingSource,
  type SettingSpec,
  type SettingValue,
  type Settings,
} from './env.js';

/**
 * What every command may read: the global flags and the other settings, resolved and typed, and
 * where diagnostics (`--vklog`) go: the program's standard error.
 */
export type GlobalOptions = Settings & { readonly diagnostics: (text: string) => void };

export interface ResolvedSetting {
  readonly spec: SettingSpec;
  readonly value: SettingValue;
  readonly source: SettingSource;
  /** The flag, variable or file the value came from; `''` for the built-in default. */
  readonly from: string;
}

interface ProgramState {
  readonly envRecord: Readonly<Record<string, string | undefined>>;
  readonly diagnostics: (text: string) => void;
  env?: MeshctlEnv;
  file?: DefaultsFile;
  loaded?: Promise<void>;
}

const states = new WeakMap<Command, ProgramState>();

const discard = (): void => undefined;

/** Adds the global flags; `diagnostics` is where `--vklog` output goes (standard error). */
export function registerGlobalFlags(program: Command, env: Readonly<Record<string, string | undefined>>, diagnostics: (text: string) => void = discard): Command {
  states.set(program, { envRecord: env, diagnostics });
  return program
    .addOption(new Option('--context <name>', 'Name of the orchestrator config context to use.'))
    .addOption(new Option('-i, --meshNamespace <namespace>', 'Mesh system namespace.').default(BUILTIN_SETTINGS.meshNamespace))
    .addOption(new Option('-c, --clusterconfig <file>', 'Orchestrator configuration file.'))
    .addOption(new Option('-n, --namespace <namespace>', 'Config namespace.'))
    .addOption(
      new Option('--vklog <level>', 'Log verbosity number, like a -v flag: 6 logs the Kubernetes requests, 8 their headers too (credentials redacted).').default(
        String(BUILTIN_SETTINGS.vklog),
      ),
    );
}

function rootOf(cmd: Command): Command {
  let c = cmd;
  while (c.parent) c = c.parent;
  return c;
}

function stateOf(cmd: Command): ProgramState {
  const root = rootOf(cmd);
  let state = states.get(root);
  if (!state) {
    state = { envRecord: {}, diagnostics: discard };
    states.set(root, state);
  }
  return state;
}

function envOf(state: ProgramState): MeshctlEnv {
  return (state.env ??= parseMeshctlEnv(state.envRecord));
}

/**
 * Parses the environment and reads the MESHCONFIG file of `cmd`'s program, once. Throws
 * `ConfigError` for a bad variable or file.
 */
export function loadSettings(cmd: Command): Promise<void> {
  const state = stateOf(cmd);
  return (state.loaded ??= (async () => {
    const env = envOf(state);
    if (env.meshConfigFile !== undefined) state.file = await readDefaultsFile(env.meshConfigFile, env.meshConfigExplicit);
  })());
}

/** The MESHCONFIG file: its path (undefined when neither MESHCONFIG nor HOME is set) and whether it was read. */
export function defaultsFileStatus(cmd: Command): { readonly path: string | undefined; readonly read: boolean } {
  const state = stateOf(cmd);
  return { path: envOf(state).meshConfigFile, read: state.file !== undefined };
}

/** The option declaring `--<name>` nearest to `cmd` (the command itself first, then its parents). */
function flagFor(cmd: Command, name: string): { owner: Command; option: Option } | undefined {
  for (let c: Command | null = cmd; c; c = c.parent) {
    const option = c.options.find((o) => o.long === `--${name}`);
    if (option) return { owner: c, option };
  }
  return undefined;
}

/** Every setting with its value and where it came from. Throws `CliError` for a bad flag value. */
export function resolveSettings(cmd: Command): Readonly<Record<SettingAttr, ResolvedSetting>> {
  const state = stateOf(cmd);
  const env = envOf(state);
  const out: Partial<Record<SettingAttr, ResolvedSetting>> = {};
  for (const spec of SETTINGS as readonly SettingSpec[]) {
    const attr = spec.attr as SettingAttr;
    out[attr] = resolveOne(cmd, spec, env, state.file);
  }
  return out as Record<SettingAttr, ResolvedSetting>;
}

function resolveOne(cmd: Command, spec: SettingSpec, env: MeshctlEnv, file: DefaultsFile | undefined): ResolvedSetting {
  const attr = spec.attr as SettingAttr;
  const flag = flagFor(cmd, spec.name);
  if (flag) {
    const key = flag.option.attributeName();
    const source = flag.owner.getOptionValueSource(key);
    const raw: unknown = flag.owner.getOptionValue(key);
    if (source !== undefined && source !== 'default' && raw !== undefined) {
      try {
        // `-x=false` on a short flag keeps the `=` (see runner.boolValue).
        const value = convertSetting(spec, typeof raw === 'string' && spec.type === 'B' ? raw.replace(/^=/, '') : raw);
        return { spec, value, source: 'flag', from: `--${spec.name}` };
      } catch (err) {
        throw new CliError(`--${spec.name}: ${(err as Error).message}`);
      }
    }
  }
  const fromEnv = env.overrides[attr];
  if (fromEnv !== undefined) return { spec, value: fromEnv, source: 'env', from: env.overrideVars[attr] ?? '' };
  const fromFile = file?.values[attr];
  if (fromFile !== undefined && file) return { spec, value: fromFile, source: 'file', from: file.path };
  return { spec, value: spec.default, source: 'default', from: '' };
}

/** The settings as `cmd` (any command of the program) sees them. Throws `CliError` for a bad flag value. */
export function globalOptions(cmd: Command): GlobalOptions {
  const resolved = resolveSettings(cmd);
  const settings = Object.fromEntries(Object.entries(resolved).map(([attr, r]) => [attr, r.value])) as unknown as Settings;
  return Object.freeze({ ...settings, diagnostics: stateOf(cmd).diagnostics });
}
