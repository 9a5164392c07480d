/**
 * YAML in and out for the installer. Input is read as YAML 1.2 (like the rest of the project);
 * a syntax error names the origin (file), line and column. Output is written in YAML 1.1 style
 * (strings such as `yes`, `on` or `0755` are quoted), so Kubernetes tools read every value back
 * with the type it has here, with no line folding and a fixed layout: the same objects always give
 * the same bytes.
 */
import { Document, parseAllDocuments } from 'yaml';
import { InstallError } from './errors.js';

/** The non-empty documents of `text`; throws `InstallError` `<origin>:<line>:<column>: <problem>`. */
export function parseYamlDocuments(text: string, origin: string): unknown[] {
  const docs = parseAllDocuments(text);
  const out: unknown[] = [];
  for (const doc of docs) {
    const err = doc.errors[0];
    if (err) {
      const pos = err.linePos?.[0];
      const where = pos ? `${origin}:${pos.line}:${pos.col}` : origin;
      const reason = err.message.split('\n')[0].replace(/ at line \d+, column \d+:?$/, '');
      throw new InstallError(`${where}: invalid YAML: ${reason}`);
    }
    const value: unknown = doc.toJS({ maxAliasCount: 1000 });
    if (value !== null && value !== undefined) out.push(value);
  }
  return out;
}

/** One YAML document, ending in a newline. */
export function toYaml(value: unknown): string {
  return new Document(value, { version: '1.1' }).toString({ lineWidth: 0 });
}

/** Several documents separated by `---` lines (empty text for none). */
export function toYamlDocuments(values: readonly unknown[]): string {
  return values.map((v) => toYaml(v)).join('---\n');
}
