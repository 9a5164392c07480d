/**
 * What `meshctl validate` reports about a document: errors (the file is invalid), warnings (the
 * mesh can use it, but something is probably wrong) and notes (the document was not checked).
 * One finding prints as one line:
 *
 *     Error: routes.yaml#1 VirtualService/default/reviews: spec.http[0].route: at least one ...
 *
 * `#n` counts the documents of a file from 0, as the daemon's log of rejected files does.
 */

export type Level = 'Error' | 'Warning' | 'Note';

export interface Finding {
  readonly level: Level;
  /** The file as the user named it (a file inside a given directory: joined to it; standard input: `<stdin>`). */
  readonly file: string;
  /** The document within the file; absent for findings about the whole file. */
  readonly index?: number;
  readonly kind?: string;
  readonly namespace?: string;
  readonly name?: string;
  /** The field, e.g. `spec.http[0].route[1].destination.subset`; `''` for the document itself. */
  readonly path: string;
  readonly message: string;
}

/** `Kind/namespace/name`, `Kind/name` (cluster-scoped) or `Kind`, as far as known. */
export function objectLabel(f: Pick<Finding, 'kind' | 'namespace' | 'name'>): string {
  if (!f.kind) return f.name ?? '';
  if (!f.name) return f.kind;
  return f.namespace ? `${f.kind}/${f.namespace}/${f.name}` : `${f.kind}/${f.name}`;
}

export function formatFinding(f: Finding): string {
  const where = `${f.file}${f.index === undefined ? '' : `#${f.index}`}`;
  const label = objectLabel(f);
  return `${f.level}: ${where}${label ? ` ${label}` : ''}: ${f.path ? `${f.path}: ` : ''}${f.message}`;
}

/** `file#3` → `{ file, index: 3 }`; an origin without a document number is the whole file. */
export function splitOrigin(origin: string): { file: string; index?: number } {
  const at = origin.lastIndexOf('#');
  if (at < 0 || !/^\d+$/.test(origin.slice(at + 1))) return { file: origin };
  return { file: origin.slice(0, at), index: Number(origin.slice(at + 1)) };
}
