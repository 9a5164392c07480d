/**
 * Where the client configuration comes from: explicit path, KUBECONFIG, in-cluster service
 * account, ~/.kube/config, in that order; and errors that say what was tried.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadKubeConfig } from '../../src/kube/client.js';

let dir: string;

function kubeconfig(server: string, contexts: string[] = ['main']): string {
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    ...contexts.map((c) => `- name: ${c}\n  cluster:\n    server: ${server}/${c}`),
    'users:',
    '- name: u\n  user:\n    token: abc',
    'contexts:',
    ...contexts.map((c) => `- name: ${c}\n  context:\n    cluster: ${c}\n    user: u\n    namespace: ns-${c}`),
    `current-context: ${contexts[0]}`,
  ].join('\n');
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kubeconfig-test-'));
  await writeFile(join(dir, 'explicit.yaml'), kubeconfig('https://explicit.example:6443'));
  await writeFile(join(dir, 'env.yaml'), kubeconfig('https://env.example:6443', ['first', 'second']));
  await mkdir(join(dir, 'home', '.kube'), { recursive: true });
  await writeFile(join(dir, 'home', '.kube', 'config'), kubeconfig('https://home.example:6443'));
  await mkdir(join(dir, 'sa'));
  await writeFile(join(dir, 'sa', 'token'), 'sa-token');
  await writeFile(join(dir, 'sa', 'namespace'), 'mesh-system\n');
  await writeFile(join(dir, 'broken.yaml'), 'clusters: [\n');
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const inCluster = { KUBERNETES_SERVICE_HOST: '10.0.0.1', KUBERNETES_SERVICE_PORT: '443' };

describe('loadKubeConfig', () => {
  it('prefers the explicit path over KUBECONFIG, in-cluster and home', async () => {
    const loaded = await loadKubeConfig({
      kubeconfig: join(dir, 'explicit.yaml'),
      env: { KUBECONFIG: join(dir, 'env.yaml'), ...inCluster },
      homeDir: join(dir, 'home'),
      serviceAccountDir: join(dir, 'sa'),
    });
    expect(loaded.server).toBe('https://explicit.example:6443/main');
    expect(loaded.source).toBe(join(dir, 'explicit.yaml'));
    expect(loaded.namespace).toBe('ns-main');
  });

  it('uses KUBECONFIG before in-cluster and home, and honours --context', async () => {
    const env = { KUBECONFIG: `${join(dir, 'missing.yaml')}:${join(dir, 'env.yaml')}`, ...inCluster };
    const loaded = await loadKubeConfig({ env, homeDir: join(dir, 'home'), serviceAccountDir: join(dir, 'sa') });
    expect(loaded.server).toBe('https://env.example:6443/first');
    const second = await loadKubeConfig({ env, context: 'second', homeDir: join(dir, 'home'), serviceAccountDir: join(dir, 'sa') });
    expect(second.server).toBe('https://env.example:6443/second');
    expect(second.context).toBe('second');
  });

  it('uses the in-cluster service account before ~/.kube/config', async () => {
    const loaded = await loadKubeConfig({ env: inCluster, homeDir: join(dir, 'home'), serviceAccountDir: join(dir, 'sa') });
    expect(loaded.source).toBe('in-cluster');
    expect(loaded.server).toBe('https://10.0.0.1:443');
    expect(loaded.namespace).toBe('mesh-system');
  });

  it('falls back to ~/.kube/config', async () => {
    const loaded = await loadKubeConfig({ env: {}, homeDir: join(dir, 'home'), serviceAccountDir: join(dir, 'sa') });
    expect(loaded.source).toBe(join(dir, 'home', '.kube', 'config'));
    expect(loaded.server).toBe('https://home.example:6443/main');
  });

  it('names everything it tried when nothing is found', async () => {
    await expect(loadKubeConfig({ env: {}, homeDir: join(dir, 'nohome'), serviceAccountDir: join(dir, 'nosa') })).rejects.toThrow(
      `no Kubernetes client configuration found: no kubeconfig path given; KUBECONFIG is not set; not in a cluster (KUBERNETES_SERVICE_HOST is not set); ${join(dir, 'nohome', '.kube', 'config')} does not exist`,
    );
    await expect(loadKubeConfig({ env: inCluster, homeDir: join(dir, 'nohome'), serviceAccountDir: join(dir, 'nosa') })).rejects.toThrow(
      `in-cluster: no readable token at ${join(dir, 'nosa', 'token')}`,
    );
  });

  it('reports a missing or broken file and an unknown context clearly', async () => {
    await expect(loadKubeConfig({ kubeconfig: join(dir, 'nope.yaml') })).rejects.toThrow(`kubeconfig ${join(dir, 'nope.yaml')} does not exist`);
    await expect(loadKubeConfig({ kubeconfig: join(dir, 'broken.yaml') })).rejects.toThrow(`kubeconfig ${join(dir, 'broken.yaml')} cannot be loaded`);
    await expect(loadKubeConfig({ kubeconfig: join(dir, 'env.yaml'), context: 'third' })).rejects.toThrow('no context "third" (known: first, second)');
  });
});
