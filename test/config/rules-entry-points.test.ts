/**
 * The same rule cases (test/support/rule-cases.ts), as files, through every entry point that
 * validates: the daemon's file source (--configDir), `meshctl validate`, and the verdict function
 * the validating webhook answers with. All three must agree, document by document: the valid
 * document is loaded, the invalid one refused with the rule's message, or loaded with its warning.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { main as meshctl } from '../../src/cli/meshctl.js';
import { FileConfigSource } from '../../src/config/file-source.js';
import { admissionVerdict } from '../../src/config/parse.js';
import { MemoryConfigStore } from '../../src/config/store.js';
import type { ConfigRejection } from '../../src/config/types.js';
import { captureIO } from '../cli/capture.js';
import { RULE_CASES, caseDocument } from '../support/rule-cases.js';

let dir: string;
const store = new MemoryConfigStore();
const rejections: ConfigRejection[] = [];
const warnings: ConfigRejection[] = [];
let validateOut = { code: -1, stdout: '', stderr: '' };

const fileOf = (i: number): string => `case-${String(i).padStart(2, '0')}.yaml`;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'mesh-rules-'));
  await Promise.all(
    RULE_CASES.map((c, i) =>
      writeFile(join(dir, fileOf(i)), [caseDocument(c, 'valid', `case-${i}-ok`), caseDocument(c, 'invalid', `case-${i}-bad`)].map((d) => JSON.stringify(d)).join('\n---\n')),
    ),
  );
  const source = new FileConfigSource({ dir, store, defaultNamespace: 'default', watch: false, onReject: (r) => rejections.push(r), onWarn: (w) => warnings.push(w) });
  await source.start();
  await source.stop();
  const io = captureIO();
  const code = await meshctl(['validate', '-f', dir], io.io);
  validateOut = { code, stdout: io.stdout(), stderr: io.stderr() };
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe.each(RULE_CASES.map((c, i) => [`${c.kind}: ${c.rule}`, c, i] as const))('%s', (_title, c, i) => {
  const file = (): string => join(dir, fileOf(i));
  const line = (level: string, index: number, name: string): string => `${level}: ${file()}#${index} ${c.kind}/default/${name}: ${c.path}: ${c.message}`;

  it('the daemon\'s file source loads the valid document', () => {
    expect(store.get(c.kind, 'default', `case-${i}-ok`)).toBeDefined();
    expect(rejections.filter((r) => r.name === `case-${i}-ok`)).toEqual([]);
  });

  it('the webhook verdict accepts the valid document', () => {
    expect(admissionVerdict(caseDocument(c, 'valid', `case-${i}-ok`), 'default').errors).toEqual([]);
  });

  if (c.level === 'error') {
    it('the daemon refuses the invalid document, validate reports it, the webhook denies it', () => {
      expect(store.get(c.kind, 'default', `case-${i}-bad`)).toBeUndefined();
      const rejected = rejections.find((r) => r.name === `case-${i}-bad`);
      expect(rejected?.issues).toContainEqual({ path: c.path, message: c.message });
      expect(validateOut.stderr.split('\n')).toContain(line('Error', 1, `case-${i}-bad`));
      expect(validateOut.stdout).not.toContain(`"${file()}"`);
      expect(admissionVerdict(caseDocument(c, 'invalid', `case-${i}-bad`), 'default').errors).toContainEqual({ path: c.path, message: c.message });
    });
  } else {
    it('the daemon loads the invalid document and logs the warning, validate prints it, the webhook returns it', () => {
      expect(store.get(c.kind, 'default', `case-${i}-bad`)).toBeDefined();
      expect(warnings.find((w) => w.name === `case-${i}-bad`)?.issues).toContainEqual({ path: c.path, message: c.message });
      expect(validateOut.stderr.split('\n')).toContain(line('Warning', 1, `case-${i}-bad`));
      expect(validateOut.stdout).toContain(`"${file()}" has warnings:`);
      const verdict = admissionVerdict(caseDocument(c, 'invalid', `case-${i}-bad`), 'default');
      expect(verdict.errors).toEqual([]);
      expect(verdict.warnings).toContainEqual({ path: c.path, message: c.message });
    });
  }
});

it('meshctl validate exits 1, since some cases are errors', () => {
  expect(validateOut.code).toBe(1);
});
