/**
 * The conditional writes both workload-entry controllers make (./controller.ts, ./cleanup.ts):
 * marking an entry disconnected only while the expected daemon (and connection) still holds it,
 * and deleting an entry only while it is the version that was judged. A lost race is not an
 * error: the write is simply not made.
 */
import { resourcePath, type KubeClient } from '../../kube/client.js';
import { isConflict, isNotFound } from '../../kube/errors.js';
import { CONNECTED_AT, DISCONNECTED_AT, NETWORKING_API_VERSION, WORKLOAD_CONTROLLER, annotation, isAutoRegistered, withAnnotations, type WorkloadEntryObject } from './entry.js';

const ENTRY_RESOURCE = { group: 'networking.mesh.io', version: 'v1', plural: 'workloadentries', namespaced: true } as const;
const MAX_ATTEMPTS = 5;

/**
 * Sets the disconnect time `at` on an entry still held by `expect.controller` (and, when given,
 * still from the connection at `expect.connectedAt`). False when there was nothing to mark.
 */
export async function markDisconnected(
  client: KubeClient,
  namespace: string,
  name: string,
  at: string,
  expect: { readonly controller: string; readonly connectedAt?: string },
  onMarked?: () => void,
): Promise<boolean> {
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const e = await client.find<WorkloadEntryObject>({ apiVersion: NETWORKING_API_VERSION, kind: 'WorkloadEntry', namespace, name });
    if (!e || !isAutoRegistered(e) || annotation(e, DISCONNECTED_AT)) return false;
    if (annotation(e, WORKLOAD_CONTROLLER) !== expect.controller) return false; // taken over
    if (expect.connectedAt !== undefined && annotation(e, CONNECTED_AT) !== expect.connectedAt) return false;
    try {
      await client.replace(withAnnotations(e, { [DISCONNECTED_AT]: at }));
      onMarked?.();
      return true;
    } catch (err) {
      if (isNotFound(err)) return false;
      if (!isConflict(err)) throw err;
    }
  }
  throw new Error(`WorkloadEntry ${namespace}/${name}: gave up marking it disconnected after ${MAX_ATTEMPTS} conflicting writes`);
}

/**
 * Deletes the entry if it is still the version `e` (uid and resourceVersion as preconditions: a
 * reconnect changes it). False when it changed or is gone. No abort signal on purpose: once sent,
 * the delete is waited for, so that its outcome is known and counted.
 */
export async function deleteIfUnchanged(client: KubeClient, e: WorkloadEntryObject): Promise<boolean> {
  try {
    await client.request({
      method: 'DELETE',
      path: resourcePath(ENTRY_RESOURCE, e.metadata?.namespace ?? '', e.metadata?.name ?? ''),
      body: { apiVersion: 'v1', kind: 'DeleteOptions', preconditions: { uid: e.metadata?.uid, resourceVersion: e.metadata?.resourceVersion } },
    });
    return true;
  } catch (err) {
    if (isNotFound(err) || isConflict(err)) return false;
    throw err;
  }
}
