/**
 * Differences between two renders of an installation, object by object (`<Kind>:<namespace>:<name>`),
 * as `meshctl manifest diff` compares (./manifest-diff.ts): objects only in one render, then the
 * changed paths of each object in both as `path: OLD -> NEW`. `upgrade` shows it before it asks.
 */
import { idText } from './manifest-diff.js';
import { diffTrees } from './tree-diff.js';
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
