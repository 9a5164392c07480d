import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { main as meshctl } from '../../src/cli/meshctl.js';
import type { CliIO } from '../../src/cli/runner.js';
import { parseConfigDocuments } from '../../src/config/parse.js';
import { captureIO } from './capture.js';

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'meshctl-validate-'));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

function write(name: string, text: string): string {
  const file = path.join(dir, name);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, text);
  return file;
}

async function run(argv: string[], stdin?: string) {
  const c = captureIO();
  const io: CliIO = stdin === undefined ? c.io : { ...c.io, readStdin: async () => stdin };
  const code = await meshctl(argv, io);
  return { code, stdout: c.stdout(), stderr: c.stderr() };
}

const VS = (name: string, spec: string, ns = '') => `apiVersion: networking.mesh.io/v1
kind: VirtualService
metadata:
  name: ${name}
${ns ? `  namespace: ${ns}\n` : ''}spec:
${spec}`;

const DR = (name: string, host: string, subsets: string[], ns = '') => `apiVersion: networking.mesh.io/v1
kind: DestinationRule
metadata:
  name: ${name}
${ns ? `  namespace: ${ns}\n` : ''}spec:
  host: ${host}
${subsets.length ? `  subsets:\n${subsets.map((s) => `    - name: ${s}\n      labels: {version: ${s}}\n`).join('')}` : ''}`;

const GW = (name: string) => `apiVersion: networking.mesh.io/v1
kind: Gateway
metadata:
  name: ${name}
spec:
  selector: {app: ingress}
  servers:
    - port: {number: 80, name: http, protocol: HTTP}
      hosts: ["*"]
`;

const ROUTE_TO = (host: string, subset?: string, extra = '') => `  hosts: [${host}]
${extra}  http:
    - route:
        - destination: {host: ${host}${subset ? `, subset: ${subset}` : ''}}
`;

const BROKEN_DR = `apiVersion: networking.mesh.io/v1
kind: DestinationRule
metadata: {name: broken, namespace: prod}
spec:
  host: echo
  subsets:
    - name: v1
      lables: {version: v1}
`;

describe('meshctl validate', () => {
  it('says each good file is valid and exits 0', async () => {
    const a = write('a.yaml', [VS('reviews', ROUTE_TO('reviews', 'v1')), DR('reviews', 'reviews', ['v1'])].join('---\n'));
    const b = write('b.json', JSON.stringify({ apiVersion: 'networking.mesh.io/v1', kind: 'Gateway', metadata: { name: 'gw' }, spec: { selector: { app: 'x' }, servers: [{ port: { number: 80, name: 'http', protocol: 'HTTP' }, hosts: ['*'] }] } }));
    expect(await run(['validate', '-f', a, '-f', b])).toEqual({ code: 0, stdout: `"${a}" is valid\n"${b}" is valid\n`, stderr: '' });
    // The alias, and a comma-separated list.
    expect(await run(['v', `--filename=${a},${b}`])).toEqual({ code: 0, stdout: `"${a}" is valid\n"${b}" is valid\n`, stderr: '' });
  });

  it('reports each invalid document with file#index, kind/namespace/name, field and reason, and exits 1', async () => {
    const bad = write('bad.yaml', [VS('ok', ROUTE_TO('echo')), BROKEN_DR, 'kind: VirtualService\nmetadata: {name: x}\nspec: {}\n'].join('---\n'));
    const r = await run(['validate', '-f', bad]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(
      [
        `Error: ${bad}#1 DestinationRule/prod/broken: spec.subsets[0].lables: unknown field`,
        `Error: ${bad}#2 VirtualService/default/x: apiVersion: kind VirtualService needs apiVersion "networking.mesh.io/v1", got nothing`,
        'Error: validation failed: 2 invalid documents in 1 file (1 file, 3 documents checked)',
        '',
      ].join('\n'),
    );
  });

  it('gives the daemon\'s verdict: the same rejections parseConfigDocuments makes for --configDir', async () => {
    const text = [
      BROKEN_DR,
      VS('bad-weights', `  hosts: [echo]\n  http:\n    - route:\n        - destination: {host: echo}\n          weight: 0\n        - destination: {host: echo2}\n          weight: 0\n`),
      'apiVersion: networking.mesh.io/v1\nkind: Gateway\nmetadata: {name: Bad_Name}\nspec: {}\n',
      'key: [unclosed\n',
      VS('dup', ROUTE_TO('echo')),
      VS('dup', ROUTE_TO('echo')),
    ].join('---\n');
    const file = write('mixed.yaml', text);
    const r = await run(['validate', '-f', file, '-n', 'team']);
    const daemon = parseConfigDocuments(text, file, 'team');
    const expected = daemon.rejections.flatMap((rej) => {
      const index = rej.origin.slice(rej.origin.lastIndexOf('#') + 1);
      const label = rej.kind ? ` ${rej.kind}${rej.name ? `/${rej.namespace}/${rej.name}` : ''}` : '';
      return rej.issues.map((i) => `Error: ${file}#${index}${label}: ${i.path ? `${i.path}: ` : ''}${i.message}`);
    });
    expect(expected.length).toBeGreaterThanOrEqual(5);
    expect(r.stderr.trimEnd().split('\n').slice(0, -1)).toEqual(expected);
    expect(r.code).toBe(1);
  });

  it('checks good and bad files together: valid lines for the good ones, errors for the rest, exit 1', async () => {
    const good = write('good.yaml', GW('gw'));
    const bad = write('bad.yaml', BROKEN_DR);
    const missing = path.join(dir, 'missing.yaml');
    const r = await run(['validate', '-f', bad, '-f', good, '-f', missing]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe(`"${good}" is valid\n`);
    expect(r.stderr).toBe(
      [
        `Error: ${bad}#0 DestinationRule/prod/broken: spec.subsets[0].lables: unknown field`,
        `Error: ${missing}: no such file or directory`,
        'Error: validation failed: 1 invalid document in 1 file, 1 input not read (2 files, 2 documents checked)',
        '',
      ].join('\n'),
    );
  });

  it('walks directories: .yaml, .yml and .json files in name order, hidden names skipped', async () => {
    write('conf/b.yml', GW('b'));
    write('conf/a.yaml', GW('a'));
    write('conf/sub/c.json', JSON.stringify({ apiVersion: 'networking.mesh.io/v1', kind: 'DestinationRule', metadata: { name: 'c' }, spec: { host: 'c' } }));
    write('conf/.hidden.yaml', 'not: [valid\n');
    write('conf/notes.txt', 'not: [valid\n');
    const conf = path.join(dir, 'conf');
    const r = await run(['validate', '-f', conf]);
    expect(r).toEqual({ code: 0, stdout: ['a.yaml', 'b.yml', 'sub/c.json'].map((f) => `"${path.join(conf, f)}" is valid\n`).join(''), stderr: '' });
    fs.mkdirSync(path.join(dir, 'empty'));
    expect(await run(['validate', '-f', path.join(dir, 'empty')])).toEqual({ code: 0, stdout: '', stderr: `Warning: ${path.join(dir, 'empty')}: directory has no .yaml, .yml or .json files\n` });
  });

  it('reads standard input for -', async () => {
    const good = await run(['validate', '-f', '-'], GW('from-stdin'));
    expect(good).toEqual({ code: 0, stdout: '"<stdin>" is valid\n', stderr: '' });
    const bad = await run(['validate', '-f', '-'], BROKEN_DR);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('Error: <stdin>#0 DestinationRule/prod/broken: spec.subsets[0].lables: unknown field\n');
    expect(await run(['validate', '-f', '-'])).toMatchObject({ code: 1, stderr: expect.stringContaining('Error: <stdin>: standard input is not available\n') });
  });

  it('puts documents without a namespace into --namespace', async () => {
    const file = write('ns.yaml', BROKEN_DR.replace('namespace: prod', ''));
    expect((await run(['validate', '-f', file, '-n', 'team-a'])).stderr).toContain(`Error: ${file}#0 DestinationRule/team-a/broken:`);
  });

  it('checks the mesh-relevant fields of Kubernetes workloads as warnings and skips other kinds with a note', async () => {
    const file = write(
      'k8s.yaml',
      `apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  ports:
    - {port: 80, name: http-web}
    - {port: 9000}
    - {port: 53, name: dns, protocol: UDP}
    - {port: 8080, name: http-alt, appProtocol: grpc}
    - {port: 8443, name: web, appProtocol: kubernetes.io/h2c}
    - {port: 7070, name: grpc, appProtocol: carrier-pigeon}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  template:
    metadata:
      labels: {app: web, version: v1}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  template:
    metadata:
      labels: {service.mesh.io/canonical-name: db}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {a: b}
`,
    );
    const r = await run(['validate', '-f', file]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`"${file}" has warnings: 4 warnings (Warning: lines on standard error)\n`);
    expect(r.stderr.trimEnd().split('\n')).toEqual([
      `Warning: ${file}#0 Service/default/web: spec.ports[1]: port 9000: protocol is not declared, so the proxy has to detect it; name the port <protocol>[-<suffix>] (e.g. http-web, grpc, tcp-db) or set appProtocol`,
      `Warning: ${file}#0 Service/default/web: spec.ports[3].name: port 8080 (http-alt): the name says HTTP but appProtocol says GRPC; appProtocol wins`,
      `Warning: ${file}#0 Service/default/web: spec.ports[5].appProtocol: port 7070 (grpc): appProtocol "carrier-pigeon" is not a protocol the mesh knows; the name's protocol GRPC is used`,
      `Warning: ${file}#2 StatefulSet/default/db: spec.template.metadata.labels: no "version" label (or service.mesh.io/canonical-revision): telemetry cannot tell versions apart, and subsets usually select on it`,
      `Note: ${file}#3 ConfigMap/default/settings: skipped: v1 ConfigMap is not a kind validate checks`,
    ]);
  });

  it('refuses workloads whose mesh fields cannot be read', async () => {
    const file = write('k8s-bad.yaml', 'apiVersion: v1\nkind: Service\nmetadata: {}\nspec:\n  ports: {http: 80}\n---\nkind: Deployment\nmetadata: {name: d}\nspec:\n  template:\n    metadata:\n      labels: [app]\n');
    const r = await run(['validate', '-f', file]);
    expect(r.code).toBe(1);
    expect(r.stderr.trimEnd().split('\n')).toEqual([
      `Error: ${file}#0 Service: metadata.name: name is required`,
      `Error: ${file}#0 Service: spec.ports: expected a list of ports`,
      `Error: ${file}#1 Deployment/default/d: apiVersion: kind Deployment needs apiVersion "apps/v1", got nothing`,
      `Error: ${file}#1 Deployment/default/d: spec.template.metadata.labels: expected a mapping of strings`,
      'Error: validation failed: 2 invalid documents in 1 file (1 file, 2 documents checked)',
    ]);
  });

  it('requires at least one -f', async () => {
    expect(await run(['validate'])).toEqual({ code: 1, stdout: '', stderr: 'error: --filename: give at least one file, directory or - (standard input)\n' });
  });
});

describe('meshctl validate --referential', () => {
  it('passes when subsets, gateways and delegates are defined in the given files', async () => {
    const routes = write(
      'routes.yaml',
      [
        VS('reviews', ROUTE_TO('reviews', 'v2', '  gateways: [gw, mesh]\n')),
        VS('root', `  hosts: [shop.example.com]\n  gateways: [gw]\n  http:\n    - match: [{uri: {prefix: /cart}}]\n      delegate: {name: cart, namespace: team}\n`),
        VS('cart', `  http:\n    - route:\n        - destination: {host: cart.team.svc.cluster.local, subset: stable}\n`, 'team'),
      ].join('---\n'),
    );
    const rules = write('rules.yaml', [DR('reviews', 'reviews', ['v1', 'v2']), DR('cart', '"*.team.svc.cluster.local"', ['stable'], 'team'), GW('gw')].join('---\n'));
    expect(await run(['validate', '-x', '-f', routes, '-f', rules])).toEqual({ code: 0, stdout: `"${routes}" is valid\n"${rules}" is valid\n`, stderr: '' });
  });

  it('reports references the files do not define, and only with -x', async () => {
    const routes = write(
      'routes.yaml',
      [
        VS('reviews', ROUTE_TO('reviews', 'v3', '  gateways: [missing-gw, other/gw]\n')),
        VS('ratings', ROUTE_TO('ratings', 'v1')),
        VS('root', `  hosts: [shop.example.com]\n  http:\n    - delegate: {name: nowhere}\n`),
      ].join('---\n'),
    );
    const rules = write('rules.yaml', DR('reviews', 'reviews', ['v1', 'v2']));
    expect((await run(['validate', '-f', routes, '-f', rules])).code).toBe(0);
    const r = await run(['validate', '--referential', '-f', routes, '-f', rules]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe(`"${rules}" is valid\n`);
    expect(r.stderr.trimEnd().split('\n')).toEqual([
      `Error: ${routes}#0 VirtualService/default/reviews: spec.gateways[0]: gateway "default/missing-gw" is not defined in the given files`,
      `Error: ${routes}#0 VirtualService/default/reviews: spec.gateways[1]: gateway "other/gw" is not defined in the given files`,
      `Error: ${routes}#0 VirtualService/default/reviews: spec.http[0].route[0].destination.subset: subset "v3" of host reviews.default.svc.cluster.local is not defined by DestinationRule default/reviews (its subsets: v1, v2)`,
      `Error: ${routes}#1 VirtualService/default/ratings: spec.http[0].route[0].destination.subset: subset "v1" of host ratings.default.svc.cluster.local: no DestinationRule for this host in the given files`,
      `Error: ${routes}#2 VirtualService/default/root: spec.http[0].delegate: delegate VirtualService "default/nowhere" is not defined in the given files`,
      'Error: validation failed: 3 invalid documents in 1 file (2 files, 4 documents checked)',
    ]);
  });

  it('resolves rules as the daemon does: a rule hidden from the route\'s namespace by exportTo does not count', async () => {
    const routes = write('routes.yaml', VS('reviews', ROUTE_TO('reviews.shop.svc.cluster.local', 'v1'), 'web'));
    const rules = write('rules.yaml', DR('reviews', 'reviews', ['v1'], 'shop').replace('spec:\n', 'spec:\n  exportTo: ["."]\n'));
    const r = await run(['validate', '-x', '-f', routes, '-f', rules]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('subset "v1" of host reviews.shop.svc.cluster.local: no DestinationRule for this host in the given files');
    const visible = write('rules.yaml', DR('reviews', 'reviews', ['v1'], 'shop'));
    expect((await run(['validate', '-x', '-f', routes, '-f', visible])).code).toBe(0);
  });

  it('reports an object that two files define', async () => {
    const a = write('a.yaml', GW('gw'));
    const b = write('b.yaml', GW('gw'));
    const r = await run(['validate', '-x', '-f', a, '-f', b]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe(`"${a}" is valid\n`);
    expect(r.stderr).toContain(`Error: ${b}#0 Gateway/default/gw: metadata.name: Gateway default/gw already defined by ${a}#0: the first one loaded wins\n`);
  });
});
