#!/usr/bin/env node
/**
 * Start-up cost of `meshctl`: runs `node dist/cli/meshctl.js version --remote=false` (build
 * first: `npx tsc -p tsconfig.json`) RUNS times (default 20) and prints the median and 95th
 * percentile wall time of the whole process, then runs it once more with a module-loader hook to
 * count the modules it loads and to show which heavy packages, if any, got imported.
 *
 *   node bench/cli-startup.mjs [-- <meshctl arguments>]
 *
 * The runs use an empty HOME, so no MESHCONFIG file of the machine's user is read.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const entry = path.join(root, 'dist/cli/meshctl.js');
const runs = Number(process.env.RUNS ?? 20);
const dash = process.argv.indexOf('--');
const args = dash >= 0 ? process.argv.slice(dash + 1) : ['version', '--remote=false'];
/** Packages whose presence at start-up would mean a heavy import escaped into module scope. */
const HEAVY = ['yaml', 'zod', '@grpc/grpc-js', '@bufbuild/protobuf', '@kubernetes/client-node', 'pino', 'prom-client', 'rotating-file-stream'];

if (!fs.existsSync(entry)) {
  console.error(`${entry} is missing: build first with npx tsc -p tsconfig.json`);
  process.exit(1);
}
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'cli-startup-'));
const env = { ...process.env, HOME: work, MESHCONFIG: '' };

function runOnce(extra = []) {
  const start = process.hrtime.bigint();
  const r = spawnSync(process.execPath, [...extra, entry, ...args], { env, encoding: 'utf8' });
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  if (r.status !== 0) throw new Error(`meshctl ${args.join(' ')} exited with ${r.status}: ${r.stderr}`);
  return ms;
}

const quantile = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];

// Node itself, for reference: the floor under any CLI start-up.
const bare = [];
const times = [];
runOnce(); // warm the file-system cache
for (let i = 0; i < runs; i++) {
  times.push(runOnce());
  const s = process.hrtime.bigint();
  spawnSync(process.execPath, ['-e', '0'], { env });
  bare.push(Number(process.hrtime.bigint() - s) / 1e6);
}
times.sort((a, b) => a - b);
bare.sort((a, b) => a - b);

// Module count: a load hook writes every URL it loads; at exit the CommonJS cache is added
// (on Node 20, `require` calls inside CommonJS packages do not pass through the hooks).
const list = path.join(work, 'modules.txt');
const hooks = path.join(work, 'hooks.mjs');
const preload = path.join(work, 'preload.mjs');
fs.writeFileSync(
  hooks,
  `import { appendFileSync } from 'node:fs';
let out;
export function initialize(data) { out = data.out; }
export async function load(url, context, next) { appendFileSync(out, url + '\\n'); return next(url, context); }
`,
);
fs.writeFileSync(
  preload,
  `import { register, createRequire } from 'node:module';
import { appendFileSync } from 'node:fs';
const out = ${JSON.stringify(list)};
register(${JSON.stringify(pathToFileURL(hooks).href)}, import.meta.url, { data: { out } });
process.on('exit', () => {
  const cache = createRequire(import.meta.url).cache;
  appendFileSync(out, Object.keys(cache).map((k) => k + '\\n').join(''));
});
`,
);
runOnce(['--import', pathToFileURL(preload).href]);
const loaded = new Set(
  fs
    .readFileSync(list, 'utf8')
    .split('\n')
    .filter((l) => l !== '' && !l.startsWith('node:'))
    .map((l) => (l.startsWith('file:') ? fileURLToPath(l) : l))
    .filter((p) => p !== preload),
);
const inNodeModules = [...loaded].filter((p) => p.includes(`${path.sep}node_modules${path.sep}`));
const ours = [...loaded].filter((p) => p.startsWith(path.join(root, 'dist')));
const heavy = HEAVY.filter((pkg) => inNodeModules.some((p) => p.includes(`${path.sep}node_modules${path.sep}${pkg}${path.sep}`)));
fs.rmSync(work, { recursive: true, force: true });

const f = (ms) => `${ms.toFixed(1)} ms`;
console.log(`meshctl ${args.join(' ')} — ${runs} runs on node ${process.version}`);
console.log(`  wall time: median ${f(quantile(times, 0.5))}, p95 ${f(quantile(times, 0.95))} (node -e 0: median ${f(quantile(bare, 0.5))})`);
console.log(`  modules loaded: ${loaded.size} (${ours.length} of the project, ${inNodeModules.length} from node_modules)`);
console.log(`  heavy packages loaded: ${heavy.length > 0 ? heavy.join(', ') : 'none'}`);
