/**
 * Scoped logging on pino. `getLogger(scope)` returns a pino child logger tagged `scope`; its level
 * follows `--log_output_level` and can be changed at run time with `setScopeLevel`, so a call
 * below the level costs only pino's no-op method. All loggers write through one sink whose
 * outputs and format `configureLogging` replaces, so loggers taken at import time follow a
 * later configuration.
 *
 * Per entry, a pino hook adds `caller` (file:line, for `--log_caller` scopes) and `stack` (at or
 * above a scope's `--log_stacktrace_level`); the stack is captured only when one is needed.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Writable } from 'node:stream';
import pino from 'pino';
import { createStream } from 'rotating-file-stream';
import { ConfigError } from '../util/config-error.js';
import { formatConsoleLine, logTimestamp } from './console-format.js';
import { framePosition, mapFrame } from './source-position.js';
import {
  DEFAULT_LOG_OPTIONS,
  LOGGER_SCOPES,
  isLogLevel,
  isLogScope,
  levelOf,
  type LogLevel,
  type LogOptions,
  type LogScopeName,
  type LoggerScope,
  type ScopeLevels,
} from './levels.js';

export * from './levels.js';

export type Logger = pino.Logger;

const PINO_LEVEL: Readonly<Record<LogLevel, pino.LevelWithSilent>> = {
  debug: 'debug',
  info: 'info',
  warn: 'warn',
  error: 'error',
  fatal: 'fatal',
  none: 'silent',
};
const LEVEL_VALUE: Readonly<Record<LogLevel, number>> = {
  debug: 20,
  info: 30,
  warn: 40,
  error: 50,
  fatal: 60,
  none: Infinity,
};

// ---- outputs ---------------------------------------------------------------------------------

interface Output {
  write(text: string): void;
  flush(): Promise<void>;
  close(): Promise<void>;
}

function processOutput(stream: NodeJS.WriteStream): Output {
  // Writes to files and pipes are synchronous on Linux, so there is mostly nothing to wait for
  // (and some hosts, like test runners, never call back for these streams).
  const flush = () =>
    stream.writableLength === 0 ? Promise.resolve() : new Promise<void>((resolve) => stream.write('', () => resolve()));
  return { write: (text) => void stream.write(text), flush, close: flush };
}

function streamOutput(stream: Writable, label: string): Output {
  let failed = false;
  stream.on('error', (err) => {
    if (!failed) process.stderr.write(`log output ${label} failed: ${err.message}\n`);
    failed = true;
  });
  const usable = () => !failed && !stream.destroyed && !stream.writableEnded;
  return {
    write: (text) => {
      if (usable()) stream.write(text);
    },
    flush: () => new Promise<void>((resolve) => (usable() ? stream.write('', () => resolve()) : resolve())),
    close: () => new Promise<void>((resolve) => (usable() ? stream.end(() => resolve()) : resolve())),
  };
}

/** Name of a rotated file: `meshd.log` becomes `meshd-20261123T060000Z[-2].log`. */
export function rotatedFileName(base: string, time: Date, index: number): string {
  const ext = path.extname(base);
  const stem = base.slice(0, base.length - ext.length);
  const stamp = time.toISOString().replace(/\.\d+Z$/, 'Z').replace(/[-:]/g, '');
  return `${stem}-${stamp}${index > 1 ? `-${index}` : ''}${ext}`;
}

function rotatingOutput(file: string, opts: LogOptions): Output {
  const dir = path.dirname(path.resolve(file));
  fs.mkdirSync(dir, { recursive: true });
  const base = path.basename(file);
  const stream = createStream(
    (time: number | Date | null, index?: number) =>
      time === null ? base : rotatedFileName(base, new Date(time), index ?? 1),
    {
      path: dir + path.sep,
      size: `${opts.rotateMaxSizeMB}M`,
      ...(opts.rotateMaxAgeDays > 0 ? { interval: `${opts.rotateMaxAgeDays}d` } : {}),
      ...(opts.rotateMaxBackups > 0 ? { maxFiles: opts.rotateMaxBackups } : {}),
    },
  );
  return streamOutput(stream, file);
}

function openOutputs(opts: LogOptions): Output[] {
  const outputs: Output[] = [];
  const issues: string[] = [];
  for (const target of opts.targets) {
    if (target === 'stdout') outputs.push(processOutput(process.stdout));
    else if (target === 'stderr') outputs.push(processOutput(process.stderr));
    else {
      try {
        const fd = fs.openSync(target, 'a');
        outputs.push(streamOutput(fs.createWriteStream(target, { fd }), target));
      } catch (err) {
        issues.push(`--log_target: cannot open ${JSON.stringify(target)}: ${(err as Error).message}`);
      }
    }
  }
  if (opts.rotate !== '') {
    try {
      outputs.push(rotatingOutput(opts.rotate, opts));
    } catch (err) {
      issues.push(`--log_rotate: cannot open ${JSON.stringify(opts.rotate)}: ${(err as Error).message}`);
    }
  }
  if (issues.length > 0) {
    void Promise.all(outputs.map((o) => o.close()));
    throw new ConfigError(issues);
  }
  return outputs;
}

// ---- state -----------------------------------------------------------------------------------

interface ScopeState {
  /** Entries at or above this level value get a `stack`. */
  stackFrom: number;
  caller: boolean;
}

const kScope = Symbol('mesh.log.scope');
type ScopedLogger = Logger & { [kScope]?: LoggerScope };

let options: LogOptions = DEFAULT_LOG_OPTIONS;
let outputs: Output[] = [processOutput(process.stdout)];
let closing: Promise<unknown> = Promise.resolve();
let outputLevels: ScopeLevels = options.outputLevels;
let stackLevels: ScopeLevels = options.stacktraceLevels;
const scopeStates = new Map<LoggerScope, ScopeState>();
const loggers = new Map<LoggerScope, ScopedLogger>();

function applyLevels(): void {
  for (const scope of LOGGER_SCOPES) {
    scopeStates.set(scope, {
      stackFrom: LEVEL_VALUE[levelOf(stackLevels, scope)],
      caller: options.callerScopes.has(scope),
    });
  }
  for (const [scope, logger] of loggers) logger.level = PINO_LEVEL[levelOf(outputLevels, scope)];
}
applyLevels();

// ---- caller and stack ------------------------------------------------------------------------

/**
 * Stack frames of the logging call site and its callers. V8 leaves out `entry` (the level method
 * the caller invoked, pino's wrapper that called the hook) and every frame above it: this module's
 * and pino's own frames, found by the function rather than by their files, which a bundle merges
 * with everyone else's. Frames are mapped to the sources through their files' source maps.
 */
function callSiteFrames(entry: unknown): string[] {
  const holder: { stack?: string } = {};
  if (typeof entry === 'function') Error.captureStackTrace(holder, entry as (...args: unknown[]) => unknown);
  // Not on the stack (a method called some other way): everything above the hook's caller.
  if (!holder.stack?.includes('\n')) Error.captureStackTrace(holder, logMethod);
  const lines = (holder.stack ?? '').split('\n').slice(1);
  return lines.map((l) => mapFrame(l.trim()));
}

function callerOf(frame: string | undefined): string | undefined {
  const pos = frame === undefined ? undefined : framePosition(frame);
  if (pos === undefined) return undefined;
  const relative = path.relative(process.cwd(), pos.file);
  const file = relative.startsWith('..') || path.isAbsolute(relative) ? path.basename(pos.file) : relative;
  return `${file}:${pos.line}`;
}

type LogArgs = Parameters<pino.LogFn>;

function logMethod(this: Logger, args: LogArgs, method: pino.LogFn, level: number): void {
  const state = scopeStates.get((this as ScopedLogger)[kScope] as LoggerScope);
  if (state === undefined || (!state.caller && level < state.stackFrom)) {
    method.apply(this, args);
    return;
  }
  const frames = callSiteFrames((this as unknown as Record<string, unknown>)[this.levels.labels[level]]);
  const extra: Record<string, string> = {};
  const caller = state.caller ? callerOf(frames[0]) : undefined;
  if (caller !== undefined) extra.caller = caller;
  if (level >= state.stackFrom) extra.stack = frames.join('\n');
  const [first, ...rest] = args as unknown[];
  let merged: unknown[];
  if (first instanceof Error) merged = [{ err: first, ...extra }, ...rest];
  else if (typeof first === 'object' && first !== null) merged = [{ ...first, ...extra }, ...rest];
  else merged = [extra, ...(args as unknown[])];
  method.apply(this, merged as LogArgs);
}

// ---- sink ------------------------------------------------------------------------------------

const LEVEL_LABEL: ReadonlyMap<number, string> = new Map([
  [10, 'trace'],
  [20, 'debug'],
  [30, 'info'],
  [40, 'warn'],
  [50, 'error'],
  [60, 'fatal'],
]);

let lastTimestamp = '';

/** Receives each entry from pino, with pino's metadata, and hands it to every output. */
const sink = {
  [pino.symbols.needsMetadataGsym]: true as const,
  lastLevel: 0,
  lastMsg: '' as string | undefined,
  lastObj: {} as object,
  lastTime: '',
  lastLogger: undefined as unknown as Logger,
  write(line: string): void {
    let text = line;
    if (!options.asJson) {
      const fields = { ...(this.lastObj as Record<string, unknown>) };
      const msg = this.lastMsg ?? (typeof fields.msg === 'string' ? fields.msg : '');
      delete fields.msg;
      text = formatConsoleLine({
        time: lastTimestamp,
        level: LEVEL_LABEL.get(this.lastLevel) ?? String(this.lastLevel),
        scope: (this.lastLogger as ScopedLogger)[kScope] ?? 'default',
        msg,
        fields,
      });
    }
    for (const output of outputs) output.write(text);
  },
};

const root = pino(
  {
    level: 'debug',
    base: null,
    timestamp: () => `,"time":"${(lastTimestamp = logTimestamp())}"`,
    formatters: { level: (label) => ({ level: label }) },
    hooks: { logMethod },
  },
  sink,
);

// ---- API -------------------------------------------------------------------------------------

/** The logger of a scope, created on first use and then shared. */
export function getLogger(scope: LoggerScope): Logger {
  let logger = loggers.get(scope);
  if (logger === undefined) {
    if (!scopeStates.has(scope)) throw new ConfigError(`unknown log scope ${JSON.stringify(scope)}`);
    logger = root.child({ scope }, { level: PINO_LEVEL[levelOf(outputLevels, scope)] }) as ScopedLogger;
    logger[kScope] = scope;
    loggers.set(scope, logger);
  }
  return logger;
}

/**
 * Applies logging settings: levels, stack traces, caller info, format and outputs. Outputs are
 * opened before anything changes, so a bad path throws `ConfigError` and keeps the old setup;
 * the outputs replaced are flushed and closed in the background (`closeLogging` awaits that).
 */
export function configureLogging(next: LogOptions = DEFAULT_LOG_OPTIONS): void {
  const opened = openOutputs(next);
  const previous = outputs;
  outputs = opened;
  options = next;
  outputLevels = next.outputLevels;
  stackLevels = next.stacktraceLevels;
  applyLevels();
  closing = Promise.all([closing, ...previous.map((o) => o.close())]);
}

/**
 * Changes a scope's output level at run time. `default` changes the level of every scope that
 * has none of its own; `all` sets every scope. Throws `ConfigError` for an unknown scope or level.
 */
export function setScopeLevel(scope: string, level: string): void {
  outputLevels = withLevel(outputLevels, scope, level);
  applyLevels();
}

/** Changes the level from which a scope's entries carry a stack, as `setScopeLevel` does the output level. */
export function setScopeStackTraceLevel(scope: string, level: string): void {
  stackLevels = withLevel(stackLevels, scope, level);
  applyLevels();
}

function withLevel(levels: ScopeLevels, scope: string, level: string): ScopeLevels {
  if (!isLogScope(scope)) throw new ConfigError(`unknown log scope ${JSON.stringify(scope)}`);
  if (!isLogLevel(level)) throw new ConfigError(`unknown log level ${JSON.stringify(level)}`);
  const name: LogScopeName = scope;
  if (name === 'all') return { fallback: level, scopes: {} };
  if (name === 'default') return { fallback: level, scopes: levels.scopes };
  return { fallback: levels.fallback, scopes: { ...levels.scopes, [name]: level } };
}

/** Every scope back to the defaults of the flags: output level `info`, no stack traces. */
export function resetScopeLevels(): void {
  outputLevels = DEFAULT_LOG_OPTIONS.outputLevels;
  stackLevels = DEFAULT_LOG_OPTIONS.stacktraceLevels;
  applyLevels();
}

/** The current output level of every scope. */
export function scopeLevels(): Record<LoggerScope, LogLevel> {
  return Object.fromEntries(LOGGER_SCOPES.map((s) => [s, levelOf(outputLevels, s)])) as Record<LoggerScope, LogLevel>;
}

/** The current stack-trace level of every scope. */
export function scopeStackTraceLevels(): Record<LoggerScope, LogLevel> {
  return Object.fromEntries(LOGGER_SCOPES.map((s) => [s, levelOf(stackLevels, s)])) as Record<LoggerScope, LogLevel>;
}

/** Resolves once everything logged so far has been handed to the operating system. */
export async function flushLogs(): Promise<void> {
  await Promise.all(outputs.map((o) => o.flush()));
}

/** Flushes and closes every output (files included) and goes back to the default setup. */
export async function closeLogging(): Promise<void> {
  const current = outputs;
  outputs = [processOutput(process.stdout)];
  options = DEFAULT_LOG_OPTIONS;
  outputLevels = options.outputLevels;
  stackLevels = options.stacktraceLevels;
  applyLevels();
  await Promise.all([closing, ...current.map((o) => o.close())]);
}
