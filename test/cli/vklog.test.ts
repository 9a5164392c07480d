/**
 * `meshctl --vklog`: at 6 and up the Kubernetes requests meshctl makes go to standard error
 * (method, URL, status, duration), at 8 and up with their headers; credentials never show. Runs
 * against the local Kubernetes control plane.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse as parseYaml, stringify } from 'yaml';
import { main as meshctl } from '../../src/cli/meshctl.js';
import { ensureCluster, kubeRequest, readKubeconfig, type LocalCluster } from '../support/cluster.js';
import { captureIO } from './capture.js';

let cluster: LocalCluster;
let dir: string;
const ns = `cli-vklog-${process.pid}`;
const TOKEN = 'vklog-test-token-d3adb33f';

beforeAll(async () => {
  cluster = await ensureCluster();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'vklog-'));
  const creds = await readKubeconfig(cluster.kubeconfig);
  await kubeRequest(creds, 'POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
}, 10 * 60_000);
afterAll(async () => {
  await kubeRequest(await readKubeconfig(cluster.kubeconfig), 'DELETE', `/api/v1/namespaces/${ns}`).catch(() => undefined);
  fs.rmSync(dir, { recursive: true, force: true });
});

async function run(argv: string[], env: Record<string, string> = {}) {
  const c = captureIO(env);
  const code = await meshctl(argv, c.io);
  return { code, stdout: c.stdout(), stderr: c.stderr() };
}

/** The admin kubeconfig with its user replaced by a bearer token (the API server refuses it: 401). */
function tokenKubeconfig(): string {
  const config = parseYaml(fs.readFileSync(cluster.kubeconfig, 'utf8')) as { users: Array<{ name: string; user: Record<string, string> }> };
  config.users = config.users.map((u) => ({ name: u.name, user: { token: TOKEN } }));
  const file = path.join(dir, 'token.kubeconfig');
  fs.writeFileSync(file, stringify(config));
  return file;
}

const deployments = () => `/apis/apps/v1/namespaces/${ns}/deployments?labelSelector=app%3Dmeshd`;
const requestLine = (status: string) => new RegExp(`^kube: GET https://127\\.0\\.0\\.1:\\d+${deployments().replace(/[?.]/g, '\\$&')} ${status} in \\d+ms$`, 'm');

describe('meshctl --vklog', () => {
  it('logs nothing below 6', async () => {
    for (const level of [[], ['--vklog=5']]) {
      const r = await run(['version', '--short', '-c', cluster.kubeconfig, '-i', ns, ...level]);
      expect(r.code).toBe(0);
      expect(r.stderr).not.toContain('kube:');
    }
  });

  it('at 6 logs each request: method, URL, status and duration, without headers', async () => {
    const r = await run(['version', '--short', '-c', cluster.kubeconfig, '-i', ns, '--vklog', '6']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^client version: /);
    expect(r.stderr).toMatch(requestLine('200 OK'));
    expect(r.stderr).not.toContain('headers:');
  });

  it('at 8 adds the request and response headers', async () => {
    const r = await run(['version', '--short', '-c', cluster.kubeconfig, '-i', ns, '--vklog=8']);
    expect(r.stderr).toMatch(requestLine('200 OK'));
    const [, request, response] = /^kube: GET .*deployments.*\nkube: {3}request headers:\n((?:kube: {5}.*\n)+)kube: {3}response headers:\n((?:kube: {5}.*\n)+)/m.exec(r.stderr) ?? [];
    expect(request.split('\n')).toEqual(expect.arrayContaining(['kube:     Accept: application/json', 'kube:     User-Agent: meshctl']));
    expect(response.split('\n')).toEqual(expect.arrayContaining(['kube:     content-type: application/json']));
  });

  it('redacts the bearer token of the kubeconfig, and says what the API server answered', async () => {
    const r = await run(['version', '--short', '-c', tokenKubeconfig(), '-i', ns, '--vklog=9']);
    expect(r.code).toBe(0); // the client version is still printed
    // The first request (API discovery) is refused already.
    expect(r.stderr).toMatch(/^kube: GET https:\/\/127\.0\.0\.1:\d+\/apis\/apps\/v1 401 Unauthorized in \d+ms$/m);
    expect(r.stderr).toMatch(/^kube: {5}Authorization: Bearer <redacted>$/m);
    expect(r.stderr).not.toContain(TOKEN);
  });

  it('logs a request that got no answer', async () => {
    const config = parseYaml(fs.readFileSync(cluster.kubeconfig, 'utf8')) as { clusters: Array<{ cluster: Record<string, string> }> };
    config.clusters[0].cluster.server = 'https://127.0.0.1:1';
    const file = path.join(dir, 'closed.kubeconfig');
    fs.writeFileSync(file, stringify(config));
    const r = await run(['version', '--short', '-c', file, '-i', ns, '--vklog=6']);
    expect(r.stderr).toMatch(/^kube: GET https:\/\/127\.0\.0\.1:1\/apis\/apps\/v1 failed after \d+ms: .*ECONNREFUSED/m);
  });

  it('takes the level from the MESHCONFIG file too', async () => {
    const file = path.join(dir, 'meshconfig.yaml');
    fs.writeFileSync(file, 'vklog: 6\n');
    const r = await run(['version', '--short', '-c', cluster.kubeconfig, '-i', ns], { MESHCONFIG: file });
    expect(r.stderr).toMatch(requestLine('200 OK'));
  });
});
