/**
 * Every validation rule of the table in test/support/rule-cases.ts: the valid document passes
 * with nothing said at the rule's field, the invalid one gets exactly the rule's message at its
 * field, as an error (refused) or a warning (accepted).
 */
import { parseConfigObject } from '../../src/config/parse.js';
import { RULE_CASES, caseDocument } from '../support/rule-cases.js';

describe.each(RULE_CASES.map((c) => [`${c.kind}: ${c.rule}`, c] as const))('%s', (_title, c) => {
  it('accepts the valid document', () => {
    const r = parseConfigObject(caseDocument(c, 'valid', 'ok'), 'cases', 'default');
    expect('issues' in r ? r.issues : []).toEqual([]);
    expect(('warnings' in r ? (r.warnings ?? []) : []).filter((w) => w.path === c.path)).toEqual([]);
  });

  it(`${c.level === 'error' ? 'refuses' : 'warns about'} the invalid document at ${c.path}`, () => {
    const r = parseConfigObject(caseDocument(c, 'invalid', 'bad'), 'cases', 'default');
    if (c.level === 'error') {
      expect('issues' in r).toBe(true);
      expect('issues' in r ? r.issues : []).toContainEqual({ path: c.path, message: c.message });
    } else {
      expect('issues' in r ? r.issues : []).toEqual([]);
      expect(r.warnings).toContainEqual({ path: c.path, message: c.message });
    }
  });
});
