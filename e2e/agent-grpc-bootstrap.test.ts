/**
 * `mesh-agent grpc-bootstrap`, run with the arguments and variables of the injector's grpc-simple
 * init step (the real template, downward API resolved as the kubelet does): the bootstrap file it
 * writes is what a real proxyless gRPC client (grpc-js-xds, its own process) reads through
 * GRPC_XDS_BOOTSTRAP, and the client's calls are routed by the configuration meshd serves it.
 * Bad input is refused naming the variable or flag.
 *
 * Needs `npm run build` (the daemon and the agent run from dist/).
 */
import { spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_INJECTOR_CONFIG, parseInjectionValues } from '../src/inject/config.js';
import { injectPod } from '../src/inject/inject.js';
import type { Container, Pod } from '../src/inject/pod.js';
import { parseProxy } from '../src/model/proxy.js';
import { REPO_ROOT } from '../test/support/daemon.js';
import { kubeletArgs, kubeletEnv } from '../test/support/injected-agent.js';
import { destinationRule, ECHO_TARGET, serviceEntry, weightedVirtualService } from './support/mesh-config.js';
import { withMesh } from './support/mesh.js';

const AGENT_CLI = join(REPO_ROOT, 'dist', 'cli', 'mesh-agent.js');

/** The grpc-simple init container of a pod in namespace default, as the kubelet would run it. */
function initStep(): { args: string[]; env: Record<string, string> } {
  const pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'client-0', namespace: 'default', annotations: { 'inject.mesh.io/templates': 'grpc-simple' } },
    spec: { serviceAccountName: 'client', containers: [{ name: 'app', image: 'app' }] },
  } as unknown as Pod;
  const out = injectPod(pod, 'default', {
    config: DEFAULT_INJECTOR_CONFIG,
    values: parseInjectionValues(JSON.stringify({ global: { meshNamespace: 'mesh-system', discoveryAddress: 'meshd.mesh-system.svc:15012' } })),
    mesh: { trustDomain: 'cluster.local' },
    revision: 'default',
    domain: 'cluster.local',
    clusterSupportsNativeSidecars: false,
    probeLocalhost: false,
    legacyFsGroup: false,
  }).pod;
  const init = (out.spec!.initContainers ?? []).find((c) => c.args?.[0] === 'grpc-bootstrap') as Container;
  const env = kubeletEnv(init, { name: 'client-0', namespace: 'default', podIP: '127.0.0.1', serviceAccount: 'client' });
  return { args: kubeletArgs(init, env), env };
}

const run = (args: string[], env: Record<string, string>): { status: number | null; stderr: string } => {
  const r = spawnSync(process.execPath, [AGENT_CLI, ...args], { env: { PATH: process.env.PATH ?? '', ...env }, encoding: 'utf8', timeout: 30_000 });
  return { status: r.status, stderr: r.stderr };
};

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'mesh-agent-grpc-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

it('the grpc-simple init step writes a bootstrap that a grpc-js-xds client uses to route through meshd', () =>
  withMesh(
    {
      backends: { a: {}, b: {} },
      files: (b) => ({
        'service-entry.yaml': serviceEntry({ endpoints: [{ port: b.a.port, version: 'v1' }, { port: b.b.port, version: 'v2' }] }),
        'destination-rule.yaml': destinationRule({ subsets: ['v1', 'v2'] }),
        'virtual-service.yaml': weightedVirtualService({ v2: 100 }),
      }),
      client: false,
    },
    async (mesh) => {
      const { args, env } = initStep();
      expect(args.slice(0, 2)).toEqual(['grpc-bootstrap', '--xds-address']);
      expect(args[2]).toBe('meshd.mesh-system.svc:15010');
      const out = join(dir, 'bootstrap.json');
      // The daemon of this test listens on a loopback port instead of meshd's Service; the output goes to a temporary file.
      const local = args.map((a, i) => (args[i - 1] === '--xds-address' ? mesh.daemon.grpcAddr : args[i - 1] === '--out' ? out : a));
      const r = run(local, env);
      expect(r.stderr).toContain('wrote the gRPC xDS bootstrap');
      expect(r.status).toBe(0);
      const bootstrap = JSON.parse(await readFile(out, 'utf8')) as { node: { id: string; metadata: Record<string, unknown> } };
      expect(bootstrap.node.id).toBe('sidecar~127.0.0.1~client-0.default~default.svc.cluster.local');
      expect(parseProxy(bootstrap.node.id, bootstrap.node.metadata)).toMatchObject({ type: 'grpc', namespace: 'default', workloadId: 'client-0.default' });
      const client = await mesh.newClient({ env: { GRPC_XDS_BOOTSTRAP: out } });
      const result = await client.callUntil(ECHO_TARGET, { count: 10 }, (x) => x.failed === 0 && x.results.b === 10, 30_000, 'all calls routed to v2 (backend b)');
      expect(result.results).toEqual({ b: 10 });
    },
  ), 90_000);

it('refuses a missing variable or a bad address by name', () => {
  const { args, env } = initStep();
  const noPod = { ...env };
  delete noPod.POD_NAME;
  const a = run(args.map((x, i) => (args[i - 1] === '--out' ? join(dir, 'x.json') : x)), noPod);
  expect(a.status).toBe(2);
  expect(a.stderr).toContain('POD_NAME: is not set');
  const b = run(['grpc-bootstrap', '--xds-address', 'no-port', '--out', join(dir, 'y.json')], env);
  expect(b.status).toBe(2);
  expect(b.stderr).toContain('--xds-address: "no-port" is not host:port');
});
