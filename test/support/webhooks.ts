/**
 * Shared pieces of the webhook tests that run meshd against the local plane's API server: a serving
 * certificate made with openssl for `localhost` (the API server of the local plane calls webhooks by
 * URL), the objects `meshctl install` renders, those webhook configurations pointed at a URL, test
 * pods, and a POST to the webhook port as the API server would send it.
 */
import { rm, writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import { join } from 'node:path';
import type { KubeClient, ObjectRef } from '../../src/kube/client.js';
import type { KubeObject } from '../../src/kube/types.js';
import { allObjects, renderManifests, type K8sObject } from '../../src/install/render/index.js';
import { resolveSpec } from '../../src/install/resolve.js';
import { deleteNamespace } from '../kube/helpers.js';
import type { Daemon } from './daemon.js';
import { openssl } from './openssl.js';

export const ADMISSION = 'admissionregistration.k8s.io/v1';

export interface TestPod extends KubeObject {
  spec: {
    containers: Array<{ name: string; image: string; ports?: Array<{ containerPort: number }>; env?: Array<{ name: string; value?: string }> }>;
    initContainers?: Array<{ name: string; image: string; env?: Array<{ name: string; value?: string }> }>;
    volumes?: Array<{ name: string; emptyDir?: Record<string, never> }>;
  };
}

export type WebhookConfig = KubeObject & { webhooks: Array<{ name: string; clientConfig: { caBundle?: string; url?: string } }> };

/** A root and a serving certificate for DNS name `localhost`, as PEM files in `dir`. */
export async function localhostServingCertificate(dir: string): Promise<{ cert: string; key: string; ca: string }> {
  const ca = join(dir, 'ca.pem');
  const caKey = join(dir, 'ca-key.pem');
  const key = join(dir, 'key.pem');
  const csr = join(dir, 'csr.pem');
  const cert = join(dir, 'cert.pem');
  const ext = join(dir, 'ext.cnf');
  const run = async (args: string[]): Promise<void> => {
    const r = await openssl(args);
    if (r.code !== 0) throw new Error(`openssl ${args.join(' ')}: ${r.stderr}`);
  };
  await run(['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', caKey, '-out', ca, '-days', '2', '-subj', '/O=webhook test/CN=webhook test root']);
  await run(['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', key, '-out', csr, '-subj', '/CN=localhost']);
  await writeFile(ext, 'subjectAltName=DNS:localhost\nextendedKeyUsage=serverAuth\nkeyUsage=digitalSignature\n');
  await run(['x509', '-req', '-in', csr, '-CA', ca, '-CAkey', caKey, '-CAcreateserial', '-out', cert, '-days', '1', '-extfile', ext]);
  return { cert, key, ca };
}

/** What `meshctl install` renders for the mesh namespace `namespace` (and `revision`). */
export async function installObjects(namespace: string, revision?: string): Promise<K8sObject[]> {
  const resolved = await resolveSpec({ sets: [`namespace=${namespace}`], ...(revision ? { revision } : {}) });
  return allObjects(renderManifests(resolved.spec, { owner: { name: 'installed-state', namespace }, crds: [] }));
}

/** The rendered object of `kind` (and `name`, if given). */
export function pick(objects: readonly K8sObject[], kind: string, name?: string): K8sObject & Record<string, unknown> {
  const o = objects.find((x) => x.kind === kind && (name === undefined || x.metadata.name === name));
  if (!o) throw new Error(`install renders no ${kind} ${name ?? ''}`);
  return o as K8sObject & Record<string, unknown>;
}

/**
 * The webhook configuration as rendered, pointed at `url` and without caBundle (meshd must write
 * it), optionally renamed and with each webhook changed by `edit`.
 */
export function pointedAt(
  config: K8sObject & Record<string, unknown>,
  url: string,
  opts: { readonly name?: string; readonly edit?: (w: Record<string, unknown>) => Record<string, unknown> } = {},
): KubeObject {
  const webhooks = (config.webhooks as Array<Record<string, unknown>>).map((w) => {
    const pointed = { ...w, clientConfig: { url } };
    return opts.edit ? opts.edit(pointed) : pointed;
  });
  return { ...config, metadata: { name: opts.name ?? config.metadata.name, labels: config.metadata.labels }, webhooks } as KubeObject;
}

/** An edit for `pointedAt`: the webhook selects the pods of `namespace`, all of them. */
export function onlyNamespace(namespace: string): (w: Record<string, unknown>) => Record<string, unknown> {
  return (w) => ({ ...w, namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': namespace } }, objectSelector: undefined });
}

/**
 * The end of a webhook test: the daemon stopped, then the webhook configurations that called it
 * (they select this test's namespaces only), the namespaces and `dir` removed, the client closed.
 */
export async function endWebhookTest(o: {
  readonly client?: KubeClient;
  readonly daemon?: Daemon;
  readonly configs: ReadonlyArray<ObjectRef>;
  readonly namespaces: ReadonlyArray<string | undefined>;
  readonly dir?: string;
}): Promise<void> {
  await o.daemon?.stop();
  if (!o.client) return;
  for (const c of o.configs) await o.client.delete(c).catch(() => undefined);
  for (const n of o.namespaces) await deleteNamespace(o.client, n);
  if (o.dir) await rm(o.dir, { recursive: true, force: true });
  o.client.close();
}

/** A pod with one application container. */
export function testPod(namespace: string, name: string, extra: { labels?: Record<string, string>; annotations?: Record<string, string> } = {}): TestPod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace, labels: { app: name, ...(extra.labels ?? {}) }, ...(extra.annotations ? { annotations: extra.annotations } : {}) },
    spec: { containers: [{ name: 'app', image: 'example.com/app:1', ports: [{ containerPort: 8080 }] }] },
  };
}

/** Names of the pod's containers and init containers, sorted. */
export const containerNames = (p: TestPod): string[] => [...(p.spec.initContainers ?? []), ...p.spec.containers].map((c) => c.name).sort();

/** The injected proxy container (a container or, as a native sidecar, an init container). */
export function proxyContainer(p: TestPod): { name: string; image: string; env?: Array<{ name: string; value?: string }> } | undefined {
  return [...(p.spec.initContainers ?? []), ...p.spec.containers].find((c) => c.name === 'mesh-proxy');
}

/** The injection status annotation, parsed. */
export function injectionStatus(p: TestPod): { revision: string; volumes: string[] } | undefined {
  const s = p.metadata?.annotations?.['sidecar.mesh.io/status'];
  return s === undefined ? undefined : (JSON.parse(s) as { revision: string; volumes: string[] });
}

/** POST (or `method`) `body` to the webhook port as the API server would, trusting `caPem`. */
export function postToWebhook(port: number, caPem: string, path: string, body: string, method = 'POST'): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', servername: 'localhost', port, path, method, ca: caPem, headers: { 'content-type': 'application/json' }, timeout: 20_000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.end(body);
  });
}
