/**
 * The finish every program's help gets: each command's help lists the global flags it accepts
 * (commander's `showGlobalOptions`) and ends with an `Examples:` section taken from a table kept
 * beside the program (examples.ts). The table is keyed by command path, so command modules stay
 * free of help prose; test/cli/help.test.ts checks that every command has examples and that every
 * example parses.
 */
import type { Command } from 'commander';

export interface Example {
  /** What the example does, one line. */
  readonly note: string;
  /** A shell line that runs the program (it may sit in a pipe or a redirection). */
  readonly command: string;
}

/** Examples by command path: `''` for the program, else the canonical names (`x` is `experimental`). */
export type ExampleTable = Readonly<Record<string, readonly Example[]>>;

/** `experimental revision list` for that command; `''` for the program itself. */
export function commandPath(cmd: Command): string {
  const names: string[] = [];
  for (let c: Command | null = cmd; c?.parent; c = c.parent) names.unshift(c.name());
  return names.join(' ');
}

const attached = new WeakMap<Command, readonly Example[]>();

/** The examples shown in `cmd`'s help (none for a command the table leaves out). */
export function examplesOf(cmd: Command): readonly Example[] {
  return attached.get(cmd) ?? [];
}

/** The `Examples:` section: each note as a comment above its command, indented. */
export function renderExamples(examples: readonly Example[]): string {
  return `\nExamples:\n${examples.map((e) => `  # ${e.note}\n  ${e.command}`).join('\n\n')}\n`;
}

/**
 * Walks `program`'s commands: global flags shown in every subcommand's help, and the examples of
 * `table` attached. Call it once every command is registered.
 */
export function finishHelp(program: Command, table: ExampleTable): Command {
  const visit = (cmd: Command): void => {
    cmd.configureHelp({ ...cmd.configureHelp(), showGlobalOptions: true });
    const examples = table[commandPath(cmd)];
    if (examples && examples.length > 0) {
      attached.set(cmd, examples);
      cmd.addHelpText('after', renderExamples(examples));
    }
    for (const sub of cmd.commands) visit(sub);
  };
  visit(program);
  return program;
}
