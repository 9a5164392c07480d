import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { parse as parseYaml } from 'yaml';
import { main as meshDiscovery } from '../../src/cli/mesh-discovery.js';
import { main as meshctl } from '../../src/cli/meshctl.js';
import { ensureCluster, kubeRequest, readKubeconfig } from '../support/cluster.js';
import { getBuildInfo } from '../../src/version/build-info.js';
import { captureIO } from './capture.js';
import { REPO_ROOT } from './spec-tables.js';

const pkgVersion = (JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string }).version;

async function run(program: typeof meshDiscovery, argv: string[], env: Record<string, string> = {}) {
  const c = captureIO(env);
  const code = await program(argv, c.io);
  return { code, stdout: c.stdout(), stderr: c.stderr() };
}

describe('build info', () => {
  it('reads the version from package.json and the rest from the environment', () => {
    const info = getBuildInfo({ MESH_BUILD_GIT_REVISION: 'abc123', MESH_BUILD_STATUS: 'Clean', MESH_BUILD_TAG: 'v0.1.0', MESH_BUILD_TIME: '2026-01-02T03:04:05Z' });
    expect(info).toEqual({ version: pkgVersion, revision: 'abc123', nodeVersion: process.version, status: 'Clean', tag: 'v0.1.0', buildTime: '2026-01-02T03:04:05Z' });
    expect(getBuildInfo({})).toMatchObject({ revision: 'unknown', status: 'unknown', tag: 'unknown', buildTime: 'unknown' });
  });

  it('prefers a build stamp file', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'stamp-'));
    const stamp = path.join(dir, 'build-stamp.json');
    fs.writeFileSync(stamp, JSON.stringify({ version: '9.9.9', revision: 'fromfile', status: 'Modified', buildTime: '2026-01-02T03:04:05Z' }));
    const info = getBuildInfo({ MESH_BUILD_GIT_REVISION: 'fromenv', MESH_BUILD_TAG: 't1' }, pathToFileURL(stamp));
    expect(info).toMatchObject({ version: '9.9.9', revision: 'fromfile', status: 'Modified', tag: 't1', buildTime: '2026-01-02T03:04:05Z' });
    fs.rmSync(dir, { recursive: true });
  });
});

describe('mesh-discovery version', () => {
  it('prints JSON with -o json', async () => {
    const r = await run(meshDiscovery, ['version', '-o', 'json'], { MESH_BUILD_GIT_REVISION: 'abc123' });
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({
      clientVersion: { version: pkgVersion, revision: 'abc123', nodeVersion: process.version, status: 'unknown', tag: 'unknown', buildTime: 'unknown' },
    });
  });

  it('prints YAML with --output=yaml', async () => {
    const r = await run(meshDiscovery, ['version', '--output=yaml']);
    expect(r.code).toBe(0);
    expect(parseYaml(r.stdout)).toEqual({ clientVersion: getBuildInfo({}) });
  });

  it('prints the full line by default and the version alone with --short', async () => {
    const full = await run(meshDiscovery, ['version']);
    expect(full.stdout).toBe(`${pkgVersion} (revision unknown, status unknown, tag unknown, built unknown, node ${process.version})\n`);
    for (const argv of [['version', '--short'], ['version', '-s'], ['version', '--short=true'], ['version', '-s=true']]) {
      expect((await run(meshDiscovery, argv)).stdout).toBe(`${pkgVersion}\n`);
    }
    expect((await run(meshDiscovery, ['version', '--short=false'])).stdout).toBe(full.stdout);
  });

  it.each([
    [['version', '-o', 'xml'], 'error: --output: invalid value "xml" (choose from yaml, json)\n'],
    [['version', '--short=maybe'], 'error: --short: invalid boolean "maybe" (use true or false)\n'],
  ])('%j fails with exit code 1', async (argv, message) => {
    const r = await run(meshDiscovery, argv);
    expect(r).toEqual({ code: 1, stdout: '', stderr: message });
  });
});

describe('meshctl version', () => {
  it('reports an unreachable control plane on stderr and still prints the client version; --remote=false skips it', async () => {
    const missing = path.join(os.tmpdir(), `no-such-kubeconfig-${process.pid}`);
    const remote = await run(meshctl, ['version', '--short', '-c', missing]);
    expect(remote.code).toBe(0);
    expect(remote.stdout).toBe(`client version: ${pkgVersion}\n`);
    expect(remote.stderr).toMatch(/^control plane version: not available \(.*no-such-kubeconfig/);
    const local = await run(meshctl, ['version', '--remote=false', '-s', '-c', missing]);
    expect(local).toEqual({ code: 0, stdout: `${pkgVersion}\n`, stderr: '' });
  });

  it('reads the control plane version from the meshd Deployments of the mesh namespace', async () => {
    const cluster = await ensureCluster();
    const creds = await readKubeconfig(cluster.kubeconfig);
    const ns = `cli-version-${process.pid}`;
    await kubeRequest(creds, 'POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    try {
      const labels = { app: 'meshd', 'mesh.io/rev': 'canary' };
      const res = await kubeRequest(creds, 'POST', `/apis/apps/v1/namespaces/${ns}/deployments`, {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'meshd-canary', labels },
        spec: { replicas: 0, selector: { matchLabels: labels }, template: { metadata: { labels }, spec: { containers: [{ name: 'discovery', image: 'registry.example/mesh/meshd:1.4.2' }] } } },
      });
      expect(res.status).toBe(201);
      const r = await run(meshctl, ['version', '-c', cluster.kubeconfig, '-i', ns, '--short']);
      expect(r).toEqual({ code: 0, stdout: `client version: ${pkgVersion}\ncontrol plane version: 1.4.2\n`, stderr: '' });
      const json = await run(meshctl, ['version', '-c', cluster.kubeconfig, '-i', ns, '-o', 'json']);
      expect(JSON.parse(json.stdout).meshVersion).toEqual([{ deployment: `${ns}/meshd-canary`, revision: 'canary', version: '1.4.2', readyReplicas: 0 }]);
      const other = await run(meshctl, ['version', '-c', cluster.kubeconfig, '-i', ns, '-r', 'stable', '--short']);
      expect(other.stderr).toBe(`control plane version: no meshd found in namespace ${ns} for revision stable\n`);
    } finally {
      await kubeRequest(creds, 'DELETE', `/api/v1/namespaces/${ns}`);
    }
  }, 60_000);

  it('accepts the global flags and -r', async () => {
    const r = await run(meshctl, ['--context', 'kind', 'version', '-o', 'json', '--remote=false', '-r', 'canary', '-i', 'mesh-x']);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).clientVersion.version).toBe(pkgVersion);
  });

  it('rejects a bad output format and a bad global flag', async () => {
    expect(await run(meshctl, ['version', '-o', 'table'])).toMatchObject({ code: 1, stderr: 'error: --output: invalid value "table" (choose from yaml, json)\n' });
    expect(await run(meshctl, ['version', '--vklog', 'loud'])).toMatchObject({ code: 1, stderr: 'error: --vklog: invalid integer "loud"\n' });
  });
});
