/**
 * `meshctl admin log` (alias `meshd l`):
 * - against a running meshd's ControlZ (a process of its own): lists the scopes, sets output and
 *   stack-trace levels of several scopes, resets them; the daemon holds what the command reports;
 *   a scope the daemon does not know is refused with its reason;
 * - the command on the local plane: bad flags end before any cluster request; a pod that does not
 *   exist, a selector matching no pod, and a meshd pod whose ControlZ cannot be reached each end
 *   with a message naming it and exit 1.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { main as meshctl } from '../src/cli/meshctl.js';
import { httpRequest } from '../src/cli/meshctl/diag/port-forward.js';
import { applyLogChange, logChange, renderLogScopes, type ControlzCall, type LogScope } from '../src/cli/meshctl/diag/run-admin-log.js';
import type { KubeClient } from '../src/kube/client.js';
import { captureIO } from '../test/cli/capture.js';
import { createNamespace, deleteNamespace, kubeTestEnv } from '../test/kube/helpers.js';
import { startDaemon, type Daemon } from '../test/support/daemon.js';

let daemon: Daemon;
let call: ControlzCall;

const scope = (scopes: readonly LogScope[], name: string): LogScope | undefined => scopes.find((s) => s.name === name);

async function held(): Promise<LogScope[]> {
  const r = await httpRequest('127.0.0.1', Number(daemon.ctrlzAddr.split(':').pop()), '/scopej');
  return (JSON.parse(r.body) as { scopes: LogScope[] }).scopes;
}

async function run(argv: string[]) {
  const c = captureIO({ HOME: os.tmpdir() });
  const code = await meshctl(argv, c.io);
  return { code, stdout: c.stdout(), stderr: c.stderr() };
}

describe('admin log against a running meshd', () => {
  beforeAll(async () => {
    daemon = await startDaemon();
    const port = Number(daemon.ctrlzAddr.split(':').pop());
    call = (p, o) => httpRequest('127.0.0.1', port, p, { timeoutMs: 10_000, ...o });
  }, 60_000);
  afterAll(async () => daemon?.stop());

  it('lists the scopes, sets levels of several, then resets them all', async () => {
    const listed = await applyLogChange(call, logChange({ reset: false }));
    expect(scope(listed, 'ads')).toEqual({ name: 'ads', outputLevel: 'info', stackTraceLevel: 'none' });

    const set = await applyLogChange(call, logChange({ level: 'ads:debug,model:warn', stackTraceLevel: 'ads:error', reset: false }));
    expect(scope(set, 'ads')).toEqual({ name: 'ads', outputLevel: 'debug', stackTraceLevel: 'error' });
    expect(scope(set, 'model')?.outputLevel).toBe('warn');
    expect(scope(await held(), 'ads')).toEqual({ name: 'ads', outputLevel: 'debug', stackTraceLevel: 'error' });

    const table = await renderLogScopes({ 'meshd-0.mesh-system': set }, 'short');
    expect(table.split('\n')[0].split(/\s{2,}/)).toEqual(['MESHD', 'SCOPE', 'OUTPUT LEVEL', 'STACK TRACE LEVEL']);
    expect(table).toMatch(/^meshd-0\.mesh-system\s+ads\s+debug\s+error$/m);
    expect(JSON.parse(await renderLogScopes({ 'meshd-0.mesh-system': set }, 'json'))).toEqual({ 'meshd-0.mesh-system': set });

    const reset = await applyLogChange(call, logChange({ reset: true }));
    expect(reset.every((s) => s.outputLevel === 'info' && s.stackTraceLevel === 'none')).toBe(true);
    expect(scope(await held(), 'model')?.outputLevel).toBe('info');
  });

  it('refuses a scope the daemon does not know, with its reason', async () => {
    await expect(applyLogChange(call, logChange({ level: 'nosuchscope:debug', reset: false }))).rejects.toThrow(/scope nosuchscope: HTTP 400: unknown log scope "nosuchscope"/);
  });

  it('names a port that is not ControlZ', async () => {
    const port = Number(daemon.monitoringAddr.split(':').pop());
    await expect(applyLogChange((p, o) => httpRequest('127.0.0.1', port, p, { timeoutMs: 5000, ...o }), logChange({ reset: false }))).rejects.toThrow(/^GET \/scopej: HTTP 404: monitoring: no handler for \/scopej/);
  });
});

describe('admin log on the cluster', () => {
  let client: KubeClient;
  let kubeconfig: string;
  let ns: string | undefined;

  beforeAll(async () => {
    const env = await kubeTestEnv();
    client = env.client;
    kubeconfig = env.cluster.kubeconfig;
    ns = await createNamespace(client, 'adminlog');
    await client.create({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'meshd-a', namespace: ns, labels: { app: 'meshd' } }, spec: { containers: [{ name: 'discovery', image: 'meshd' }] } });
  }, 120_000);
  afterAll(async () => {
    await deleteNamespace(client, ns);
    client?.close();
  });

  it.each([
    ['a malformed --level', ['--level', 'ads'], /--level: "ads" is not <scope>:<level>/],
    ['an unknown level', ['--level', 'ads:loud'], /--level: unknown level "loud" for scope ads/],
    ['--reset with --level', ['--reset', '--level', 'ads:debug'], /--reset cannot be combined with --level/],
    ['a bad --ctrlz_port', ['--ctrlz_port', 'x'], /--ctrlz_port: "x" is not a port number/],
    ['an unknown output', ['-o', 'xml'], /--output: invalid value "xml"/],
  ])('%s ends with a clear message and exit 1, before any cluster request', async (_what, extra, message) => {
    const r = await run(['admin', 'log', '-c', '/nonexistent/kubeconfig', ...extra]);
    expect(r.stderr).toMatch(message);
    expect(r.code).toBe(1);
  });

  it('names a pod that does not exist, and a selector that matches none', async () => {
    const missing = await run(['admin', 'log', 'meshd-zz', '-c', kubeconfig, '-i', ns!]);
    expect(missing).toMatchObject({ code: 1, stdout: '' });
    expect(missing.stderr).toContain(`pod ${ns}/meshd-zz not found`);
    const none = await run(['meshd', '-l', 'app=nothing', 'l', '-c', kubeconfig, '-i', ns!]);
    expect(none.code).toBe(1);
    expect(none.stderr).toContain(`no running meshd pod matches app=nothing in namespace ${ns}`);
  });

  it('names the meshd pod whose ControlZ it cannot reach', async () => {
    // the local plane's node simulator runs no kubelet, so the API server cannot forward a port to the pod
    const r = await run(['admin', 'log', '-c', kubeconfig, '-i', ns!]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(new RegExp(`meshd meshd-a\\.${ns} \\(ControlZ port 9876\\): no answer through the API server's port-forward to the pod`));
  }, 60_000);

  it('reports an unreachable API server', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'admin-log-'));
    const gone = path.join(dir, 'gone.kubeconfig');
    fs.writeFileSync(gone, fs.readFileSync(kubeconfig, 'utf8').replace(/server: https:\/\/127\.0\.0\.1:\d+/, 'server: https://127.0.0.1:1'));
    const r = await run(['admin', 'log', '-c', gone, '-i', ns!]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^error: .*127\.0\.0\.1:1/m);
  }, 60_000);
});
