/**
 * The operator's log: one line per entry on standard error, `<time> <level> <message> k=v ...`,
 * or nothing (tests). The controller only needs these three levels.
 */
export interface OperatorLog {
  info(message: string, fields?: Readonly<Record<string, unknown>>): void;
  warn(message: string, fields?: Readonly<Record<string, unknown>>): void;
  error(message: string, fields?: Readonly<Record<string, unknown>>): void;
}

function line(level: string, message: string, fields: Readonly<Record<string, unknown>> = {}): string {
  const kv = Object.entries(fields)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${k}=${typeof v === 'string' && !/\s/.test(v) ? v : JSON.stringify(v)}`);
  return `${new Date().toISOString()}\t${level}\toperator\t${[message, ...kv].join(' ')}\n`;
}

export function streamLog(write: (text: string) => void = (t) => void process.stderr.write(t), opts: { readonly quiet?: boolean } = {}): OperatorLog {
  return {
    info: (m, f) => {
      if (!opts.quiet) write(line('info', m, f));
    },
    warn: (m, f) => write(line('warn', m, f)),
    error: (m, f) => write(line('error', m, f)),
  };
}

export const silentLog: OperatorLog = { info: () => undefined, warn: () => undefined, error: () => undefined };
