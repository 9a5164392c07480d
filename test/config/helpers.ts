/** Shared helpers of the config tests. */
import { KINDS, type ConfigKindName, type ConfigKindSpecs } from '../../src/config/kinds.js';
import { formatSchemaIssue } from '../../src/config/validation/schema-issues.js';
import type { ConfigIssue } from '../../src/config/validation/common.js';

/** Schema issues (formatted like rejections) or, when the schema passes, the semantic issues. */
export function issuesOf<K extends ConfigKindName>(kind: K, spec: unknown): ConfigIssue[] {
  const def = KINDS[kind];
  const parsed = def.schema.safeParse(spec, { reportInput: true });
  if (!parsed.success) return parsed.error.issues.flatMap((i) => formatSchemaIssue(i, 'spec'));
  return def.validate(parsed.data as ConfigKindSpecs[K]);
}

/** Asserts exactly one issue at `path` whose message contains `fragment`, and returns it. */
export function expectIssue(issues: ReadonlyArray<ConfigIssue>, path: string, fragment: string): ConfigIssue {
  const atPath = issues.filter((i) => i.path === path);
  const hit = atPath.find((i) => i.message.includes(fragment));
  if (!hit) {
    throw new Error(`expected an issue at ${path} containing "${fragment}", got:\n${issues.map((i) => `  ${i.path}: ${i.message}`).join('\n') || '  (none)'}`);
  }
  return hit;
}
