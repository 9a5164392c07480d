/**
 * The shape shared by the project's command-line programs: command actions return their output
 * (or throw a typed error) and the runner turns that into writes and an exit code. Nothing here
 * calls `process.exit`, so programs run in-process in tests.
 *
 * Errors that carry a numeric `exitCode` (`CliError`, `ConfigError`) are for the user: printed
 * as `error: <message>` without a stack. Anything else is a bug and is printed with its stack.
 * A closed output pipe ends a real process quietly with status 141 (see CLOSED_OUTPUT_EXIT_CODE).
 */
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Command, CommanderError, Option } from 'commander';
import { KubeUnreachableError } from '../kube/errors.js';
import { parseBool } from '../util/parse.js';
import type { CliIO } from './io.js';
import { COMPLETE_COMMAND, COMPLETE_NO_DESC_COMMAND, runCompletionRequest, type CompletionProviders } from './complete.js';

export type { CliIO };

/** One line from a terminal on standard input, after `prompt` on standard output. */
async function readTerminalLine(prompt: string): Promise<string> {
  const { createInterface } = await import('node:readline/promises');
  const rl = createInterface({ input: process.stdin, output: process.stdout });
  try {
    return await rl.question(prompt);
  } finally {
    rl.close();
  }
}

/** Reads a stream to its end as UTF-8 text. */
export async function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer));
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * Exit code of a program whose reader went away (`meshctl manifest generate | head`): 141, the
 * status a shell reports for a program that SIGPIPE ended (128 + 13), as coreutils and kubectl
 * give. Node ignores SIGPIPE, so a write to a closed pipe fails with EPIPE instead; the program
 * then stops at once, silently. With `set -o pipefail` a script sees the same status as with
 * any other tool in that place.
 */
export const CLOSED_OUTPUT_EXIT_CODE = 141;

let closedOutputHandled = false;

/** Ends the process quietly with CLOSED_OUTPUT_EXIT_CODE when standard output or error is a closed pipe. */
function exitQuietlyOnClosedOutput(): void {
  if (closedOutputHandled) return;
  closedOutputHandled = true;
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EPIPE') process.exit(CLOSED_OUTPUT_EXIT_CODE);
      throw err; // any other write error stays an uncaught error, as without this listener
    });
  }
}

/**
 * The process's own streams and environment. Only a real process uses this (tests pass their own
 * CliIO); it is the one place that may end the process early, when its output is a closed pipe.
 */
export function processIO(): CliIO {
  exitQuietlyOnClosedOutput();
  let stdin: Promise<string> | undefined;
  return {
    out: (text) => void process.stdout.write(text),
    err: (text) => void process.stderr.write(text),
    env: process.env,
    isTTY: process.stdout.isTTY === true,
    // Read once: a second `-f -` sees the same text.
    readStdin: () => (stdin ??= readAll(process.stdin)),
    readLine: process.stdin.isTTY === true ? readTerminalLine : undefined,
  };
}

/** What a command hands back: text for each stream and an exit code (0 when omitted). */
export interface CommandOutcome {
  readonly stdout?: string;
  readonly stderr?: string;
  readonly exitCode?: number;
}

/** An error for the user: printed as `error: <message>`, then the program exits with `exitCode`. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

/** The one line for an API server that could not be reached: the server and the reason. */
export function unreachableMessage(err: KubeUnreachableError): string {
  return `cannot reach the Kubernetes API server ${err.server}: ${err.message}`;
}

function isUserError(err: unknown): err is Error & { exitCode: number } {
  return err instanceof Error && typeof (err as { exitCode?: unknown }).exitCode === 'number';
}

type Action<A extends unknown[]> = (...args: A) => CommandOutcome | void | Promise<CommandOutcome | void>;

export interface Cli {
  readonly io: CliIO;
  /** Exit code set by the last command outcome; 0 until one sets it. */
  readonly exitCode: number;
  /** Wraps a command action so that its outcome is written and its exit code kept. */
  action<A extends unknown[]>(fn: Action<A>): (...args: A) => Promise<void>;
}

export function createCli(io: CliIO = processIO()): Cli {
  const state: { -readonly [K in keyof Cli]: Cli[K] } = {
    io,
    exitCode: 0,
    action:
      <A extends unknown[]>(fn: Action<A>) =>
      async (...args: A) => {
        const outcome = await fn(...args);
        if (!outcome) return;
        if (outcome.stdout) io.out(outcome.stdout);
        if (outcome.stderr) io.err(outcome.stderr);
        if (outcome.exitCode) state.exitCode = outcome.exitCode;
      },
  };
  return state;
}

function applyToTree(cmd: Command, io: CliIO): void {
  cmd.exitOverride().configureOutput({ writeOut: io.out, writeErr: io.err });
  for (const sub of cmd.commands) applyToTree(sub, io);
}

export interface RunOptions {
  /** Values the program's dynamic completion offers (complete.ts). */
  readonly completion?: CompletionProviders;
}

/**
 * Parses `argv` (arguments after the program name), runs the command and returns the exit code.
 * `__complete` and `__completeNoDesc` (the hidden commands the completion scripts call) are
 * answered here, before commander reads the line, since their words are another command line.
 */
export async function runCli(program: Command, cli: Cli, argv: readonly string[], options: RunOptions = {}): Promise<number> {
  const { io } = cli;
  if (argv[0] === COMPLETE_COMMAND || argv[0] === COMPLETE_NO_DESC_COMMAND) {
    return runCompletionRequest(program, io, argv, options.completion);
  }
  applyToTree(program, io);
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return cli.exitCode;
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode; // commander has printed it
    if (isUserError(err)) {
      io.err(`error: ${err.message}\n`);
      return err.exitCode;
    }
    if (err instanceof KubeUnreachableError) {
      // Whatever command met it, an API server out of reach is the user's to fix: one line.
      io.err(`error: ${unreachableMessage(err)}\n`);
      return 1;
    }
    io.err(`error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    return 1;
  }
}

/**
 * A boolean flag that also takes `--flag=false`: the value is optional, so `--flag` alone is true.
 * Read it with `boolValue`.
 */
export function boolOption(flags: string, description: string, defaultValue = false): Option {
  const option = new Option(`${flags} [bool]`, description);
  return defaultValue ? option.default(true) : option;
}

/** The value of a `boolOption`: `true`, `undefined` (not given) or the text after `=`. */
export function boolValue(value: unknown, flag: string, fallback = false): boolean {
  if (value === undefined) return fallback;
  if (typeof value === 'boolean') return value;
  try {
    // `-s=false`: commander leaves the `=` on a short flag's value.
    return parseBool(String(value).replace(/^=/, ''));
  } catch (err) {
    throw new CliError(`${flag}: ${(err as Error).message}`);
  }
}

/** True when the module at `moduleUrl` is the program node was started with (through npm's bin links too). */
export function isMain(moduleUrl: string): boolean {
  const entry = process.argv[1];
  if (!entry) return false;
  try {
    return fs.realpathSync(entry) === fs.realpathSync(fileURLToPath(moduleUrl));
  } catch {
    return false;
  }
}
