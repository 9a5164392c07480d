/**
 * The commands of `meshctl`, one module each. A module exports `register(program, cli)`, which
 * only declares the command (arguments, flags, help) and imports anything heavy inside its action,
 * so that start-up stays fast. New commands are added to this list.
 */
import type { Command } from 'commander';
import type { Cli } from '../../runner.js';
import { register as completion } from './completion.js';
import { register as version } from './version.js';

export type RegisterCommand = (program: Command, cli: Cli) => Command;

export const COMMANDS: readonly RegisterCommand[] = [completion, version];
