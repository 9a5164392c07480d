/**
 * Text of the install commands' data: the differences between two renders (`upgrade` shows them
 * before it asks) and the report of `manifest diff`.
 */
import type { ManifestDiffResult } from '../../../install/diff/manifest-diff.js';
import { idText } from '../../../install/diff/manifest-diff.js';
import type { RenderDiff } from '../../../install/diff/render-diff.js';
import { toYaml } from '../../../install/yaml-io.js';

/** A render diff for a person. */
export function formatRenderDiff(d: RenderDiff): string {
  if (d.same) return 'No changes: the installed control plane already matches this configuration.\n';
  const out: string[] = ['Changes to the control plane:'];
  if (d.added.length > 0) out.push('', 'Objects to be added:', ...d.added.map((k) => `  ${k}`));
  if (d.removed.length > 0) out.push('', 'Objects to be removed:', ...d.removed.map((k) => `  ${k}`));
  for (const c of d.changed) out.push('', `Object ${c.object} has diffs:`, ...c.lines.map((l) => `  ${l}`));
  return `${out.join('\n')}\n`;
}

function indent(text: string, by = '  '): string {
  return text
    .split('\n')
    .map((l) => (l === '' ? l : `${by}${l}`))
    .join('\n');
}

/**
 * The report of `manifest diff a b`: objects found on one side only (in full with `verbose`), then
 * each object that differs with its changed paths; with `verbose` a count closes it.
 */
export function formatManifestDiff(r: ManifestDiffResult, a: string, b: string, verbose: boolean): string {
  const sections: string[] = [];
  const listOnly = (items: ManifestDiffResult['onlyLeft'], where: string) => {
    if (items.length === 0) return;
    const lines = items.map(({ id, object }) => (verbose ? `  ${idText(id)}\n${indent(toYaml(object), '    ')}` : `  ${idText(id)}\n`));
    sections.push(`Objects only in ${where}:\n${lines.join('')}`);
  };
  listOnly(r.onlyLeft, a);
  listOnly(r.onlyRight, b);
  for (const c of r.changed) sections.push(`Object ${c.object} has diffs:\n${c.lines.map((l) => `  ${l}\n`).join('')}`);
  const summary = verbose
    ? `\n${r.leftCount} objects in ${a}, ${r.rightCount} in ${b}: ${r.onlyLeft.length} only in ${a}, ${r.onlyRight.length} only in ${b}, ${r.changed.length} of ${r.both} in both differ\n`
    : '';
  if (r.same) return `Manifests are identical\n${summary}`;
  return `Differences in manifests are:\n\n${sections.join('\n')}${summary}`;
}
