/**
 * `--set` and `-f`: path syntax and escaping, value typing, list indexes, the errors for bad paths,
 * the order in which files and flags apply, and `-o flags` output that rebuilds a tree.
 */
import { parsePath, formatPath } from '../../src/install/path.js';
import { resolveSpec } from '../../src/install/resolve.js';
import { DELETE, applySetFlags, parseSetFlag, parseSetValue, toSetFlags } from '../../src/install/set-values.js';
import { tmpDir } from './helpers.js';

function applied(...flags: string[]): Record<string, unknown> {
  const tree: Record<string, unknown> = {};
  applySetFlags(tree, flags.map(parseSetFlag));
  return tree;
}

describe('--set paths', () => {
  it('splits on dots, keeps escaped dots inside a key, and drops a leading spec.', () => {
    expect(applied('meshConfig.defaultConfig.proxyMetadata.foo\\.bar=1')).toEqual({ meshConfig: { defaultConfig: { proxyMetadata: { 'foo.bar': 1 } } } });
    expect(applied('spec.values.a\\.b\\.c=x')).toEqual({ values: { 'a.b.c': 'x' } });
    expect(applied('values.x\\=y=z')).toEqual({ values: { 'x=y': 'z' } });
  });

  it('takes list indexes as a[0].b or a.[0].b, appends at the length, and selects by [key:value]', () => {
    const t = applied('components.ingressGateways[0].name=a', 'components.ingressGateways.[1].name=b', 'components.ingressGateways.[name:b].enabled=false');
    expect(t).toEqual({ components: { ingressGateways: [{ name: 'a' }, { name: 'b', enabled: false }] } });
  });

  it('explains a path it cannot follow', () => {
    expect(() => parseSetFlag('a..b=1')).toThrow('--set "a..b=1": bad path: empty segment at position 3');
    expect(() => parseSetFlag('a.b')).toThrow('--set "a.b": expected <path>=<value>');
    expect(() => parseSetFlag('=1')).toThrow('the path before "=" is empty');
    expect(() => parseSetFlag('a[x]=1')).toThrow('bad list selector "[x]" at position 2 (use [N] or [key:value])');
    expect(() => parseSetFlag('a[0=1')).toThrow('"[" at position 2 is not closed');
    expect(() => applied('list[0]=a', 'list[2]=c')).toThrow('--set "list[2]=c": list[2]: index out of range (the list has 1 item; use [1] to append)');
    expect(() => applied('a=1', 'a.b=2')).toThrow('--set "a.b=2": a is a number (1), so it has no field "b"');
    expect(() => applied('a.b=1', 'a[0]=2')).toThrow('a is a map, not a list, so [0] cannot select from it');
    expect(() => applied('l[0].name=x', 'l.[name:y].v=1')).toThrow('l: no list item with name=y (name values: x)');
  });

  it('round-trips paths through formatPath', () => {
    for (const text of ['a.b\\.c[0].d', 'spec.template.spec.containers[name:discovery].args[0]', 'x\\[1\\]']) {
      expect(formatPath(parsePath(text))).toBe(text);
    }
  });
});

describe('--set values', () => {
  it.each([
    ['true', true],
    ['false', false],
    ['3', 3],
    ['-1.5', -1.5],
    ['1e3', 1000],
    ['0755', '0755'],
    ['"true"', 'true'],
    ['\\"80\\"', '80'],
    ['', ''],
    ['[]', []],
    ['{}', {}],
    ['[a, 2,true]', ['a', 2, true]],
    ['[a\\,b,c]', ['a,b', 'c']],
    ['TRUE', 'TRUE'],
    ['plain text', 'plain text'],
  ])('%j is %j', (text, value) => {
    expect(parseSetValue(text)).toEqual(value);
  });

  it('null removes the key', () => {
    expect(parseSetValue('null')).toBe(DELETE);
    expect(applied('a.b=1', 'a.c=2', 'a.b=null')).toEqual({ a: { c: 2 } });
  });
});

describe('-f files and --set together', () => {
  const t = tmpDir();
  afterAll(() => t.cleanup());
  const doc = (spec: string) => `apiVersion: install.mesh.io/v1alpha1\nkind: MeshOperator\nspec:\n${spec}`;

  it('overlays files left to right (maps merge, lists replace, null deletes), then applies --set', async () => {
    const one = t.write('one.yaml', doc('  hub: one.example/mesh\n  values:\n    custom: {a: 1, b: 2}\n  components:\n    ingressGateways:\n      - name: gw-a\n      - name: gw-b\n'));
    const two = t.write('two.yaml', doc('  values:\n    custom: {b: 3, c: 4}\n  components:\n    meshd:\n      k8s:\n        podDisruptionBudget: null\n    ingressGateways:\n      - name: gw-c\n'));
    const { spec } = await resolveSpec({ files: [one, two], sets: ['hub=cli.example/mesh', 'values.custom.a=9'] });
    expect(spec.hub).toBe('cli.example/mesh');
    expect(spec.values).toMatchObject({ custom: { a: 9, b: 3, c: 4 } });
    expect(spec.components?.ingressGateways?.map((g) => g.name)).toEqual(['gw-c']);
    expect(spec.components?.meshd?.k8s).not.toHaveProperty('podDisruptionBudget');
    expect(spec.components?.meshd?.k8s?.hpaSpec?.maxReplicas).toBe(5); // from the default profile
  });

  it('chooses the profile from --set over the files, and -r sets the revision', async () => {
    const f = t.write('profile.yaml', doc('  profile: minimal\n'));
    expect((await resolveSpec({ files: [f] })).spec.profile).toBe('minimal');
    const { spec } = await resolveSpec({ files: [f], sets: ['profile=demo'], revision: 'canary' });
    expect(spec.profile).toBe('demo');
    expect(spec.components?.egressGateways?.[0]?.enabled).toBe(true);
    expect(spec.revision).toBe('canary');
    await expect(resolveSpec({ sets: ['revision=a'], revision: 'b' })).rejects.toThrow('--revision b contradicts --set revision=a');
  });

  it('keeps numbers and booleans typed, except where the schema wants text', async () => {
    const { spec } = await resolveSpec({
      sets: ['meshConfig.defaultConfig.proxyMetadata.foo\\.bar=1', 'meshConfig.defaultConfig.proxyMetadata.FLAG=true', 'components.meshd.k8s.env[0].name=X', 'components.meshd.k8s.env[0].value=0.50', 'components.meshd.k8s.replicaCount=2'],
    });
    expect(spec.meshConfig?.defaultConfig?.proxyMetadata).toEqual({ 'foo.bar': '1', FLAG: 'true' });
    expect(spec.components?.meshd?.k8s?.env).toEqual([{ name: 'X', value: '0.50' }]);
    expect(spec.components?.meshd?.k8s?.replicaCount).toBe(2);
  });

  it('reports a malformed file with its name and line', async () => {
    const bad = t.write('broken.yaml', doc('  components:\n    meshd: [\n'));
    await expect(resolveSpec({ files: [bad] })).rejects.toThrow(new RegExp(`^${bad.replace(/[.]/g, '\\.')}:6:1: invalid YAML: `));
    const wrongKind = t.write('kind.yaml', 'apiVersion: v1\nkind: ConfigMap\n');
    await expect(resolveSpec({ files: [wrongKind] })).rejects.toThrow(`${wrongKind}: expected apiVersion install.mesh.io/v1alpha1 and kind MeshOperator, got v1 ConfigMap`);
    await expect(resolveSpec({ files: [`${t.dir}/missing.yaml`] })).rejects.toThrow(`${t.dir}/missing.yaml: cannot read: ENOENT`);
  });
});

describe('toSetFlags', () => {
  it('writes flags that rebuild the tree, quoting text that would read as another type', () => {
    const tree = { a: { 'b.c': 'true', n: 5, s: '05', e: '', list: [{ name: 'x', v: [] }], m: {}, t: 'x y', q: '[z]', nul: 'null' } };
    const flags = toSetFlags(tree);
    expect(flags).toContain('a.b\\.c="true"');
    expect(flags).toContain('a.list[0].v=[]');
    expect(applied(...flags)).toEqual(tree);
  });
});
