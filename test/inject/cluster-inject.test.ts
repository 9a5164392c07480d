/**
 * `meshctl cluster-inject` and `meshctl x cluster-uninject` from files (no cluster): for every
 * template, the injected pod equals the webhook's JSON patch applied to the same pod with the same
 * ConfigMap content and mesh config; every workload kind is injected, other kinds pass unchanged;
 * uninject(inject(x)) == x; standard input and -o work; bad input exits 1 with a message naming it.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { answerInjection, parseAdmissionReview } from '../../src/inject/admission.js';
import { injectorConfigMapContent, type InjectionInputs } from '../../src/inject/config.js';
import { applyJsonPatch, type JsonPatchOp } from '../../src/inject/json-patch.js';
import type { Pod } from '../../src/inject/pod.js';
import { main } from '../../src/cli/meshctl.js';
import type { CliIO } from '../../src/cli/runner.js';

const CONFIG = 'policy: enabled\nneverInjectSelector:\n  - matchLabels: {app: never}\n';
const VALUES = JSON.stringify({ global: { hub: 'registry.example/mesh', tag: '9.9.9', meshNamespace: 'mesh-system', proxy: { excludeOutboundPorts: '5432' } } });
const MESH = 'trustDomain: example.org\ndefaultConfig:\n  holdApplicationUntilProxyStarts: true\n';

let dir: string;
let files: string[];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cluster-inject-'));
  await writeFile(join(dir, 'config.yaml'), CONFIG);
  await writeFile(join(dir, 'values.json'), VALUES);
  await writeFile(join(dir, 'mesh.yaml'), MESH);
  files = ['--injectConfigFile', join(dir, 'config.yaml'), '--valuesFile', join(dir, 'values.json'), '--meshConfigFile', join(dir, 'mesh.yaml')];
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** The inputs the webhook builds from the same ConfigMap and mesh config (src/inject/source.ts), with the daemon's defaults. */
function webhookInputs(): InjectionInputs {
  return {
    ...injectorConfigMapContent({ config: CONFIG, values: VALUES }, 'ConfigMap mesh-system/mesh-sidecar-injector'),
    mesh: { trustDomain: 'example.org', defaultConfig: { holdApplicationUntilProxyStarts: true } },
    revision: 'default',
    domain: 'cluster.local',
    clusterSupportsNativeSidecars: false,
    probeLocalhost: false,
    legacyFsGroup: true,
  };
}

/** What the API server stores after the webhook answered for `pod` in `namespace`. */
function throughWebhook(pod: Pod, namespace: string): Pod {
  const review = { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request: { uid: 'u1', kind: { group: '', version: 'v1', kind: 'Pod' }, resource: { group: '', version: 'v1', resource: 'pods' }, namespace, operation: 'CREATE', object: pod } };
  const out = answerInjection(parseAdmissionReview(JSON.stringify(review)), webhookInputs());
  if (out.outcome !== 'success' || !out.response.patch) throw new Error(`the webhook did not inject: ${JSON.stringify(out)}`);
  const ops = JSON.parse(Buffer.from(out.response.patch, 'base64').toString('utf8')) as JsonPatchOp[];
  return applyJsonPatch(structuredClone(pod), ops) as Pod;
}

function io(stdin = ''): CliIO & { stdout: () => string; stderr: () => string } {
  let out = '';
  let err = '';
  return { out: (t) => void (out += t), err: (t) => void (err += t), env: { KUBECONFIG: '/nonexistent' }, isTTY: false, readStdin: () => Promise.resolve(stdin), stdout: () => out, stderr: () => err };
}

async function meshctl(args: string[], stdin = ''): Promise<{ code: number; stdout: string; stderr: string }> {
  const t = io(stdin);
  const code = await main(args, t);
  return { code, stdout: t.stdout(), stderr: t.stderr() };
}

const docsOf = (text: string): unknown[] => parseAllDocuments(text).map((d) => d.toJS() as unknown).filter((d) => d !== null);
const yamlOf = (docs: unknown[]): string => docs.map((d) => JSON.stringify(d)).join('\n---\n');

function pod(name: string, annotations: Record<string, string> = {}, containers: Pod['spec'] extends infer S ? (S extends { containers: infer C } ? C : never) : never = [{ name: 'app', image: 'app:1', ports: [{ containerPort: 8080 }], readinessProbe: { httpGet: { path: '/ready', port: 8080 } } }] as never): Pod {
  return { apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: 'shop', labels: { app: name }, ...(Object.keys(annotations).length ? { annotations } : {}) }, spec: { containers } } as Pod;
}

describe('meshctl cluster-inject (files)', () => {
  const cases: Array<[string, Pod]> = [
    ['sidecar', pod('web')],
    ['gateway', pod('gw', { 'inject.mesh.io/templates': 'gateway' }, [{ name: 'mesh-proxy', image: 'auto' }] as never)],
    ['grpc-agent', pod('grpc-a', { 'inject.mesh.io/templates': 'grpc-agent' })],
    ['grpc-simple', pod('grpc-s', { 'inject.mesh.io/templates': 'grpc-simple' })],
  ];

  it.each(cases)('%s: the output equals the webhook\'s patch applied to the same pod', async (template, input) => {
    const r = await meshctl(['cluster-inject', '-f', '-', ...files], JSON.stringify(input));
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const [out] = docsOf(r.stdout) as Pod[];
    expect(JSON.parse(out!.metadata!.annotations!['sidecar.mesh.io/status']!)).toMatchObject({ templates: [template] });
    expect(out).toEqual(throughWebhook(input, 'shop'));
  });

  it('injects the pod template of every workload kind, passes other kinds unchanged, and uninject gives the input back', async () => {
    const template = { metadata: { labels: { app: 'w' } }, spec: { containers: [{ name: 'app', image: 'app:1' }] } };
    const input = [
      { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'd' }, spec: { template } },
      { apiVersion: 'apps/v1', kind: 'StatefulSet', metadata: { name: 's' }, spec: { template } },
      { apiVersion: 'apps/v1', kind: 'DaemonSet', metadata: { name: 'ds' }, spec: { template } },
      { apiVersion: 'apps/v1', kind: 'ReplicaSet', metadata: { name: 'rs' }, spec: { template } },
      { apiVersion: 'batch/v1', kind: 'Job', metadata: { name: 'j' }, spec: { template } },
      { apiVersion: 'batch/v1', kind: 'CronJob', metadata: { name: 'cj' }, spec: { schedule: '* * * * *', jobTemplate: { spec: { template } } } },
      pod('p'),
      { apiVersion: 'v1', kind: 'Service', metadata: { name: 'svc' }, spec: { ports: [{ port: 80 }] } },
      { apiVersion: 'networking.mesh.io/v1', kind: 'VirtualService', metadata: { name: 'vs' }, spec: { hosts: ['a'] } },
    ];
    const text = input.map((d) => JSON.stringify(d)).join('\n---\n');
    const injected = await meshctl(['cluster-inject', '-f', '-', ...files], text);
    expect(injected).toMatchObject({ code: 0, stderr: '' });
    type PodSpec = NonNullable<Pod['spec']>;
    type Doc = { kind: string; spec: { template: { spec: PodSpec }; jobTemplate: { spec: { template: { spec: PodSpec } } } } & PodSpec };
    const out = docsOf(injected.stdout) as Doc[];
    expect(out.map((d) => d.kind)).toEqual(input.map((d) => d.kind));
    const podSpecs = [...out.slice(0, 5).map((d) => d.spec.template.spec), out[5]!.spec.jobTemplate.spec.template.spec, out[6]!.spec];
    for (const spec of podSpecs) expect(spec.containers.map((c) => c.name)).toEqual(expect.arrayContaining(['mesh-proxy']));
    expect(out[5]!.spec.jobTemplate.spec.template.spec.initContainers?.map((c) => c.name)).toEqual(['mesh-init']);
    expect(out.slice(7)).toEqual(input.slice(7));

    const back = await meshctl(['x', 'cluster-uninject', '-f', '-'], injected.stdout);
    expect(back).toMatchObject({ code: 0, stderr: '' });
    expect(yamlOf(docsOf(back.stdout))).toEqual(yamlOf(input));
  });

  it('reads -f <file> and writes -o <file>; a pod the selectors leave out stays as it is', async () => {
    const input = join(dir, 'in.yaml');
    const output = join(dir, 'out.yaml');
    await writeFile(input, `${JSON.stringify(pod('never'))}\n---\n${JSON.stringify({ ...pod('skip'), metadata: { ...pod('skip').metadata, annotations: { 'sidecar.mesh.io/inject': 'false' } } })}\n`);
    const r = await meshctl(['cluster-inject', '-f', input, '-o', output, ...files]);
    expect(r).toEqual({ code: 0, stdout: '', stderr: '' });
    const out = docsOf(await readFile(output, 'utf8')) as Pod[];
    expect(out.map((p) => p.spec?.containers.map((c) => c.name))).toEqual([['app'], ['app']]);
  });

  it.each<[string, string[], string, string]>([
    ['malformed YAML', [], 'kind: Pod\nmetadata: {name: [\n', 'error: <stdin>:'],
    ['a template that does not exist', [], JSON.stringify(pod('x', { 'inject.mesh.io/templates': 'nope' })), 'error: Pod shop/x: metadata.annotations["inject.mesh.io/templates"]: "nope": no such template'],
    ['a values file that cannot be read', ['--valuesFile', '/dev/null/none'], JSON.stringify(pod('x')), 'error: --valuesFile: cannot read /dev/null/none'],
    ['no input', ['-f', ''], '', 'error: --filename: give the file to inject'],
  ])('%s: exit 1 with a message naming it', async (_what, extra, stdin, message) => {
    const args = extra[0] === '-f' ? ['cluster-inject', ...extra, ...files] : ['cluster-inject', '-f', '-', ...files, ...extra];
    const r = await meshctl(args, stdin);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain(message);
  });

  it('a bad injector config is named with its file and field', async () => {
    await writeFile(join(dir, 'bad-config.yaml'), 'policy: sometimes\n');
    const r = await meshctl(['cluster-inject', '-f', '-', ...files, '--injectConfigFile', join(dir, 'bad-config.yaml')], JSON.stringify(pod('x')));
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`${join(dir, 'bad-config.yaml')}`);
    expect(r.stderr).toContain('policy');
  });

  it('without the files, it needs a cluster and says which one it could not load', async () => {
    const r = await meshctl(['cluster-inject', '-f', '-'], JSON.stringify(pod('x')));
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^error: /);
  });
});
