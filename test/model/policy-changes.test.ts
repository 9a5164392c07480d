/**
 * Security policies in the snapshot's change tracking: a value derived from a snapshot that read a
 * workload's policy is computed again when a policy changes, and a value that read none is carried
 * over (model/derived.ts, Dep.policies).
 */
import { MemoryConfigStore } from '../../src/config/store.js';
import type { ConfigObject } from '../../src/config/types.js';
import { DEFAULT_MESH_SETTINGS } from '../../src/model/mesh-settings.js';
import { PushContext } from '../../src/model/push-context.js';

const WORKLOAD = { namespace: 'default', labels: { app: 'web' } };

function peerAuthentication(mode: string): ConfigObject {
  return {
    meta: { gvk: { group: 'security.mesh.io', version: 'v1', kind: 'PeerAuthentication' }, name: 'web', namespace: 'default', labels: {}, annotations: {}, generation: 1, resourceVersion: '' },
    spec: { selector: { matchLabels: { app: 'web' } }, mtls: { mode } },
  };
}

describe('security policies and derived values', () => {
  it('recomputes what read a policy when a policy changes, and carries over what did not', () => {
    const store = new MemoryConfigStore();
    store.upsert(peerAuthentication('STRICT'));
    const first = PushContext.build({ version: '1', configs: store, services: [], mesh: DEFAULT_MESH_SETTINGS });
    let computed = 0;
    const modeOf = (push: PushContext): string =>
      push.memoize('test|mode', () => {
        computed++;
        return push.policies.mtlsFor(WORKLOAD).mode;
      });
    const untouched = (push: PushContext): number => push.memoize('test|none', () => ++computed);
    expect(modeOf(first)).toBe('STRICT');
    untouched(first);
    expect(computed).toBe(2);

    store.upsert(peerAuthentication('DISABLE'));
    const second = PushContext.build({ version: '2', configs: store, services: [], mesh: DEFAULT_MESH_SETTINGS, previous: first });
    expect(modeOf(second)).toBe('DISABLE');
    expect(untouched(second)).toBe(2);
    expect(computed).toBe(3);

    // no policy change: both carried over
    const third = PushContext.build({ version: '3', configs: store, services: [], mesh: DEFAULT_MESH_SETTINGS, previous: second });
    expect(modeOf(third)).toBe('DISABLE');
    expect(computed).toBe(3);
  });
});
