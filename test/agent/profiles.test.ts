/**
 * Every install profile starts proxies the agent can run. For each profile of manifests/profiles
 * (and with a revision, and in another namespace) the install renderer's mesh and injector
 * ConfigMaps feed the injector as meshd reads them; a pod injected with that configuration, and
 * every gateway Deployment the profile renders, are run through the agent's own settings (the
 * container's arguments and variables as the kubelet resolves them) and bootstrap writer, and the
 * bootstrap through tools/xds-validate -bootstrap. The agent's paths must lie on volumes, since
 * both containers have a read-only root file system, and the pod's labels must reach it (the node
 * metadata that Gateway resources select on).
 */
import { readdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { envoyBootstrap } from '../../src/agent/bootstrap.js';
import { agentSettings, type AgentSettings } from '../../src/agent/settings.js';
import { parseMeshConfig } from '../../src/bootstrap/mesh-config.js';
import { injectorConfigMapContent, type InjectionInputs } from '../../src/inject/config.js';
import { injectPod } from '../../src/inject/inject.js';
import type { Container, Pod } from '../../src/inject/pod.js';
import { generateManifests } from '../../src/install/generate.js';
import type { K8sObject } from '../../src/install/render/index.js';
import { BUILTIN_MANIFESTS_DIR } from '../../src/install/sources.js';
import { parseProxy } from '../../src/model/proxy.js';
import { GO_TOOL_BUILD_TIMEOUT_MS, goToolPath, validateBootstrap, type BootstrapReport } from '../support/go-tools.js';
import { kubeletArgs, kubeletEnv, proxyFlags, type PodFacts } from '../support/injected-agent.js';

const PROFILES = readdirSync(join(BUILTIN_MANIFESTS_DIR, 'profiles'))
  .filter((f) => f.endsWith('.yaml'))
  .map((f) => f.slice(0, -'.yaml'.length))
  .sort();

let validator: string;
let dir: string;
beforeAll(async () => {
  validator = await goToolPath('xds-validate');
  dir = await mkdtemp(join(tmpdir(), 'mesh-agent-profiles-'));
}, GO_TOOL_BUILD_TIMEOUT_MS);
afterAll(() => rm(dir, { recursive: true, force: true }));

let files = 0;
const validate = (json: unknown): Promise<BootstrapReport> => validateBootstrap(validator, dir, `bootstrap-${++files}`, json);

type PodSpec = { containers: Container[]; volumes?: Array<{ name: string; emptyDir?: unknown; downwardAPI?: { items: Array<{ path: string; fieldRef?: { fieldPath: string } }> } }>; serviceAccountName?: string };

/** The directories the agent writes or reads, each of which must be a mount of `c`. */
function pathsOutsideMounts(c: Container, s: AgentSettings): string[] {
  const mounts = (c.volumeMounts ?? []).map((m) => m.mountPath);
  const needed = [dirname(join('/', s.paths.sdsSocket)), s.paths.configDir, s.paths.certDir, s.paths.podInfoDir, dirname(s.paths.token), dirname(s.paths.rootCert)];
  return needed.filter((p) => !mounts.some((m) => p === m || p.startsWith(`${m}/`)));
}

/** The pod's labels as the agent reads them: a downward-API volume with `labels`, mounted at its pod-info directory. */
function labelsReachAgent(spec: PodSpec, c: Container, s: AgentSettings): boolean {
  const mount = (c.volumeMounts ?? []).find((m) => m.mountPath === s.paths.podInfoDir);
  const vol = spec.volumes?.find((v) => v.name === mount?.name);
  return vol?.downwardAPI?.items.some((i) => i.path === 'labels' && i.fieldRef?.fieldPath === 'metadata.labels') ?? false;
}

interface Case {
  readonly title: string;
  readonly sets: string[];
}

const CASES: Case[] = [
  ...PROFILES.map((p) => ({ title: p, sets: [`profile=${p}`] })),
  ...PROFILES.map((p) => ({ title: `${p}, revision canary`, sets: [`profile=${p}`, 'revision=canary'] })),
  { title: 'default, namespace mesh-alt, revision canary', sets: ['namespace=mesh-alt', 'revision=canary'] },
];

async function rendered(sets: string[]): Promise<K8sObject[]> {
  return (await generateManifests({ sets })).manifests.flatMap((m) => m.objects);
}

describe('install profiles start proxies the agent runs', () => {
  it('covers the profiles that install a control plane or gateways', () => {
    expect(PROFILES).toEqual(expect.arrayContaining(['default', 'demo', 'minimal', 'preview']));
  });

  describe.each(CASES)('$title', ({ title, sets }) => {
    let objects: K8sObject[];
    beforeAll(async () => {
      objects = await rendered(sets);
    });

    it('an injected pod: the agent accepts its proxy container and writes a valid bootstrap', async () => {
      const mesh = objects.find((o) => o.kind === 'ConfigMap' && typeof (o as { data?: { mesh?: string } }).data?.mesh === 'string') as { data: Record<string, string>; metadata: { name: string } } | undefined;
      const injector = objects.find((o) => o.kind === 'ConfigMap' && (o as { data?: { values?: string } }).data?.values !== undefined) as { data: Record<string, string>; metadata: { name: string; namespace?: string } } | undefined;
      if (!mesh || !injector) {
        // no control plane here (empty, remote): nothing is injected by this installation's meshd
        expect(objects.filter((o) => o.kind === 'Deployment' && /^meshd(-|$)/.test(o.metadata.name))).toEqual([]);
        return;
      }
      const mc = parseMeshConfig(mesh.data.mesh as string, `ConfigMap ${mesh.metadata.name}`);
      const revision = sets.find((s) => s.startsWith('revision='))?.slice('revision='.length) ?? 'default';
      const inputs: InjectionInputs = {
        ...injectorConfigMapContent(injector.data, `ConfigMap ${injector.metadata.name}`),
        mesh: { trustDomain: mc.trustDomain || 'cluster.local', defaultConfig: mc.defaultConfig },
        revision,
        domain: 'cluster.local',
        clusterSupportsNativeSidecars: false,
        probeLocalhost: false,
        legacyFsGroup: false,
      };
      const pod: Pod = {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'web-0', namespace: 'shop', labels: { app: 'web', version: 'v1' } },
        spec: { serviceAccountName: 'web', containers: [{ name: 'web', image: 'nginx', ports: [{ containerPort: 8080 }] }] },
      } as Pod;
      const { pod: out } = injectPod(pod, 'shop', inputs);
      const spec = out.spec as unknown as PodSpec;
      const proxy = spec.containers.find((c) => c.name === 'mesh-proxy') ?? (out.spec?.initContainers ?? []).find((c) => c.name === 'mesh-proxy');
      expect(proxy).toBeDefined();
      const facts: PodFacts = { name: 'web-0', namespace: 'shop', podIP: '10.1.2.3', serviceAccount: 'web' };
      const env = kubeletEnv(proxy as Container, facts);
      const { type, flags } = proxyFlags(kubeletArgs(proxy as Container, env));
      const settings = agentSettings(type, flags, env, { app: 'web', version: 'v1' });
      expect(settings.discoveryAddress).toBe(revision === 'default' ? `meshd.${injector.metadata.namespace}.svc:15012` : `meshd-${revision}.${injector.metadata.namespace}.svc:15012`);
      expect(settings.proxyConfig.tracing).toEqual(mc.defaultConfig?.tracing);
      expect(pathsOutsideMounts(proxy as Container, settings)).toEqual([]);
      expect(labelsReachAgent(spec, proxy as Container, settings)).toBe(true);
      const bootstrap = envoyBootstrap(settings, '/var/run/secrets/workload-spiffe-uds/socket');
      const node = bootstrap.node as { id: string; metadata: Record<string, unknown> };
      expect(parseProxy(node.id, node.metadata)).toMatchObject({ type: 'sidecar', namespace: 'shop', labels: { app: 'web', version: 'v1' } });
      const r = await validate(bootstrap);
      expect(r.errors ?? []).toEqual([]);
      expect(r.ok).toBe(true);
    });

    it('every gateway Deployment: the agent accepts its container and writes a valid bootstrap', async () => {
      const gateways = objects.filter((o) => o.kind === 'Deployment' && JSON.stringify(o).includes('"mesh-proxy"'));
      if (/^(default|demo)\b/.test(title)) expect(gateways.length).toBeGreaterThan(0);
      for (const d of gateways) {
        const template = (d.spec as { template: { metadata: { labels: Record<string, string> }; spec: PodSpec } }).template;
        const c = template.spec.containers.find((x) => x.name === 'mesh-proxy') as Container;
        const facts: PodFacts = { name: `${d.metadata.name}-7d9f-abcde`, namespace: d.metadata.namespace as string, podIP: '10.1.9.9', serviceAccount: template.spec.serviceAccountName as string };
        const env = kubeletEnv(c, facts);
        const { type, flags } = proxyFlags(kubeletArgs(c, env));
        const settings = agentSettings(type, flags, env, template.metadata.labels);
        expect(settings.kind).toBe('router');
        // this revision's meshd, and the certificate service beside it
        const meshd = objects.find((o) => o.kind === 'Service' && /^meshd(-|$)/.test(o.metadata.name));
        if (meshd) expect(settings.discoveryAddress).toBe(`${meshd.metadata.name}.${meshd.metadata.namespace}.svc:15012`);
        expect(settings.caAddress).toBe(settings.discoveryAddress);
        expect(pathsOutsideMounts(c, settings)).toEqual([]);
        expect(labelsReachAgent(template.spec, c, settings)).toBe(true);
        const bootstrap = envoyBootstrap(settings, '/var/run/secrets/workload-spiffe-uds/socket');
        const node = bootstrap.node as { id: string; metadata: Record<string, unknown> };
        expect(parseProxy(node.id, node.metadata)).toMatchObject({ type: 'router', labels: template.metadata.labels });
        const r = await validate(bootstrap);
        expect(r.errors ?? []).toEqual([]);
        expect(r.ok).toBe(true);
      }
    });
  });
});
