/**
 * The installer's error for the user: bad profile, file, flag or spec. It carries `exitCode`, so the
 * CLI runner prints it as `error: <message>` without a stack.
 */
import type { InstallIssue } from './api.js';

export class InstallError extends Error {
  readonly exitCode: number;
  constructor(
    message: string,
    readonly issues: readonly InstallIssue[] = [],
    exitCode = 1,
  ) {
    super(message);
    this.name = 'InstallError';
    this.exitCode = exitCode;
  }

  /** One error listing every issue, one per line, after `heading`. */
  static fromIssues(heading: string, issues: readonly InstallIssue[]): InstallError {
    const lines = issues.map((i) => `${i.path}: ${i.message}`);
    const message = lines.length === 1 ? `${heading}: ${lines[0]}` : `${heading}:\n${lines.map((l) => `  ${l}`).join('\n')}`;
    return new InstallError(message, issues);
  }
}

/** The profile a spec names cannot be read or laid under it (the operator counts these apart). */
export class ProfileError extends InstallError {
  constructor(message: string, issues: readonly InstallIssue[] = []) {
    super(message, issues);
    this.name = 'ProfileError';
  }
}
