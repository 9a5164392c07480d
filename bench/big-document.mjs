#!/usr/bin/env node
/**
 * One huge configuration document loaded into a running daemon (issue 15, docs/adr/0183, 0204): a
 * ServiceEntry of N endpoints (default 200,000: 12.6 MB of YAML) written into the config directory
 * of `mesh-discovery discovery` while the bench watches
 *   - the daemon's own longest event-loop stall (ControlZ `/loopj` `delayMs.max`): its window of
 *     figures restarts on the first read after 60 s, so the bench waits for that before the write
 *     (start-up has stalls of its own), then reads it every second until the object is in the
 *     model and once more a second later; each read returns the maximum since the window's
 *     restart, which only a read can cause, so no stall is missed;
 *   - the longest `GET /ready` round trip, polled back to back from this process;
 *   - the peak RSS of the daemon process (main thread and the parse worker), sampled every 50 ms;
 *   - the load time (write until push_status counts every endpoint).
 *
 *   node bench/big-document.mjs [options]          (use the pinned Node: node_modules/.bin/node)
 *
 *   --endpoints N       endpoints of the ServiceEntry (default 200000)
 *   --format yaml|json  how the document is written (default yaml; json: a .json file)
 *   --documents N       instead, a file of N services as separate YAML documents, as
 *                       test/robust/event-loop-stalls.test.ts's "documents" shape writes them: each
 *                       a ServiceEntry of 24 endpoints and a DestinationRule, every fifth a
 *                       VirtualService (6000: 13,200 documents, 12.7 MB)
 *   --runs N            loads to measure, each into a new daemon (default 1)
 *   --daemon-repo DIR   measure the daemon built in DIR/dist (default this checkout)
 *   --cpu-prof DIR      run the daemon with `node --cpu-prof --cpu-prof-dir DIR`
 *   --parse-only        no daemon: parse the document in the parse worker of DIR/dist (the daemon's
 *                       own large-documents.js) from this process, and print how long that took
 *                       and the peak RSS of this process over what it was before (the worker's
 *                       memory, the answer not yet unpacked)
 *
 * The machine's load (load average, printed with each row) changes every figure here; say it.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort, sleep, waitReady } from './daemon-process.mjs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { stringify } from 'yaml';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const argv = process.argv.slice(2);
let endpoints = 200_000;
let format = 'yaml';
let runs = 1;
let daemonRepo = root;
let cpuProfDir;
let parseOnly = false;
let documents = 0;
for (let i = 0; i < argv.length; i++) {
  const next = () => {
    const v = argv[++i];
    if (v === undefined) usage(`${argv[i - 1]} needs a value`);
    return v;
  };
  switch (argv[i]) {
    case '--endpoints': endpoints = Number(next()); break;
    case '--format': format = next(); break;
    case '--documents': documents = Number(next()); break;
    case '--runs': runs = Number(next()); break;
    case '--daemon-repo': daemonRepo = path.resolve(next()); break;
    case '--cpu-prof': cpuProfDir = path.resolve(next()); break;
    case '--parse-only': parseOnly = true; break;
    default: usage(`unknown option ${JSON.stringify(argv[i])}`);
  }
}
if (!Number.isInteger(endpoints) || endpoints < 1) usage('--endpoints: expected a whole number of at least 1');
if (format !== 'yaml' && format !== 'json') usage('--format: expected yaml or json');
if (!Number.isInteger(runs) || runs < 1) usage('--runs: expected a whole number of at least 1');
if (!Number.isInteger(documents) || documents < 0) usage('--documents: expected a whole number');
if (documents > 0 && (format !== 'yaml' || parseOnly)) usage('--documents: YAML only, and with a daemon');
if (documents > 0) endpoints = documents * 24;
const entry = path.join(daemonRepo, 'dist', 'cli', 'mesh-discovery.js');
if (!fs.existsSync(entry)) {
  console.error(`${entry} is missing: build first with npm run build`);
  process.exit(1);
}

function usage(message) {
  console.error(`big-document: ${message} (see the comment at the top of bench/big-document.mjs)`);
  process.exit(2);
}


async function getJson(url) {
  const res = await fetch(url);
  if (!res.ok) throw new Error(`GET ${url}: ${res.status}`);
  return res.json();
}


function rssOf(pid) {
  const m = /^VmRSS:\s+(\d+) kB$/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) * 1024 : 0;
}

/** The document: one ServiceEntry, as test/robust/event-loop-stalls.test.ts writes it. */
function hugeDocument() {
  const eps = Array.from({ length: endpoints }, (_, k) => ({ address: `10.${100 + ((k >> 16) & 255)}.${(k >> 8) & 255}.${k & 255}`, labels: { version: `v${(k % 2) + 1}` } }));
  const object = {
    apiVersion: 'networking.mesh.io/v1',
    kind: 'ServiceEntry',
    metadata: { name: 'huge', namespace: 'ns-0' },
    spec: { hosts: ['huge.ns-0.svc.cluster.local'], addresses: ['240.251.0.1'], location: 'MESH_INTERNAL', resolution: 'STATIC', ports: [{ number: 8080, name: 'http', protocol: 'HTTP' }], endpoints: eps },
  };
  return format === 'json' ? JSON.stringify(object) : stringify(object);
}

/** The file of many documents: N services, as test/robust/support.ts's meshObjects(N, 24) makes them. */
function manyDocuments() {
  const objects = [];
  for (let i = 0; i < documents; i++) {
    const ns = `ns-${i % 5}`;
    const host = `big-${i}.${ns}.svc.cluster.local`;
    const eps = Array.from({ length: 24 }, (_, k) => ({ address: `10.${k + 1}.${(i >> 8) & 255}.${i & 255}`, labels: { version: `v${(k % 2) + 1}` } }));
    objects.push({ apiVersion: 'networking.mesh.io/v1', kind: 'ServiceEntry', metadata: { name: `big-${i}`, namespace: ns }, spec: { hosts: [host], addresses: [`240.250.${(i >> 8) & 255}.${i & 255}`], location: 'MESH_INTERNAL', resolution: 'STATIC', ports: [{ number: 8080, name: 'http', protocol: 'HTTP' }], endpoints: eps } });
    objects.push({ apiVersion: 'networking.mesh.io/v1', kind: 'DestinationRule', metadata: { name: `big-${i}`, namespace: ns }, spec: { host, subsets: [{ name: 'v1', labels: { version: 'v1' } }, { name: 'v2', labels: { version: 'v2' } }] } });
    if (i % 5 === 0) objects.push({ apiVersion: 'networking.mesh.io/v1', kind: 'VirtualService', metadata: { name: `big-${i}`, namespace: ns }, spec: { hosts: [host], http: [{ route: [{ destination: { host, subset: 'v1' }, weight: 90 }, { destination: { host, subset: 'v2' }, weight: 10 }] }] } });
  }
  return objects.map((o) => stringify(o)).join('---\n');
}

const text = documents > 0 ? manyDocuments() : hugeDocument();
const MiB = (b) => (b / 2 ** 20).toFixed(0);
const what = documents > 0 ? `${documents} services in ${text.split('---\n').length} documents` : `one document of ${endpoints} endpoints`;
console.log(`big-document: ${path.relative(process.cwd(), entry) || entry}, ${what}, ${format} ${(text.length / 1e6).toFixed(1)} MB, node ${process.version}`);
if (parseOnly) {
  const { inWorker } = await import(pathToFileURL(path.join(daemonRepo, 'dist', 'config', 'large-documents.js')).href);
  // the job as the daemon posts it: UTF-8 bytes transferred since docs/adr/0204, the text before
  const transfers = fs.existsSync(path.join(daemonRepo, 'dist', 'util', 'yielding-bytes.js'));
  console.log('run  parse s  peak RSS over base MiB  load average');
  for (let run = 1; run <= runs; run++) {
    const job = { line: 0, origin: `huge.${format}`, index: 0, defaultNamespace: 'default', whole: false };
    const bytes = new TextEncoder().encode(text);
    const base = rssOf(process.pid);
    let peak = base;
    const timer = setInterval(() => (peak = Math.max(peak, rssOf(process.pid))), 20);
    const t0 = performance.now();
    const answer = await (transfers ? inWorker({ ...job, bytes }, {}, [bytes.buffer]) : inWorker({ ...job, text }, {}));
    const parseS = (performance.now() - t0) / 1000;
    clearInterval(timer);
    if (!('results' in answer)) throw new Error('the worker did not read the document');
    console.log(`${String(run).padEnd(4)} ${parseS.toFixed(1).padStart(7)}  ${MiB(peak - base).padStart(22)}  ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);
  }
  process.exit(0);
}

console.log('run  load s  daemon longest stall ms  longest /ready ms (answered)  peak RSS MiB  load average');

for (let run = 1; run <= runs; run++) {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'mesh-bigdoc-'));
  const configDir = path.join(work, 'config');
  fs.mkdirSync(configDir);
  const [grpc, http, monitoring, ctrlz] = [await freePort(), await freePort(), await freePort(), await freePort()];
  const daemon = spawn(
    process.execPath,
    [
      ...(cpuProfDir ? ['--cpu-prof', '--cpu-prof-dir', cpuProfDir] : []),
      entry, 'discovery',
      '--registries', 'Mock',
      '--configDir', configDir,
      '--meshConfig', path.join(work, 'none.yaml'),
      '--grpcAddr', `127.0.0.1:${grpc}`,
      '--httpsAddr', '',
      '--httpAddr', `127.0.0.1:${http}`,
      '--monitoringAddr', `127.0.0.1:${monitoring}`,
      '--ctrlz_address', '127.0.0.1',
      '--ctrlz_port', String(ctrlz),
      '--shutdownDuration', '1s',
    ],
    { cwd: work, env: { ...process.env, ENABLE_CA_SERVER: 'false' }, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  daemon.stderr.on('data', (d) => (stderr = (stderr + d).slice(-20_000)));
  try {
    await waitReady(`http://127.0.0.1:${monitoring}/ready`, daemon, 60_000);
    // ControlZ's window of loop figures restarts on the first read after 60 s: wait for that, so
    // that the maximum read later is the load's alone (start-up has stalls of its own)
    const loopj = () => getJson(`http://127.0.0.1:${ctrlz}/loopj`);
    const first = await loopj();
    if (first.windowSeconds <= 60) await sleep((61 - first.windowSeconds) * 1000);
    const before = (await loopj()).delayMs.max;
    let stallMs = 0;
    let peak = 0;
    const rssTimer = setInterval(() => {
      try {
        peak = Math.max(peak, rssOf(daemon.pid));
      } catch {
        /* gone */
      }
    }, 50);
    let probing = true;
    let longestReady = 0;
    let answered = 0;
    const probe = (async () => {
      while (probing) {
        const t0 = performance.now();
        const ok = await fetch(`http://127.0.0.1:${monitoring}/ready`).then((r) => r.ok, () => false);
        longestReady = Math.max(longestReady, performance.now() - t0);
        if (ok) answered++;
        await sleep(5);
      }
    })();
    const t0 = performance.now();
    const file = path.join(configDir, `huge.${format}`);
    fs.writeFileSync(`${file}.tmp`, text);
    fs.renameSync(`${file}.tmp`, file);
    let loadS = NaN;
    let lastLoop = Date.now();
    for (const until = Date.now() + 300_000; Date.now() < until; ) {
      if (daemon.exitCode !== null) throw new Error(`daemon exited with ${daemon.exitCode}`);
      if (Date.now() - lastLoop >= 1000) {
        stallMs = Math.max(stallMs, (await loopj()).delayMs.max);
        lastLoop = Date.now();
      }
      const st = await getJson(`http://127.0.0.1:${http}/debug/push_status`).catch(() => undefined);
      if (st && st.endpoints >= endpoints) {
        loadS = (performance.now() - t0) / 1000;
        break;
      }
      await sleep(50);
    }
    // what the model does after push_status counts the endpoints (the push itself) counts too
    await sleep(1000);
    stallMs = Math.max(stallMs, (await loopj()).delayMs.max);
    probing = false;
    await probe;
    clearInterval(rssTimer);
    console.log(
      `${String(run).padEnd(4)} ${loadS.toFixed(1).padStart(6)}  ${stallMs.toFixed(0).padStart(8)} (start-up ${before.toFixed(0)})` +
        `  ${longestReady.toFixed(0).padStart(10)} (${answered})  ${MiB(peak).padStart(12)}  ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`,
    );
  } catch (err) {
    console.error(`run ${run}: ${err instanceof Error ? err.message : String(err)}\n${stderr}`);
    process.exitCode = 1;
  } finally {
    daemon.kill('SIGTERM');
    await new Promise((r) => (daemon.exitCode !== null ? r() : daemon.once('exit', r)));
    fs.rmSync(work, { recursive: true, force: true });
  }
}
