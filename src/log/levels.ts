/**
 * Log scopes and levels of the spec ("Log scopes", "Log levels") and the parsers for the
 * `--log_*` flags. No logger here: this module is cheap to import for flag validation.
 */
import { ConfigError } from '../util/config-error.js';

/** Every scope name the spec lists, including the two special ones `all` and `default`. */
export const LOG_SCOPES = [
  'ads', 'adsc', 'all', 'analysis', 'authn', 'authorization', 'ca',
  'default', 'gateway', 'grpcgen', 'klog', 'kube', 'mcp', 'model',
  'pkica', 'processing', 'resource', 'rootcertrotator', 'secretcontroller', 'serverca', 'source',
  'spiffe', 'status', 'telemetry', 'trustBundle', 'validation', 'validationController', 'validationServer',
  'wle',
] as const;

export type LogScopeName = (typeof LOG_SCOPES)[number];
/**
 * Scopes that own a logger. `all` only addresses every scope at once in the flags. `default` is
 * both a logger scope and the fallback level for scopes without their own entry.
 */
export type LoggerScope = Exclude<LogScopeName, 'all'>;
export const LOGGER_SCOPES: readonly LoggerScope[] = LOG_SCOPES.filter((s): s is LoggerScope => s !== 'all');

/** Levels from most to least verbose; `none` turns a scope off. */
export const LOG_LEVELS = ['debug', 'info', 'warn', 'error', 'fatal', 'none'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

const SCOPE_SET: ReadonlySet<string> = new Set(LOG_SCOPES);
const LEVEL_SET: ReadonlySet<string> = new Set(LOG_LEVELS);

export function isLogScope(name: string): name is LogScopeName {
  return SCOPE_SET.has(name);
}

export function isLogLevel(name: string): name is LogLevel {
  return LEVEL_SET.has(name);
}

/** Per-scope levels: `fallback` applies to every scope that has no entry in `scopes`. */
export interface ScopeLevels {
  readonly fallback: LogLevel;
  readonly scopes: Readonly<Partial<Record<LoggerScope, LogLevel>>>;
}

export function levelOf(levels: ScopeLevels, scope: LoggerScope): LogLevel {
  return levels.scopes[scope] ?? levels.fallback;
}

/**
 * Parses `<scope>:<level>` pairs separated by commas, applied left to right. A bare `<level>`
 * and `default:<level>` set the fallback; `all:<level>` sets the fallback and drops every
 * earlier per-scope entry. Throws an Error naming the bad scope or level.
 */
export function parseScopeLevels(text: string, fallback: LogLevel): ScopeLevels {
  const scopes: Partial<Record<LoggerScope, LogLevel>> = {};
  let base = fallback;
  for (const item of text.split(',').map((s) => s.trim()).filter((s) => s !== '')) {
    const colon = item.lastIndexOf(':');
    const scope = colon < 0 ? 'default' : item.slice(0, colon);
    const level = colon < 0 ? item : item.slice(colon + 1);
    if (!isLogScope(scope)) throw new Error(`unknown scope ${JSON.stringify(scope)} in ${JSON.stringify(item)}`);
    if (!isLogLevel(level)) {
      throw new Error(`unknown level ${JSON.stringify(level)} in ${JSON.stringify(item)} (levels: ${LOG_LEVELS.join(', ')})`);
    }
    if (scope === 'all') {
      base = level;
      for (const key of Object.keys(scopes)) delete scopes[key as LoggerScope];
    } else if (scope === 'default') {
      base = level;
    } else {
      scopes[scope] = level;
    }
  }
  return { fallback: base, scopes };
}

/** Parses a comma-separated scope list; `all` stands for every scope. */
export function parseScopeList(text: string): ReadonlySet<LoggerScope> {
  const out = new Set<LoggerScope>();
  for (const name of text.split(',').map((s) => s.trim()).filter((s) => s !== '')) {
    if (!isLogScope(name)) throw new Error(`unknown scope ${JSON.stringify(name)}`);
    if (name === 'all') LOGGER_SCOPES.forEach((s) => out.add(s));
    else out.add(name);
  }
  return out;
}

/** Logging settings, parsed; `configureLogging` applies them. */
export interface LogOptions {
  /** `--log_output_level`: minimum level per scope. */
  readonly outputLevels: ScopeLevels;
  /** `--log_stacktrace_level`: entries at or above a scope's level carry a `stack`. */
  readonly stacktraceLevels: ScopeLevels;
  /** `--log_caller`: scopes whose entries carry `caller` (file:line). */
  readonly callerScopes: ReadonlySet<LoggerScope>;
  /** `--log_as_json`: JSON lines instead of the console format. */
  readonly asJson: boolean;
  /** `--log_target`: `stdout`, `stderr` or file paths. */
  readonly targets: readonly string[];
  /** `--log_rotate`: path of a rotating log file written besides the targets; empty for none. */
  readonly rotate: string;
  /** `--log_rotate_max_size` in megabytes. */
  readonly rotateMaxSizeMB: number;
  /** `--log_rotate_max_age` in days; 0 means no age-based rotation. */
  readonly rotateMaxAgeDays: number;
  /** `--log_rotate_max_backups`; 0 means keep all. */
  readonly rotateMaxBackups: number;
}

/** The `--log_*` flag values as the command line gives them; unset ones take the spec defaults. */
export interface LogFlags {
  readonly log_output_level?: string;
  readonly log_stacktrace_level?: string;
  readonly log_caller?: string;
  readonly log_as_json?: boolean;
  readonly log_target?: readonly string[];
  readonly log_rotate?: string;
  readonly log_rotate_max_size?: number;
  readonly log_rotate_max_age?: number;
  readonly log_rotate_max_backups?: number;
}

/** Default values of the `--log_*` flags, as the spec's flag table gives them. */
export const LOG_FLAG_DEFAULTS = Object.freeze({
  log_output_level: 'default:info',
  log_stacktrace_level: 'default:none',
  log_caller: '',
  log_target: Object.freeze(['stdout']),
  log_rotate: '',
  log_rotate_max_size: 104857600,
  log_rotate_max_age: 30,
  log_rotate_max_backups: 1000,
});

/**
 * Problems of each `--log_*` flag value, as `--flag: problem` strings, next to the parsed
 * options (complete only when there is no problem). Shared by `logOptionsFromFlags` and the
 * daemon's flag validation, which reports these along with the other flags' problems.
 */
export function checkLogFlags(flags: LogFlags): { options: LogOptions; issues: string[] } {
  const issues: string[] = [];
  // On a bad value, note it and go on with the default so that every flag gets checked.
  const attempt = <T>(flag: keyof typeof LOG_FLAG_DEFAULTS, value: string, parse: (s: string) => T): T => {
    try {
      return parse(value);
    } catch (err) {
      issues.push(`--${flag}: ${(err as Error).message}`);
      return parse(LOG_FLAG_DEFAULTS[flag] as string);
    }
  };
  const count = (flag: string, value: number | undefined, fallback: number, min: number): number => {
    const v = value ?? fallback;
    if (!Number.isSafeInteger(v) || v < min) issues.push(`--${flag}: ${v} is out of range: must be an integer of at least ${min}`);
    return v;
  };
  const d = LOG_FLAG_DEFAULTS;
  const options: LogOptions = {
    outputLevels: attempt('log_output_level', flags.log_output_level ?? d.log_output_level, (s) => parseScopeLevels(s, 'info')),
    stacktraceLevels: attempt('log_stacktrace_level', flags.log_stacktrace_level ?? d.log_stacktrace_level, (s) => parseScopeLevels(s, 'none')),
    callerScopes: attempt('log_caller', flags.log_caller ?? d.log_caller, parseScopeList),
    asJson: flags.log_as_json ?? false,
    targets: [...(flags.log_target ?? d.log_target)],
    rotate: flags.log_rotate ?? d.log_rotate,
    rotateMaxSizeMB: count('log_rotate_max_size', flags.log_rotate_max_size, d.log_rotate_max_size, 1),
    rotateMaxAgeDays: count('log_rotate_max_age', flags.log_rotate_max_age, d.log_rotate_max_age, 0),
    rotateMaxBackups: count('log_rotate_max_backups', flags.log_rotate_max_backups, d.log_rotate_max_backups, 0),
  };
  if (options.targets.some((t) => t.trim() === '')) issues.push('--log_target: empty output path');
  return { options, issues };
}

/** Parses the `--log_*` flags; throws `ConfigError` naming each bad flag and value. */
export function logOptionsFromFlags(flags: LogFlags): LogOptions {
  const { options, issues } = checkLogFlags(flags);
  if (issues.length > 0) throw new ConfigError(issues);
  return options;
}

/** Logging as the spec's flag defaults set it: info, console format, to stdout. */
export const DEFAULT_LOG_OPTIONS: LogOptions = Object.freeze(logOptionsFromFlags({}));
