/**
 * The installed state that meshctl keeps in the cluster: after `install` (or `upgrade`) applies a
 * spec, it stores that spec in the MeshOperator object `installed-state` (revision R:
 * `installed-state-R`) of the control-plane namespace, with the meshctl version that applied it
 * in the annotation `install.mesh.io/meshctl-version`. `upgrade` and `verify-install` read it;
 * `x uninstall` removes it. Its name is also the owner name on every object of the installation
 * (src/install/labels.ts), so the state, the labels and the revision agree.
 */
import type { KubeClient } from '../../kube/client.js';
import { isNotFound } from '../../kube/errors.js';
import { DEFAULT_NAMESPACE, INSTALL_API_VERSION, MESH_OPERATOR_KIND, type MeshOperatorSpec } from '../api.js';
import { CLI_OWNER_NAME, REVISION_LABEL } from '../labels.js';
import type { Owner } from '../render/types.js';
import { revisionLabelOf } from './objects.js';

export const VERSION_ANNOTATION = 'install.mesh.io/meshctl-version';

/** The revision of a spec: '' for the default revision. */
export function revisionOf(spec: Pick<MeshOperatorSpec, 'revision'>): string {
  return spec.revision && spec.revision !== 'default' ? spec.revision : '';
}

/** `installed-state` or `installed-state-<revision>`. */
export function stateName(revision: string | undefined): string {
  const rev = revision && revision !== 'default' ? revision : '';
  return rev ? `${CLI_OWNER_NAME}-${rev}` : CLI_OWNER_NAME;
}

/** The owner meshctl puts on the objects of a spec: the state object's name and namespace. */
export function cliOwner(spec: Pick<MeshOperatorSpec, 'revision' | 'namespace'>): Owner {
  return { name: stateName(spec.revision), namespace: spec.namespace || DEFAULT_NAMESPACE };
}

export interface InstalledState {
  readonly name: string;
  readonly namespace: string;
  readonly revision: string;
  readonly spec: MeshOperatorSpec;
  /** meshctl version that applied it ('' when unknown). */
  readonly version: string;
}

interface StateObject {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string; annotations?: Record<string, string>; labels?: Record<string, string> };
  spec?: MeshOperatorSpec;
}

function fromObject(o: StateObject): InstalledState {
  const spec = o.spec ?? {};
  return {
    name: o.metadata?.name ?? '',
    namespace: o.metadata?.namespace ?? '',
    revision: revisionOf(spec),
    spec,
    version: o.metadata?.annotations?.[VERSION_ANNOTATION] ?? '',
  };
}

/** Writes the state of `spec` (server-side apply; the MeshOperator CRD must exist). */
export async function writeInstalledState(client: KubeClient, spec: MeshOperatorSpec, version: string, opts: { fieldManager: string; dryRun?: boolean; signal?: AbortSignal }): Promise<void> {
  const owner = cliOwner(spec);
  const obj = {
    apiVersion: INSTALL_API_VERSION,
    kind: MESH_OPERATOR_KIND,
    metadata: { name: owner.name, namespace: owner.namespace, labels: { [REVISION_LABEL]: revisionLabelOf(spec.revision) }, annotations: { [VERSION_ANNOTATION]: version } },
    spec,
  };
  // The CRD was just created: discovery may need a moment to serve the kind.
  for (let attempt = 0; ; attempt++) {
    try {
      await client.applyObject(obj, { fieldManager: opts.fieldManager, force: true, dryRun: opts.dryRun, signal: opts.signal });
      return;
    } catch (err) {
      if (!isNotFound(err) || attempt >= 20) throw err;
      client.discovery.invalidate(INSTALL_API_VERSION);
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

/** The state of `revision` in `namespace`, or undefined (also when the MeshOperator kind is not served). */
export async function readInstalledState(client: KubeClient, namespace: string, revision: string | undefined, signal?: AbortSignal): Promise<InstalledState | undefined> {
  try {
    const o = await client.find<StateObject>({ apiVersion: INSTALL_API_VERSION, kind: MESH_OPERATOR_KIND, name: stateName(revision), namespace }, signal);
    return o ? fromObject(o) : undefined;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

/** Every meshctl state (`installed-state*`) in `namespace`, or in all namespaces. */
export async function listInstalledStates(client: KubeClient, namespace?: string, signal?: AbortSignal): Promise<InstalledState[]> {
  try {
    const list = await client.list<StateObject>(INSTALL_API_VERSION, MESH_OPERATOR_KIND, { namespace, signal });
    return list.items
      .filter((o) => o.metadata?.name === CLI_OWNER_NAME || (o.metadata?.name ?? '').startsWith(`${CLI_OWNER_NAME}-`))
      .map(fromObject)
      .sort((a, b) => `${a.namespace}/${a.name}`.localeCompare(`${b.namespace}/${b.name}`));
  } catch (err) {
    if (isNotFound(err)) return [];
    throw err;
  }
}

/** Removes the state of `revision` in `namespace`; false when there was none. */
export async function deleteInstalledState(client: KubeClient, namespace: string, revision: string | undefined, signal?: AbortSignal): Promise<boolean> {
  try {
    return await client.delete({ apiVersion: INSTALL_API_VERSION, kind: MESH_OPERATOR_KIND, name: stateName(revision), namespace }, { signal });
  } catch (err) {
    if (isNotFound(err)) return false;
    throw err;
  }
}
