/**
 * The one wording of zod schema issues, for every structural check of the project (config
 * documents, mesh config and networks, daemon flags and variables, MeshOperator specs): the field
 * path as `spec.http[0].match[0].headers["x-canary"]` and the reason in the words an operator needs.
 */
import type { z } from 'zod';
import { type ConfigIssue, join } from './common.js';

/** What a value is, for messages: `null`, `a list`, `a mapping`, or its type and JSON (`number 5`). */
export function describeValue(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'object') return 'a mapping';
  return `${typeof v} ${JSON.stringify(v)}`;
}

/**
 * One schema issue as field path + reason; the path is prefixed by `base` (e.g. `spec`). An issue
 * at the root with no base has the path `(root)`. Parse with `reportInput: true` so that the
 * reasons can name the offending value.
 */
export function formatSchemaIssue(issue: z.core.$ZodIssue, base = ''): ConfigIssue[] {
  const path = join(base, ...issue.path.filter((p): p is string | number => typeof p !== 'symbol')) || '(root)';
  switch (issue.code) {
    case 'unrecognized_keys':
      return issue.keys.map((k) => ({ path: join(path === '(root)' ? '' : path, k), message: 'unknown field' }));
    case 'invalid_type':
      if (issue.input === undefined) return [{ path, message: `required field is missing (expected ${issue.expected})` }];
      return [{ path, message: `expected ${issue.expected}, got ${describeValue(issue.input)}` }];
    case 'invalid_value':
      return [{ path, message: `${describeValue(issue.input)} is not one of ${issue.values.map((v) => String(v)).join(', ')}` }];
    case 'invalid_key':
      return [{ path, message: `invalid key: ${issue.issues.map((i) => i.message).join('; ')}` }];
    case 'invalid_union':
      return [{ path, message: 'value matches none of the allowed forms' }];
    case 'custom':
      // a refinement's own message; a scalar it refused is named (a mapping or list would say little)
      return [{ path, message: issue.input === undefined || (typeof issue.input === 'object' && issue.input !== null) ? issue.message : `${issue.message}, got ${describeValue(issue.input)}` }];
    default:
      return [{ path, message: issue.message }];
  }
}
