/**
 * The catalogue of analysis messages, proven case by case: every code has a case in
 * test/support/analyzer-cases.ts, each case's documents given to `meshctl analyze
 * --use-cluster=false` produce exactly its finding (the Kubernetes objects of the files count), and
 * the fixed documents do not. docs/analysis.md is generated from the same table and must be current.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MESSAGE_TYPES } from '../../src/analysis/messages.js';
import { main as meshctl } from '../../src/cli/meshctl.js';
import { captureIO } from '../cli/capture.js';
import { renderAnalysisDoc } from '../support/analysis-doc.js';
import { ANALYZER_CASES, type AnalyzerCase } from '../support/analyzer-cases.js';

interface JsonFinding {
  readonly code: string;
  readonly level: string;
  readonly resource: { readonly kind: string; readonly namespace: string; readonly name: string };
  readonly path?: string;
  readonly message: string;
}

let dir: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mesh-catalogue-'));
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

async function analyzeText(name: string, text: string): Promise<{ file: string; findings: JsonFinding[] }> {
  const file = path.join(dir, name);
  fs.writeFileSync(file, text);
  const io = captureIO({ TERM: 'dumb' });
  const code = await meshctl(['analyze', '--use-cluster=false', '-A', '-o', 'json', file], io.io);
  if (code !== 0 && code !== 79) throw new Error(`meshctl analyze exited ${code}: ${io.stderr()}`);
  return { file, findings: JSON.parse(io.stdout()) as JsonFinding[] };
}

const about = (c: AnalyzerCase) => (f: JsonFinding) =>
  f.code === c.code && f.resource.kind === c.resource.kind && f.resource.namespace === c.resource.namespace && f.resource.name === c.resource.name;

test('every code of the catalogue has a case', () => {
  const covered = new Set(ANALYZER_CASES.map((c) => c.code));
  expect(MESSAGE_TYPES.map((m) => m.code).filter((c) => !covered.has(c))).toEqual([]);
});

describe.each(ANALYZER_CASES.map((c, i) => [`${c.code} ${c.title}`, c, i] as const))('%s', (_title, c, i) => {
  it('reports the finding, exactly', async () => {
    const { file, findings } = await analyzeText(`case-${i}-invalid.yaml`, c.invalid);
    const level = MESSAGE_TYPES.find((m) => m.code === c.code)?.level;
    expect(findings.filter(about(c))).toContainEqual({
      code: c.code,
      level: level === 'ERROR' ? 'Error' : level === 'WARNING' ? 'Warning' : 'Info',
      resource: c.resource,
      ...(c.path ? { path: c.path } : {}),
      message: c.message.replace('FILE#', `${file}#`),
    });
  });

  it('reports nothing of the kind once fixed', async () => {
    const { findings } = await analyzeText(`case-${i}-valid.yaml`, c.valid);
    expect(findings.filter(about(c))).toEqual([]);
  });
});

test('an object that fails validation is still analysed for the rest', async () => {
  const { findings } = await analyzeText(
    'invalid-analysed.yaml',
    'apiVersion: networking.mesh.io/v1\nkind: VirtualService\nmetadata: {name: reviews, namespace: shop}\nspec:\n  hosts: [reviews]\n  http:\n    - route: [{destination: {host: reviews, subset: v9}}]\n      timeout: 10us\n',
  );
  expect(findings.map((f) => `${f.code} ${f.path}`)).toEqual(expect.arrayContaining(['MESH0107 spec.http[0].timeout', 'MESH0103 spec.http[0].route[0].destination.subset']));
});

test('docs/analysis.md is generated from the catalogue and the cases', () => {
  const docPath = path.join(process.cwd(), 'docs', 'analysis.md');
  const expected = renderAnalysisDoc();
  if (process.env.UPDATE_ANALYSIS_DOC === '1') fs.writeFileSync(docPath, expected);
  expect(fs.existsSync(docPath) ? fs.readFileSync(docPath, 'utf8') : '(missing)').toBe(expected);
});
