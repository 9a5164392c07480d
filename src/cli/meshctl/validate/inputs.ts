/**
 * The inputs of `meshctl validate -f`: files, directories (their `*.yaml`, `*.yml` and `*.json`
 * files, recursively, in name order, skipping names that start with `.` as the daemon's
 * --configDir does) and `-` for standard input. An input that cannot be read becomes an error
 * finding; the others are still checked.
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import { extname, join, resolve } from 'node:path';
import type { Finding } from './findings.js';

export const STDIN_NAME = '<stdin>';
const EXTENSIONS = new Set(['.yaml', '.yml', '.json']);
/** The daemon refuses larger files too (file-source.ts). */
export const MAX_FILE_BYTES = 16 * 1024 * 1024;

export interface Input {
  readonly file: string;
  readonly text: string;
}

export interface ReadResult {
  readonly inputs: Input[];
  readonly findings: Finding[];
  /** Every file met (read or not), in the order the arguments name them. */
  readonly order: string[];
}

/**
 * Reads every input named by `args` (in order; a file named twice, in any spelling, is read once).
 * `recursive: false` reads only the files directly inside a directory argument.
 */
export async function readInputs(
  args: readonly string[],
  readStdin: (() => Promise<string>) | undefined,
  opts: { readonly recursive?: boolean } = {},
): Promise<ReadResult> {
  const recursive = opts.recursive ?? true;
  const inputs: Input[] = [];
  const findings: Finding[] = [];
  const seen = new Set<string>();
  const order: string[] = [];
  const fail = (file: string, message: string): void => {
    if (!order.includes(file)) order.push(file);
    findings.push({ level: 'Error', file, path: '', message });
  };

  const readOne = async (file: string, size: number): Promise<void> => {
    // `a.yaml` and `./a.yaml` are one file.
    if (seen.has(resolve(file))) return;
    seen.add(resolve(file));
    order.push(file);
    if (size > MAX_FILE_BYTES) return fail(file, `file is larger than ${MAX_FILE_BYTES} bytes`);
    try {
      inputs.push({ file, text: await readFile(file, 'utf8') });
    } catch (err) {
      fail(file, describeError(err));
    }
  };

  for (const arg of args) {
    if (arg === '-') {
      if (seen.has(STDIN_NAME)) continue;
      seen.add(STDIN_NAME);
      order.push(STDIN_NAME);
      if (!readStdin) {
        fail(STDIN_NAME, 'standard input is not available');
        continue;
      }
      inputs.push({ file: STDIN_NAME, text: await readStdin() });
      continue;
    }
    let info;
    try {
      info = await stat(arg);
    } catch (err) {
      fail(arg, describeError(err));
      continue;
    }
    if (!info.isDirectory()) {
      await readOne(arg, info.size);
      continue;
    }
    const files = await listDirectory(arg, fail, recursive);
    if (files.length === 0) {
      order.push(arg);
      findings.push({ level: 'Warning', file: arg, path: '', message: 'directory has no .yaml, .yml or .json files' });
    }
    for (const f of files) await readOne(f.path, f.size);
  }
  return { inputs, findings, order };
}

async function listDirectory(dir: string, fail: (file: string, message: string) => void, recursive: boolean): Promise<{ path: string; size: number }[]> {
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch (err) {
    fail(dir, describeError(err));
    return [];
  }
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const out: { path: string; size: number }[] = [];
  for (const e of entries) {
    if (e.name.startsWith('.')) continue;
    const path = join(dir, e.name);
    if (e.isDirectory()) {
      if (recursive) out.push(...(await listDirectory(path, fail, recursive)));
    } else if ((e.isFile() || e.isSymbolicLink()) && EXTENSIONS.has(extname(e.name).toLowerCase())) {
      try {
        const st = await stat(path);
        if (st.isFile()) out.push({ path, size: st.size });
      } catch (err) {
        fail(path, describeError(err));
      }
    }
  }
  return out;
}

function describeError(err: unknown): string {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'ENOENT') return 'no such file or directory';
  if (code === 'EACCES') return 'permission denied';
  return (err as Error).message;
}
