/**
 * `meshctl manifest generate|diff` and `meshctl profile list|dump|diff`, run through `main()` with
 * captured output, on real files in a temporary directory.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parseAllDocuments, parse as parseYaml } from 'yaml';
import { resolveSpec } from '../../src/install/resolve.js';
import { applySetFlags, parseSetFlag } from '../../src/install/set-values.js';
import { meshctl, shellWords, tmpDir } from './helpers.js';

const t = tmpDir('mesh-cli-');
afterAll(() => t.cleanup());

const PROFILES = ['default', 'demo', 'empty', 'minimal', 'preview', 'remote'];

async function generate(name: string, ...argv: string[]): Promise<string> {
  const r = await meshctl('manifest', 'generate', ...argv);
  expect([r.code, r.stderr]).toEqual([0, '']);
  return t.write(name, r.stdout);
}

describe('manifest generate', () => {
  it('prints every object as YAML documents, the same bytes each time', async () => {
    const a = await meshctl('manifest', 'generate');
    const b = await meshctl('manifest', 'generate');
    expect(a.code).toBe(0);
    expect(a.stdout).toBe(b.stdout);
    const docs = parseAllDocuments(a.stdout).map((d) => d.toJS() as { kind: string; metadata: { name: string } });
    expect(docs[0].kind).toBe('CustomResourceDefinition');
    expect(docs.filter((d) => d.kind === 'Deployment').map((d) => d.metadata.name)).toEqual(['meshd', 'mesh-ingressgateway']);
  });

  it('writes one file per component with -o, and only lists them with --dry-run', async () => {
    const out = path.join(t.dir, 'out-default');
    const dry = await meshctl('manifest', 'generate', '-o', out, '--dry-run');
    expect(dry.code).toBe(0);
    expect(dry.stdout).toMatch(new RegExp(`^would write ${out}/Base/Base\\.yaml \\(\\d+ objects\\)\n`));
    expect(fs.existsSync(out)).toBe(false);
    const r = await meshctl('manifest', 'generate', '-o', out, '-s', 'profile=demo');
    expect(r.code).toBe(0);
    expect(fs.readdirSync(out).sort()).toEqual(['Base', 'EgressGateways', 'IngressGateways', 'Meshd']);
    const egress = parseAllDocuments(fs.readFileSync(path.join(out, 'EgressGateways', 'EgressGateways.yaml'), 'utf8')).map((d) => (d.toJS() as { kind: string }).kind);
    expect(egress).toEqual(['ServiceAccount', 'Role', 'RoleBinding', 'Service', 'Deployment']);
    expect(r.stdout).toContain(`wrote ${path.join(out, 'EgressGateways', 'EgressGateways.yaml')} (5 objects)`);
  });

  it('limits the output to --component, and warns about a component that renders nothing', async () => {
    const r = await meshctl('manifest', 'generate', '--component', 'meshd', '--component', 'EgressGateways');
    expect(r.code).toBe(0);
    const kinds = parseAllDocuments(r.stdout).map((d) => (d.toJS() as { metadata: { labels: Record<string, string> } }).metadata.labels['operator.mesh.io/component']);
    expect(new Set(kinds)).toEqual(new Set(['Meshd']));
    expect(r.stderr).toBe('warning: component EgressGateways renders nothing: it is not enabled in the spec\n');
    expect(await meshctl('manifest', 'generate', '--component', 'pilot')).toEqual({ code: 1, stdout: '', stderr: 'error: --component: unknown component "pilot" (known: Base, Meshd, IngressGateways, EgressGateways)\n' });
  });

  it('fails clearly on an unknown profile, a bad --set path and a malformed -f file', async () => {
    expect(await meshctl('manifest', 'generate', '--set', 'profile=nope')).toEqual({
      code: 1,
      stdout: '',
      stderr: `error: unknown profile "nope" (known profiles: ${PROFILES.join(', ')})\n`,
    });
    const badPath = await meshctl('manifest', 'generate', '-s', 'components.meshd..enabled=false');
    expect(badPath).toEqual({ code: 1, stdout: '', stderr: 'error: --set "components.meshd..enabled=false": bad path: empty segment at position 18\n' });
    const file = t.write('malformed.yaml', 'apiVersion: install.mesh.io/v1alpha1\nkind: MeshOperator\nspec:\n  hub: "unterminated\n');
    const bad = await meshctl('manifest', 'generate', '-f', file);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toBe(`error: ${file}:5:1: invalid YAML: Missing closing "quote\n`);
    const typed = await meshctl('manifest', 'generate', '-s', 'components.meshd.k8s.replicaCount=two');
    expect(typed.stderr).toBe('error: invalid MeshOperator: spec.components.meshd.k8s.replicaCount: expected number, got string "two"\n');
  });

  it('warns that --charts is deprecated and uses it as --manifests', async () => {
    const r = await meshctl('manifest', 'generate', '--charts', path.join(process.cwd(), 'manifests'), '--component', 'Meshd');
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('warning: --charts is deprecated and will be removed; use --manifests (-d)\n');
  });
});

describe('manifest diff', () => {
  it('exits 0 for the same manifests and 1 for different ones, listing objects on one side and changed paths', async () => {
    const def = await generate('default.yaml');
    const demo = await generate('demo.yaml', '--set', 'profile=demo');
    expect(await meshctl('manifest', 'diff', def, def)).toEqual({ code: 0, stdout: 'Manifests are identical\n', stderr: '' });
    const r = await meshctl('manifest', 'diff', def, demo);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain(`Objects only in ${demo}:\n  ServiceAccount:mesh-system:mesh-egressgateway-service-account\n`);
    expect(r.stdout).toContain('  Deployment:mesh-system:mesh-egressgateway\n');
    expect(r.stdout).toContain('Object Deployment:mesh-system:meshd has diffs:\n');
    expect(r.stdout).toContain('  spec.template.spec.containers[0].resources.requests.cpu: 500m -> 10m\n');
    // An embedded config file shows its changed lines.
    expect(r.stdout).toContain('Object ConfigMap:mesh-system:mesh has diffs:\n  data.mesh: text changed:\n      - accessLogFile: ""\n      + accessLogFile: /dev/stdout\n      -     sampling: 1\n      +     sampling: 100\n      - enableTracing: false\n      + enableTracing: true\n');
    expect(r.stdout).toContain('  spec.template.spec.containers[0].env[?->10]: <absent> -> {"name":"DISC_TRACE_SAMPLING","value":"100"}\n');
    // demo's ingress gateway has no autoscaler (lists replace: its gateway entry sets no hpaSpec).
    expect(r.stdout).toContain(`Objects only in ${def}:\n  HorizontalPodAutoscaler:mesh-system:mesh-ingressgateway\n`);
  });

  it('compares only what --select picks and --ignore leaves', async () => {
    const def = path.join(t.dir, 'default.yaml');
    const demo = path.join(t.dir, 'demo.yaml');
    const sel = await meshctl('manifest', 'diff', def, demo, '--select', 'Deployment:*:mesh*');
    expect(sel.code).toBe(1);
    expect(sel.stdout.match(/^(Object|Objects only| {2}[A-Z]\w+:)[^\n]*/gm)).toEqual([
      `Objects only in ${demo}:`,
      '  Deployment:mesh-system:mesh-egressgateway',
      'Object Deployment:mesh-system:mesh-ingressgateway has diffs:',
      'Object Deployment:mesh-system:meshd has diffs:',
    ]);
    const cms = await meshctl('manifest', 'diff', def, demo, '--select', 'ConfigMap', '--ignore', 'ConfigMap::mesh-sidecar*');
    expect(cms.stdout.startsWith('Differences in manifests are:\n\nObject ConfigMap:mesh-system:mesh has diffs:\n  data.mesh: text changed:\n')).toBe(true);
    expect(await meshctl('manifest', 'diff', def, demo, '--select', 'ConfigMap', '--ignore', '*::mesh')).toMatchObject({ code: 0, stdout: 'Manifests are identical\n' });
    expect(await meshctl('manifest', 'diff', def, demo, '--select', 'CustomResourceDefinition')).toMatchObject({ code: 0, stdout: 'Manifests are identical\n' });
  });

  it('compares renamed objects with --rename', async () => {
    const def = path.join(t.dir, 'default.yaml');
    const canary = await generate('canary.yaml', '-r', 'canary');
    const rename = 'Deployment:mesh-system:meshd->Deployment:mesh-system:meshd-canary';
    const r = await meshctl('manifest', 'diff', def, canary, '--select', 'Deployment::meshd*', '--rename', rename);
    expect(r.code).toBe(1);
    expect(r.stdout).not.toContain('Objects only in');
    expect(r.stdout).toContain('Object Deployment:mesh-system:meshd-canary has diffs:\n');
    expect(r.stdout).toContain('  metadata.labels.mesh\\.io/rev: default -> canary\n');
  });

  it('shows list reorders as [OLD->NEW] with ? for added and removed items', async () => {
    // a and b only shift (d moved before them, c was removed): only d counts as moved.
    const cm = (items: string[], extra = '') => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: n\n${extra}list:\n${items.map((i) => `  - ${i}\n`).join('')}`;
    const a = t.write('list-a.yaml', cm(['a', 'b', 'c', 'd']));
    const b = t.write('list-b.yaml', cm(['d', 'a', 'b', 'x', 'e']));
    const r = await meshctl('manifest', 'diff', a, b);
    expect(r).toEqual({
      code: 1,
      stderr: '',
      stdout: 'Differences in manifests are:\n\nObject ConfigMap:n:c has diffs:\n  list[2->?]: c -> <absent>\n  list[3->0]: moved\n  list[?->3]: <absent> -> x\n  list[?->4]: <absent> -> e\n',
    });
    const named = (items: string[]) => `apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n${items.map((i) => `    - name: ${i.split('=')[0]}\n      image: ${i.split('=')[1]}\n`).join('')}`;
    const pa = t.write('pod-a.yaml', named(['app=app:1', 'proxy=proxy:1']));
    const pb = t.write('pod-b.yaml', named(['proxy=proxy:2', 'app=app:1']));
    const pr = await meshctl('manifest', 'diff', pa, pb);
    // Items with names are paired by name: proxy moved before app and changed its image.
    expect(pr.stdout).toBe('Differences in manifests are:\n\nObject Pod::p has diffs:\n  spec.containers[1->0]: moved\n  spec.containers[1->0].image: proxy:1 -> proxy:2\n');
  });

  it('compares directories with -r, and prints one-sided objects in full with --verbose', async () => {
    const d1 = path.join(t.dir, 'dir-default');
    const d2 = path.join(t.dir, 'dir-demo');
    expect((await meshctl('manifest', 'generate', '-o', d1)).code).toBe(0);
    expect((await meshctl('manifest', 'generate', '-o', d2, '--set', 'profile=demo')).code).toBe(0);
    expect((await meshctl('manifest', 'diff', '-r', d1, d1)).code).toBe(0);
    const r = await meshctl('manifest', 'diff', '-r', '--verbose', d1, d2, '--select', 'Service:*:mesh-egressgateway');
    expect(r.code).toBe(1);
    expect(r.stdout).toContain(`Objects only in ${d2}:\n  Service:mesh-system:mesh-egressgateway\n    apiVersion: v1\n    kind: Service\n`);
    expect(r.stdout).toContain(`0 objects in ${d1}, 1 in ${d2}: 0 only in ${d1}, 1 only in ${d2}, 0 of 0 in both differ\n`);
  });

  it('exits 2 when the inputs cannot be compared', async () => {
    const d1 = path.join(t.dir, 'dir-default');
    expect(await meshctl('manifest', 'diff', d1, d1)).toEqual({ code: 2, stdout: '', stderr: `error: ${d1} is a directory: use -r/--directory to compare directories\n` });
    const broken = t.write('broken-manifest.yaml', 'kind: ConfigMap\nmetadata: {name: [\n');
    const r = await meshctl('manifest', 'diff', broken, broken);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(new RegExp(`^error: ${broken.replace(/\./g, '\\.')}:\\d+:\\d+: invalid YAML`));
    const notK8s = t.write('not-k8s.yaml', 'just: data\n');
    expect((await meshctl('manifest', 'diff', notK8s, notK8s)).stderr).toBe(`error: ${notK8s} (document 1): not a Kubernetes object (needs kind and metadata.name)\n`);
    expect((await meshctl('manifest', 'diff', path.join(t.dir, 'list-a.yaml'), path.join(t.dir, 'none.yaml'))).stderr).toBe(`error: ${path.join(t.dir, 'none.yaml')}: no such file or directory\n`);
  });
});

describe('profile', () => {
  it('lists the profiles', async () => {
    expect(await meshctl('profile', 'list')).toEqual({ code: 0, stderr: '', stdout: `Mesh configuration profiles:\n${PROFILES.map((p) => `    ${p}\n`).join('')}` });
  });

  it('dumps a profile as YAML or JSON, whole or at --config-path', async () => {
    const y = await meshctl('profile', 'dump', 'demo');
    expect(y.code).toBe(0);
    const doc = parseYaml(y.stdout) as { apiVersion: string; kind: string; spec: { profile: string; components: { egressGateways: Array<{ enabled: boolean }> } } };
    expect([doc.apiVersion, doc.kind, doc.spec.profile, doc.spec.components.egressGateways[0].enabled]).toEqual(['install.mesh.io/v1alpha1', 'MeshOperator', 'demo', true]);
    const j = await meshctl('profile', 'dump', '-o', 'json', '-p', 'components.meshd.k8s.hpaSpec');
    expect(JSON.parse(j.stdout)).toEqual({ minReplicas: 1, maxReplicas: 5, metrics: [{ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 80 } } }] });
    const flags = await meshctl('profile', 'dump', 'minimal', '-o', 'flags', '--config-path', 'components.ingressGateways');
    expect(flags.stdout).toBe("--set 'components.ingressGateways[0].enabled=false'\n--set 'components.ingressGateways[0].name=mesh-ingressgateway'\n");
    const file = t.write('dump-overlay.yaml', 'apiVersion: install.mesh.io/v1alpha1\nkind: MeshOperator\nspec:\n  hub: my.registry/mesh\n');
    expect(await meshctl('profile', 'dump', 'minimal', '-f', file, '-p', 'spec.hub')).toEqual({ code: 0, stderr: '', stdout: 'my.registry/mesh\n' });
    expect(await meshctl('profile', 'dump', '-p', 'components.pilot')).toMatchObject({ code: 1, stderr: expect.stringMatching(/^error: --config-path "components.pilot": nothing there in profile "default"/) });
    expect(await meshctl('profile', 'dump', '-o', 'toml')).toMatchObject({ code: 1, stderr: 'error: --output: invalid value "toml" (choose from yaml, json, flags)\n' });
    expect(await meshctl('profile', 'dump', 'nope')).toMatchObject({ code: 1, stderr: `error: unknown profile "nope" (known profiles: ${PROFILES.join(', ')})\n` });
  });

  it('dumps flags that rebuild the same spec through --set, for every profile', async () => {
    for (const profile of PROFILES) {
      const r = await meshctl('profile', 'dump', profile, '-o', 'flags');
      expect(r.code).toBe(0);
      const sets = r.stdout.trim().split('\n').map((line) => {
        const words = shellWords(line);
        expect(words[0]).toBe('--set');
        expect(words).toHaveLength(2);
        return words[1];
      });
      const expected = (await resolveSpec({ profile })).spec;
      // On an empty tree, the flags alone rebuild the spec...
      const rebuilt: Record<string, unknown> = {};
      applySetFlags(rebuilt, sets.map(parseSetFlag));
      expect((await resolveSpec({ profile: 'empty', sets })).spec).toEqual(expected);
      expect(rebuilt).toEqual(JSON.parse(JSON.stringify(expected)));
      // ...and the manifest they generate is the profile's.
      if (profile !== 'demo') continue;
      const viaFlags = await meshctl('manifest', 'generate', ...sets.flatMap((s) => ['--set', s]));
      const viaProfile = await meshctl('manifest', 'generate', '--set', `profile=${profile}`);
      expect(viaFlags.stdout).toBe(viaProfile.stdout);
    }
  });

  it('diffs two profiles or files; exit code 1 when they differ', async () => {
    const r = await meshctl('profile', 'diff', 'default', 'demo');
    expect(r.code).toBe(1);
    expect(r.stdout.split('\n')[0]).toBe('The difference between profiles default and demo:');
    expect(r.stdout).toContain('  components.egressGateways[0].enabled: false -> true\n');
    expect(r.stdout).toContain('  meshConfig.accessLogFile: "" -> /dev/stdout\n');
    expect(await meshctl('profile', 'diff', 'minimal', 'minimal')).toEqual({ code: 0, stderr: '', stdout: 'Profiles minimal and minimal are identical\n' });
    const file = t.write('custom.yaml', 'apiVersion: install.mesh.io/v1alpha1\nkind: MeshOperator\nspec:\n  hub: my.registry/mesh\n');
    const f = await meshctl('profile', 'diff', 'default', file);
    expect(f).toEqual({ code: 1, stderr: '', stdout: `The difference between profiles default and ${file}:\n  hub: docker.io/meshproject -> my.registry/mesh\n` });
  });
});
