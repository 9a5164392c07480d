/**
 * Idle footprint of the sidecar agent (docs/adr/0214): `mesh-agent proxy sidecar` as the injector
 * renders it for a pod (the real sidecar template, kubelet-style variables), against a real meshd
 * with its CA on the local plane (the workload token comes from the TokenRequest API), with the
 * repository's Envoy stand-in (e2e/support/envoy-stand-in.mjs) in place of Envoy, which this
 * machine does not have. It waits for /healthz/ready, lets the agent settle, and prints the agent's
 * memory: RSS split into anonymous and file pages (/proc/<pid>/status). Run by hand; asserts nothing.
 *
 *   npm run cluster:up
 *   npm run build
 *   npm run bench:agent -- [--entry dist/bin/mesh-agent.js] [--runs 3] [--settle 8] [--mode grpc]
 *
 * --entry    the agent's entry: dist/bin/mesh-agent.js (the bundle the proxy image runs, default) or
 *            dist/cli/mesh-agent.js (tsc's output)
 * --mode     envoy (default) or grpc (proxyless: the agent writes certificate files, no Envoy)
 * Figures are MB (10^6 bytes); say the machine's load with them.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, loadavg, tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { DEFAULT_INJECTOR_CONFIG, parseInjectionValues } from '../../src/inject/config.js';
import { injectPod } from '../../src/inject/inject.js';
import type { Container, Pod } from '../../src/inject/pod.js';
import { Kube } from '../registry/kube.js';
import { freePort } from '../xds/daemon.js';

const root = resolve(fileURLToPath(new URL('.', import.meta.url)), '..', '..', '..');

interface Options {
  entry: string;
  runs: number;
  settleS: number;
  mode: 'envoy' | 'grpc';
  kubeconfig: string;
}

function options(argv: string[]): Options {
  const o: Options = { entry: 'dist/bin/mesh-agent.js', runs: 3, settleS: 8, mode: 'envoy', kubeconfig: join(homedir(), '.cache', 'mesh', 'cluster', 'admin.kubeconfig') };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const v = (): string => {
      const x = argv[++i];
      if (x === undefined) usage(`${a} needs a value`);
      return x;
    };
    if (a === '--entry') o.entry = v();
    else if (a === '--runs') o.runs = Number(v());
    else if (a === '--settle') o.settleS = Number(v());
    else if (a === '--mode') {
      const m = v();
      if (m !== 'envoy' && m !== 'grpc') usage(`--mode: ${JSON.stringify(m)} is not envoy or grpc`);
      o.mode = m;
    } else if (a === '--kubeconfig') o.kubeconfig = v();
    else usage(`unknown option ${JSON.stringify(a)}`);
  }
  if (!Number.isInteger(o.runs) || o.runs < 1) usage('--runs: expected a whole number of at least 1');
  if (!(o.settleS >= 0)) usage('--settle: expected seconds, 0 or more');
  return o;
}

function usage(message: string): never {
  console.error(`bench:agent: ${message} (see the comment at the top of bench/agent/main.ts)`);
  process.exit(2);
}

/** Polls `url` until it answers 2xx; fails when `child` exits first or after `timeoutMs`. */
async function untilReady(url: string, child: ChildProcess, timeoutMs: number, stderr: () => string): Promise<void> {
  for (const until = Date.now() + timeoutMs; Date.now() < until; await sleep(100)) {
    if (child.exitCode !== null) throw new Error(`${url}: the process exited with ${child.exitCode} first:\n${stderr()}`);
    if (await fetch(url).then((r) => r.ok, () => false)) return;
  }
  throw new Error(`${url}: not ready within ${timeoutMs} ms:\n${stderr()}`);
}

/** The last 8 KiB a child wrote to standard error. */
function tail(child: ChildProcess): () => string {
  let text = '';
  child.stderr?.setEncoding('utf8').on('data', (c: string) => (text = (text + c).slice(-8192)));
  return () => text;
}

/** SIGTERM (the agent stops its Envoy and drains), SIGKILL after 15 s. */
async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
  await exited;
  clearTimeout(timer);
}

/** kB fields of /proc/<pid>/status, in MB. */
function memory(pid: number): { rss: number; anon: number; file: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const field = (k: string): number => Number(new RegExp(`^${k}:\\s+(\\d+) kB$`, 'm').exec(status)?.[1] ?? NaN) * 1024 / 1e6;
  return { rss: field('VmRSS'), anon: field('RssAnon'), file: field('RssFile') };
}

/** The pod's downward-API variables, as the kubelet resolves the container's fieldRefs. */
function kubeletEnv(c: Container, pod: { name: string; namespace: string; serviceAccount: string }): Record<string, string> {
  const fields: Record<string, string> = {
    'metadata.name': pod.name,
    'metadata.namespace': pod.namespace,
    'status.podIP': '127.0.0.1',
    'spec.serviceAccountName': pod.serviceAccount,
    'status.hostIP': '127.0.0.1',
    'spec.nodeName': 'node-1',
  };
  const env: Record<string, string> = {};
  for (const e of c.env ?? []) {
    const ref = (e.valueFrom as { fieldRef?: { fieldPath: string } } | undefined)?.fieldRef?.fieldPath;
    env[e.name] = ref !== undefined ? (fields[ref] ?? '') : (e.value ?? '');
  }
  return env;
}

async function main(): Promise<void> {
  const o = options(process.argv.slice(2));
  const entry = resolve(root, o.entry);
  const kube = new Kube(o.kubeconfig, 4);
  const id = randomBytes(3).toString('hex');
  const meshNs = `bench-agent-${id}-mesh`;
  const appNs = `bench-agent-${id}-app`;
  const work = mkdtempSync(join(tmpdir(), 'mesh-bench-agent-'));
  const children: ChildProcess[] = [];
  const cleanup = async (): Promise<void> => {
    await Promise.all(children.map(stop));
    for (const ns of [appNs, meshNs]) await kube.json('DELETE', `/api/v1/namespaces/${ns}`).catch(() => undefined);
    kube.close();
    rmSync(work, { recursive: true, force: true });
  };
  process.once('SIGINT', () => void cleanup().then(() => process.exit(130)));
  try {
    for (const ns of [meshNs, appNs]) await kube.json('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    await kube.json('POST', `/api/v1/namespaces/${appNs}/serviceaccounts`, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'app' } });

    // meshd with its CA: the Cluster registry, the secured port (15012's role) on a free port
    const [grpc, secure, http, monitoring] = [await freePort(), await freePort(), await freePort(), await freePort()];
    const daemon = spawn(
      process.execPath,
      [
        join(root, 'dist', 'bin', 'mesh-discovery.js'), 'discovery', '--registries', 'Cluster', '--clusterconfig', o.kubeconfig,
        '--grpcAddr', `127.0.0.1:${grpc}`, '--secureGRPCAddr', `127.0.0.1:${secure}`, '--httpsAddr', '', '--httpAddr', `127.0.0.1:${http}`,
        '--monitoringAddr', `127.0.0.1:${monitoring}`, '--meshConfig', join(work, 'no-mesh-config'), '--shutdownDuration', '1s',
      ],
      { cwd: work, env: { ...process.env, ENABLE_CA_SERVER: 'true', POD_NAMESPACE: meshNs, DISC_ENABLE_STATUS: 'false' }, stdio: ['ignore', 'ignore', 'pipe'] },
    );
    children.push(daemon);
    await untilReady(`http://127.0.0.1:${monitoring}/ready`, daemon, 60_000, tail(daemon));
    // the root as a pod sees it: the ConfigMap meshd keeps in every namespace
    let rootPem: string | undefined;
    for (let i = 0; i < 300 && !rootPem; i++) {
      const cm = await kube.json<{ data?: Record<string, string> }>('GET', `/api/v1/namespaces/${appNs}/configmaps/mesh-ca-root-cert`).catch(() => undefined);
      rootPem = cm?.data?.['root-cert.pem'];
      if (!rootPem) await sleep(100);
    }
    if (!rootPem) throw new Error('meshd did not publish mesh-ca-root-cert in the app namespace');

    console.log(`bench:agent: ${relative(root, entry)} (mode ${o.mode}) on node ${process.version}; settle ${o.settleS} s; load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
    console.log('run   ready(ms)    RSS  RssAnon  RssFile  (MB)');
    const rows: Array<{ rss: number; anon: number; file: number }> = [];
    for (let run = 1; run <= o.runs; run++) {
      const dir = join(work, `run-${run}`);
      mkdirSync(join(dir, 'pod'), { recursive: true });
      writeFileSync(join(dir, 'pod', 'labels'), 'app="app"\nversion="v1"\n');
      writeFileSync(join(dir, 'root-cert.pem'), rootPem);
      const token = await kube.json<{ status: { token: string } }>('POST', `/api/v1/namespaces/${appNs}/serviceaccounts/app/token`, {
        apiVersion: 'authentication.k8s.io/v1',
        kind: 'TokenRequest',
        spec: { audiences: ['mesh-ca'], expirationSeconds: 3600 },
      });
      writeFileSync(join(dir, 'token'), token.status.token, { mode: 0o600 });
      const envoy = join(dir, 'envoy');
      writeFileSync(envoy, `#!/bin/sh\nexec "${process.execPath}" "${join(root, 'e2e', 'support', 'envoy-stand-in.mjs')}" "$@"\n`, { mode: 0o755 });
      const [healthPort, statusPort, adminPort] = [await freePort(), await freePort(), await freePort()];
      const pod = {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: `app-${run}`, namespace: appNs, labels: { app: 'app' }, annotations: o.mode === 'grpc' ? { 'inject.mesh.io/templates': 'grpc-agent' } : {} },
        spec: { serviceAccountName: 'app', containers: [{ name: 'app', image: 'app' }] },
      } as unknown as Pod;
      const injected = injectPod(pod, appNs, {
        config: DEFAULT_INJECTOR_CONFIG,
        values: parseInjectionValues(JSON.stringify({ global: { meshNamespace: meshNs, discoveryAddress: `meshd.${meshNs}.svc:15012` } })),
        mesh: { trustDomain: 'cluster.local', defaultConfig: { discoveryAddress: `127.0.0.1:${secure}`, proxyAdminPort: adminPort, terminationDrainDuration: '1s' } },
        revision: 'default',
        domain: 'cluster.local',
        clusterSupportsNativeSidecars: false,
        probeLocalhost: false,
        legacyFsGroup: false,
      }).pod;
      const proxy = injected.spec!.containers.find((c) => c.name === 'mesh-proxy') as Container;
      const env: Record<string, string> = { ...kubeletEnv(proxy, { name: `app-${run}`, namespace: appNs, serviceAccount: 'app' }), CA_ADDR: `127.0.0.1:${secure}` };
      const args = (proxy.args ?? []).map((a) => a.replace(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (m, n: string) => env[n] ?? m));
      const started = performance.now();
      const agent = spawn(
        process.execPath,
        [
          entry, ...args,
          '--tokenPath', join(dir, 'token'), '--rootCertPath', join(dir, 'root-cert.pem'), '--configDir', join(dir, 'proxy'), '--certDir', join(dir, 'data'),
          '--podInfoDir', join(dir, 'pod'), '--statusPort', String(statusPort), '--healthPort', String(healthPort), '--xdsServerName', `meshd.${meshNs}.svc`,
          ...(o.mode === 'envoy' ? ['--envoyBinary', envoy, '--sdsSocket', join(dir, 'sds', 'socket')] : []),
        ],
        { env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'ignore', 'pipe'] },
      );
      children.push(agent);
      await untilReady(`http://127.0.0.1:${healthPort}/healthz/ready`, agent, 60_000, tail(agent));
      const readyMs = performance.now() - started;
      await sleep(o.settleS * 1000);
      const m = memory(agent.pid!);
      rows.push(m);
      console.log(`${String(run).padEnd(5)} ${readyMs.toFixed(0).padStart(9)} ${m.rss.toFixed(1).padStart(6)} ${m.anon.toFixed(1).padStart(8)} ${m.file.toFixed(1).padStart(8)}`);
      await stop(agent);
    }
    const med = (k: 'rss' | 'anon' | 'file'): string => rows.map((r) => r[k]).sort((a, b) => a - b)[Math.floor(rows.length / 2)]!.toFixed(1);
    console.log(`${'med'.padEnd(5)} ${'-'.padStart(9)} ${med('rss').padStart(6)} ${med('anon').padStart(8)} ${med('file').padStart(8)}`);
  } finally {
    await cleanup();
  }
}

await main();
