/**
 * `meshctl dashboard controlz|proxy|viz|topology|metrics|trace-a|trace-b|trace-c` (the built program,
 * as a process): with `--browser=false` it
 * prints the URL of a local listener bound on both loopback families (`--address localhost`) or on
 * the one address given, keeps it open until SIGINT and then exits 0; with a browser it hands the
 * URL to the system's opener (`xdg-open`, here a script on PATH that records what it was given).
 * The addon dashboards find the addon's pod by its labels in -n, else the mesh namespace (-i).
 * Bad input (no pod, unknown pod, no addon, bad DG flags, an argument to an addon) ends with a clear
 * message and exit 1.
 *
 * The local plane's node simulator runs no kubelet, so a connection to the listener reaches the
 * API server's port-forward and is closed there: the tests check the listener, not the pod's page
 * (the page itself is tested in controlz.test.ts).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { KubeClient } from '../src/kube/client.js';
import { createNamespace, deleteNamespace, kubeTestEnv } from '../test/kube/helpers.js';
import { REPO_ROOT } from '../test/support/daemon.js';
import { eventually } from '../test/support/eventually.js';

const MESHCTL = path.join(REPO_ROOT, 'dist', 'bin', 'meshctl.js');

let client: KubeClient;
let kubeconfig: string;
let ns: string | undefined;
let dir: string;
let addons: string | undefined;

interface Session {
  readonly child: ChildProcess;
  out(): string;
  err(): string;
  exited: Promise<number | null>;
}

function start(args: string[], env: Record<string, string> = {}): Session {
  const child = spawn(process.execPath, [MESHCTL, ...args, '-c', kubeconfig], { env: { ...process.env, HOME: dir, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (err += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, out: () => out, err: () => err, exited };
}

async function finished(s: Session, ms = 30_000): Promise<number | null> {
  const timer = setTimeout(() => s.child.kill('SIGKILL'), ms);
  try {
    return await s.exited;
  } finally {
    clearTimeout(timer);
  }
}

/** Whether a TCP connection to host:port is accepted. */
function accepts(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port }, () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

beforeAll(async () => {
  const env = await kubeTestEnv();
  client = env.client;
  kubeconfig = env.cluster.kubeconfig;
  ns = await createNamespace(client, 'dashboard');
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dashboard-'));
  await client.create({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'meshd-a', namespace: ns, labels: { app: 'meshd' } }, spec: { containers: [{ name: 'discovery', image: 'meshd' }] } });
  await client.create({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'reviews-a', namespace: ns, labels: { app: 'reviews' } }, spec: { containers: [{ name: 'app', image: 'reviews' }] } });
  // A namespace standing for the mesh namespace, with one pod of each addon (and a decoy of another app).
  addons = await createNamespace(client, 'addons');
  const pods: Array<[string, Record<string, string>]> = [
    ['grafana-0', { 'app.kubernetes.io/name': 'grafana' }],
    ['kiali-0', { 'app.kubernetes.io/name': 'kiali' }],
    ['prometheus-0', { 'app.kubernetes.io/name': 'prometheus' }],
    ['jaeger-0', { app: 'jaeger' }],
    ['skywalking-ui-0', { app: 'skywalking-ui' }],
    ['zipkin-0', { app: 'zipkin' }],
    ['decoy-0', { app: 'grafana' }],
  ];
  for (const [name, labels] of pods) await client.create({ apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: addons, labels }, spec: { containers: [{ name: 'ui', image: name }] } });
}, 120_000);

afterAll(async () => {
  await deleteNamespace(client, ns);
  await deleteNamespace(client, addons);
  client?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

describe('meshctl dashboard', () => {
  it('controlz --browser=false prints the URL of a listener on both loopback families, until SIGINT', async () => {
    const s = start(['dashboard', 'controlz', `meshd-a.${ns}`, '--browser=false']);
    const line = await eventually('the URL', () => /ControlZ of meshd-a\.\S+: (http:\/\/localhost:(\d+)\/)/.exec(s.out()), { timeoutMs: 30_000, diagnostics: () => s.err() });
    const port = Number(line[2]);
    expect(s.out()).toContain(`forwarding to port 9876 of pod ${ns}/meshd-a on 127.0.0.1, ::1`);
    expect(await accepts('127.0.0.1', port)).toBe(true);
    expect(await accepts('::1', port)).toBe(true);
    s.child.kill('SIGINT');
    expect(await finished(s)).toBe(0);
    expect(await accepts('127.0.0.1', port)).toBe(false);
  }, 60_000);

  it('proxy listens on the address and port given, found by selector, and opens the browser on it', async () => {
    const bin = path.join(dir, 'bin');
    fs.mkdirSync(bin, { recursive: true });
    const record = path.join(dir, 'opened.txt');
    fs.writeFileSync(path.join(bin, 'xdg-open'), `#!/bin/sh\necho "$1" > ${JSON.stringify(record)}\n`, { mode: 0o755 });
    const port = await new Promise<number>((resolve) => {
      const probe = net.createServer().listen(0, '127.0.0.1', () => {
        const p = (probe.address() as net.AddressInfo).port;
        probe.close(() => resolve(p));
      });
    });
    const s = start(['d', '--address', '127.0.0.1', '-p', String(port), 'proxy', '-n', ns!, '-l', 'app=reviews'], { PATH: `${bin}:${process.env.PATH ?? ''}` });
    await eventually('the URL', () => s.out().includes(`proxy admin of reviews-a.${ns}: http://127.0.0.1:${port}/`), { timeoutMs: 30_000, diagnostics: () => s.err() });
    expect(s.out()).toContain(`forwarding to port 15000 of pod ${ns}/reviews-a on 127.0.0.1;`);
    await eventually('the browser to be opened', () => fs.existsSync(record) && fs.readFileSync(record, 'utf8') === `http://127.0.0.1:${port}/\n`, { timeoutMs: 10_000 });
    expect(await accepts('::1', port)).toBe(false);
    s.child.kill('SIGTERM');
    expect(await finished(s)).toBe(0);
  }, 60_000);

  it.each([
    ['viz', 'grafana-0', 3000, '/'],
    ['topology', 'kiali-0', 20001, '/kiali'],
    ['metrics', 'prometheus-0', 9090, '/'],
    ['trace-a', 'jaeger-0', 16686, '/'],
    ['trace-b', 'skywalking-ui-0', 8080, '/'],
    ['trace-c', 'zipkin-0', 9411, '/'],
  ])('%s finds its addon pod %s in the mesh namespace and forwards to port %d', async (role, pod, podPort, urlPath) => {
    const s = start(['dashboard', role, '-i', addons!, '--browser=false']);
    const line = await eventually('the URL', () => new RegExp(`${role} dashboard \\(${pod}\\.${addons}\\): (http://localhost:(\\d+)${urlPath})`).exec(s.out()), {
      timeoutMs: 30_000,
      diagnostics: () => s.out() + s.err(),
    });
    expect(s.out()).toContain(`forwarding to port ${podPort} of pod ${addons}/${pod} on 127.0.0.1, ::1`);
    expect(await accepts('::1', Number(line[2]))).toBe(true);
    s.child.kill('SIGINT');
    expect(await finished(s)).toBe(0);
  }, 60_000);

  it('an addon dashboard looks in -n when given, on the address and port given', async () => {
    const s = start(['dash', 'trace-c', '-n', addons!, '-i', 'elsewhere', '--address', '::1', '-p', '0', '--browser=false']);
    await eventually('the URL', () => new RegExp(`trace-c dashboard \\(zipkin-0\\.${addons}\\): http://\\[::1\\]:\\d+/ \\(forwarding to port 9411 of pod ${addons}/zipkin-0 on ::1;`).test(s.out()), {
      timeoutMs: 30_000,
      diagnostics: () => s.out() + s.err(),
    });
    s.child.kill('SIGTERM');
    expect(await finished(s)).toBe(0);
  }, 60_000);

  it.each([
    ['an addon that is not installed', ['dashboard', 'viz', '-n', 'kube-system', '--browser=false'], /no viz addon in namespace kube-system: no pod matches app\.kubernetes\.io\/name=grafana/],
    ['an argument to an addon dashboard', ['dashboard', 'topology', 'kiali-0'], /too many arguments/],
    ['a bad address for an addon', ['dashboard', 'metrics', '--address', 'nowhere'], /--address: "nowhere" is not an IP address or localhost/],
    ['no pod and no selector', ['dashboard', 'controlz'], /name a pod \(\[<type>\/\]<name>\[\.<namespace>\]\) or give -l\/--selector/],
    ['a pod that does not exist', ['dashboard', 'proxy', 'nobody.kube-system', '--browser=false'], /pod kube-system\/nobody not found/],
    ['a proxy pod looked up in the mesh namespace by default', ['dashboard', 'proxy', 'nobody', '--browser=false'], /pod mesh-system\/nobody not found/],
    ['…which -i names', ['dashboard', 'proxy', 'nobody', '-i', 'kube-public', '--browser=false'], /pod kube-public\/nobody not found/],
    ['a selector matching nothing', ['dashboard', 'controlz', '-l', 'app=nothing', '-n', 'kube-system', '--browser=false'], /no pod matches app=nothing in namespace kube-system/],
    ['an address that is not an IP', ['dashboard', 'controlz', 'meshd-a', '--address', 'example.com'], /--address: "example.com" is not an IP address or localhost/],
    ['a bad port', ['dashboard', 'proxy', 'x', '-p', '70000'], /--port: "70000" is not a port number/],
    ['a bad ControlZ port', ['dashboard', 'controlz', 'meshd-a', '--ctrlz_port', '0'], /--ctrlz_port: "0" is not a port number/],
  ])('%s ends with a clear message and exit 1', async (_what, argv, message) => {
    const s = start(argv);
    expect(await finished(s)).toBe(1);
    expect(s.err()).toMatch(message);
  }, 60_000);
});
