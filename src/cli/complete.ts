/**
 * Dynamic shell completion: `<program> __complete <words…> <partial>` prints the candidates for
 * the last word, one per line (`value<TAB>description`), then a line `:<directive>`; the scripts of
 * `<program> completion <shell>` (completion.ts) call it on every Tab. `__completeNoDesc` leaves the
 * descriptions out. This is the protocol cobra programs such as kubectl speak, so the directive
 * numbers are the same:
 *
 *   1 error (offer nothing)       2 no space after the value   4 no file completion
 *   8 the values are file extensions to filter files by         16 complete directories only
 *   32 keep the order given
 *
 * The command line is read the way commander reads it: subcommands by name or alias, flags of the
 * command and of its ancestors anywhere, `--flag=value`, `--flag value` for flags that take a value,
 * and `--` ending the flags. Candidates come from the program itself (subcommands, flags, a flag's
 * choices), from the providers a program registers (namespaces, revisions, profiles … see
 * meshctl/complete-values.ts), and otherwise from the shell (files, or directories for a `<dir>`).
 * Providers that ask a cluster must answer within PROVIDER_DEADLINE_MS; any failure means no
 * candidates, never an error on the terminal.
 *
 * The requests are answered before commander parses anything (runner.ts), so the command is
 * hidden: it is in no help and no completion.
 */
import type { Argument, Command, Option } from 'commander';
import type { CliIO } from './io.js';

export const COMPLETE_COMMAND = '__complete';
export const COMPLETE_NO_DESC_COMMAND = '__completeNoDesc';

export const Directive = {
  Default: 0,
  Error: 1,
  NoSpace: 2,
  NoFileComp: 4,
  FilterFileExt: 8,
  FilterDirs: 16,
  KeepOrder: 32,
} as const;

/** Longest a provider may take (cluster lookups); after that the shell gets no candidates. */
export const PROVIDER_DEADLINE_MS = 4_000;

export interface Candidate {
  readonly value: string;
  readonly description?: string;
}

export interface Candidates {
  readonly values: readonly Candidate[];
  /** Default: NoFileComp. */
  readonly directive?: number;
}

/** What a provider knows about the line being completed. */
export interface CompletionContext {
  /** The command the word belongs to. */
  readonly command: Command;
  /** Its path without the program name: `experimental revision describe`. */
  readonly path: string;
  /** The partial word (for `--flag=part`, the part after `=`). */
  readonly toComplete: string;
  /** Flags given earlier on the line, by long name without dashes (`clusterconfig`), last value wins. */
  readonly flags: ReadonlyMap<string, string>;
  readonly env: Readonly<Record<string, string | undefined>>;
}

export type ValueProvider = (ctx: CompletionContext) => Candidates | Promise<Candidates>;

export interface CompletionProviders {
  /** Values of flags, by long name without dashes (`namespace`). */
  readonly flags?: Readonly<Record<string, ValueProvider>>;
  /** Values of positional arguments, by command path; an array gives one provider per argument. */
  readonly args?: Readonly<Record<string, ValueProvider | ReadonlyArray<ValueProvider | undefined>>>;
  /** Runs before the line is read (mesh-discovery registers its flags lazily). */
  readonly prepare?: () => Promise<void>;
}

const preparers = new WeakMap<Command, () => Promise<void>>();

/** Registers what must run before `program`'s line is read (flags the program registers lazily). */
export function prepareForCompletion(program: Command, prepare: () => Promise<void>): void {
  preparers.set(program, prepare);
}

const hidden = (cmd: Command): boolean => (cmd as unknown as { _hidden?: boolean })._hidden === true;
const firstLine = (text: string): string => text.split('\n')[0].trim();

function pathOf(cmd: Command): string {
  const names: string[] = [];
  for (let c: Command | null = cmd; c?.parent; c = c.parent) names.unshift(c.name());
  return names.join(' ');
}

/** The options `cmd` accepts: its own (help included) and those of its ancestors. */
function optionsOf(cmd: Command): Option[] {
  const own = cmd.createHelp().visibleOptions(cmd);
  const seen = new Set(own.map((o) => o.long ?? o.short));
  const out = [...own];
  for (let c = cmd.parent; c; c = c.parent) {
    for (const o of c.options) {
      const key = o.long ?? o.short;
      if (o.hidden || seen.has(key)) continue;
      seen.add(key);
      out.push(o);
    }
  }
  return out;
}

function findOption(cmd: Command, name: string): Option | undefined {
  return optionsOf(cmd).find((o) => o.long === name || o.short === name);
}

function subcommand(cmd: Command, word: string): Command | undefined {
  return cmd.commands.find((c) => c.name() === word || c.aliases().includes(word));
}

interface LineState {
  readonly command: Command;
  readonly positionals: readonly string[];
  readonly flags: ReadonlyMap<string, string>;
  /** The flag whose value the partial word is (`-n <Tab>`). */
  readonly pendingValueOf?: Option;
  /** After `--`: only arguments follow. */
  readonly argsOnly: boolean;
}

/** Reads the words before the partial one, as commander would. */
function readLine(program: Command, words: readonly string[]): LineState {
  let command = program;
  const positionals: string[] = [];
  const flags = new Map<string, string>();
  let argsOnly = false;
  let pending: Option | undefined;
  for (const word of words) {
    if (pending) {
      flags.set(nameOf(pending), word);
      pending = undefined;
      continue;
    }
    if (!argsOnly && word === '--') {
      argsOnly = true;
      continue;
    }
    if (!argsOnly && word.startsWith('-') && word.length > 1) {
      const eq = word.indexOf('=');
      const name = eq > 0 ? word.slice(0, eq) : /^-[^-]./.test(word) ? word.slice(0, 2) : word;
      const option = findOption(command, name);
      if (!option) continue;
      if (eq > 0) flags.set(nameOf(option), word.slice(eq + 1));
      else if (name !== word) flags.set(nameOf(option), word.slice(2)); // -oyaml
      else if (option.required) pending = option;
      else flags.set(nameOf(option), 'true');
      continue;
    }
    const sub = positionals.length === 0 && !argsOnly ? subcommand(command, word) : undefined;
    if (sub) command = sub;
    else positionals.push(word);
  }
  return { command, positionals, flags, pendingValueOf: pending, argsOnly };
}

const nameOf = (o: Option): string => (o.long ?? o.short ?? '').replace(/^-+/, '');

/** Candidates for the value of `option`. */
async function valueCandidates(option: Option, ctx: CompletionContext, providers: CompletionProviders): Promise<Candidates> {
  const provider = providers.flags?.[nameOf(option)];
  if (provider) return provider(ctx);
  if (option.argChoices && option.argChoices.length > 0) return { values: option.argChoices.map((value) => ({ value })) };
  if (option.flags.endsWith('[bool]')) return { values: [{ value: 'true' }, { value: 'false' }] }; // --flag=false
  const placeholder = /<([^>]+)>/.exec(option.flags)?.[1] ?? '';
  if (/dir/i.test(placeholder)) return { values: [], directive: Directive.FilterDirs };
  if (/file/i.test(placeholder)) return { values: [], directive: Directive.Default };
  return { values: [] };
}

function flagCandidates(cmd: Command): Candidate[] {
  return optionsOf(cmd).flatMap((o) =>
    [o.long, o.short].filter((n): n is string => n !== undefined).map((value) => ({ value, description: firstLine(o.description) })),
  );
}

async function argumentCandidates(state: LineState, ctx: CompletionContext, providers: CompletionProviders, program: Command): Promise<Candidates> {
  const cmd = state.command;
  if (!state.argsOnly && state.positionals.length === 0) {
    const subs = cmd.createHelp().visibleCommands(cmd).filter((c) => !hidden(c));
    if (subs.length > 0) return { values: subs.map((c) => ({ value: c.name(), description: firstLine(c.summary() || c.description()) })) };
  }
  const entry = providers.args?.[ctx.path];
  const index = state.positionals.length;
  const provider = Array.isArray(entry) ? entry[index] : (entry as ValueProvider | undefined);
  if (provider) return provider(ctx);
  // `help <command>`: the program's commands.
  if (cmd.name() === 'help' && cmd.parent === program && index === 0) {
    return { values: program.commands.filter((c) => !hidden(c)).map((c) => ({ value: c.name(), description: firstLine(c.description()) })) };
  }
  const args: readonly Argument[] = cmd.registeredArguments;
  const declared = args[index] ?? (args.length > 0 && args[args.length - 1].variadic ? args[args.length - 1] : undefined);
  return declared ? { values: [], directive: Directive.Default } : { values: [] };
}

/** Runs a provider with the deadline; a failure or a late answer is no candidates. */
async function guarded(fn: () => Candidates | Promise<Candidates>): Promise<Candidates> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      Promise.resolve().then(fn),
      new Promise<Candidates>((resolve) => {
        timer = setTimeout(() => resolve({ values: [] }), PROVIDER_DEADLINE_MS);
      }),
    ]);
  } catch {
    return { values: [] };
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The candidates for the last of `args` (the words after the program name; the last one is the
 * partial word, `''` when the cursor follows a space).
 */
export async function complete(program: Command, args: readonly string[], env: CompletionContext['env'], providers: CompletionProviders = {}): Promise<Candidates> {
  await (providers.prepare ?? preparers.get(program))?.();
  const words = args.slice(0, -1);
  const partial = args.length > 0 ? args[args.length - 1] : '';
  const state = readLine(program, words);
  const context = (toComplete: string): CompletionContext => ({ command: state.command, path: pathOf(state.command), toComplete, flags: state.flags, env });
  let result: Candidates;
  let prefix = '';
  let toComplete = partial;
  if (state.pendingValueOf) {
    const option = state.pendingValueOf;
    result = await guarded(() => valueCandidates(option, context(partial), providers));
  } else if (!state.argsOnly && partial.startsWith('-') && partial.includes('=')) {
    const name = partial.slice(0, partial.indexOf('='));
    const option = findOption(state.command, name);
    prefix = `${name}=`;
    toComplete = partial.slice(prefix.length);
    result = option?.required || option?.optional ? await guarded(() => valueCandidates(option, context(toComplete), providers)) : { values: [] };
  } else if (!state.argsOnly && partial.startsWith('-')) {
    result = { values: flagCandidates(state.command) };
  } else {
    result = await guarded(() => argumentCandidates(state, context(partial), providers, program));
  }
  const values = result.values.filter((c) => c.value.startsWith(toComplete)).map((c) => ({ ...c, value: prefix + c.value }));
  return { values, directive: result.directive ?? Directive.NoFileComp };
}

/** The reply the shell scripts read: candidates, then `:<directive>`. */
export function formatCandidates(result: Candidates, descriptions: boolean): string {
  const lines = result.values.map((c) => (descriptions && c.description ? `${c.value}\t${c.description.replace(/[\t\n]+/g, ' ')}` : c.value));
  return `${[...lines, `:${result.directive ?? Directive.NoFileComp}`].join('\n')}\n`;
}

/** Answers `__complete` / `__completeNoDesc`; returns the exit code (always 0: the shell must not see errors). */
export async function runCompletionRequest(program: Command, io: CliIO, argv: readonly string[], providers: CompletionProviders = {}): Promise<number> {
  const descriptions = argv[0] === COMPLETE_COMMAND;
  let result: Candidates;
  try {
    result = await complete(program, argv.slice(1), io.env, providers);
  } catch {
    result = { values: [], directive: Directive.Error };
  }
  io.out(formatCandidates(result, descriptions));
  return 0;
}
