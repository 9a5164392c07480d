/**
 * How `meshctl analyze` prints its findings. `log` (the default) writes one line per finding,
 *
 *     Error [MESH0103] (VirtualService reviews-route.shop) spec.http[0].route[0].destination.subset: <message>
 *
 * with the level coloured unless colour is off; `json` and `yaml` write a list of objects with
 * code, level, resource, path and message, `[]` when there is nothing to report.
 */
import { renderDocument } from '../../output.js';
import { resourceName } from './suppress.js';

export type DisplayLevel = 'Info' | 'Warning' | 'Error';
export type AnalyzeOutput = 'log' | 'json' | 'yaml';

interface Printable {
  readonly code: string;
  readonly level: DisplayLevel;
  readonly kind: string;
  readonly namespace: string;
  readonly name: string;
  readonly message: string;
  readonly path?: string;
}

const COLORS: Readonly<Record<DisplayLevel, string>> = { Error: '\x1b[31m', Warning: '\x1b[33m', Info: '\x1b[36m' };
const RESET = '\x1b[0m';

export async function formatFindings(findings: readonly Printable[], opts: { readonly output: AnalyzeOutput; readonly color: boolean; readonly scope: string }): Promise<string> {
  if (opts.output !== 'log') {
    const list = findings.map((f) => ({
      code: f.code,
      level: f.level,
      resource: { kind: f.kind, namespace: f.namespace, name: f.name },
      ...(f.path ? { path: f.path } : {}),
      message: f.message,
    }));
    return renderDocument(list, opts.output);
  }
  if (findings.length === 0) return `No validation issues found when analyzing ${opts.scope}.\n`;
  return findings
    .map((f) => {
      const level = opts.color ? `${COLORS[f.level]}${f.level}${RESET}` : f.level;
      return `${level} [${f.code}] (${resourceName(f)}) ${f.path ? `${f.path}: ` : ''}${f.message}\n`;
    })
    .join('');
}
