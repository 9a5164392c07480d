/**
 * Revision tags on the real API server, through meshctl in-process: `tag set` copies the
 * revision's injector webhook into `mesh-revision-tag-<tag>` selecting `mesh.io/rev=<tag>`;
 * `tag list` shows TAG / REVISION / NAMESPACES; repointing needs --overwrite; a revision that is
 * not installed is refused; `tag remove` refuses a tag in use unless -y; `tag generate` prints
 * without applying; `x revision list|describe` show the revisions with their tags.
 */
import { randomBytes } from 'node:crypto';
import { parse } from 'yaml';
import { renderManifests, allObjects, type K8sObject } from '../../src/install/render/index.js';
import { resolveSpec } from '../../src/install/resolve.js';
import type { KubeClient } from '../../src/kube/client.js';
import { CLUSTER_START_TIMEOUT_MS } from '../support/cluster.js';
import { createNamespace, deleteNamespace, kubeTestEnv } from '../kube/helpers.js';
import { meshctl as run, type RunResult } from './helpers.js';

const hex = (n = 3): string => randomBytes(n).toString('hex');


let client: KubeClient;
let kubeconfig: string;
let ns: string;
const id = hex();
const rev1 = `ta${id}`;
const rev2 = `tb${id}`;
const tag = `t${id}`;
const mwc = (name: string) => ({ apiVersion: 'admissionregistration.k8s.io/v1', kind: 'MutatingWebhookConfiguration', name });

const meshctl = (...args: string[]): Promise<RunResult> => run('--clusterconfig', kubeconfig, ...args);

/** The injector webhook configuration of `revision`, as an install would render and apply it. */
async function installInjector(revision: string): Promise<void> {
  const { spec } = await resolveSpec({ sets: [`revision=${revision}`, `namespace=${ns}`], defaultTag: 'test' });
  const objects = allObjects(renderManifests(spec, { owner: { name: `installed-state-${revision}`, namespace: ns }, crds: [] }));
  const webhook = objects.find((o) => o.kind === 'MutatingWebhookConfiguration') as K8sObject;
  await client.applyObject(webhook, { fieldManager: 'mesh-tests', force: true });
}

interface Webhook {
  metadata: { name: string; labels?: Record<string, string> };
  webhooks: Array<{ name: string; clientConfig: { service?: { name: string } }; namespaceSelector: unknown; objectSelector: unknown; failurePolicy: string }>;
}

beforeAll(async () => {
  const env = await kubeTestEnv();
  client = env.client;
  kubeconfig = env.cluster.kubeconfig;
  ns = await createNamespace(client, 'op-tags');
  await installInjector(rev1);
  await installInjector(rev2);
}, CLUSTER_START_TIMEOUT_MS);

afterAll(async () => {
  if (!client) return;
  for (const name of [`mesh-sidecar-injector-${rev1}`, `mesh-sidecar-injector-${rev2}`, `mesh-revision-tag-${tag}`, `mesh-revision-tag-g${id}`]) await client.delete(mwc(name)).catch(() => undefined);
  await deleteNamespace(client, ns);
  client.close();
});

function rowOf(stdout: string, first: string): string[] | undefined {
  return stdout
    .split('\n')
    .map((l) => l.trim().split(/\s{3,}/))
    .find((cells) => cells[0] === first);
}

describe('revision tags (meshctl tag, x revision tag)', () => {
  it('sets a tag as a copy of the revision webhook that selects the tag, and lists it with the namespaces using it', async () => {
    const set = await meshctl('tag', 'set', tag, '--revision', rev1);
    expect([set.code, set.stderr]).toEqual([0, '']);
    expect(set.stdout).toContain(`Revision tag "${tag}" created, pointing to revision "${rev1}"`);
    const hook = await client.get<Webhook & { apiVersion: string; kind: string }>(mwc(`mesh-revision-tag-${tag}`));
    expect(hook.metadata.labels).toMatchObject({ 'mesh.io/tag': tag, 'mesh.io/rev': rev1 });
    expect(Object.keys(hook.metadata.labels ?? {}).some((k) => k.startsWith('install.mesh.io/'))).toBe(false);
    expect(hook.webhooks.map((w) => w.clientConfig.service?.name)).toEqual([`meshd-${rev1}`, `meshd-${rev1}`]);
    expect(hook.webhooks.every((w) => w.failurePolicy === 'Fail')).toBe(true);
    expect(JSON.stringify(hook.webhooks[0].namespaceSelector)).toContain(`"key":"mesh.io/rev","operator":"In","values":["${tag}"]`);
    expect(JSON.stringify(hook.webhooks[1].objectSelector)).toContain(`"key":"mesh.io/rev","operator":"In","values":["${tag}"]`);

    await client.mergePatch({ apiVersion: 'v1', kind: 'Namespace', name: ns }, { metadata: { labels: { 'mesh.io/rev': tag } } });
    const list = await meshctl('tag', 'list');
    expect(list.code).toBe(0);
    expect(list.stdout.split('\n')[0].split(/\s+/)).toEqual(['TAG', 'REVISION', 'NAMESPACES']);
    expect(rowOf(list.stdout, tag)).toEqual([tag, rev1, ns]);
  });

  it('repoints a tag only with --overwrite, and refuses revisions that are not installed or tag names of revisions', async () => {
    const refused = await meshctl('tag', 'set', tag, '-r', rev2);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe(`error: revision tag "${tag}" already points to revision "${rev1}"; pass --overwrite to point it to "${rev2}"\n`);

    const moved = await meshctl('tag', 'set', tag, '-r', rev2, '--overwrite');
    expect(moved.code).toBe(0);
    expect(moved.stdout).toContain(`now points to revision "${rev2}" (was "${rev1}")`);
    expect(moved.stdout).toContain(`Restart the workloads of namespaces ${ns}`);
    const hook = await client.get<Webhook & { apiVersion: string; kind: string }>(mwc(`mesh-revision-tag-${tag}`));
    expect(hook.metadata.labels?.['mesh.io/rev']).toBe(rev2);
    expect(hook.webhooks[0].clientConfig.service?.name).toBe(`meshd-${rev2}`);

    const missing = await meshctl('tag', 'set', `x${tag}`, '-r', `missing${id}`);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(new RegExp(`revision "missing${id}" is not installed: no MutatingWebhookConfiguration mesh-sidecar-injector-missing${id} \\(installed revisions: .*${rev1}`));

    const shadow = await meshctl('tag', 'set', rev1, '-r', rev2);
    expect(shadow.code).toBe(1);
    expect(shadow.stderr).toContain(`revision tag "${rev1}" has the name of an installed revision`);

    const badName = await meshctl('tag', 'set', 'Bad_Tag', '-r', rev2);
    expect(badName.stderr).toContain('revision tag "Bad_Tag" is not a valid name');
  });

  it('generates a tag without applying it', async () => {
    const gen = await meshctl('tag', 'generate', `g${id}`, '-r', rev1);
    expect(gen.code).toBe(0);
    const doc = parse(gen.stdout) as Webhook & { kind: string };
    expect(doc.kind).toBe('MutatingWebhookConfiguration');
    expect(doc.metadata.name).toBe(`mesh-revision-tag-g${id}`);
    expect(await client.find(mwc(`mesh-revision-tag-g${id}`))).toBeUndefined();
  });

  it('shows revisions with their tags under x revision', async () => {
    const list = await meshctl('x', 'revision', 'list', '-o', 'json');
    expect(list.code).toBe(0);
    const revs = JSON.parse(list.stdout) as Array<{ revision: string; tags: string[]; webhook?: string }>;
    expect(revs.find((r) => r.revision === rev2)).toMatchObject({ tags: [tag], webhook: `mesh-sidecar-injector-${rev2}` });
    const table = await meshctl('x', 'revision', 'list');
    expect(rowOf(table.stdout, rev2)?.slice(0, 2)).toEqual([rev2, tag]);
    const describe = await meshctl('x', 'revision', 'describe', rev2, '-o', 'json');
    expect(describe.code).toBe(0);
    expect(JSON.parse(describe.stdout)).toMatchObject({ revision: rev2, tags: [tag], namespaces: [ns] });
    const tags = await meshctl('x', 'revision', 'tag', 'list', '-o', 'json');
    expect((JSON.parse(tags.stdout) as Array<{ tag: string }>).find((t) => t.tag === tag)).toMatchObject({ revision: rev2, namespaces: [ns] });
    const absent = await meshctl('x', 'revision', 'describe', `missing${id}`);
    expect(absent.code).toBe(1);
    expect(absent.stderr).toContain(`revision "missing${id}" is not installed`);
  });

  it('refuses to remove a tag that namespaces use unless -y', async () => {
    const refused = await meshctl('tag', 'remove', tag);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`revision tag "${tag}" is used by namespaces ${ns}`);
    expect(await client.find(mwc(`mesh-revision-tag-${tag}`))).toBeDefined();
    const removed = await meshctl('tag', 'delete', tag, '-y');
    expect(removed.code).toBe(0);
    expect(await client.find(mwc(`mesh-revision-tag-${tag}`))).toBeUndefined();
    expect(rowOf((await meshctl('tag', 'list')).stdout, tag)).toBeUndefined();
    const again = await meshctl('tag', 'remove', tag);
    expect(again.stderr).toBe(`error: revision tag "${tag}" does not exist\n`);
  });
});
