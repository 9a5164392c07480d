/**
 * Every `-o` output of meshctl's commands against golden files under test/golden/
 * (`UPDATE_GOLDEN=1` rewrites them, see golden.ts): version (line, short, json, yaml; with and
 * without a control plane), analyze (log, json, yaml, the analyzer list), profile (list, dump as
 * yaml, json and flags, diff), options, x workload group create, x revision list|describe (table, json) and tag list (table,
 * json). The cluster views run against an API server of their own (an empty cluster on the local
 * plane's etcd), so what they print does not depend on other tests.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { main as meshctl } from '../../src/cli/meshctl.js';
import { kubeRequest } from '../support/cluster.js';
import { REMOTE_APISERVER_START_TIMEOUT_MS, REMOTE_APISERVER_STOP_TIMEOUT_MS, startRemoteApiServer, type RemoteApiServer } from '../support/remote-apiserver.js';
import { captureIO } from './capture.js';
import { expectGolden, normalize } from './golden.js';
import { REPO_ROOT } from './spec-tables.js';

const PKG_VERSION = (JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
/** Fixed build facts, as a build stamp would give them. */
const BUILD_ENV = { MESH_BUILD_GIT_REVISION: '0123456789abcdef0123456789abcdef01234567', MESH_BUILD_STATUS: 'Clean', MESH_BUILD_TAG: 'v0.1.0', MESH_BUILD_TIME: '2026-01-02T03:04:05Z' };

async function run(argv: string[], env: Record<string, string> = {}) {
  const c = captureIO({ ...BUILD_ENV, ...env });
  const code = await meshctl(argv, c.io);
  return { code, stdout: normalize(c.stdout(), { [process.version]: '<node-version>', [`${PKG_VERSION} (`]: '<version> (', [`"version": "${PKG_VERSION}"`]: '"version": "<version>"', [`version: ${PKG_VERSION}\n`]: 'version: <version>\n', [`client version: ${PKG_VERSION}\n`]: 'client version: <version>\n' }), stderr: c.stderr() };
}

/** Runs meshctl and compares standard output with the golden file; the exit code must be `code`. */
async function golden(name: string, argv: string[], code = 0, env: Record<string, string> = {}): Promise<void> {
  const r = await run(argv, env);
  expect({ argv, code: r.code }).toEqual({ argv, code });
  expectGolden(name, r.stdout);
}

describe('meshctl version', () => {
  it.each([
    ['meshctl-version.txt', []],
    ['meshctl-version-short.txt', ['--short']],
    ['meshctl-version.json', ['-o', 'json']],
    ['meshctl-version.yaml', ['-o', 'yaml']],
  ])('%s', (name, extra) => golden(name, ['version', '--remote=false', ...extra]));
});

describe('meshctl analyze', () => {
  let dir: string;
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'golden-analyze-'));
    fs.writeFileSync(
      path.join(dir, 'shop.yaml'),
      `apiVersion: networking.mesh.io/v1
kind: ServiceEntry
metadata: {name: reviews, namespace: shop}
spec:
  hosts: [reviews.example.com]
  ports: [{number: 80, name: http, protocol: HTTP}]
  resolution: DNS
---
apiVersion: networking.mesh.io/v1
kind: ServiceEntry
metadata: {name: no-ports, namespace: shop}
spec:
  hosts: [legacy.example.com]
  resolution: DNS
---
apiVersion: networking.mesh.io/v1
kind: DestinationRule
metadata: {name: reviews, namespace: shop}
spec:
  host: reviews.example.com
  subsets: [{name: v1, labels: {version: v1}}]
---
apiVersion: networking.mesh.io/v1
kind: VirtualService
metadata: {name: reviews-route, namespace: shop}
spec:
  hosts: [reviews.example.com]
  http:
    - route:
        - destination: {host: reviews.example.com, subset: v2}
    - route:
        - destination: {host: ratings.example.com}
`,
    );
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it.each([
    ['meshctl-analyze.log', []],
    ['meshctl-analyze.json', ['-o', 'json']],
    ['meshctl-analyze.yaml', ['-o', 'yaml']],
  ])('%s', (name, extra) => golden(name, ['analyze', '--use-cluster=false', '-A', path.join(dir, 'shop.yaml'), ...extra], 79));

  it('meshctl-analyze-clean.log', () => golden('meshctl-analyze-clean.log', ['analyze', '--use-cluster=false', '-n', 'elsewhere', path.join(dir, 'shop.yaml')]));
  it('meshctl-analyze-clean.json', () => golden('meshctl-analyze-clean.json', ['analyze', '--use-cluster=false', '-n', 'elsewhere', '-o', 'json', path.join(dir, 'shop.yaml')]));
  it('meshctl-analyze-list.txt', () => golden('meshctl-analyze-list.txt', ['analyze', '-L']));
});

describe('meshctl profile', () => {
  it.each([
    ['meshctl-profile-list.txt', ['profile', 'list'], 0],
    ['meshctl-profile-dump-demo.yaml', ['profile', 'dump', 'demo'], 0],
    ['meshctl-profile-dump-demo.json', ['profile', 'dump', 'demo', '-o', 'json'], 0],
    ['meshctl-profile-dump-demo.flags', ['profile', 'dump', 'demo', '-o', 'flags'], 0],
    ['meshctl-profile-dump-meshd.json', ['profile', 'dump', '-p', 'components.meshd', '-o', 'json'], 0],
    ['meshctl-profile-diff.txt', ['profile', 'diff', 'default', 'demo'], 1],
  ] as const)('%s', (name, argv, code) => golden(name, [...argv], code));
});

describe('meshctl options', () => {
  it('meshctl-options.txt', () => golden('meshctl-options.txt', ['options', '-n', 'shop'], 0, { MESHCTL_XDS_PORT: '15013' }));
});

describe('meshctl x workload group create', () => {
  it('meshctl-workload-group.yaml', () =>
    golden('meshctl-workload-group.yaml', ['x', 'workload', 'group', 'create', '--name', 'ratings-vm', '-n', 'shop', '-l', 'app=ratings,version=v3', '-a', 'team=data', '-p', 'http=8080', '-p', 'grpc=9090', '-s', 'ratings']));
});

describe('cluster views', () => {
  let remote: RemoteApiServer;
  const c = (argv: string[]) => ['-c', remote.kubeconfig, ...argv];

  beforeAll(async () => {
    remote = await startRemoteApiServer();
    const post = async (p: string, body: unknown): Promise<void> => {
      const res = await kubeRequest(remote.creds, 'POST', p, body);
      if (res.status !== 201) throw new Error(`POST ${p}: ${res.status} ${JSON.stringify(res.body)}`);
    };
    const deployment = (name: string, labels: Record<string, string>, image: string, replicas: number) => ({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name, labels },
      spec: { replicas, selector: { matchLabels: { app: labels.app } }, template: { metadata: { labels: { app: labels.app } }, spec: { containers: [{ name: 'main', image }] } } },
    });
    // Labelled as meshctl install labels them (see meshctl manifest generate).
    const owner = { 'install.mesh.io/owning-resource': 'installed-state', 'install.mesh.io/owning-resource-namespace': 'mesh-system', 'mesh.io/rev': 'default' };
    const canaryOwner = { 'install.mesh.io/owning-resource': 'installed-state-canary', 'install.mesh.io/owning-resource-namespace': 'mesh-system', 'mesh.io/rev': 'canary' };
    for (const name of ['mesh-system', 'web']) await post('/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels: name === 'web' ? { 'mesh-injection': 'enabled' } : {} } });
    await post('/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'shop', labels: { 'mesh.io/rev': 'prod' } } });
    const deployments = '/apis/apps/v1/namespaces/mesh-system/deployments';
    await post(deployments, deployment('meshd', { app: 'meshd', 'operator.mesh.io/component': 'Meshd', ...owner }, 'registry.example/mesh/meshd:1.4.2', 1));
    await post(deployments, deployment('meshd-canary', { app: 'meshd', 'operator.mesh.io/component': 'Meshd', ...canaryOwner }, 'registry.example/mesh/meshd:1.5.0', 2));
    await post(deployments, deployment('mesh-ingressgateway', { app: 'mesh-ingressgateway', 'operator.mesh.io/component': 'IngressGateways', ...owner }, 'registry.example/mesh/proxy:1.4.2', 1));
    const webhooks = '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations';
    await post(webhooks, { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'MutatingWebhookConfiguration', metadata: { name: 'mesh-sidecar-injector', labels: owner }, webhooks: [] });
    await post(webhooks, { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'MutatingWebhookConfiguration', metadata: { name: 'mesh-sidecar-injector-canary', labels: canaryOwner }, webhooks: [] });
    await post(webhooks, {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'MutatingWebhookConfiguration',
      metadata: { name: 'mesh-revision-tag-prod', labels: { 'mesh.io/tag': 'prod', 'mesh.io/rev': 'canary' } },
      webhooks: [],
    });
    await post('/api/v1/namespaces/shop/serviceaccounts', { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'default' } });
    await post('/api/v1/namespaces/shop/pods', { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'reviews-v1' }, spec: { containers: [{ name: 'main', image: 'registry.example/reviews:1' }] } });
  }, REMOTE_APISERVER_START_TIMEOUT_MS + 60_000);

  afterAll(async () => {
    await remote?.stop();
  }, REMOTE_APISERVER_STOP_TIMEOUT_MS);

  it.each([
    ['meshctl-version-remote.txt', ['version']],
    ['meshctl-version-remote-short.txt', ['version', '--short']],
    ['meshctl-version-remote.json', ['version', '-o', 'json']],
    ['meshctl-version-remote.yaml', ['version', '-o', 'yaml']],
    ['meshctl-x-revision-list.txt', ['x', 'revision', 'list']],
    ['meshctl-x-revision-list-verbose.txt', ['x', 'revision', 'list', '-v']],
    ['meshctl-x-revision-list.json', ['x', 'revision', 'list', '-o', 'json']],
    ['meshctl-x-revision-describe-canary.txt', ['x', 'revision', 'describe', 'canary', '-v']],
    ['meshctl-x-revision-describe-default.txt', ['x', 'revision', 'describe', 'default']],
    ['meshctl-x-revision-describe-canary.json', ['x', 'revision', 'describe', 'canary', '-v', '-o', 'json']],
    ['meshctl-tag-list.txt', ['tag', 'list']],
    ['meshctl-x-revision-tag-list.json', ['x', 'revision', 'tag', 'list', '-o', 'json']],
  ])('%s', (name, argv) => golden(name, c(argv)));
});
