/**
 * A configuration error that a user can fix: a bad flag, environment variable or setting.
 * It carries every problem found (`issues`, each `<name>: <what is wrong>`), so one run reports
 * all of them. Command-line runners print it as `error: <message>` without a stack and exit
 * with `exitCode`. Kept free of dependencies so any module can throw it cheaply.
 */
export class ConfigError extends Error {
  readonly exitCode = 1;
  readonly issues: readonly string[];

  constructor(issues: string | readonly string[]) {
    const list = typeof issues === 'string' ? [issues] : [...issues];
    super(list.join('; '));
    this.name = 'ConfigError';
    this.issues = Object.freeze(list);
  }
}
