#!/usr/bin/env node
/**
 * Start-up cost of `meshctl`: runs `node dist/bin/meshctl.js version --remote=false` (the
 * bundle users run; build first: `npm run build`) RUNS times (default 20) and prints the median and
 * 95th percentile wall time of the whole process, then runs it once more with a module-loader hook
 * to count the modules it loads and to show which heavy packages, if any, got imported.
 *
 *   npm run bench:cli-startup [-- [--entry dist/cli/meshctl.js] [-- <meshctl arguments>]]
 *   node bench/cli-startup.mjs [--entry <file>] [-- <meshctl arguments>]
 *
 * `--entry` measures another build of meshctl, e.g. `dist/cli/meshctl.js` (tsc's output, one
 * module per source file). The runs use the Node that runs this script (`npm run` puts the
 * project's pinned Node first on PATH) and an empty HOME, so no MESHCONFIG file of the machine's
 * user is read.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dash = process.argv.indexOf('--');
const own = dash >= 0 ? process.argv.slice(2, dash) : process.argv.slice(2);
const entryAt = own.indexOf('--entry');
const entry = path.resolve(root, entryAt >= 0 ? own[entryAt + 1] : 'dist/bin/meshctl.js');
const runs = Number(process.env.RUNS ?? 20);
const args = dash >= 0 ? process.argv.slice(dash + 1) : ['version', '--remote=false'];
/** Packages whose presence at start-up would mean a heavy import escaped into module scope. */
const HEAVY = ['yaml', 'zod', '@grpc/grpc-js', '@bufbuild/protobuf', '@kubernetes/client-node', 'pino', 'prom-client', 'rotating-file-stream'];

if (!fs.existsSync(entry)) {
  console.error(`${entry} is missing: build first with npm run build`);
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
// A bundle holds packages inside its files: esbuild's metafile (dist/bin/meta.json, written by
// scripts/bundle.mjs) says which sources went into each loaded output file.
const meta = path.join(path.dirname(entry), 'meta.json');
const sources = [...inNodeModules];
if (fs.existsSync(meta)) {
  const { outputs } = JSON.parse(fs.readFileSync(meta, 'utf8'));
  for (const [out, info] of Object.entries(outputs)) {
    if (loaded.has(path.resolve(root, out))) sources.push(...Object.keys(info.inputs).map((i) => path.resolve(root, i)));
  }
}
const heavy = HEAVY.filter((pkg) => sources.some((p) => p.includes(`${path.sep}node_modules${path.sep}${pkg}${path.sep}`)));
fs.rmSync(work, { recursive: true, force: true });

const f = (ms) => `${ms.toFixed(1)} ms`;
console.log(`${path.relative(root, entry)} ${args.join(' ')} — ${runs} runs on node ${process.version}`);
console.log(`  wall time: median ${f(quantile(times, 0.5))}, p95 ${f(quantile(times, 0.95))} (node -e 0: median ${f(quantile(bare, 0.5))})`);
console.log(`  modules loaded: ${loaded.size} (${ours.length} of the project, ${inNodeModules.length} from node_modules)`);
console.log(`  heavy packages loaded: ${heavy.length > 0 ? heavy.join(', ') : 'none'}`);
