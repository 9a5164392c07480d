/**
 * Cluster registry benchmark of the mesh-discovery daemon. Run by hand; prints figures, asserts nothing.
 *
 *   npm run cluster:up                                   # the local control plane
 *   npm run build                                        # the daemon under test: dist/cli/mesh-discovery.js
 *   npm run bench:registry -- --services 1000 --endpoints 5000
 *
 * Applies N selector-less Services and M endpoints (EndpointSlices created directly) spread over
 * namespaces `bench-reg-<id>-<k>`, starts `mesh-discovery discovery --registries Cluster` as a child
 * process, and reports apply time, start → ready, RSS, and how long one Service edit takes to show
 * in the daemon's registry (`/debug/registryz`). Deletes its namespaces at the end (also on Ctrl-C).
 * See bench/README.md.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../xds/daemon.js';
import { Kube, pool } from './kube.js';

const HERE = dirname(fileURLToPath(import.meta.url));
/** bench/dist/registry → repository root. */
const REPO_ROOT = resolve(HERE, '..', '..', '..');
const DAEMON_CLI = join(REPO_ROOT, 'dist', 'cli', 'mesh-discovery.js');
const SLICE_MAX = 100;

interface Options {
  services: number;
  endpoints: number;
  namespaces: number;
  concurrency: number;
  kubeconfig: string;
  readyTimeoutS: number;
  editTimeoutS: number;
  keep: boolean;
}

const USAGE = `usage: npm run bench:registry -- [options]
  --services N      selector-less Services [10000]
  --endpoints M     endpoints in all, spread evenly over the Services (EndpointSlices of <= ${SLICE_MAX}) [50000]
  --namespaces K    namespaces the Services are spread over [20]
  --concurrency C   API requests in flight while applying [32]
  --kubeconfig P    admin kubeconfig [~/.cache/mesh/cluster/admin.kubeconfig]
  --ready-timeout S give up waiting for the daemon's /ready [600]
  --edit-timeout S  give up waiting for the edit in the registry [120]
  --keep            leave the namespaces in place`;

function parseArgs(argv: ReadonlyArray<string>): Options {
  const o: Options = {
    services: 10_000,
    endpoints: 50_000,
    namespaces: 20,
    concurrency: 32,
    kubeconfig: join(homedir(), '.cache', 'mesh', 'cluster', 'admin.kubeconfig'),
    readyTimeoutS: 600,
    editTimeoutS: 120,
    keep: false,
  };
  const num = (flag: string, v: string | undefined, min: number): number => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < min) throw new Error(`${flag}: "${v}" must be an integer >= ${min}`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const v = (): string | undefined => argv[++i];
    if (a === '--services') o.services = num(a, v(), 1);
    else if (a === '--endpoints') o.endpoints = num(a, v(), 0);
    else if (a === '--namespaces') o.namespaces = num(a, v(), 1);
    else if (a === '--concurrency') o.concurrency = num(a, v(), 1);
    else if (a === '--kubeconfig') o.kubeconfig = v() ?? '';
    else if (a === '--ready-timeout') o.readyTimeoutS = num(a, v(), 1);
    else if (a === '--edit-timeout') o.editTimeoutS = num(a, v(), 1);
    else if (a === '--keep') o.keep = true;
    else if (a === '--help' || a === '-h') {
      console.log(USAGE);
      process.exit(0);
    } else throw new Error(`unknown option ${a}\n${USAGE}`);
  }
  if (!existsSync(o.kubeconfig)) throw new Error(`--kubeconfig: ${o.kubeconfig} does not exist (run \`npm run cluster:up\`)`);
  if (o.endpoints > 65_536 * 150) throw new Error('--endpoints: at most 9830400 (addresses 10.100.0.0 upward)');
  return o;
}

const seconds = (ms: number): string => `${(ms / 1000).toFixed(2)} s`;
const mb = (kb: number): string => `${(kb / 1024).toFixed(0)} MB`;

/** Endpoint j's address: 10.100.0.0 upward, unique per run. */
function address(j: number): string {
  return `10.${100 + (j >> 16)}.${(j >> 8) & 255}.${j & 255}`;
}

function procStatus(pid: number): { rssKb: number; hwmKb: number } {
  const text = readFileSync(`/proc/${pid}/status`, 'utf8');
  const field = (name: string): number => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0);
  return { rssKb: field('VmRSS'), hwmKb: field('VmHWM') };
}

async function getJson<T>(url: string, timeoutMs = 30_000): Promise<{ status: number; body: T | undefined }> {
  const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
  const text = await res.text();
  return { status: res.status, body: res.ok && text.startsWith('[') ? (JSON.parse(text) as T) : undefined };
}

interface RegistryService {
  hostname: string;
  namespace: string;
  ports: Array<{ port: number }>;
}

async function main(): Promise<void> {
  const o = parseArgs(process.argv.slice(2));
  if (!existsSync(DAEMON_CLI)) throw new Error(`${DAEMON_CLI} does not exist: run \`npm run build\` first`);
  const kube = new Kube(o.kubeconfig, o.concurrency);
  const run = `bench-reg-${randomBytes(3).toString('hex')}`;
  const namespaces = Array.from({ length: o.namespaces }, (_, k) => `${run}-${k}`);
  let daemon: ChildProcess | undefined;
  let cleaned = false;
  const cleanup = async (): Promise<void> => {
    if (cleaned) return;
    cleaned = true;
    if (daemon && daemon.exitCode === null) daemon.kill('SIGTERM');
    if (o.keep) {
      console.log(`kept namespaces ${run}-0 … ${run}-${o.namespaces - 1}`);
      return;
    }
    await Promise.all(namespaces.map((ns) => kube.json('DELETE', `/api/v1/namespaces/${ns}`).catch(() => undefined)));
    console.log(`cleanup: deletion of ${namespaces.length} namespaces ${run}-* requested (the namespace controller removes their objects in the background)`);
  };
  process.once('SIGINT', () => void cleanup().finally(() => process.exit(130)));

  try {
    console.log(`cluster ${kube.server.origin}; ${o.services} Services, ${o.endpoints} endpoints over ${o.namespaces} namespaces (${run}-*), concurrency ${o.concurrency}`);
    // ---- apply ----
    const t0 = performance.now();
    await Promise.all(namespaces.map((name) => kube.json('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels: { 'mesh.io/bench': 'registry' } } })));
    const perService = Math.floor(o.endpoints / o.services);
    const extra = o.endpoints % o.services;
    let slices = 0;
    let done = 0;
    let lastReport = performance.now();
    await pool(o.services, o.concurrency, async (i) => {
      const ns = namespaces[i % o.namespaces];
      const name = `svc-${i}`;
      await kube.json('POST', `/api/v1/namespaces/${ns}/services`, {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name, namespace: ns },
        spec: { ports: [{ name: 'http', port: 8080, targetPort: 8080 }] },
      });
      const count = perService + (i < extra ? 1 : 0);
      const first = i * perService + Math.min(i, extra);
      for (let s = 0; s * SLICE_MAX < count; s++) {
        const from = first + s * SLICE_MAX;
        const to = Math.min(first + count, from + SLICE_MAX);
        await kube.json('POST', `/apis/discovery.k8s.io/v1/namespaces/${ns}/endpointslices`, {
          apiVersion: 'discovery.k8s.io/v1',
          kind: 'EndpointSlice',
          metadata: { name: `${name}-${s}`, namespace: ns, labels: { 'kubernetes.io/service-name': name } },
          addressType: 'IPv4',
          endpoints: Array.from({ length: to - from }, (_, k) => ({ addresses: [address(from + k)], conditions: { ready: true } })),
          ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
        });
        slices++;
      }
      done++;
      if (performance.now() - lastReport > 10_000) {
        lastReport = performance.now();
        console.log(`  … ${done}/${o.services} Services applied (${seconds(lastReport - t0)})`);
      }
    });
    const applyMs = performance.now() - t0;
    console.log(`apply: ${o.services} Services + ${slices} EndpointSlices (${o.endpoints} endpoints) in ${seconds(applyMs)} (${((o.services + slices) / (applyMs / 1000)).toFixed(0)} objects/s)`);

    // ---- daemon ----
    const [grpcPort, httpPort, monPort] = [await freePort(), await freePort(), await freePort()];
    const args = [
      DAEMON_CLI,
      'discovery',
      '--registries',
      'Cluster',
      '--clusterconfig',
      o.kubeconfig,
      '--grpcAddr',
      `127.0.0.1:${grpcPort}`,
      '--httpAddr',
      `127.0.0.1:${httpPort}`,
      '--monitoringAddr',
      `127.0.0.1:${monPort}`,
      '--meshConfig',
      join(REPO_ROOT, `.bench-no-mesh-config-${run}`),
    ];
    let log = '';
    const t1 = performance.now();
    daemon = spawn(process.execPath, args, {
      cwd: REPO_ROOT,
      env: { ...process.env, ENABLE_CA_SERVER: 'false', DISC_USE_ENDPOINT_SLICE: 'true', ENABLE_DEBUG_ON_HTTP: 'true', POD_NAMESPACE: namespaces[0], POD_NAME: `${run}-meshd` },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const append = (c: Buffer): void => {
      log = (log + c.toString('utf8')).slice(-20_000);
    };
    daemon.stdout?.on('data', append);
    daemon.stderr?.on('data', append);
    const pid = daemon.pid ?? 0;
    for (;;) {
      if (daemon.exitCode !== null) throw new Error(`the daemon exited with ${daemon.exitCode} before it was ready:\n${log.slice(-4000)}`);
      const ok = await fetch(`http://127.0.0.1:${monPort}/ready`, { signal: AbortSignal.timeout(2000) }).then((r) => r.ok, () => false);
      if (ok) break;
      if (performance.now() - t1 > o.readyTimeoutS * 1000) throw new Error(`the daemon was not ready within ${o.readyTimeoutS} s:\n${log.slice(-4000)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    const readyMs = performance.now() - t1;
    const atReady = procStatus(pid);
    console.log(`daemon start → ready: ${seconds(readyMs)}; RSS at ready ${mb(atReady.rssKb)} (peak ${mb(atReady.hwmKb)})`);

    const registryz = `http://127.0.0.1:${httpPort}/debug/registryz`;
    const mine = (list: RegistryService[] | undefined): RegistryService[] => (list ?? []).filter((s) => s.namespace.startsWith(`${run}-`));
    const tq = performance.now();
    const first = mine((await getJson<RegistryService[]>(registryz, 120_000)).body);
    const fetchMs = performance.now() - tq;
    console.log(`registry at ready: ${first.length}/${o.services} of the Services (one /debug/registryz read: ${seconds(fetchMs)})`);
    await new Promise((r) => setTimeout(r, 2000));
    const settled = procStatus(pid);
    console.log(`daemon RSS 2 s after ready: ${mb(settled.rssKb)} (VmHWM ${mb(settled.hwmKb)})`);

    // ---- one Service edit: a second port on svc-0 ----
    const ns0 = namespaces[0];
    const host0 = `svc-0.${ns0}.svc.cluster.local`;
    const te = performance.now(); // includes the GET of the Service before the PUT
    const svc0 = await kube.json<{ spec: { ports: unknown[] } }>('GET', `/api/v1/namespaces/${ns0}/services/svc-0`);
    svc0.spec.ports = [
      { name: 'http', port: 8080, targetPort: 8080 },
      { name: 'http-alt', port: 9090, targetPort: 9090 },
    ];
    await kube.json('PUT', `/api/v1/namespaces/${ns0}/services/svc-0`, svc0);
    const writtenMs = performance.now() - te;
    let editMs = -1;
    let polls = 0;
    while (performance.now() - te < o.editTimeoutS * 1000) {
      polls++;
      const svc = mine((await getJson<RegistryService[]>(registryz, 120_000)).body).find((s) => s.hostname === host0);
      if (svc?.ports.some((p) => p.port === 9090)) {
        editMs = performance.now() - te;
        break;
      }
      await new Promise((r) => setTimeout(r, 20));
    }
    console.log(
      editMs < 0
        ? `Service edit: not in the registry within ${o.editTimeoutS} s`
        : `Service edit → registry: ${seconds(editMs)} (API write ${seconds(writtenMs)}; ${polls} registryz reads of ~${seconds(fetchMs)} each bound the resolution)`,
    );
    const end = procStatus(pid);
    console.log(`daemon VmHWM at the end: ${mb(end.hwmKb)}`);
    console.log(
      JSON.stringify({
        services: o.services,
        endpoints: o.endpoints,
        namespaces: o.namespaces,
        applyS: +(applyMs / 1000).toFixed(2),
        readyS: +(readyMs / 1000).toFixed(2),
        rssAtReadyMB: +(atReady.rssKb / 1024).toFixed(0),
        rssSettledMB: +(settled.rssKb / 1024).toFixed(0),
        hwmMB: +(end.hwmKb / 1024).toFixed(0),
        registryAtReady: first.length,
        editS: editMs < 0 ? null : +(editMs / 1000).toFixed(2),
        registryzReadS: +(fetchMs / 1000).toFixed(2),
      }),
    );
  } finally {
    await cleanup();
    kube.close();
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : String(err));
  process.exit(1);
});
