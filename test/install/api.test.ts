/**
 * The MeshOperator API: unknown and mistyped fields are refused with their full path, cross-field
 * rules (gateway names, autoscaling bounds, disruption budgets, revision names) hold, and a
 * resolved spec gets its defaults.
 */
import { checkOperatorDocument } from '../../src/install/api.js';
import { InstallError } from '../../src/install/errors.js';
import { resolveSpec } from '../../src/install/resolve.js';
import { tmpDir } from './helpers.js';

async function resolveError(sets: string[], files: string[] = []): Promise<InstallError> {
  try {
    await resolveSpec({ sets, files });
  } catch (err) {
    if (err instanceof InstallError) return err;
    throw err;
  }
  throw new Error(`no error for ${sets.join(' ')}`);
}

describe('MeshOperator schema', () => {
  it('names the full path of a mistyped field', async () => {
    const err = await resolveError(['components.meshd.k8s.replicaCount="3"']);
    expect(err.message).toBe('invalid MeshOperator: spec.components.meshd.k8s.replicaCount: expected number, got string "3"');
  });

  it('names unknown fields, also deep inside lists and in meshConfig', async () => {
    const err = await resolveError(['components.ingressGateways[0].k8s.servcie.type=NodePort', 'meshConfig.enableTracin=true']);
    expect(err.issues).toEqual(
      expect.arrayContaining([
        { path: 'spec.components.ingressGateways[0].k8s.servcie', message: 'unknown field' },
        { path: 'spec.meshConfig.enableTracin', message: 'unknown field' },
      ]),
    );
    expect(err.message.split('\n')[0]).toBe('invalid MeshOperator:');
  });

  it('checks enums, quantities and the meshConfig types', async () => {
    const err = await resolveError(['components.meshd.k8s.service.type=External', 'components.meshd.k8s.resources.requests.cpu=lots', 'meshConfig.connectTimeout=soon']);
    const byPath = Object.fromEntries(err.issues.map((i) => [i.path, i.message]));
    expect(byPath['spec.components.meshd.k8s.service.type']).toBe('string "External" is not one of ClusterIP, NodePort, LoadBalancer');
    expect(byPath['spec.components.meshd.k8s.resources.requests.cpu']).toBe('expected a quantity (a number or text such as 500m or 2Gi), got string "lots"');
    expect(byPath['spec.meshConfig.connectTimeout']).toMatch(/duration/);
  });

  it('needs a name on every gateway, unique within its namespace', async () => {
    const missing = await resolveError(['components.egressGateways[1].enabled=true']);
    expect(missing.issues).toContainEqual({ path: 'spec.components.egressGateways[1].name', message: 'required field is missing (expected string)' });
    const dup = await resolveError(['components.egressGateways[0].name=mesh-ingressgateway']);
    expect(dup.issues).toEqual([{ path: 'spec.components.egressGateways[0].name', message: 'duplicate gateway name "mesh-ingressgateway" (also at spec.components.ingressGateways[0].name)' }]);
    // The same name in another namespace is a different gateway.
    await expect(resolveSpec({ sets: ['components.egressGateways[0].name=mesh-ingressgateway', 'components.egressGateways[0].namespace=edge'] })).resolves.toBeDefined();
  });

  it('checks revision names, autoscaling bounds and disruption budgets', async () => {
    const err = await resolveError(['revision=Canary_1', 'components.meshd.k8s.hpaSpec.minReplicas=9', 'components.meshd.k8s.podDisruptionBudget.maxUnavailable=1']);
    expect(err.issues).toEqual([
      { path: 'spec.revision', message: '"Canary_1" is not a valid name (lower-case letters, digits and "-", at most 40 characters)' },
      { path: 'spec.components.meshd.k8s.hpaSpec.minReplicas', message: '9 is more than maxReplicas 5' },
      { path: 'spec.components.meshd.k8s.podDisruptionBudget', message: 'set exactly one of minAvailable and maxUnavailable' },
    ]);
  });

  it('checks a whole document: apiVersion, kind and metadata', () => {
    expect(checkOperatorDocument({ apiVersion: 'install.mesh.io/v1', kind: 'MeshOperator', metadata: { nam: 'x' } })).toEqual([
      { path: 'apiVersion', message: 'string "install.mesh.io/v1" is not one of install.mesh.io/v1alpha1' },
      { path: 'metadata.nam', message: 'unknown field' },
    ]);
  });

  it('names the file of a bad -f document with the path inside it', async () => {
    const t = tmpDir();
    try {
      const file = t.write('bad.yaml', 'apiVersion: install.mesh.io/v1alpha1\nkind: MeshOperator\nspec:\n  components:\n    meshd:\n      k8s:\n        replicaCount: two\n');
      const err = await resolveError([], [file]);
      expect(err.message).toBe(`${file}: spec.components.meshd.k8s.replicaCount: expected number, got string "two"`);
    } finally {
      t.cleanup();
    }
  });

  it('fills in the namespace, the tag and the profile of a resolved spec', async () => {
    const { spec } = await resolveSpec({ defaultTag: '9.9.9' });
    expect(spec).toMatchObject({ profile: 'default', namespace: 'mesh-system', tag: '9.9.9', hub: 'docker.io/meshproject' });
    const { spec: tagged } = await resolveSpec({ sets: ['tag=1.20'], defaultTag: '9.9.9' });
    expect(tagged.tag).toBe('1.20');
  });

  it('with force, drops unknown fields with a warning but still stops on type errors', async () => {
    const r = await resolveSpec({ sets: ['components.meshd.k8s.colour=blue'], force: true });
    expect(r.warnings).toEqual(['spec.components.meshd.k8s.colour: unknown field dropped (--force)']);
    expect(r.spec.components?.meshd?.k8s).not.toHaveProperty('colour');
    await expect(resolveSpec({ sets: ['components.meshd.enabled=yes'], force: true })).rejects.toThrow('spec.components.meshd.enabled: expected boolean, got string "yes"');
  });
});
