/**
 * Shared helpers of the Kubernetes tests: a client of the local control plane, a namespace per
 * test file, the project's CRDs applied with server-side apply, and waiting for a condition.
 */
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments, stringify } from 'yaml';
import { KubeClient, type KubeClientOptions } from '../../src/kube/client.js';
import type { InformerEvent, KubeObject } from '../../src/kube/types.js';
import { ensureCluster, readKubeconfig, type KubeconfigCredentials, type LocalCluster } from '../support/cluster.js';
import { eventually } from '../support/eventually.js';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

export interface KubeTestEnv {
  readonly cluster: LocalCluster;
  readonly creds: KubeconfigCredentials;
  readonly client: KubeClient;
}

/** The local control plane and an unthrottled client of it. */
export async function kubeTestEnv(options: KubeClientOptions = {}): Promise<KubeTestEnv> {
  const cluster = await ensureCluster();
  const creds = await readKubeconfig(cluster.kubeconfig);
  const { client } = await KubeClient.create({ kubeconfig: cluster.kubeconfig, qps: 0, ...options });
  return { cluster, creds, client };
}

export function uniqueName(prefix: string): string {
  return `${prefix}-${randomBytes(3).toString('hex')}`;
}

export async function createNamespace(client: KubeClient, prefix: string): Promise<string> {
  const name = uniqueName(prefix);
  await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels: { 'mesh.io/test': 'kube' } } });
  return name;
}

export async function deleteNamespace(client: KubeClient, name: string | undefined): Promise<void> {
  if (name) await client.delete({ apiVersion: 'v1', kind: 'Namespace', name }).catch(() => undefined);
}

/**
 * A kubeconfig of a user without any RBAC on the local plane (the token of a fresh service account
 * `nobody` of `namespace`), written to `<dir>/nobody.kubeconfig`: every request it makes is forbidden.
 */
export async function powerlessKubeconfig(client: KubeClient, kubeconfig: string, namespace: string, dir: string): Promise<string> {
  await client.create({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'nobody', namespace } });
  const tr = await client.request<{ status: { token: string } }>({
    method: 'POST',
    path: `/api/v1/namespaces/${namespace}/serviceaccounts/nobody/token`,
    body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 1800 } },
  });
  const creds = await readKubeconfig(kubeconfig);
  const file = join(dir, 'nobody.kubeconfig');
  await writeFile(
    file,
    stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'plane', cluster: { server: creds.server, 'certificate-authority-data': creds.ca?.toString('base64') } }],
      users: [{ name: 'nobody', user: { token: tr.status.token } }],
      contexts: [{ name: 'nobody', context: { cluster: 'plane', user: 'nobody' } }],
      'current-context': 'nobody',
    }),
  );
  return file;
}

interface Crd extends KubeObject {
  readonly status?: { readonly conditions?: ReadonlyArray<{ readonly type: string; readonly status: string }> };
}

/** Applies crds/all.yaml (server-side apply) and waits until every CRD is Established. */
export async function applyMeshCrds(client: KubeClient): Promise<void> {
  const text = await readFile(join(repoRoot, 'crds', 'all.yaml'), 'utf8');
  const crds = parseAllDocuments(text)
    .map((d) => d.toJS() as Crd | null)
    .filter((d): d is Crd => d !== null && d.kind === 'CustomResourceDefinition');
  await Promise.all(crds.map((crd) => client.applyObject(crd, { fieldManager: 'mesh-tests', force: true })));
  await eventually('the mesh CRDs to be established', async () => {
    const states = await Promise.all(
      crds.map((crd) => client.get<Crd>({ apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', name: crd.metadata?.name ?? '' })),
    );
    return states.every((s) => s.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True'));
  }, { timeoutMs: 60_000 });
}

/** Informer events as `type name` lines (`update name` for updates; resyncs marked). */
export function describeEvent(e: InformerEvent<KubeObject>): string {
  const name = e.object.metadata?.name ?? '?';
  return e.type === 'update' && e.resync ? `resync ${name}` : `${e.type} ${name}`;
}

export function configMap(namespace: string, name: string, data: Record<string, string>, labels: Record<string, string> = {}): KubeObject & { data: Record<string, string> } {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace, labels }, data };
}

/** What an end-to-end file set up against the local plane, in the order it is torn down. */
export interface KubeTestTeardown {
  /** Proxies or clients to close first, so that the daemon sees them go. */
  readonly close?: ReadonlyArray<{ close(): void } | undefined>;
  readonly daemon?: { stop(): Promise<unknown> } | undefined;
  readonly client?: KubeClient | undefined;
  readonly namespaces?: ReadonlyArray<string | undefined>;
  readonly dir?: string | undefined;
}

/**
 * Tears down what `beforeAll` made: clients closed, the daemon stopped, the namespaces deleted, the
 * API client closed and the directory removed. Every step runs even when an earlier one failed (a
 * `beforeAll` that failed half-way leaves some of them undefined); the first failure is rethrown.
 */
export async function tearDown(t: KubeTestTeardown): Promise<void> {
  const failures: unknown[] = [];
  const step = async (f: () => unknown): Promise<void> => {
    try {
      await f();
    } catch (err) {
      failures.push(err);
    }
  };
  for (const c of t.close ?? []) await step(() => c?.close());
  await step(() => t.daemon?.stop());
  for (const ns of t.namespaces ?? []) if (t.client) await step(() => deleteNamespace(t.client!, ns));
  await step(() => t.client?.close());
  if (t.dir) await step(() => rmSync(t.dir!, { recursive: true, force: true }));
  if (failures.length > 0) throw failures[0];
}
