#!/usr/bin/env node
/**
 * Idle footprint of the daemon (issue 18, docs/adr/0130, 0194): starts `mesh-discovery discovery`
 * as `npm run demo` does (file config from examples/config, examples/mesh.yaml, the Mock registry,
 * the CA in a directory, no cluster, no webhooks), waits for /ready, lets it settle, and prints
 * its memory before any proxy connects: RSS split into anonymous and file-backed pages (from
 * /proc/<pid>/status), and V8's heap used / total and external memory (the daemon's own /metrics).
 *
 *   npm run bench:idle [-- options]
 *   node bench/idle.mjs [options]          (use the pinned Node: node_modules/.bin/node)
 *
 *   --entry FILE        the daemon's entry (default: dist/bin/mesh-discovery.js, the bundle the
 *                       package and the image run; dist/cli/mesh-discovery.js is tsc's output)
 *   --runs N            starts to measure (default 2); each start is a new process
 *   --settle S          seconds between /ready and the measurement (default 8)
 *   --node-arg ARG      an extra Node option for the daemon, repeatable (e.g. --max-semi-space-size=2)
 *   --env K=V           extra daemon environment, repeatable
 *   --smaps             also print the largest mappings of the RSS (/proc/<pid>/smaps)
 *   --snapshot DIR      also write a heap snapshot of each start into DIR
 *
 * The config is copied to a temporary directory once, so the first start creates the CA there
 * (as the first `npm run demo` does) and later starts load it. Ports are free loopback ports.
 * Figures are MB (10^6 bytes). The machine's load changes little here, but say it with the figures.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort, sleep, waitReady } from './daemon-process.mjs';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const argv = process.argv.slice(2);
const nodeArgs = [];
const extraEnv = {};
let entry = 'dist/bin/mesh-discovery.js';
let runs = 2;
let settleS = 8;
let smaps = false;
let snapshotDir;
for (let i = 0; i < argv.length; i++) {
  const next = () => {
    const v = argv[++i];
    if (v === undefined) usage(`${argv[i - 1]} needs a value`);
    return v;
  };
  switch (argv[i]) {
    case '--entry': entry = next(); break;
    case '--runs': runs = Number(next()); break;
    case '--settle': settleS = Number(next()); break;
    case '--node-arg': nodeArgs.push(next()); break;
    case '--env': {
      const kv = next();
      const eq = kv.indexOf('=');
      if (eq <= 0) usage(`--env: expected K=V, got ${JSON.stringify(kv)}`);
      extraEnv[kv.slice(0, eq)] = kv.slice(eq + 1);
      break;
    }
    case '--smaps': smaps = true; break;
    case '--snapshot': snapshotDir = path.resolve(next()); break;
    default: usage(`unknown option ${JSON.stringify(argv[i])}`);
  }
}
if (!Number.isInteger(runs) || runs < 1) usage('--runs: expected a whole number of at least 1');
if (!(settleS >= 0)) usage('--settle: expected seconds, 0 or more');
const entryPath = path.resolve(root, entry);
if (!fs.existsSync(entryPath)) {
  console.error(`${entryPath} is missing: build first with npm run build`);
  process.exit(1);
}

function usage(message) {
  console.error(`idle: ${message} (see the comment at the top of bench/idle.mjs)`);
  process.exit(2);
}



const MB = (bytes) => (bytes / 1e6).toFixed(1);

/** kB fields of /proc/<pid>/status, in bytes. */
function procStatus(pid) {
  const out = {};
  for (const line of fs.readFileSync(`/proc/${pid}/status`, 'utf8').split('\n')) {
    const m = /^(\w+):\s+(\d+) kB$/.exec(line);
    if (m) out[m[1]] = Number(m[2]) * 1024;
  }
  return out;
}

/** RSS per mapping (file, or [heap]/anonymous), largest first. */
function smapsTop(pid, count = 12) {
  const byName = new Map();
  let name = '';
  for (const line of fs.readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
    const head = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (head) {
      name = head[1] || '(anonymous)';
      continue;
    }
    const m = /^Rss:\s+(\d+) kB$/.exec(line);
    if (m) byName.set(name, (byName.get(name) ?? 0) + Number(m[1]) * 1024);
  }
  return [...byName].sort((a, b) => b[1] - a[1]).slice(0, count);
}

function metric(text, name) {
  const m = new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text);
  return m ? Number(m[1]) : NaN;
}

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'mesh-idle-'));
const configDir = path.join(work, 'config');
fs.cpSync(path.join(root, 'examples', 'config'), configDir, { recursive: true, filter: (src) => !src.includes('.mesh-ca') });
if (snapshotDir) fs.mkdirSync(snapshotDir, { recursive: true });

console.log(`idle: ${path.relative(root, entryPath)} on node ${process.version}${nodeArgs.length ? ` ${nodeArgs.join(' ')}` : ''}; ` +
  `settle ${settleS} s; load average ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`);
console.log('run  ca       RSS   RssAnon  RssFile  RssShmem  heapUsed  heapTotal  external  (MB)');
const rows = [];
for (let run = 1; run <= runs; run++) {
  const caExisted = fs.existsSync(path.join(configDir, '.mesh-ca'));
  const [grpc, secure, http, monitoring] = [await freePort(), await freePort(), await freePort(), await freePort()];
  const daemon = spawn(
    process.execPath,
    [
      ...nodeArgs,
      ...(snapshotDir ? ['--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${snapshotDir}`] : []),
      entryPath, 'discovery',
      '--registries', 'Mock',
      '--configDir', configDir,
      '--meshConfig', path.join(root, 'examples', 'mesh.yaml'),
      '--grpcAddr', `127.0.0.1:${grpc}`,
      '--secureGRPCAddr', `127.0.0.1:${secure}`,
      '--httpsAddr', '',
      '--httpAddr', `127.0.0.1:${http}`,
      '--monitoringAddr', `127.0.0.1:${monitoring}`,
      '--shutdownDuration', '1s',
    ],
    { cwd: work, env: { ...process.env, ...extraEnv }, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  daemon.stderr.on('data', (d) => (stderr += d));
  try {
    await waitReady(`http://127.0.0.1:${monitoring}/ready`, daemon, 60_000);
    await sleep(settleS * 1000);
    const st = procStatus(daemon.pid);
    const top = smaps ? smapsTop(daemon.pid) : [];
    const metrics = await (await fetch(`http://127.0.0.1:${monitoring}/metrics`)).text();
    const row = {
      rss: st.VmRSS, anon: st.RssAnon, file: st.RssFile, shmem: st.RssShmem,
      heapUsed: metric(metrics, 'nodejs_heap_size_used_bytes'),
      heapTotal: metric(metrics, 'nodejs_heap_size_total_bytes'),
      external: metric(metrics, 'nodejs_external_memory_bytes'),
    };
    rows.push(row);
    console.log(`${String(run).padEnd(4)} ${(caExisted ? 'loaded' : 'created').padEnd(7)} ` +
      [row.rss, row.anon, row.file, row.shmem, row.heapUsed, row.heapTotal, row.external].map((v) => MB(v).padStart(8)).join(' '));
    for (const [name, bytes] of top) console.log(`       ${MB(bytes).padStart(7)}  ${name}`);
    if (snapshotDir) {
      const before = new Set(fs.readdirSync(snapshotDir));
      daemon.kill('SIGUSR2');
      const until = Date.now() + 60_000;
      let written;
      while (!written && Date.now() < until) {
        await sleep(500);
        written = fs.readdirSync(snapshotDir).find((f) => !before.has(f) && f.endsWith('.heapsnapshot'));
      }
      // The file appears before it is complete; wait until its size stops changing.
      let size = -1;
      while (written && Date.now() < until) {
        const now = fs.statSync(path.join(snapshotDir, written)).size;
        if (now === size && now > 0) break;
        size = now;
        await sleep(1000);
      }
      console.log(`       heap snapshot: ${written ? path.join(snapshotDir, written) : '(none written)'}`);
    }
  } catch (err) {
    console.error(`idle: run ${run}: ${err.message}\n${stderr}`);
    process.exitCode = 1;
  } finally {
    daemon.kill('SIGTERM');
    await new Promise((r) => (daemon.exitCode !== null ? r() : daemon.once('exit', r)));
  }
}
if (rows.length > 1) {
  const med = (key) => {
    const v = rows.map((r) => r[key]).sort((a, b) => a - b);
    return v[Math.floor((v.length - 1) / 2)];
  };
  console.log(`med  -      ${['rss', 'anon', 'file', 'shmem', 'heapUsed', 'heapTotal', 'external'].map((k) => MB(med(k)).padStart(8)).join(' ')}`);
}
fs.rmSync(work, { recursive: true, force: true });
