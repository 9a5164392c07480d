/**
 * Overlays: user patches on rendered objects, applied after a component is rendered.
 *
 * An overlay names one object of its component by `kind` and `name`. Each patch has a `path` in
 * the syntax of src/install/path.ts, relative to the object's root (`metadata.labels.team`,
 * `spec.template.spec.containers.[name:discovery].args.[0]`):
 *  - with a `value`, the value is set there (replacing what was there). Missing maps on the way
 *    are created; `[N]` must name an existing item, or N = length to append; `[key:value]` must
 *    match an item;
 *  - without a `value` (or `value: null`), what the path names is deleted: a map key, or a list
 *    item (later items move up). Deleting something that is not there is an error.
 * Patches apply in order, so a later patch sees the effect of an earlier one.
 */
import type { Overlay } from '../api.js';
import { InstallError } from '../errors.js';
import { PathError, deleteAt, parsePath, setAt } from '../path.js';
import { cloneTree, type Tree } from '../tree.js';
import type { ComponentName, K8sObject } from './types.js';

/**
 * Applies `overlays` to copies of `objects`. `where` is the spec path of the overlay list (for
 * errors, e.g. `spec.components.meshd.k8s.overlays`). Throws `InstallError` naming the overlay
 * or patch that cannot be applied.
 */
export function applyOverlays(objects: readonly K8sObject[], overlays: readonly Overlay[] | undefined, component: ComponentName, where: string): K8sObject[] {
  const out = objects.map((o) => cloneTree(o));
  (overlays ?? []).forEach((overlay, i) => {
    const at = `${where}[${i}]`;
    const target = out.find((o) => o.kind === overlay.kind && o.metadata.name === overlay.name);
    if (!target) {
      const names = out.filter((o) => o.kind === overlay.kind).map((o) => o.metadata.name);
      const known = names.length > 0 ? `${overlay.kind} objects: ${names.join(', ')}` : `kinds: ${[...new Set(out.map((o) => o.kind))].join(', ')}`;
      throw new InstallError(`${at}: component ${component} has no ${overlay.kind} named "${overlay.name}" (${known})`);
    }
    overlay.patches.forEach((patch, j) => {
      const patchAt = `${at}.patches[${j}]`;
      try {
        const path = parsePath(patch.path);
        if (patch.value === undefined || patch.value === null) deleteAt(target as unknown as Tree, path);
        else setAt(target as unknown as Tree, path, cloneTree(patch.value));
      } catch (err) {
        if (err instanceof PathError) throw new InstallError(`${patchAt}: path "${patch.path}" of ${overlay.kind} ${overlay.name}: ${err.message}`);
        throw err;
      }
    });
  });
  return out;
}
