/**
 * The confirmation prompt of the commands that change a cluster (`install`, `upgrade`,
 * `x uninstall`): skipped with `-y/--skip-confirmation`; asked on a terminal (`CliIO.readLine`);
 * without a terminal on standard input it is an error telling to pass `-y`, so that a script
 * never hangs on, or silently answers, a question.
 */
import { CliError, type CliIO } from '../runner.js';

/** True when the user answered yes (`y` or `yes`, any case). */
export async function confirm(io: Pick<CliIO, 'readLine'>, question: string, skip: boolean): Promise<boolean> {
  if (skip) return true;
  if (!io.readLine) {
    throw new CliError(`${question}\ncannot ask for confirmation: standard input is not a terminal; pass -y (--skip-confirmation) to proceed without asking`);
  }
  const answer = await io.readLine(`${question} (y/N) `);
  return /^\s*y(es)?\s*$/i.test(answer);
}
