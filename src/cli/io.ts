/** What a command reads and writes: the process's streams and environment, or a test's capture. */
export interface CliIO {
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** True when standard output is a terminal (colour is allowed); absent means no. */
  readonly isTTY?: boolean;
  /** All of standard input as UTF-8 text (for `-f -`); absent when there is none to read. */
  readonly readStdin?: () => Promise<string>;
  /**
   * Shows `prompt` and reads one line typed by the user (for confirmations); present only when
   * standard input is a terminal.
   */
  readonly readLine?: (prompt: string) => Promise<string>;
}
