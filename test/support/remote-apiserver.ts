/**
 * A second Kubernetes API server for multi-cluster tests: another kube-apiserver process of the
 * local control plane (scripts/cluster/), on a free port, on the same etcd under its own
 * `--etcd-prefix`, so it is an empty cluster of its own. It reuses the plane's CA, serving
 * certificate (valid for 127.0.0.1) and service-account keys, so the plane's admin credentials work
 * on it too. No controller manager, scheduler or nodes run for it: tests create EndpointSlices
 * themselves.
 *
 *   let remote: RemoteApiServer;
 *   beforeAll(async () => { remote = await startRemoteApiServer(); }, REMOTE_APISERVER_START_TIMEOUT_MS);
 *   afterAll(async () => { await remote?.stop(); }, REMOTE_APISERVER_STOP_TIMEOUT_MS);
 *
 * `stop()` ends the process and deletes its keys from etcd.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { clusterDir, ensureCluster, kubeRequest, readKubeconfig, type KubeconfigCredentials } from './cluster.js';
import { freePort } from './daemon.js';

/** A fresh API server bootstraps its built-in objects first; on 2 busy cores that takes a while. */
export const REMOTE_APISERVER_START_TIMEOUT_MS = 3 * 60_000;
export const REMOTE_APISERVER_STOP_TIMEOUT_MS = 60_000;

export interface RemoteApiServer {
  /** `https://127.0.0.1:<port>` */
  readonly server: string;
  /** Admin kubeconfig text (CA and client certificate embedded). */
  readonly kubeconfigText: string;
  /** The same kubeconfig as a file. */
  readonly kubeconfig: string;
  readonly creds: KubeconfigCredentials;
  /** Its etcd key prefix. */
  readonly etcdPrefix: string;
  /** Stops the server and removes its etcd keys. */
  stop(): Promise<void>;
}

/** The KEY=VALUE lines of the plane's cluster.env. */
async function planeEnv(): Promise<Record<string, string>> {
  const text = await readFile(join(clusterDir(), 'cluster.env'), 'utf8');
  const env: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const m = /^([A-Z_]+)=(.*)$/.exec(line.trim());
    if (m) env[m[1]] = m[2];
  }
  return env;
}

/** A kubeconfig for `server` with the CA and the client certificate embedded. */
export function kubeconfigFor(server: string, creds: KubeconfigCredentials, name = 'remote'): string {
  const b64 = (b: Buffer | undefined): string => (b ?? Buffer.alloc(0)).toString('base64');
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    `- name: ${name}`,
    '  cluster:',
    `    server: ${server}`,
    `    certificate-authority-data: ${b64(creds.ca)}`,
    'users:',
    `- name: ${name}-admin`,
    '  user:',
    `    client-certificate-data: ${b64(creds.cert)}`,
    `    client-key-data: ${b64(creds.key)}`,
    'contexts:',
    `- name: ${name}`,
    '  context:',
    `    cluster: ${name}`,
    `    user: ${name}-admin`,
    `current-context: ${name}`,
    '',
  ].join('\n');
}

/** Deletes every etcd key under `prefix` through etcd's JSON gateway. */
async function deleteEtcdPrefix(etcdPort: string, prefix: string): Promise<void> {
  const b64 = (s: string): string => Buffer.from(s).toString('base64');
  const res = await fetch(`http://127.0.0.1:${etcdPort}/v3/kv/deleterange`, {
    method: 'POST',
    body: JSON.stringify({ key: b64(`${prefix}/`), range_end: b64(`${prefix}0`) }),
    signal: AbortSignal.timeout(10_000),
  });
  if (!res.ok) throw new Error(`etcd deleterange ${prefix}: HTTP ${res.status}: ${await res.text()}`);
}

/** Starts the second API server and resolves once its /readyz is ok. */
export async function startRemoteApiServer(): Promise<RemoteApiServer> {
  if (process.env.MESH_E2E_KUBECONFIG) throw new Error('startRemoteApiServer works only on the local control plane');
  const local = await ensureCluster();
  const dir = clusterDir();
  const env = await planeEnv();
  const bin = (await readFile(join(dir, 'run', 'kube-apiserver.bin'), 'utf8')).trim();
  const localCreds = await readKubeconfig(local.kubeconfig);
  const port = await freePort();
  const etcdPrefix = `/mesh-remote-${randomBytes(4).toString('hex')}`;
  const home = await mkdtemp(join(tmpdir(), 'mesh-remote-apiserver-'));
  const pki = join(dir, 'pki');
  const args = [
    '--bind-address=127.0.0.1',
    `--secure-port=${port}`,
    '--advertise-address=127.0.0.1',
    `--etcd-servers=http://127.0.0.1:${env.ETCD_PORT}`,
    `--etcd-prefix=${etcdPrefix}`,
    `--tls-cert-file=${join(pki, 'apiserver.crt')}`,
    `--tls-private-key-file=${join(pki, 'apiserver.key')}`,
    `--client-ca-file=${join(pki, 'ca.crt')}`,
    '--authorization-mode=RBAC',
    `--service-account-issuer=${env.SERVICE_ACCOUNT_ISSUER}`,
    `--service-account-key-file=${join(pki, 'sa.pub')}`,
    `--service-account-signing-key-file=${join(pki, 'sa.key')}`,
    `--service-cluster-ip-range=${env.SERVICE_CIDR}`,
    '--endpoint-reconciler-type=none',
    '--shutdown-watch-termination-grace-period=2s',
    '--profiling=false',
    '--v=0',
  ];
  const child: ChildProcess = spawn(bin, args, { env: { ...process.env, HOME: home }, stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  child.stderr?.setEncoding('utf8').on('data', (c: string) => {
    log = (log + c).slice(-20_000);
  });
  let exited = false;
  const exit = new Promise<void>((resolve) => child.on('exit', () => ((exited = true), resolve())));

  const server = `https://127.0.0.1:${port}`;
  const creds: KubeconfigCredentials = { ...localCreds, server };
  const stop = async (): Promise<void> => {
    if (!exited) {
      child.kill('SIGTERM');
      const killer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exit;
      clearTimeout(killer);
    }
    await deleteEtcdPrefix(env.ETCD_PORT, etcdPrefix).catch((err: unknown) => console.warn(`remote apiserver: ${(err as Error).message}`));
    await rm(home, { recursive: true, force: true });
  };

  const deadline = Date.now() + REMOTE_APISERVER_START_TIMEOUT_MS - 10_000;
  for (;;) {
    if (exited) {
      await stop();
      throw new Error(`remote kube-apiserver exited before it was ready:\n${log.slice(-4000)}`);
    }
    const res = await kubeRequest(creds, 'GET', '/readyz', undefined, { timeoutMs: 5000 }).catch(() => undefined);
    if (res?.status === 200) break;
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`remote kube-apiserver not ready in time:\n${log.slice(-4000)}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  const kubeconfigText = kubeconfigFor(server, creds);
  const kubeconfig = join(home, 'kubeconfig');
  await writeFile(kubeconfig, kubeconfigText, { mode: 0o600 });
  return { server, kubeconfigText, kubeconfig, creds, etcdPrefix, stop };
}
