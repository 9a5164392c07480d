/**
 * A Kubernetes control plane for tests: `ensureCluster()` returns the admin kubeconfig and server
 * URL of the local control plane (scripts/cluster/, docs/adr/0007-local-control-plane.md), which it
 * reuses when it runs and starts otherwise. Starting builds the programs if the cache lacks them:
 * from an empty Go build cache that takes many minutes on a small machine, so call it from a hook
 * with a long timeout:
 *
 *   let cluster: LocalCluster;
 *   beforeAll(async () => { cluster = await ensureCluster(); }, CLUSTER_START_TIMEOUT_MS);
 *   afterAll(async () => { await cluster.stop?.(); }, CLUSTER_STOP_TIMEOUT_MS);
 *
 * `stop` is there only when this process created the plane; a plane that already ran is left
 * running. With MESH_E2E_KUBECONFIG set (e2e/kind/run.sh sets it), that cluster is used instead
 * and nothing is started or stopped.
 *
 * `stopApiServer()` / `startApiServer()` stop and start kube-apiserver alone (etcd, controllers
 * and simulated nodes keep running), for tests of clients that must ride out a restart; see
 * `StartApiServerOptions.restartControllers` for how soon the cluster reacts again.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { request as httpsRequest } from 'node:https';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';
import { netnsSupport } from './netns.js';

/** Enough to build every program from an empty Go build cache on 2 cores, then start them. */
export const CLUSTER_START_TIMEOUT_MS = 60 * 60_000;
/** Enough to stop the servers and remove the state. */
export const CLUSTER_STOP_TIMEOUT_MS = 2 * 60_000;
/** Enough for `startApiServer()` to see /readyz ok again. */
export const APISERVER_RESTART_TIMEOUT_MS = 3 * 60_000;

export interface LocalCluster {
  /** Path of an admin kubeconfig (client certificate of group system:masters). */
  readonly kubeconfig: string;
  /** `https://127.0.0.1:<port>` */
  readonly server: string;
  /** Stops the plane and removes its state; present only when this process created it. */
  stop?(): Promise<void>;
}

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const scriptsDir = join(repoRoot, 'scripts', 'cluster');

/** The state dir of the local plane (MESH_CLUSTER_DIR, default ~/.cache/mesh/cluster). */
export function clusterDir(): string {
  return process.env.MESH_CLUSTER_DIR ?? join(homedir(), '.cache', 'mesh', 'cluster');
}

interface ScriptResult {
  readonly stdout: string;
  readonly stderr: string;
}

function runScript(script: string, args: ReadonlyArray<string> = []): Promise<ScriptResult> {
  const path = join(scriptsDir, script);
  return new Promise((resolveRun, reject) => {
    const child = spawn('bash', [path, ...args], { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
      if (stderr.length > 1 << 20) stderr = stderr.slice(-(1 << 19));
    });
    child.on('error', (err) => reject(new Error(`cannot run ${path}: ${err.message}`)));
    child.on('close', (code, signal) => {
      if (code === 0) {
        resolveRun({ stdout, stderr });
        return;
      }
      const why = signal ? `was killed by ${signal}` : `exited with ${code}`;
      reject(new Error(`scripts/cluster/${script} ${args.join(' ')} ${why}:\n${stderr.slice(-8000)}`));
    });
  });
}

/** The parts of a kubeconfig's current context that a test client needs. */
export interface KubeconfigCredentials {
  readonly server: string;
  readonly ca?: Buffer;
  readonly cert?: Buffer;
  readonly key?: Buffer;
  readonly token?: string;
}

interface NamedEntry<T> {
  readonly name: string;
  readonly [field: string]: T | string;
}

async function dataOrFile(data: unknown, file: unknown, base: string): Promise<Buffer | undefined> {
  if (typeof data === 'string') return Buffer.from(data, 'base64');
  if (typeof file === 'string') return readFile(resolve(base, file));
  return undefined;
}

/** Reads the server, CA and client credentials of a kubeconfig's current context. */
export async function readKubeconfig(path: string): Promise<KubeconfigCredentials> {
  const doc = parseYaml(await readFile(path, 'utf8')) as Record<string, unknown> | null;
  const pick = <T>(list: unknown, name: unknown, field: string): T | undefined => {
    if (!Array.isArray(list)) return undefined;
    const hit = (list as NamedEntry<T>[]).find((e) => e.name === name);
    return hit?.[field] as T | undefined;
  };
  const ctx = pick<Record<string, unknown>>(doc?.contexts, doc?.['current-context'], 'context');
  const cluster = pick<Record<string, unknown>>(doc?.clusters, ctx?.cluster, 'cluster');
  const user = pick<Record<string, unknown>>(doc?.users, ctx?.user, 'user') ?? {};
  if (!cluster || typeof cluster.server !== 'string') {
    throw new Error(`${path}: no server for the current context "${String(doc?.['current-context'])}"`);
  }
  const base = dirname(path);
  return {
    server: cluster.server,
    ca: await dataOrFile(cluster['certificate-authority-data'], cluster['certificate-authority'], base),
    cert: await dataOrFile(user['client-certificate-data'], user['client-certificate'], base),
    key: await dataOrFile(user['client-key-data'], user['client-key'], base),
    token: typeof user.token === 'string' ? user.token : undefined,
  };
}

export interface KubeResponse {
  readonly status: number;
  /** Parsed JSON, or the text when the body is not JSON. */
  readonly body: unknown;
  /** Response headers (lower-case names); `warning` holds the API server's warnings. */
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
}

/**
 * One request to the API server with a kubeconfig's credentials, e.g.
 * `kubeRequest(c, 'POST', '/api/v1/namespaces/default/services', svc)`. Never throws on an HTTP
 * status; throws on a connection error or after `timeoutMs` (default 30 s).
 */
export async function kubeRequest(
  creds: KubeconfigCredentials,
  method: string,
  path: string,
  body?: unknown,
  opts: { readonly contentType?: string; readonly timeoutMs?: number } = {},
): Promise<KubeResponse> {
  const url = new URL(path, creds.server);
  const payload = body === undefined ? undefined : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
  const headers: Record<string, string> = { Accept: 'application/json' };
  if (payload) {
    headers['Content-Type'] = opts.contentType ?? 'application/json';
    headers['Content-Length'] = String(payload.length);
  }
  if (creds.token) headers.Authorization = `Bearer ${creds.token}`;
  return new Promise((resolveReq, reject) => {
    const req = httpsRequest(url, { method, headers, ca: creds.ca, cert: creds.cert, key: creds.key, timeout: opts.timeoutMs ?? 30_000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let parsed: unknown = text;
        try {
          parsed = JSON.parse(text);
        } catch {
          // not JSON (e.g. /readyz answers "ok")
        }
        resolveReq({ status: res.statusCode ?? 0, body: parsed, headers: res.headers });
      });
    });
    req.on('timeout', () => req.destroy(new Error(`${method} ${url.href}: no answer in ${opts.timeoutMs ?? 30_000} ms`)));
    req.on('error', reject);
    req.end(payload);
  });
}

let ensured: Promise<LocalCluster> | undefined;

async function startOrReuse(): Promise<LocalCluster> {
  const external = process.env.MESH_E2E_KUBECONFIG;
  if (external) {
    const creds = await readKubeconfig(external);
    return { kubeconfig: external, server: creds.server };
  }
  // up.sh keeps what runs, restarts what stopped and prints the kubeconfig path last on stdout.
  // It says "new state" on stderr only to the one caller that created the plane.
  const { stdout, stderr } = await runScript('up.sh');
  const kubeconfig = stdout.trim().split('\n').pop() ?? '';
  if (!kubeconfig) throw new Error(`scripts/cluster/up.sh printed no kubeconfig path:\n${stderr.slice(-4000)}`);
  const { server } = await readKubeconfig(kubeconfig);
  const created = /^cluster: new state in /m.test(stderr);
  if (!created) return { kubeconfig, server };
  return {
    kubeconfig,
    server,
    async stop() {
      ensured = undefined;
      await runScript('down.sh');
    },
  };
}

/** The local control plane (started and, if needed, built first), or MESH_E2E_KUBECONFIG's cluster. */
export function ensureCluster(): Promise<LocalCluster> {
  ensured ??= startOrReuse().catch((err: unknown) => {
    ensured = undefined;
    throw err;
  });
  return ensured;
}

function requireLocal(what: string): void {
  if (process.env.MESH_E2E_KUBECONFIG) {
    throw new Error(`${what} works only on the local control plane, not on MESH_E2E_KUBECONFIG's cluster`);
  }
}

/** Stops kube-apiserver alone (SIGTERM, SIGKILL after 15 s). */
export async function stopApiServer(): Promise<void> {
  requireLocal('stopApiServer');
  await runScript('apiserver.sh', ['stop']);
}

export interface StartApiServerOptions {
  /**
   * Also restart kube-controller-manager, kube-scheduler and the node simulator once the API server
   * is ready. Without it they recover on their own, but only after client-go's retry backoff: a
   * Deployment created right after the restart may get its pods and endpoints 25–60 s later.
   */
  readonly restartControllers?: boolean;
}

/** Starts kube-apiserver again with the same port and data; resolves once /readyz is ok. */
export async function startApiServer(opts: StartApiServerOptions = {}): Promise<void> {
  requireLocal('startApiServer');
  await runScript('apiserver.sh', opts.restartControllers ? ['start', '--restart-controllers'] : ['start']);
}

/** Restarts the node simulator alone (scripts/cluster/simulator.sh); pods and their addresses stay. */
export async function restartNodeSimulator(): Promise<void> {
  requireLocal('restartNodeSimulator');
  await runScript('simulator.sh', ['restart']);
}

/** How tests give simulated pods a network of their own on the local plane (scripts/cluster/pod-network.sh). */
export interface PodNetwork {
  /** The plane's pod range, e.g. `198.19.204.0/22`: every pod address of this plane is in it. */
  readonly podCidr: string;
  /** Prefix of the plane's test network namespaces, e.g. `mesh-pod3-` (unique among the planes running here). */
  readonly netnsPrefix: string;
  /** This machine's address on a pod's link (the simulated node's IP). */
  readonly gateway: string;
}

export type PodNetworkAvailability = { readonly network: PodNetwork; readonly reason?: undefined } | { readonly network?: undefined; readonly reason: string };

function readEnvFile(path: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    const m = /^([A-Z_][A-Z0-9_]*)=(.*)$/.exec(line.trim());
    if (m) out[m[1] as string] = m[2] as string;
  }
  return out;
}

/**
 * Whether tests can play simulated pods here (e2e/support/pod-player.ts): the local plane's pod
 * range and namespace prefix, and a process allowed to make network namespaces (root; see
 * test/support/netns.ts). Otherwise the reason, for the one line a skipping test prints.
 */
export function podNetwork(): PodNetworkAvailability {
  if (process.env.MESH_E2E_KUBECONFIG) return { reason: "pods of MESH_E2E_KUBECONFIG's cluster do not run on this machine" };
  const envFile = join(clusterDir(), 'cluster.env');
  if (!existsSync(envFile)) return { reason: `no local plane in ${clusterDir()} (it starts with the test run unless MESH_TEST_CLUSTER=0)` };
  const env = readEnvFile(envFile);
  if (!env.POD_CIDR || !env.NETNS_PREFIX || !env.NODE_IP) {
    return { reason: `the plane in ${clusterDir()} was made by an older version of scripts/cluster (no NETNS_PREFIX); run npm run cluster:down` };
  }
  const support = netnsSupport();
  if (!support.ok) return { reason: support.reason ?? 'network namespaces are not available' };
  return { network: { podCidr: env.POD_CIDR, netnsPrefix: env.NETNS_PREFIX, gateway: env.NODE_IP } };
}
