/**
 * `meshctl operator dump`: the controller manifest. Checked: the objects and their names per
 * revision, the Deployment runs `mesh-operator server` with the flags given, image defaults for
 * `unknown`, and RBAC that is least privilege (no wildcard) yet covers every kind any profile
 * renders and every kind the apply engine prunes, and every rule of the roles it renders.
 */
import { parse } from 'yaml';
import { OWNED_KINDS } from '../../src/install/apply/objects.js';
import { renderAllProfiles } from '../../src/install/operator-manifest.js';
import { manifestSource } from '../../src/install/sources.js';
import { getBuildInfo } from '../../src/version/build-info.js';
import type { PolicyRule } from '../../src/install/render/rbac.js';
import { meshctl, tmpDir } from './helpers.js';
import { parseAllDocuments } from 'yaml';

interface Obj {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  rules?: PolicyRule[];
  spec?: Record<string, unknown>;
}

async function dump(...args: string[]): Promise<Obj[]> {
  const r = await meshctl('operator', 'dump', ...args);
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
  return parseAllDocuments(r.stdout).map((d) => d.toJS() as Obj);
}

/** True when `rules` allow `verb` on `group/resource` (optionally a named object). */
function allows(rules: readonly PolicyRule[], group: string, resource: string, verb: string, name?: string): boolean {
  return rules.some(
    (r) => r.apiGroups.includes(group) && r.resources.includes(resource) && r.verbs.includes(verb) && (!r.resourceNames || (name !== undefined && r.resourceNames.includes(name))),
  );
}

const pluralOf = (kind: string): string => (kind.endsWith('y') ? `${kind.slice(0, -1)}ies` : `${kind}s`).toLowerCase();
const groupOf = (apiVersion: string): string => (apiVersion.includes('/') ? apiVersion.split('/')[0] : '');

describe('meshctl operator dump', () => {
  it('prints the CRD, namespace, account, RBAC, service and a Deployment running mesh-operator server', async () => {
    const objects = await dump('--operatorNamespace', 'ops', '--imagePullSecrets', 'a,b', '--hub', 'registry.example/mesh', '--tag', '1.2.3');
    expect(objects.map((o) => `${o.kind} ${o.metadata.namespace ?? ''}/${o.metadata.name}`)).toEqual([
      'CustomResourceDefinition /meshoperators.install.mesh.io',
      'Namespace /ops',
      'ServiceAccount ops/mesh-operator',
      'ClusterRole /mesh-operator',
      'ClusterRoleBinding /mesh-operator',
      'Role ops/mesh-operator',
      'RoleBinding ops/mesh-operator',
      'Service ops/mesh-operator',
      'Deployment ops/mesh-operator',
    ]);
    const deployment = objects.find((o) => o.kind === 'Deployment') as Obj;
    const pod = (deployment.spec as { template: { spec: Record<string, unknown> } }).template.spec as {
      serviceAccountName: string;
      imagePullSecrets: unknown;
      containers: Array<{ image: string; command: string[]; args: string[] }>;
    };
    expect(pod.serviceAccountName).toBe('mesh-operator');
    expect(pod.imagePullSecrets).toEqual([{ name: 'a' }, { name: 'b' }]);
    expect(pod.containers[0].image).toBe('registry.example/mesh/operator:1.2.3');
    expect([...pod.containers[0].command, ...pod.containers[0].args].join(' ')).toBe(
      'mesh-operator server --operatorNamespace ops --watchedNamespaces mesh-system --monitoringAddr :15014',
    );
    const binding = objects.find((o) => o.kind === 'ClusterRoleBinding') as Obj & { subjects: unknown };
    expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: 'mesh-operator', namespace: 'ops' }]);
  });

  it('names everything after the revision and defaults hub and tag when they are "unknown"', async () => {
    const objects = await dump('-r', 'canary');
    const names = new Set(objects.filter((o) => o.kind !== 'Namespace' && o.kind !== 'CustomResourceDefinition').map((o) => o.metadata.name));
    expect([...names]).toEqual(['mesh-operator-canary']);
    const deployment = objects.find((o) => o.kind === 'Deployment') as Obj;
    const container = (deployment.spec as { template: { spec: { containers: Array<{ image: string; args: string[] }> } } }).template.spec.containers[0];
    expect(container.image).toBe(`docker.io/meshproject/operator:${getBuildInfo().version}`);
    expect(container.args.slice(-2)).toEqual(['--revision', 'canary']);
    const role = objects.find((o) => o.kind === 'Role') as Obj;
    expect(allows(role.rules ?? [], 'coordination.k8s.io', 'leases', 'update', 'mesh-operator-lock-canary')).toBe(true);
    expect(allows(role.rules ?? [], 'coordination.k8s.io', 'leases', 'update', 'other-lock')).toBe(false);
    for (const o of objects) expect(o.metadata.labels?.['mesh.io/rev']).toBe('canary');
  });

  it('grants no wildcard, and covers what the profiles render, what the engine prunes and what rendered roles grant', async () => {
    const objects = await dump('-r', 'canary');
    const rules = (objects.find((o) => o.kind === 'ClusterRole') as Obj).rules ?? [];
    for (const r of rules) expect([...r.apiGroups, ...r.resources, ...r.verbs]).not.toContain('*');
    const rendered = await renderAllProfiles(await manifestSource(), 'canary');
    const kinds = new Map<string, string>();
    for (const o of [...rendered, ...OWNED_KINDS]) kinds.set(o.kind, o.apiVersion);
    expect(kinds.has('CustomResourceDefinition') && kinds.has('MutatingWebhookConfiguration') && kinds.has('Secret')).toBe(true);
    for (const [kind, apiVersion] of kinds) {
      for (const verb of ['get', 'list', 'create', 'patch', 'delete']) {
        expect([kind, verb, allows(rules, groupOf(apiVersion), pluralOf(kind), verb)]).toEqual([kind, verb, true]);
      }
    }
    // To create a role, the operator must hold what the role grants.
    for (const role of rendered.filter((o) => o.kind === 'ClusterRole' || o.kind === 'Role')) {
      for (const r of (role.rules as PolicyRule[]) ?? []) {
        for (const g of r.apiGroups) for (const res of r.resources) for (const v of r.verbs) {
          const ok = allows(rules, g, res, v) || (r.resourceNames ?? []).every((n) => allows(rules, g, res, v, n));
          expect([role.metadata.name, g, res, v, ok]).toEqual([role.metadata.name, g, res, v, true]);
        }
      }
    }
    expect(allows(rules, 'install.mesh.io', 'meshoperators/status', 'patch')).toBe(true);
    expect(allows(rules, 'install.mesh.io', 'meshoperators/finalizers', 'update')).toBe(true);
    expect(allows(rules, '', 'events', 'create')).toBe(true);
    // Not more than that: nothing on pods or on kinds nothing renders.
    expect(allows(rules, '', 'pods', 'delete')).toBe(false);
    expect(allows(rules, 'apps', 'daemonsets', 'create')).toBe(false);
  });

  it('refuses a bad operator namespace, naming the flag', async () => {
    const r = await meshctl('operator', 'dump', '--operatorNamespace', 'Bad_NS');
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/--operatorNamespace: "Bad_NS" is not a valid namespace name/);
    expect(parse(r.stdout ?? '') ?? null).toBeNull();
  });
});

describe('meshctl operator init --dry-run -f', () => {
  const files = tmpDir('mesh-operator-init-');
  afterAll(() => files.cleanup());

  it('lists what it would apply, the MeshOperator of -f last, without a cluster', async () => {
    const file = files.write('op.yaml', 'apiVersion: install.mesh.io/v1alpha1\nkind: MeshOperator\nmetadata:\n  name: prod\n  namespace: team-a\nspec:\n  profile: minimal\n');
    const r = await meshctl('operator', 'init', '--dry-run', '-f', file, '--watchedNamespaces', 'team-a,team-b', '--operatorNamespace', 'ops');
    expect([r.code, r.stderr]).toEqual([0, '']);
    const lines = r.stdout.trim().split('\n');
    expect(lines[0]).toBe('would apply CustomResourceDefinition meshoperators.install.mesh.io');
    expect(lines).toContain('would apply Deployment ops/mesh-operator');
    expect(lines[lines.length - 1]).toBe('would apply MeshOperator team-a/prod');
  });

  it('refuses a file in an unwatched namespace, of another revision, with a bad field, or empty', async () => {
    const other = files.write('other.yaml', 'apiVersion: install.mesh.io/v1alpha1\nkind: MeshOperator\nmetadata:\n  namespace: elsewhere\n');
    expect((await meshctl('operator', 'init', '--dry-run', '-f', other)).stderr).toBe(
      `error: ${other}: metadata.namespace: "elsewhere" is not watched by the operator (--watchedNamespaces mesh-system)\n`,
    );
    const canary = files.write('canary.yaml', 'apiVersion: install.mesh.io/v1alpha1\nkind: MeshOperator\nspec:\n  revision: canary\n');
    expect((await meshctl('operator', 'init', '--dry-run', '-f', canary)).stderr).toContain('spec.revision: "canary" is not the operator\'s revision "default"');
    const bad = files.write('bad.yaml', 'apiVersion: install.mesh.io/v1alpha1\nkind: MeshOperator\nspec:\n  components:\n    meshd:\n      k8s:\n        replicaCount: three\n');
    const r = await meshctl('operator', 'init', '--dry-run', '-f', bad);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('spec.components.meshd.k8s.replicaCount: expected number, got string "three"');
    const empty = files.write('empty.yaml', '');
    expect((await meshctl('operator', 'init', '--dry-run', '-f', empty)).stderr).toBe(`error: ${empty}: holds no MeshOperator document\n`);
  });
});
