import { readFileSync } from 'node:fs';
import { parseConfigDocuments, parseConfigDocumentsYielding } from '../../src/config/parse.js';
import type { ConfigObject } from '../../src/config/types.js';
import type { DestinationRule, VirtualService } from '../../src/gen/config/schemas.js';

const VS = (name: string, extra = '') => `apiVersion: networking.mesh.io/v1
kind: VirtualService
metadata:
  name: ${name}
${extra}spec:
  hosts: [echo]
  http:
    - route:
        - destination: {host: echo}
`;

describe('parseConfigDocuments', () => {
  it('loads the good documents of a multi-document file and rejects the bad one with origin, kind, name and path', () => {
    const text = [
      VS('first'),
      `apiVersion: networking.mesh.io/v1
kind: DestinationRule
metadata: {name: broken, namespace: prod}
spec:
  host: echo
  subsets:
    - name: v1
      lables: {version: v1}
`,
      VS('second'),
    ].join('---\n');
    const { objects, rejections } = parseConfigDocuments(text, 'routes.yaml', 'default');
    expect(objects.map((o) => o.meta.name)).toEqual(['first', 'second']);
    expect(objects[1].meta.origin).toBe('routes.yaml#2');
    expect(rejections).toEqual([
      {
        origin: 'routes.yaml#1',
        kind: 'DestinationRule',
        name: 'broken',
        namespace: 'prod',
        issues: [{ path: 'spec.subsets[0].lables', message: 'unknown field' }],
        // what can still be analysed: the object without the field its schema refuses
        salvaged: expect.objectContaining({ spec: { host: 'echo', subsets: [{ name: 'v1' }] } }),
      },
    ]);
  });

  it('fills metadata defaults: namespace, generation 1, empty labels', () => {
    const { objects } = parseConfigDocuments(VS('a'), 'f.yaml', 'team-a');
    const meta = objects[0].meta;
    expect(meta).toMatchObject({ name: 'a', namespace: 'team-a', generation: 1, labels: {}, annotations: {}, origin: 'f.yaml#0' });
    expect(meta.gvk).toEqual({ group: 'networking.mesh.io', version: 'v1', kind: 'VirtualService' });
    const explicit = parseConfigDocuments(VS('b', '  namespace: prod\n  generation: 7\n  labels: {app: echo}\n'), 'f.yaml', 'team-a').objects[0].meta;
    expect(explicit).toMatchObject({ namespace: 'prod', generation: 7, labels: { app: 'echo' } });
  });

  it('returns typed, frozen specs', () => {
    const obj = parseConfigDocuments(VS('a'), 'f.yaml', 'default').objects[0] as ConfigObject<VirtualService>;
    expect(obj.spec.http?.[0].route?.[0].destination.host).toBe('echo');
    expect(Object.isFrozen(obj.spec)).toBe(true);
    expect(Object.isFrozen(obj.spec.http?.[0])).toBe(true);
  });

  it('rejects unknown kinds, wrong apiVersions and missing names', () => {
    const text = [
      'apiVersion: networking.mesh.io/v1\nkind: Route\nmetadata: {name: x}\nspec: {}\n',
      'apiVersion: networking.other.io/v1\nkind: VirtualService\nmetadata: {name: x}\nspec: {}\n',
      'apiVersion: networking.mesh.io/v1\nkind: DestinationRule\nmetadata: {namespace: a}\nspec: {host: x}\n',
      'apiVersion: networking.mesh.io/v1\nkind: DestinationRule\nmetadata: {name: Bad_Name}\nspec: {host: x}\n',
      'apiVersion: networking.mesh.io/v1\nkind: DestinationRule\nmetadata: {name: no}\nspec: {host: x}\n',
    ].join('---\n');
    const { objects, rejections } = parseConfigDocuments(text, 'x.yaml', 'default');
    expect(objects).toEqual([]);
    expect(rejections.map((r) => [r.origin, r.kind, r.issues[0].path])).toEqual([
      ['x.yaml#0', 'Route', 'kind'],
      ['x.yaml#1', 'VirtualService', 'apiVersion'],
      ['x.yaml#2', 'DestinationRule', 'metadata.name'],
      ['x.yaml#3', 'DestinationRule', 'metadata.name'],
      ['x.yaml#4', 'DestinationRule', 'metadata.name'],
    ]);
    expect(rejections[0].issues[0].message).toMatch(/unknown kind "Route" \(known: AuthorizationPolicy, DestinationRule/);
    expect(rejections[1].issues[0].message).toBe('kind VirtualService needs apiVersion "networking.mesh.io/v1", got "networking.other.io/v1"');
    expect(rejections[2].issues[0].message).toBe('name is required');
    expect(rejections[3].issues[0].message).toBe('"Bad_Name" is not a valid name (lower-case DNS-1123 subdomain)');
    // YAML 1.1: a bare `no` is a boolean.
    expect(rejections[4].issues[0].message).toBe('name must be a string, got boolean false (quote it in YAML)');
  });

  it('reports broken YAML with its line and keeps the other documents', () => {
    const text = `${VS('ok')}---\napiVersion: networking.mesh.io/v1\nkind: VirtualService\nmetadata: {name: bad}\nspec:\n  hosts: [a\n---\n${VS('also-ok')}`;
    const { objects, rejections } = parseConfigDocuments(text, 'y.yaml', 'default');
    expect(objects.map((o) => o.meta.name)).toEqual(['ok', 'also-ok']);
    expect(rejections).toHaveLength(1);
    expect(rejections[0].origin).toBe('y.yaml#1');
    expect(rejections[0].issues[0].message).toMatch(/^YAML: .*line \d+/);
  });

  it('loads weights that do not add up to 100, with a warning', () => {
    const text = VS('w').replace('        - destination: {host: echo}\n', '        - destination: {host: echo}\n          weight: 50\n        - destination: {host: other}\n          weight: 30\n');
    const { objects, rejections } = parseConfigDocuments(text, 'w.yaml', 'default');
    expect(rejections).toEqual([]);
    expect(objects[0].warnings).toEqual([{ path: 'spec.http[0].route', message: 'weights add up to 80, not 100: traffic is split in proportion to them' }]);
  });

  it('reads bare YAML 1.1 booleans as booleans, as the cluster tooling does', () => {
    const text = VS('b').replace('  http:\n', '  http:\n    - match:\n        - headers:\n            x-canary: {exact: yes}\n      route: [{destination: {host: echo}}]\n');
    const { rejections } = parseConfigDocuments(text, 'b.yaml', 'default');
    expect(rejections[0].issues[0]).toEqual({ path: 'spec.http[0].match[0].headers["x-canary"].exact', message: 'expected string, got boolean true' });
    const quoted = parseConfigDocuments(text.replace('exact: yes', 'exact: "yes"'), 'b.yaml', 'default');
    expect(quoted.rejections).toEqual([]);
  });

  it('rejects non-string label values and unknown top-level fields', () => {
    const { rejections } = parseConfigDocuments(VS('l', '  labels: {version: 2}\n') + 'extra: 1\n', 'l.yaml', 'default');
    expect(rejections[0].issues).toEqual([
      { path: 'extra', message: 'unknown field (expected apiVersion, kind, metadata, spec)' },
      { path: 'metadata.labels.version', message: 'value must be a string, got number 2 (quote it in YAML)' },
    ]);
  });

  it('treats null fields as absent, skips empty documents and rejects duplicates in one text', () => {
    const text = `---\n# only a comment\n---\n${VS('d').replace('  hosts: [echo]\n', '  hosts: [echo]\n  gateways:\n')}---\n${VS('d')}`;
    const { objects, rejections } = parseConfigDocuments(text, 'd.yaml', 'default');
    expect(objects).toHaveLength(1);
    expect((objects[0].spec as VirtualService).gateways).toBeUndefined();
    expect(rejections).toEqual([
      { origin: 'd.yaml#2', kind: 'VirtualService', name: 'd', namespace: 'default', issues: [{ path: 'metadata.name', message: 'duplicate of document #1: the first one is used' }] },
    ]);
  });

  it('reads JSON documents', () => {
    const json = JSON.stringify({ apiVersion: 'networking.mesh.io/v1', kind: 'DestinationRule', metadata: { name: 'j' }, spec: { host: 'echo' } });
    const { objects } = parseConfigDocuments(json, 'j.json', 'default');
    expect((objects[0].spec as DestinationRule).host).toBe('echo');
  });

  it('loads the example routing file without rejections', () => {
    const text = readFileSync(new URL('../../examples/config/routing.yaml', import.meta.url), 'utf8');
    const { objects, rejections } = parseConfigDocuments(text, 'routing.yaml', 'default');
    expect(rejections).toEqual([]);
    expect(objects.map((o) => `${o.meta.gvk.kind}/${o.meta.namespace}/${o.meta.name}`)).toEqual(['VirtualService/default/echo', 'DestinationRule/default/echo']);
    const vs = objects[0].spec as VirtualService;
    expect(vs.http?.[0].match?.[0].headers?.['x-canary']).toEqual({ exact: 'true' });
    expect(vs.http?.[1].route?.map((r) => [r.destination.subset, r.weight])).toEqual([['v1', 80], ['v2', 20]]);
    const dr = objects[1].spec as DestinationRule;
    expect(dr.trafficPolicy?.loadBalancer?.simple).toBe('ROUND_ROBIN');
    expect(dr.subsets?.map((s) => s.labels)).toEqual([{ version: 'v1' }, { version: 'v2' }]);
  });
});

describe('parseConfigDocuments with a document cache (an edited file re-parses only what changed)', () => {
  const texts: Record<string, string> = {
    'no marker': VS('only'),
    'markers between': [VS('a'), VS('b'), VS('c')].join('---\n'),
    'leading marker and comments': `# routes\n\n---\n${VS('a')}---\n${VS('b')}`,
    'content before the first marker': `${VS('a')}---\n${VS('b')}`,
    'comment-only document in the middle': `${VS('a')}---\n# nothing here\n---\n${VS('b')}`,
    'trailing marker': `${VS('a')}---\n${VS('b')}---\n`,
    'marker with content on its line': `--- {apiVersion: networking.mesh.io/v1, kind: VirtualService, metadata: {name: flow}, spec: {hosts: [echo]}}\n---\n${VS('b')}`,
    'broken YAML in the middle': `${VS('a')}---\nkind: [unclosed\n  metadata: x\n---\n${VS('b')}`,
    'duplicate names': `${VS('a')}---\n${VS('a')}`,
    'block scalar with dashes inside': `${VS('a', '  annotations:\n    note: |\n      --- not a marker (indented)\n')}---\n${VS('b')}`,
    'dashes followed by another Unicode space are not a marker': `${VS('a')}---\u00a0\n${VS('b')}`,
    'a line of dashes and a no-break space inside a block scalar document': `${VS('a')}---\n--- |\nx\n---\u00a0y\n---\n${VS('b')}`,
    directive: `%YAML 1.1\n---\n${VS('a')}`,
    'document end marker': `${VS('a')}...\n---\n${VS('b')}`,
    'directives and end markers between documents': `# head\n%YAML 1.2\n%TAG !m! tag:mesh.io,2026:\n---\n${VS('a')}...\n# between\n%YAML 1.1\n---\n${VS('b')}...\n---\n${VS('c')}...\n`,
    'a bare document after an end marker': `${VS('a')}...\n${VS('b')}...\n# trailing comment\n`,
    'an end marker followed by another Unicode space is not a marker': `${VS('a', '  annotations:\n    note: |\n      x\n')}...\u00a0\n---\n${VS('b')}`,
    'a directive with no marker after it': `${VS('a')}...\n%YAML 1.1\n${VS('b')}`,
    'a percent line inside a top-level block scalar': `--- |\n%not a directive\n...\n---\n${VS('b')}`,
    'broken YAML after a directive': `%YAML 1.2\n---\n${VS('a')}...\n%YAML 1.2\n---\nkind: [unclosed\n`,
    empty: '',
  };

  it.each(Object.entries(texts))('gives the same objects and rejections as a whole parse: %s', (_, text) => {
    const whole = parseConfigDocuments(text, 'f.yaml', 'default');
    const cache = new Map();
    const first = parseConfigDocuments(text, 'f.yaml', 'default', cache);
    const again = parseConfigDocuments(text, 'f.yaml', 'default', cache);
    expect(first).toEqual(whole);
    expect(again).toEqual(whole);
  });

  it.each(Object.entries(texts))('the yielding parse (the file source\'s) gives the same results and reuses the cache: %s', async (_, text) => {
    const whole = parseConfigDocuments(text, 'f.yaml', 'default');
    const cache = new Map();
    const first = await parseConfigDocumentsYielding(text, 'f.yaml', 'default', cache);
    const again = await parseConfigDocumentsYielding(text, 'f.yaml', 'default', cache);
    expect(first).toEqual(whole);
    expect(again).toEqual(whole);
  });

  it('reuses the unchanged documents and parses the edited one', () => {
    const cache = new Map();
    const before = parseConfigDocuments([VS('a'), VS('b'), VS('c')].join('---\n'), 'f.yaml', 'default', cache);
    const after = parseConfigDocuments([VS('a'), VS('b', '  labels: {edited: "yes"}\n'), VS('c')].join('---\n'), 'f.yaml', 'default', cache);
    expect(after.objects[0]).toBe(before.objects[0]);
    expect(after.objects[2]).toBe(before.objects[2]);
    expect(after.objects[1]).not.toBe(before.objects[1]);
    expect(after.objects[1].meta.labels).toEqual({ edited: 'yes' });
    expect(after.objects.map((o) => o.meta.origin)).toEqual(['f.yaml#0', 'f.yaml#1', 'f.yaml#2']);
  });

  it('reports a YAML error with the line number of the whole file', () => {
    const text = `${VS('a')}---\n${VS('b')}---\nkind: [unclosed\n`;
    const whole = parseConfigDocuments(text, 'f.yaml', 'default');
    const cached = parseConfigDocuments(text, 'f.yaml', 'default', new Map());
    expect(whole.rejections[0].issues[0].message).toMatch(/line 2[0-9]/);
    expect(cached.rejections).toEqual(whole.rejections);
  });
});
