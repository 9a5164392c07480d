/**
 * Differences between two renders of an installation, object by object (`<Kind>:<namespace>:<name>`),
 * in the format of `meshctl manifest diff` (src/install/diff/): objects only in one render, then the
 * changed paths of each object in both as `path: OLD -> NEW`. `upgrade` shows it before it asks.
 */
import { idText } from '../diff/manifest-diff.js';
import { diffTrees } from '../diff/tree-diff.js';
import { compareObjects } from '../render/order.js';
import type { ComponentManifest, K8sObject } from '../render/types.js';

export interface RenderDiff {
  readonly same: boolean;
  readonly added: string[];
  readonly removed: string[];
  readonly changed: Array<{ readonly object: string; readonly lines: string[] }>;
}

function keyOf(o: K8sObject): string {
  return idText({ kind: o.kind, namespace: o.metadata.namespace ?? '', name: o.metadata.name });
}

export function diffRenders(before: readonly ComponentManifest[], after: readonly ComponentManifest[]): RenderDiff {
  const a = new Map(before.flatMap((m) => m.objects).map((o) => [keyOf(o), o]));
  const b = new Map(after.flatMap((m) => m.objects).map((o) => [keyOf(o), o]));
  const sorted = (m: Map<string, K8sObject>, keys: string[]) => keys.sort((x, y) => compareObjects(m.get(x) as K8sObject, m.get(y) as K8sObject));
  const removed = sorted(a, [...a.keys()].filter((k) => !b.has(k)));
  const added = sorted(b, [...b.keys()].filter((k) => !a.has(k)));
  const changed: RenderDiff['changed'] = [];
  for (const k of sorted(b, [...b.keys()].filter((k) => a.has(k)))) {
    const lines = diffTrees(a.get(k), b.get(k)).map((l) => l.text);
    if (lines.length > 0) changed.push({ object: k, lines });
  }
  return { same: added.length === 0 && removed.length === 0 && changed.length === 0, added, removed, changed };
}

/** The diff as text for a person. */
export function formatRenderDiff(d: RenderDiff): string {
  if (d.same) return 'No changes: the installed control plane already matches this configuration.\n';
  const out: string[] = ['Changes to the control plane:'];
  if (d.added.length > 0) out.push('', 'Objects to be added:', ...d.added.map((k) => `  ${k}`));
  if (d.removed.length > 0) out.push('', 'Objects to be removed:', ...d.removed.map((k) => `  ${k}`));
  for (const c of d.changed) out.push('', `Object ${c.object} has diffs:`, ...c.lines.map((l) => `  ${l}`));
  return `${out.join('\n')}\n`;
}
