/**
 * `meshctl validate`, the work behind the command (loaded only when it runs): reads the inputs,
 * validates every document (documents.ts), optionally checks references across them
 * (references.ts) and turns the findings into the command's outcome.
 *
 * Standard error gets one line per finding, in input order, and a closing summary when
 * something is invalid; standard output gets `"<file>" is valid` for every input without an
 * error, or `"<file>" has warnings: <n> warnings` when the rules warned about it (warnings and
 * notes do not make a file invalid). Exit code 1 when any input has an error, else 0.
 */
import type { ConfigObject } from '../../../config/types.js';
import type { CommandOutcome } from '../../runner.js';
import { validateDocuments } from './documents.js';
import { formatFinding, type Finding } from './findings.js';
import { readInputs } from './inputs.js';
import { checkReferences } from './references.js';

export interface ValidateOptions {
  /** Files, directories and `-`, as given. */
  readonly files: readonly string[];
  readonly referential: boolean;
  /** Namespace of documents that name none (`--namespace`, else `default`). */
  readonly defaultNamespace: string;
  /** The mesh root namespace (`--meshNamespace`). */
  readonly rootNamespace: string;
  readonly readStdin?: () => Promise<string>;
}

const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;

export async function runValidate(opts: ValidateOptions): Promise<CommandOutcome> {
  const { inputs, findings: inputFindings, order: files } = await readInputs(opts.files, opts.readStdin);
  const findings: Finding[] = [...inputFindings];
  const objects: ConfigObject[] = [];
  let documents = 0;
  for (const input of inputs) {
    const result = validateDocuments(input.text, input.file, opts.defaultNamespace);
    documents += result.documents;
    if (result.documents === 0) findings.push({ level: 'Note', file: input.file, path: '', message: 'no documents' });
    findings.push(...result.findings);
    objects.push(...result.objects);
    // Let a large set of files yield to the event loop between files.
    await new Promise((resolve) => setImmediate(resolve));
  }
  if (opts.referential) findings.push(...checkReferences(objects, { rootNamespace: opts.rootNamespace }));

  // Findings in input order, then document order.
  const order = new Map(files.map((f, i) => [f, i]));
  const sorted = findings
    .map((f, i) => ({ f, i }))
    .sort((a, b) => (order.get(a.f.file) ?? order.size) - (order.get(b.f.file) ?? order.size) || (a.f.index ?? -1) - (b.f.index ?? -1) || a.i - b.i)
    .map((x) => x.f);

  const errors = sorted.filter((f) => f.level === 'Error');
  const badFiles = new Set(errors.map((f) => f.file));
  const badDocuments = new Set(errors.filter((f) => f.index !== undefined).map((f) => `${f.file}#${f.index}`));
  // A file with warnings is still valid: it says how many, listed with the other findings on standard error.
  const warningCount = (file: string): number => sorted.filter((f) => f.file === file && f.level === 'Warning').length;
  const stdout = inputs
    .filter((i) => !badFiles.has(i.file))
    .map((i) => {
      const n = warningCount(i.file);
      return n > 0 ? `${JSON.stringify(i.file)} has warnings: ${plural(n, 'warning')} (Warning: lines on standard error)\n` : `${JSON.stringify(i.file)} is valid\n`;
    })
    .join('');
  let stderr = sorted.map((f) => `${formatFinding(f)}\n`).join('');
  if (errors.length > 0) {
    const unread = [...badFiles].filter((f) => !inputs.some((i) => i.file === f)).length;
    stderr +=
      `Error: validation failed: ${plural(badDocuments.size, 'invalid document')} in ${plural(badFiles.size - unread, 'file')}` +
      `${unread > 0 ? `, ${plural(unread, 'input')} not read` : ''} (${plural(inputs.length, 'file')}, ${plural(documents, 'document')} checked)\n`;
  }
  return { stdout, stderr, exitCode: errors.length > 0 ? 1 : 0 };
}
