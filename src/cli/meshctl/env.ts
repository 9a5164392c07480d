/**
 * The settings of `meshctl` and its environment (spec part 2, "Environment variables of the
 * utility"), in one place.
 *
 * A *setting* is a value a user can give in three ways besides its built-in default: a flag
 * (`--xds-port`), an environment variable (`MESHCTL_XDS_PORT`) and a key of the MESHCONFIG file
 * of defaults (`xds-port: 15013`; see defaults-file.ts). The winner, highest first:
 *
 *   1. the flag, when given on the command line;
 *   2. the environment variable;
 *   3. the MESHCONFIG file;
 *   4. the built-in default.
 *
 * (docs/adr/0011-meshctl-settings-and-validate.md says why.) `SETTINGS` lists every setting: the
 * global flags (spec part 1) and the xDS connection flags (group XG) that have variables, plus
 * `prefer-experimental`, which only has a variable. The MESHCONFIG keys are exactly the setting
 * names, so the file is checked against this table.
 *
 * An empty variable counts as unset. Bad values are reported together, each naming the variable
 * (`MESHCTL_XDS_PORT: invalid integer "x"`). This module loads nothing heavy: it runs on every
 * start-up.
 */
import { ConfigError } from '../../util/config-error.js';
import { checkRange, parseBool, parseInteger } from '../../util/parse.js';

/** Type letters of the spec: S string, B boolean, I integer. */
export type SettingType = 'S' | 'B' | 'I';

export interface SettingSpec {
  /** The flag's long name without dashes; also the MESHCONFIG key. */
  readonly name: string;
  /** The flag's value key as commands see it (`xds-port` gives `xdsPort`). */
  readonly attr: string;
  readonly type: SettingType;
  readonly default: string | boolean | number;
  /** The variable that overrides it, if any. */
  readonly env?: string;
  readonly min?: number;
  readonly max?: number;
  readonly description: string;
}

export const SETTINGS = [
  { name: 'context', attr: 'context', type: 'S', default: '', description: 'Name of the orchestrator config context to use.' },
  { name: 'meshNamespace', attr: 'meshNamespace', type: 'S', default: 'mesh-system', env: 'MESHCTL_MESHNAMESPACE', description: 'Mesh system namespace.' },
  { name: 'clusterconfig', attr: 'clusterconfig', type: 'S', default: '', description: 'Orchestrator configuration file.' },
  { name: 'namespace', attr: 'namespace', type: 'S', default: '', description: 'Config namespace.' },
  { name: 'vklog', attr: 'vklog', type: 'I', default: 0, min: 0, description: 'Log verbosity number, like a -v flag.' },
  { name: 'authority', attr: 'authority', type: 'S', default: '', env: 'MESHCTL_AUTHORITY', description: 'xDS subject alternative name.' },
  { name: 'cert-dir', attr: 'certDir', type: 'S', default: '', env: 'MESHCTL_CERT_DIR', description: 'Certificate directory for the xDS endpoint.' },
  { name: 'insecure', attr: 'insecure', type: 'B', default: false, env: 'MESHCTL_INSECURE', description: 'Skip server certificate and domain verification (insecure).' },
  { name: 'plaintext', attr: 'plaintext', type: 'B', default: false, env: 'MESHCTL_PLAINTEXT', description: 'Plain-text HTTP/2 to the xDS endpoint, no TLS.' },
  { name: 'prefer-experimental', attr: 'preferExperimental', type: 'B', default: false, env: 'MESHCTL_PREFER_EXPERIMENTAL', description: 'Use experimental subcommand variants.' },
  { name: 'xds-address', attr: 'xdsAddress', type: 'S', default: '', env: 'MESHCTL_XDS_ADDRESS', description: 'xDS endpoint.' },
  { name: 'xds-port', attr: 'xdsPort', type: 'I', default: 15012, min: 1, max: 65535, env: 'MESHCTL_XDS_PORT', description: 'xDS endpoint port.' },
] as const satisfies readonly SettingSpec[];

type SettingRow = (typeof SETTINGS)[number];
type ValueOf<T extends SettingType> = T extends 'B' ? boolean : T extends 'I' ? number : string;

/** Every setting, typed, by its `attr`. */
export type Settings = { readonly [S in SettingRow as S['attr']]: ValueOf<S['type']> };
export type SettingAttr = keyof Settings;
export type SettingValue = Settings[SettingAttr];

/** Where a setting's value came from. */
export type SettingSource = 'flag' | 'env' | 'file' | 'default';

export const BUILTIN_SETTINGS: Settings = Object.freeze(Object.fromEntries(SETTINGS.map((s) => [s.attr, s.default])) as unknown as Settings);

export function settingByName(name: string): SettingSpec | undefined {
  return (SETTINGS as readonly SettingSpec[]).find((s) => s.name === name);
}

/**
 * Converts a value given as text (flag, variable) or as a YAML scalar (MESHCONFIG) to the
 * setting's type; throws an Error describing the value.
 */
export function convertSetting(spec: SettingSpec, raw: unknown): string | boolean | number {
  switch (spec.type) {
    case 'S':
      if (typeof raw === 'string') return raw;
      if (typeof raw === 'number') return String(raw);
      throw new Error(`expected a string, got ${describeValue(raw)}`);
    case 'B':
      if (typeof raw === 'boolean') return raw;
      if (typeof raw === 'string') return parseBool(raw);
      throw new Error(`expected true or false, got ${describeValue(raw)}`);
    case 'I': {
      let n: number;
      if (typeof raw === 'number') {
        if (!Number.isSafeInteger(raw)) throw new Error(`invalid integer ${JSON.stringify(raw)}`);
        n = raw;
      } else if (typeof raw === 'string') n = parseInteger(raw);
      else throw new Error(`expected an integer, got ${describeValue(raw)}`);
      return checkRange(n, spec.min, spec.max);
    }
  }
}

function describeValue(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'object') return 'a mapping';
  return `${typeof v} ${JSON.stringify(v)}`;
}

/** A variable of the spec's table. */
export interface MeshctlEnvVar {
  readonly name: string;
  readonly type: SettingType;
  /** As the spec writes it; `''` for empty. */
  readonly default: string;
  readonly description: string;
}

/** The spec's table, in its order, then NO_COLOR (https://no-color.org), which the utility honours too. */
export const MESHCTL_ENV_VARS: readonly MeshctlEnvVar[] = Object.freeze([
  { name: 'MESHCONFIG', type: 'S', default: '$HOME/.meshctl/config.yaml', description: 'File of default values for flags.' },
  { name: 'MESHCTL_AUTHORITY', type: 'S', default: '', description: 'Overrides --authority.' },
  { name: 'MESHCTL_CERT_DIR', type: 'S', default: '', description: 'Overrides --cert-dir.' },
  { name: 'MESHCTL_INSECURE', type: 'B', default: 'false', description: 'Overrides --insecure.' },
  { name: 'MESHCTL_MESHNAMESPACE', type: 'S', default: 'mesh-system', description: 'Overrides --meshNamespace.' },
  { name: 'MESHCTL_PLAINTEXT', type: 'B', default: 'false', description: 'Overrides --plaintext.' },
  { name: 'MESHCTL_PREFER_EXPERIMENTAL', type: 'B', default: 'false', description: 'Uses experimental subcommand variants.' },
  { name: 'MESHCTL_XDS_ADDRESS', type: 'S', default: '', description: 'Overrides --xds-address.' },
  { name: 'MESHCTL_XDS_PORT', type: 'I', default: '15012', description: 'Overrides --xds-port.' },
  { name: 'TERM', type: 'S', default: '', description: 'Terminal type; dumb suppresses color.' },
  { name: 'NO_COLOR', type: 'S', default: '', description: 'When set (to any value), suppresses color.' },
]);

/** The parsed environment of the utility. */
export interface MeshctlEnv {
  /** The MESHCONFIG file to read; undefined when MESHCONFIG and HOME are both unset. */
  readonly meshConfigFile: string | undefined;
  /** True when MESHCONFIG names the file (then it must exist); false for the default path. */
  readonly meshConfigExplicit: boolean;
  /** Settings given by variables, by attr; only those set. */
  readonly overrides: Readonly<Partial<Record<SettingAttr, SettingValue>>>;
  /** The variable behind each override, for messages. */
  readonly overrideVars: Readonly<Partial<Record<SettingAttr, string>>>;
  readonly term: string;
}

/**
 * Reads the utility's variables from `record` (normally `process.env`). Throws `ConfigError`
 * listing every bad variable as `NAME: problem`.
 */
export function parseMeshctlEnv(record: Readonly<Record<string, string | undefined>>): MeshctlEnv {
  const issues: string[] = [];
  const overrides: Partial<Record<SettingAttr, SettingValue>> = {};
  const overrideVars: Partial<Record<SettingAttr, string>> = {};
  for (const spec of SETTINGS as readonly SettingSpec[]) {
    if (!spec.env) continue;
    const text = record[spec.env];
    if (text === undefined || text === '') continue;
    try {
      overrides[spec.attr as SettingAttr] = convertSetting(spec, text);
      overrideVars[spec.attr as SettingAttr] = spec.env;
    } catch (err) {
      issues.push(`${spec.env}: ${(err as Error).message}`);
    }
  }
  if (issues.length > 0) throw new ConfigError(issues);
  const explicit = record.MESHCONFIG !== undefined && record.MESHCONFIG !== '';
  const home = record.HOME;
  const meshConfigFile = explicit ? record.MESHCONFIG : home ? `${home.replace(/\/+$/, '')}/.meshctl/config.yaml` : undefined;
  return Object.freeze({
    meshConfigFile,
    meshConfigExplicit: explicit,
    overrides: Object.freeze(overrides),
    overrideVars: Object.freeze(overrideVars),
    term: record.TERM ?? '',
  });
}
