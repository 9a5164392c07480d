/**
 * The judgements behind install and upgrade that need no cluster: when an object counts as ready
 * (and the reason shown when not), the version-skew rule of upgrade, and the change list upgrade
 * shows before it asks.
 */
import { objectReadiness } from '../../src/install/apply/readiness.js';
import { diffRenders } from '../../src/install/diff/render-diff.js';
import { formatRenderDiff } from '../../src/cli/meshctl/install/format.js';
import { skewProblem } from '../../src/cli/meshctl/install/run-upgrade.js';
import { sortKeys } from '../../src/install/tree.js';
import type { ComponentManifest } from '../../src/install/render/index.js';

const deployment = (spec: Record<string, unknown>, status: Record<string, unknown>, generation = 2) => ({ metadata: { generation }, spec, status });

describe('readiness', () => {
  it('judges Deployments by rollout: observed, updated, no old replicas, available', () => {
    expect(objectReadiness('Deployment', deployment({ replicas: 2 }, { observedGeneration: 1 }))).toEqual({ ready: false, reason: 'the rollout has not been observed by the controller yet' });
    expect(objectReadiness('Deployment', deployment({ replicas: 2 }, { observedGeneration: 2, updatedReplicas: 1, replicas: 2 })).reason).toBe('1/2 replicas updated');
    expect(objectReadiness('Deployment', deployment({ replicas: 2 }, { observedGeneration: 2, updatedReplicas: 2, replicas: 3, availableReplicas: 2 })).reason).toBe('1 old replicas pending termination');
    expect(objectReadiness('Deployment', deployment({ replicas: 2 }, { observedGeneration: 2, updatedReplicas: 2, replicas: 2, availableReplicas: 1 })).reason).toBe('1/2 replicas available');
    expect(objectReadiness('Deployment', deployment({ replicas: 2 }, { observedGeneration: 2, updatedReplicas: 2, replicas: 2, availableReplicas: 2 }))).toEqual({ ready: true, reason: '' });
    expect(objectReadiness('Deployment', deployment({}, { observedGeneration: 2, conditions: [{ type: 'Progressing', reason: 'ProgressDeadlineExceeded', message: 'ReplicaSet "x" has timed out progressing.' }] })).reason).toBe(
      'rollout stuck: ReplicaSet "x" has timed out progressing.',
    );
  });

  it('judges CRDs by Established, namespaces by phase, anything else by existence', () => {
    expect(objectReadiness('CustomResourceDefinition', { status: { conditions: [{ type: 'Established', status: 'True' }] } }).ready).toBe(true);
    expect(objectReadiness('CustomResourceDefinition', { status: { conditions: [{ type: 'NamesAccepted', status: 'False', message: 'plural in use' }] } }).reason).toBe('names not accepted: plural in use');
    expect(objectReadiness('Namespace', { status: { phase: 'Terminating' } }).reason).toBe('phase Terminating');
    expect(objectReadiness('Service', {}).ready).toBe(true);
    expect(objectReadiness('Service', undefined)).toEqual({ ready: false, reason: 'not found' });
    expect(objectReadiness('ConfigMap', { metadata: { deletionTimestamp: '2026-01-01T00:00:00Z' } }).reason).toBe('being deleted');
  });
});

describe('upgrade rules', () => {
  it('allows at most one minor version of skew, in either direction', () => {
    expect(skewProblem('1.4.2', '1.5.0')).toBeUndefined();
    expect(skewProblem('v1.5.0', '1.4.9')).toBeUndefined();
    expect(skewProblem('1.3.0', '1.5.0')).toContain('more than one minor version apart');
    expect(skewProblem('0.9.0', '1.0.0')).toContain('more than one minor version apart');
    expect(skewProblem('', '1.0.0')).toBe('the installed version is unknown (not recorded)');
  });

  it('lists added, removed and changed objects of two renders', () => {
    const obj = (kind: string, name: string, extra: Record<string, unknown> = {}) => ({ apiVersion: 'v1', kind, metadata: { name, namespace: 'ns' }, ...extra });
    const before: ComponentManifest[] = [{ component: 'Meshd', objects: [obj('Service', 'meshd'), obj('ConfigMap', 'old'), obj('ConfigMap', 'mesh', { data: { a: '1' } })] }];
    const after: ComponentManifest[] = [{ component: 'Meshd', objects: [obj('Service', 'meshd'), obj('ConfigMap', 'new'), obj('ConfigMap', 'mesh', { data: { a: '2' } })] }];
    const d = diffRenders(before, after);
    expect(d).toMatchObject({ same: false, added: ['ConfigMap:ns:new'], removed: ['ConfigMap:ns:old'] });
    expect(formatRenderDiff(d)).toBe(
      'Changes to the control plane:\n\nObjects to be added:\n  ConfigMap:ns:new\n\nObjects to be removed:\n  ConfigMap:ns:old\n\nObject ConfigMap:ns:mesh has diffs:\n  data.a: "1" -> "2"\n',
    );
    expect(diffRenders(before, before).same).toBe(true);
    expect(Object.keys(sortKeys({ b: 1, a: { d: 1, c: 2 } }))).toEqual(['a', 'b']);
  });
});
