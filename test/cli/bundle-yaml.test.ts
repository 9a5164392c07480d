/**
 * meshctl as users get it (the bundle, dist/bin/meshctl.js) reads and writes YAML on its lazily
 * loaded paths: a MESHCONFIG defaults file, YAML output (`x workload group create`, `profile dump`),
 * and kubeconfig contexts for completion. In the bundle a lazy `import('yaml')` of the library has no
 * named exports (a CommonJS package in a split chunk), which once broke every one of these with
 * "… is not a function"; they now go through src/util/yaml.ts.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { distProgram } from './dist.js';

let dir: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bundle-yaml-'));
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

function bundle(args: string[], env: Record<string, string> = {}) {
  const r = spawnSync(process.execPath, [distProgram('meshctl-bundle'), ...args], { env: { ...process.env, HOME: dir, ...env }, encoding: 'utf8', timeout: 60_000 });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

describe('the meshctl bundle and YAML', () => {
  it('reads a MESHCONFIG defaults file', () => {
    const file = path.join(dir, 'defaults.yaml');
    fs.writeFileSync(file, 'xds-port: 15013\n');
    const r = bundle(['x', 'config', 'list'], { MESHCONFIG: file });
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/xds-port\s+15013/);
  });

  it('writes YAML', () => {
    const r = bundle(['x', 'workload', 'group', 'create', '--name', 'vm', '-n', 'shop']);
    expect(r.err).toBe('');
    expect(r.out).toBe('apiVersion: networking.mesh.io/v1\nkind: WorkloadGroup\nmetadata:\n  name: vm\n  namespace: shop\nspec:\n  template:\n    serviceAccount: default\n');
  });

  it('offers the contexts of a kubeconfig', () => {
    const kubeconfig = path.join(dir, 'kubeconfig');
    fs.writeFileSync(kubeconfig, 'apiVersion: v1\nkind: Config\ncontexts:\n- name: east\n  context: {cluster: e, user: e}\n- name: west\n  context: {cluster: w, user: w}\n');
    const r = bundle(['__complete', 'version', '--context', ''], { KUBECONFIG: kubeconfig });
    expect(r.err).toBe('');
    expect(r.out.split('\n')).toEqual(expect.arrayContaining([expect.stringMatching(/^east(\t|$)/), expect.stringMatching(/^west(\t|$)/)]));
  });
});
