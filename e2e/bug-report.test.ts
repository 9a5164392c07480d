/**
 * `meshctl bug-report` against the local plane with meshd running as a process (Cluster registry,
 * reached over the xDS debug channel of its plaintext port) and a real ADS client playing the
 * sidecar of a pod: the archive is listed and read with the system's tar. The plane's simulated
 * nodes run no kubelet, so pod logs and the proxy's admin port cannot be read: each of those is
 * recorded in summary.json with its reason and the rest of the report is still written. Secret data
 * never enters the archive. Bad flags and an unreachable API server end with a message and exit 1.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { main as meshctl } from '../src/cli/meshctl.js';
import type { KubeClient } from '../src/kube/client.js';
import { captureIO } from '../test/cli/capture.js';
import { applyMeshCrds, createNamespace, kubeTestEnv, tearDown } from '../test/kube/helpers.js';
import { startDaemon, type Daemon } from '../test/support/daemon.js';
import { eventually } from '../test/support/eventually.js';
import { TestProxy } from '../test/support/proxy-dump.js';

const SECRET_VALUE = 'do-not-ship-this-3f9a';

let client: KubeClient;
let kubeconfig: string;
let meshNs: string;
let appNs: string;
let daemon: Daemon;
let proxy: TestProxy;
let dir: string;

async function run(argv: string[], extraEnv: Record<string, string> = {}, isTTY = false) {
  const c = captureIO({ HOME: dir, MESHCTL_XDS_ADDRESS: daemon?.grpcAddr ?? '', MESHCTL_PLAINTEXT: 'true', ...extraEnv });
  const code = await meshctl(argv, { ...c.io, isTTY });
  return { code, stdout: c.stdout(), stderr: c.stderr() };
}

const tar = (...args: string[]): string => execFileSync('tar', args, { encoding: 'utf8', maxBuffer: 64 << 20 });

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mesh-bug-report-'));
  const env = await kubeTestEnv();
  client = env.client;
  kubeconfig = env.cluster.kubeconfig;
  await applyMeshCrds(client);
  meshNs = await createNamespace(client, 'br-mesh');
  appNs = await createNamespace(client, 'br-app');
  await client.create({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'meshd-0', namespace: meshNs, labels: { app: 'meshd' } }, spec: { containers: [{ name: 'discovery', image: 'meshd' }] } });
  await client.create({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'cacerts', namespace: meshNs }, stringData: { 'ca-key.pem': SECRET_VALUE } });
  for (const [name, labels] of [['ratings-0', { app: 'ratings' }], ['reviews-0', { app: 'reviews' }]] as const) {
    await client.create({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: appNs, labels },
      spec: { containers: [{ name: 'app', image: 'app' }, { name: 'mesh-proxy', image: 'proxy' }] },
    });
  }
  await client.create({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'ratings', namespace: appNs }, spec: { selector: { app: 'ratings' }, ports: [{ name: 'http', port: 9080 }] } });
  await client.create({
    apiVersion: 'networking.mesh.io/v1',
    kind: 'VirtualService',
    metadata: { name: 'ratings', namespace: appNs },
    spec: { hosts: ['ratings'], http: [{ route: [{ destination: { host: 'ratings' } }] }] },
  });
  daemon = await startDaemon({ registries: 'Cluster', args: ['--clusterconfig', kubeconfig], env: { POD_NAMESPACE: meshNs, POD_NAME: 'meshd-0' }, readyTimeoutMs: 60_000 });
  proxy = new TestProxy(daemon.grpcAddr, { id: `sidecar~10.9.0.4~ratings-0.${appNs}~${appNs}.svc.cluster.local`, metadata: { NAMESPACE: appNs, LABELS: { app: 'ratings' } } });
  await proxy.start();
  await eventually('meshd to know the VirtualService', async () => JSON.stringify(await daemon.debug('configz')).includes(`"${appNs}"`), { retryErrors: true });
}, 180_000);

afterAll(() => tearDown({ close: [proxy], daemon, client, namespaces: [meshNs, appNs], dir }), 60_000);

describe('bug-report', () => {
  it('writes an archive of cluster, mesh, meshd and proxy state, recording what it could not read', async () => {
    const out = path.join(dir, 'report');
    const started = Date.now();
    const r = await run(['bug-report', '-c', kubeconfig, '--istio-namespace', meshNs, '--include', appNs, '--exclude', `${appNs}//reviews-*`, '--dir', out, '--duration', '1h', '--timeout', '2m']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(Date.now() - started).toBeLessThan(120_000);
    const archive = path.join(out, 'bug-report.tar.gz');
    expect(r.stdout).toContain(`Wrote ${archive}`);
    // the staging directory is removed, the archive stays
    expect(fs.readdirSync(out)).toEqual(['bug-report.tar.gz']);

    const listed = tar('-tzf', archive).trim().split('\n').sort();
    const base = `proxies/${appNs}/ratings-0`;
    expect(listed).toEqual(
      expect.arrayContaining([
        'summary.json',
        'cluster/version.json',
        'cluster/nodes.json',
        'cluster/namespaces.json',
        'cluster/pods.json',
        'cluster/secrets.json',
        'mesh/resources.yaml',
        'mesh/rejected.json',
        `meshd/debug/${daemon.grpcAddr.replace(/[^A-Za-z0-9._-]+/g, '_')}/syncz.json`,
        `meshd/debug/${daemon.grpcAddr.replace(/[^A-Za-z0-9._-]+/g, '_')}/configz.json`,
        `${base}/meshd-config-dump.json`,
        'analyze.txt',
      ]),
    );
    // reviews-0 is excluded by --exclude; pods outside --include are not there either
    expect(listed.filter((f) => f.includes('reviews-0') || f.startsWith(`proxies/${meshNs}`))).toEqual([]);

    const read = (name: string): string => tar('-xzOf', archive, name);
    const summary = JSON.parse(read('summary.json')) as { files: string[]; errors: Array<{ item: string; error: string }>; timedOut: boolean; include: string[]; window: { start: string | null } };
    expect(summary.timedOut).toBe(false);
    expect(summary.files).toEqual(listed);
    expect(summary.include).toEqual([appNs]);
    expect(summary.window.start).not.toBeNull();
    // no kubelet behind the simulated nodes: logs and the admin port fail per item, by name
    const failed = summary.errors.map((e) => e.item);
    expect(failed).toEqual(
      expect.arrayContaining([
        expect.stringContaining(`logs of ${meshNs}/meshd-0 container discovery`),
        expect.stringContaining(`logs of ${appNs}/ratings-0 container mesh-proxy`),
        expect.stringContaining(`admin port of ${appNs}/ratings-0`),
      ]),
    );
    expect(summary.errors.every((e) => e.error.length > 0)).toBe(true);

    expect(read('mesh/resources.yaml')).toMatch(new RegExp(`kind: VirtualService\\nmetadata:\\n  name: ratings\\n  namespace: ${appNs}`));
    const syncz = JSON.parse(read(`meshd/debug/${daemon.grpcAddr.replace(/[^A-Za-z0-9._-]+/g, '_')}/syncz.json`)) as Array<{ workload: string }>;
    expect(syncz.map((s) => s.workload)).toContain(`ratings-0.${appNs}`);
    const dump = JSON.parse(read(`${base}/meshd-config-dump.json`)) as { configs: Array<{ '@type': string }> };
    expect(dump.configs.map((c) => c['@type'].split('.').pop())).toContain('ListenersConfigDump');
    const secrets = JSON.parse(read('cluster/secrets.json')) as Array<{ name: string; keys: string[] }>;
    expect(secrets.find((s) => s.name === 'cacerts')).toMatchObject({ keys: ['ca-key.pem'] });
    const nodes = JSON.parse(read('cluster/nodes.json')) as Array<{ name: string }>;
    expect(nodes.length).toBeGreaterThan(0);

    // Secret data is nowhere in the archive
    const extracted = path.join(dir, 'x');
    fs.mkdirSync(extracted);
    tar('-xzf', archive, '-C', extracted);
    const all = listed.map((f) => fs.readFileSync(path.join(extracted, f), 'utf8')).join('\n');
    expect(all).not.toContain(SECRET_VALUE);
    expect(all).not.toContain(Buffer.from(SECRET_VALUE).toString('base64'));
  }, 150_000);

  it('--dry-run lists what it would collect and writes nothing', async () => {
    const out = path.join(dir, 'dry');
    const r = await run(['bug-report', '-c', kubeconfig, '--istio-namespace', meshNs, '--include', `${appNs}/*/ratings-*/mesh-proxy`, '--dir', out, '--dry-run']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`logs of ${appNs}/ratings-0 container mesh-proxy`);
    expect(r.stdout).not.toContain(`ratings-0 container app`);
    expect(r.stdout).not.toContain('reviews-0');
    expect(r.stdout).toContain(`logs of meshd ${meshNs}/meshd-0 container discovery`);
    expect(fs.readdirSync(out)).toEqual([]);
    // the same settings from -f, which wins over the flags (lists replace)
    const settings = path.join(dir, 'dry.yaml');
    fs.writeFileSync(settings, `dryRun: true\ninclude: ["${appNs}//reviews-*"]\nistioNamespace: ${meshNs}\n`);
    const f = await run(['bug-report', '-c', kubeconfig, '-f', settings, '--include', appNs, '--dir', out]);
    expect(f.code).toBe(0);
    expect(f.stdout).toContain(`logs of ${appNs}/reviews-0 container mesh-proxy`);
    expect(f.stdout).not.toContain('ratings-0');
  }, 60_000);

  it('takes each --include/--exclude value whole, and an --exclude replaces the default', async () => {
    const out = path.join(dir, 'whole');
    // one spec: namespace appNs or nowhere, pods ratings-*; split at its comma it would take appNs whole
    const parts = await run(['bug-report', '-c', kubeconfig, '--istio-namespace', meshNs, '--include', `${appNs},nowhere//ratings-*`, '--dir', out, '--dry-run']);
    expect(parts.code).toBe(0);
    expect(parts.stdout).toContain(`logs of ${appNs}/ratings-0 container mesh-proxy`);
    expect(parts.stdout).not.toContain('reviews-0');
    // a label list is one part: either label selects
    const labels = await run(['bug-report', '-c', kubeconfig, '--istio-namespace', meshNs, '--include', `${appNs}////app=reviews,app=ratings`, '--dir', out, '--dry-run']);
    expect(labels.code).toBe(0);
    expect(labels.stdout).toContain(`logs of ${appNs}/ratings-0 container mesh-proxy`);
    expect(labels.stdout).toContain(`logs of ${appNs}/reviews-0 container mesh-proxy`);
    // the default exclude stands until one is given; given ones add to each other
    const byDefault = await run(['bug-report', '-c', kubeconfig, '--istio-namespace', meshNs, '--include', appNs, '--dir', out, '--dry-run']);
    expect(byDefault.stdout).toContain(`proxy logs selected by --include "${appNs}", --exclude "kube-system,kube-public,kube-node-lease,local-path-storage"\n`);
    const given = await run(['bug-report', '-c', kubeconfig, '--istio-namespace', meshNs, '--include', appNs, '--exclude', `${appNs}//reviews-*`, '--exclude', 'legacy', '--dir', out, '--dry-run']);
    expect(given.code).toBe(0);
    expect(given.stdout).toContain(`proxy logs selected by --include "${appNs}", --exclude "${appNs}//reviews-*" "legacy"\n`);
    expect(given.stdout).not.toContain('reviews-0');
    expect(fs.readdirSync(out)).toEqual([]);
  }, 60_000);

  it('stops at --timeout and still writes what it captured', async () => {
    // a "meshd" that accepts connections and never answers holds the debug views until the deadline
    const silent = net.createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const out = path.join(dir, 'short');
    const started = Date.now();
    const address = `127.0.0.1:${(silent.address() as net.AddressInfo).port}`;
    const r = await run(['bug-report', '-c', kubeconfig, '--istio-namespace', meshNs, '--include', appNs, '--dir', out, '--timeout', '3s'], { MESHCTL_XDS_ADDRESS: address }).finally(() => silent.close());
    // the archive is written; that no meshd answered makes the run a failure
    expect(r.stderr).toMatch(/^error: no meshd answered over the xDS debug channel/);
    expect(r.code).toBe(1);
    expect(Date.now() - started).toBeLessThan(20_000);
    const summary = JSON.parse(tar('-xzOf', path.join(out, 'bug-report.tar.gz'), 'summary.json')) as { timedOut: boolean; errors: Array<{ error: string }> };
    expect(summary.timedOut).toBe(true);
    expect(r.stdout).toContain('--timeout (3s) reached');
    expect(summary.errors.some((e) => /--timeout reached/.test(e.error))).toBe(true);
    // what came before the deadline is there
    expect(tar('-tzf', path.join(out, 'bug-report.tar.gz'))).toContain('cluster/pods.json');
  }, 60_000);

  it('shows its progress on a terminal', async () => {
    const out = path.join(dir, 'tty');
    const r = await run(['bug-report', '-c', kubeconfig, '--istio-namespace', meshNs, '--include', `${appNs}//ratings-0`, '--dir', out, '--timeout', '1m'], {}, true);
    expect(r.code).toBe(0);
    const steps = r.stderr.trimEnd().split('\n').map((l) => l.replace(/^\[\d+\.\d+s\] /, ''));
    expect(steps[0]).toBe('reading the cluster version');
    expect(steps).toContain(`proxy 1/1: ${appNs}/ratings-0`);
    expect(steps.at(-1)).toBe('writing the archive');
    expect(fs.existsSync(path.join(out, 'bug-report.tar.gz'))).toBe(true);
  }, 60_000);

  it('bug-report version prints the build version', async () => {
    const r = await run(['bug-report', 'version', '-o', 'json']);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ clientVersion: { version: expect.any(String) } });
  });

  it.each([
    ['--full-secrets', ['--full-secrets'], /--full-secrets is not supported: a bug report never holds Secret data/],
    ['--start-time with --duration', ['--start-time', '2026-11-25T00:00:00Z', '--duration', '1h'], /--start-time and --duration cannot both be set/],
    ['a bad --end-time', ['--end-time', 'yesterday'], /--end-time: "yesterday" is not a time/],
    ['a bad --timeout', ['--timeout', 'soon'], /--timeout: "soon" is not a duration/],
    ['a spec with too many parts', ['--include', 'a/b/c/d/e/f/g'], /--include: "a\/b\/c\/d\/e\/f\/g" has 7 parts/],
    ['a label that is not key=value', ['--include', 'ns////app'], /--include: "ns\/\/\/\/app": label "app" is not key=value/],
    ['an unknown setting in --filename', ['-f', 'settings.yaml'], /--filename: .*settings.yaml: unknown setting "colour"/],
  ])('%s ends with a clear message and exit 1', async (_what, extra, message) => {
    fs.writeFileSync(path.join(dir, 'settings.yaml'), 'colour: blue\n');
    const r = await run(['bug-report', '-c', kubeconfig, ...extra.map((a) => (a === 'settings.yaml' ? path.join(dir, a) : a))]);
    expect(r.stderr).toMatch(message);
    expect(r.code).toBe(1);
  });

  it('an unreachable meshd: the archive without meshd, the reason, exit 1', async () => {
    const out = path.join(dir, 'no-meshd');
    const r = await run(['bug-report', '-c', kubeconfig, '--istio-namespace', meshNs, '--include', `${appNs}//ratings-0`, '--dir', out], { MESHCTL_XDS_ADDRESS: '127.0.0.1:1' });
    expect(r.stderr).toMatch(/^error: no meshd answered over the xDS debug channel \(unreachable .*127\.0\.0\.1:1/);
    expect(r.code).toBe(1);
    const listed = tar('-tzf', path.join(out, 'bug-report.tar.gz'));
    expect(listed).toContain('mesh/resources.yaml');
    expect(listed).not.toContain('meshd/debug/');
  }, 60_000);

  it('names an unreachable API server', async () => {
    const gone = path.join(dir, 'gone.kubeconfig');
    fs.writeFileSync(gone, fs.readFileSync(kubeconfig, 'utf8').replace(/server: https:\/\/127\.0\.0\.1:\d+/, 'server: https://127.0.0.1:1'));
    const r = await run(['bug-report', '-c', gone, '--dir', path.join(dir, 'gone'), '--timeout', '20s']);
    expect(r.stderr).toMatch(/^error: .*127\.0\.0\.1:1/m);
    expect(r.code).toBe(1);
  }, 60_000);
});
