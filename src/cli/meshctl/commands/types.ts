import type { Command } from 'commander';
import type { Cli } from '../../runner.js';

/** A command module's `register`: declares its command on `program` and returns it. */
export type RegisterCommand = (program: Command, cli: Cli) => Command;
