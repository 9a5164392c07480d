/** `meshctl completion <bash|fish|powershell|zsh>` (spec part 1), with `--no-descriptions`. */
import type { Command } from 'commander';
import { registerCompletionCommand } from '../../completion.js';
import type { Cli } from '../../runner.js';

export function register(program: Command, cli: Cli): Command {
  return registerCompletionCommand(program, cli);
}
