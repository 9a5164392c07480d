/**
 * The MESHCONFIG file of default flag values (spec part 2; default `$HOME/.meshctl/config.yaml`):
 * a YAML mapping of setting names to values, for example
 *
 *     meshNamespace: mesh-prod
 *     xds-port: 15013
 *     insecure: true
 *
 * Its keys are the names of env.ts's `SETTINGS`; values are checked by the same rules as the
 * flags. A missing file at the default path is no error; a missing file that MESHCONFIG names is.
 * A file that is not YAML, not a mapping, has an unknown key or a bad value is refused as a
 * whole with a `ConfigError` naming the file and every bad key. The `yaml` package is loaded only
 * when a file exists.
 */
import { readFile } from 'node:fs/promises';
import { ConfigError } from '../../util/config-error.js';
import { SETTINGS, convertSetting, settingByName, type SettingAttr, type SettingValue } from './env.js';

export interface DefaultsFile {
  readonly path: string;
  /** Values by setting attr; only the keys the file sets. */
  readonly values: Readonly<Partial<Record<SettingAttr, SettingValue>>>;
}

/** Reads and checks the file at `path`; undefined when it does not exist and `required` is false. */
export async function readDefaultsFile(path: string, required: boolean): Promise<DefaultsFile | undefined> {
  const where = `MESHCONFIG file ${path}`;
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' && !required) return undefined;
    const reason = code === 'ENOENT' ? 'does not exist' : code === 'EISDIR' ? 'is a directory, not a file' : (err as Error).message;
    throw new ConfigError(`${where}: ${reason}`);
  }
  return { path, values: await parseDefaults(text, where) };
}

/** The values of a defaults file's text; `where` starts every error message. */
export async function parseDefaults(text: string, where: string): Promise<Partial<Record<SettingAttr, SettingValue>>> {
  // Through our module: a lazy import('yaml') has no named exports in meshctl's bundle.
  const { yamlParseDocument } = await import('../../util/yaml.js');
  const doc = yamlParseDocument(text, { uniqueKeys: true, prettyErrors: false });
  if (doc.errors.length > 0) throw new ConfigError(`${where}: not valid YAML: ${doc.errors[0].message.split('\n')[0]}`);
  const data: unknown = doc.toJS({ maxAliasCount: 100 });
  if (data === null || data === undefined) return {};
  if (typeof data !== 'object' || Array.isArray(data)) {
    throw new ConfigError(`${where}: must be a mapping of flag names to values, got ${Array.isArray(data) ? 'a list' : JSON.stringify(data)}`);
  }
  const issues: string[] = [];
  const values: Partial<Record<SettingAttr, SettingValue>> = {};
  for (const [key, raw] of Object.entries(data as Record<string, unknown>)) {
    const spec = settingByName(key);
    if (!spec) {
      issues.push(`${where}: unknown key ${JSON.stringify(key)} (known: ${SETTINGS.map((s) => s.name).join(', ')})`);
      continue;
    }
    try {
      values[spec.attr as SettingAttr] = convertSetting(spec, raw);
    } catch (err) {
      issues.push(`${where}: ${key}: ${(err as Error).message}`);
    }
  }
  if (issues.length > 0) throw new ConfigError(issues);
  return values;
}
