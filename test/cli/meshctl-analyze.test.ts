/**
 * `meshctl analyze`: files alone (--use-cluster=false) and files laid over the live cluster (the
 * local control plane), thresholds, suppression, output formats and bad input.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { main as meshctl } from '../../src/cli/meshctl.js';
import type { KubeClient } from '../../src/kube/client.js';
import { applyMeshCrds, createNamespace, deleteNamespace, kubeTestEnv } from '../kube/helpers.js';
import { captureIO } from './capture.js';

let dir: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'meshctl-analyze-'));
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

function write(name: string, text: string): string {
  const file = path.join(dir, name);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, text);
  return file;
}

async function run(argv: string[], env: Record<string, string> = {}, isTTY = false) {
  const c = captureIO({ TERM: 'dumb', ...env });
  const code = await meshctl(argv, { ...c.io, isTTY });
  return { code, stdout: c.stdout(), stderr: c.stderr() };
}

const VS = (name: string, ns: string, host: string, subset: string) => `apiVersion: networking.mesh.io/v1
kind: VirtualService
metadata: {name: ${name}, namespace: ${ns}}
spec:
  hosts: [${host}]
  http:
    - route:
        - destination: {host: ${host}, subset: ${subset}}
`;

const DR = (name: string, ns: string, host: string, subsets: string[]) => `apiVersion: networking.mesh.io/v1
kind: DestinationRule
metadata: {name: ${name}, namespace: ${ns}}
spec:
  host: ${host}
  subsets:
${subsets.map((s) => `    - name: ${s}\n      labels: {version: ${s}}\n`).join('')}`;

const SE = (name: string, ns: string, host: string) => `apiVersion: networking.mesh.io/v1
kind: ServiceEntry
metadata: {name: ${name}, namespace: ${ns}}
spec:
  hosts: [${host}]
  ports: [{number: 80, name: http, protocol: HTTP}]
  resolution: DNS
`;

const SUBSET_PATH = 'spec.http[0].route[0].destination.subset';

describe('meshctl analyze on files (--use-cluster=false)', () => {
  let broken: string;
  beforeAll(() => {
    broken = write('shop/broken.yaml', [SE('reviews', 'shop', 'reviews.example.com'), DR('reviews', 'shop', 'reviews.example.com', ['v1']), VS('reviews-route', 'shop', 'reviews.example.com', 'v2')].join('---\n'));
  });

  it('reports a route to an undefined subset as an error on the field and exits 79; other namespaces are clean', async () => {
    const r = await run(['analyze', '--use-cluster=false', '-n', 'shop', broken]);
    expect(r.code).toBe(79);
    expect(r.stdout).toMatch(new RegExp(`^Error \\[MESH0103\\] \\(VirtualService reviews-route\\.shop\\) ${SUBSET_PATH.replace(/[.[\]]/g, '\\$&')}: .*v2`, 'm'));

    const elsewhere = await run(['analyze', '--use-cluster=false', broken]);
    expect(elsewhere).toEqual({ code: 0, stdout: 'No validation issues found when analyzing namespace: default.\n', stderr: '' });
    // -A before the file: the file is not taken for the flag's value.
    expect((await run(['analyze', '--use-cluster=false', '-A', broken])).code).toBe(79);
  });

  it('the fixed rule clears the finding; a later file replaces an earlier object of the same name', async () => {
    const fix = write('fix.yaml', DR('reviews', 'shop', 'reviews.example.com', ['v1', 'v2']));
    expect(await run(['analyze', '--use-cluster=false', '-n', 'shop', broken, fix])).toEqual({
      code: 0,
      stdout: 'No validation issues found when analyzing namespace: shop.\n',
      stderr: '',
    });
  });

  it('thresholds: --output-threshold hides lower levels, --failure-threshold decides the exit code', async () => {
    const unknownHost = write('unknown-host.yaml', VS('to-nowhere', 'shop', 'nowhere.example.com', 'v1').replace(', subset: v1', ''));
    const shown = await run(['analyze', '--use-cluster=false', '-n', 'shop', unknownHost]);
    expect(shown.code).toBe(0); // a warning does not reach the default threshold Error
    expect(shown.stdout).toMatch(/^Warning \[MESH0102\] \(VirtualService to-nowhere\.shop\)/m);

    const hidden = await run(['analyze', '--use-cluster=false', '-n', 'shop', '--output-threshold', 'Error', '--failure-threshold', 'Warning', unknownHost]);
    expect(hidden).toEqual({ code: 79, stdout: 'No validation issues found when analyzing namespace: shop.\n', stderr: '' });
  });

  it('--suppress drops findings by code and resource pattern; a malformed value names the flag', async () => {
    const r = await run(['analyze', '--use-cluster=false', '-n', 'shop', '--suppress', 'MESH0103=VirtualService *.shop', broken]);
    expect(r).toEqual({ code: 0, stdout: 'No validation issues found when analyzing namespace: shop.\n', stderr: '' });
    const other = await run(['analyze', '--use-cluster=false', '-n', 'shop', '-S', 'MESH0103=VirtualService reviews-route.prod', broken]);
    expect(other.code).toBe(79);

    const bad = await run(['analyze', '--use-cluster=false', '-S', 'MESH0103', broken]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/--suppress "MESH0103": expected <code>=<resource>/);
  });

  it('-o json and -o yaml print the findings as data', async () => {
    const r = await run(['analyze', '--use-cluster=false', '-A', '-o', 'json', broken]);
    expect(r.code).toBe(79);
    expect(JSON.parse(r.stdout)).toEqual([
      expect.objectContaining({ code: 'MESH0103', level: 'Error', resource: { kind: 'VirtualService', namespace: 'shop', name: 'reviews-route' }, path: SUBSET_PATH }),
    ]);
    const y = await run(['analyze', '--use-cluster=false', '-A', '-o', 'yaml', broken]);
    expect(y.stdout).toMatch(/^- code: MESH0103\n {2}level: Error\n/);
  });

  it('an invalid document is an error naming file, document, field and reason (MESH0107)', async () => {
    const bad = write('bad.yaml', `${DR('ok', 'shop', 'a.example.com', ['v1'])}---\n${DR('broken', 'shop', 'b.example.com', ['v1']).replace('labels:', 'lables:')}`);
    const r = await run(['analyze', '--use-cluster=false', '-n', 'shop', bad]);
    expect(r.code).toBe(79);
    expect(r.stdout).toMatch(new RegExp(`^Error \\[MESH0107\\] \\(DestinationRule broken\\.shop\\) .*${path.basename(bad)}#1: `, 'm'));
    expect(r.stdout).toContain('lables');
  });

  it('a directory is read flat unless -R; a missing file or bad flag value is a usage error', async () => {
    write('tree/top.yaml', SE('top', 'tree', 'top.example.com'));
    write('tree/sub/route.yaml', VS('deep', 'tree', 'top.example.com', 'v9'));
    const flat = await run(['analyze', '--use-cluster=false', '-n', 'tree', path.join(dir, 'tree')]);
    expect(flat.code).toBe(0);
    const deep = await run(['analyze', '--use-cluster=false', '-n', 'tree', '-R', path.join(dir, 'tree')]);
    expect(deep.code).toBe(79);
    expect(deep.stdout).toContain('(VirtualService deep.tree)');

    const missing = await run(['analyze', '--use-cluster=false', path.join(dir, 'nope.yaml')]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/cannot read .*nope\.yaml: no such file or directory/);
    expect((await run(['analyze', '--use-cluster=false', '--failure-threshold', 'Fatal', broken])).stderr).toMatch(/--failure-threshold: "Fatal" is not one of Info, Warning, Error/);
    expect((await run(['analyze', '--use-cluster=false', '--timeout', 'soon', broken])).stderr).toMatch(/--timeout: "soon" is not a duration/);
    expect((await run(['analyze', '--use-cluster=false'])).stderr).toMatch(/give at least one file/);
  });

  it('--list-analyzers names every analyzer and code', async () => {
    const r = await run(['analyze', '-L']);
    expect(r.code).toBe(0);
    for (const code of ['MESH0101', 'MESH0102', 'MESH0103', 'MESH0104', 'MESH0105', 'MESH0106', 'MESH0107']) expect(r.stdout).toContain(code);
    expect(r.stdout).toContain('virtualservice');
  });

  it('colours the level on a terminal only, unless --color=false, NO_COLOR or TERM=dumb', async () => {
    const argv = ['analyze', '--use-cluster=false', '-A', broken];
    const coloured = await run(argv, { TERM: 'xterm' }, true);
    expect(coloured.stdout).toContain('\x1b[31mError\x1b[0m [MESH0103]');
    for (const [args, env, tty] of [
      [['--color=false'], { TERM: 'xterm' }, true],
      [[], { TERM: 'xterm' }, false],
      [[], { TERM: 'xterm', NO_COLOR: '1' }, true],
      [[], { TERM: 'xterm', NO_COLOR: '' }, true],
      [[], { TERM: 'dumb' }, true],
    ] as const) {
      const plain = await run([...argv, ...args], env, tty);
      expect(plain.stdout).toMatch(/^Error \[MESH0103\]/m);
      expect(plain.stdout).not.toContain('\x1b[');
    }
  });
});

describe('meshctl analyze on the live cluster', () => {
  let client: KubeClient;
  let kubeconfig: string;
  let ns: string | undefined;

  beforeAll(async () => {
    const env = await kubeTestEnv();
    client = env.client;
    kubeconfig = env.cluster.kubeconfig;
    await applyMeshCrds(client);
    ns = await createNamespace(client, 'analyze');
    await client.create({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'reviews', namespace: ns }, spec: { selector: { app: 'reviews' }, ports: [{ name: 'http', port: 9080 }] } });
    await client.create({ apiVersion: 'networking.mesh.io/v1', kind: 'DestinationRule', metadata: { name: 'reviews', namespace: ns }, spec: { host: 'reviews', subsets: [{ name: 'v1', labels: { version: 'v1' } }] } });
    await client.create({ apiVersion: 'networking.mesh.io/v1', kind: 'VirtualService', metadata: { name: 'reviews-route', namespace: ns }, spec: { hosts: ['reviews'], http: [{ route: [{ destination: { host: 'reviews', subset: 'v2' } }] }] } });
  }, 120_000);

  afterAll(async () => {
    await deleteNamespace(client, ns);
    client.close();
  });

  it('finds the broken route in the cluster, and a file with the fixed rule shows the change would clear it', async () => {
    const live = await run(['analyze', '-c', kubeconfig, '-n', ns ?? '']);
    expect(live.code).toBe(79);
    expect(live.stdout).toContain(`Error [MESH0103] (VirtualService reviews-route.${ns}) ${SUBSET_PATH}`);
    // The Service is known from the cluster: no unknown-host warning.
    expect(live.stdout).not.toContain('MESH0102');

    // The namespace of the test is not labelled for injection: that is the one finding left (Info).
    expect(live.stdout).toContain(`Info [MESH0116] (Namespace ${ns}) metadata.labels: namespace is not enabled for proxy injection`);
    expect(live.stdout).not.toContain('(Namespace default)');

    const fix = write('cluster-fix.yaml', DR('reviews', ns ?? '', 'reviews', ['v1', 'v2']));
    expect(await run(['analyze', '-c', kubeconfig, '-n', ns ?? '', '--output-threshold', 'Warning', fix])).toEqual({
      code: 0,
      stdout: `No validation issues found when analyzing namespace: ${ns}.\n`,
      stderr: '',
    });
  });

  it('a stored object the daemon would refuse is reported (MESH0107); an unreachable cluster is a clear error', async () => {
    // Passes the CRD schema, fails the daemon's semantic checks (a subset name used twice).
    await client.create({
      apiVersion: 'networking.mesh.io/v1',
      kind: 'DestinationRule',
      metadata: { name: 'twice', namespace: ns },
      spec: { host: 'ratings', subsets: [{ name: 'v1', labels: { version: 'v1' } }, { name: 'v1', labels: { version: 'v2' } }] },
    });
    const r = await run(['analyze', '-c', kubeconfig, '-n', ns ?? '', '-o', 'json']);
    const findings = JSON.parse(r.stdout) as Array<{ code: string; resource: { name: string } }>;
    expect(findings.filter((f) => f.code === 'MESH0107').map((f) => f.resource.name)).toEqual(['twice']);

    const gone = write('gone.kubeconfig', fs.readFileSync(kubeconfig, 'utf8').replace(/server: https:\/\/127\.0\.0\.1:\d+/, 'server: https://127.0.0.1:1'));
    const unreachable = await run(['analyze', '-c', gone, '--timeout', '3s']);
    expect(unreachable.code).toBe(1);
    expect(unreachable.stderr).toMatch(/error: (cannot read the cluster|analysis did not finish within --timeout 3s)/);
  });
});
