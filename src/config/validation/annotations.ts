/**
 * Annotations the mesh reads from config objects, checked where a wrong value would silently
 * change what the mesh does. Annotations of the mesh domain that are unknown, misplaced or
 * deprecated are reported by the analyzers (src/analysis/analyzers/annotations.ts), as they do
 * not make an object unusable.
 */
import { type ConfigIssue, join } from './common.js';

export const DRY_RUN_ANNOTATION = 'mesh.io/dry-run';

/** The boolean words Go's strconv.ParseBool reads, as the public API's tooling does. */
const BOOLEAN_WORDS = new Set(['1', 't', 'T', 'TRUE', 'true', 'True', '0', 'f', 'F', 'FALSE', 'false', 'False']);

export function checkAnnotations(kind: string, annotations: Readonly<Record<string, string>>): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const dryRun = annotations[DRY_RUN_ANNOTATION];
  if (dryRun !== undefined) {
    const path = join('metadata.annotations', DRY_RUN_ANNOTATION);
    if (kind !== 'AuthorizationPolicy') issues.push({ path, message: `${DRY_RUN_ANNOTATION} only applies to AuthorizationPolicy; it is ignored on ${kind}`, level: 'warning' });
    else if (!BOOLEAN_WORDS.has(dryRun)) issues.push({ path, message: `"${dryRun}" is not a boolean (true or false)` });
  }
  return issues;
}
