/**
 * Where a process's main thread spent its time, from a V8 CPU profile (`node --cpu-prof`, e.g.
 * `npm run bench:ca -- --profile 1`):
 *
 *   node bench/ca/profile-summary.mjs <file.cpuprofile> [--from <s>] [--to <s>] [--top 25]
 *
 * Self time is grouped by where the code lives (the project's folders under dist/, packages under
 * node_modules, Node's internals, native and GC) and listed per function. --from/--to cut a window
 * (seconds since the profile started), e.g. the storm only.
 */
import { readFileSync } from 'node:fs';

const args = process.argv.slice(2);
const file = args.find((a) => !a.startsWith('--') && !/^\d/.test(a));
if (!file) {
  console.error('usage: profile-summary.mjs <file.cpuprofile> [--from s] [--to s] [--top n]');
  process.exit(2);
}
const opt = (name, dflt) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : dflt;
};
const from = opt('from', 0);
const to = opt('to', Infinity);
const top = opt('top', 25);

const p = JSON.parse(readFileSync(file, 'utf8'));
const byId = new Map(p.nodes.map((n) => [n.id, n]));

function group(n) {
  const url = n.callFrame.url ?? '';
  const fn = n.callFrame.functionName;
  if (!url) return fn.startsWith('(') ? fn : `(native) ${fn || 'anonymous'}`;
  let m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (m) return m[1];
  m = /\/dist\/([^/]+)\//.exec(url);
  if (m) return `project ${m[1]}`;
  if (url.startsWith('node:')) return `node ${url.slice(5).split('/').slice(0, 2).join('/')}`;
  return url;
}

const selfUs = new Map();
const groupUs = new Map();
let total = 0;
let t = p.startTime;
for (let i = 0; i < p.samples.length; i++) {
  t += p.timeDeltas[i];
  const at = (t - p.startTime) / 1e6;
  if (at < from || at > to) continue;
  const dt = p.timeDeltas[i + 1] ?? p.timeDeltas[i];
  const n = byId.get(p.samples[i]);
  const g = group(n);
  if (g === '(idle)') continue;
  total += dt;
  groupUs.set(g, (groupUs.get(g) ?? 0) + dt);
  const f = `${n.callFrame.functionName || '(anonymous)'} ${(n.callFrame.url || '').replace(/^.*\/(node_modules|dist)\//, '$1/')}:${n.callFrame.lineNumber + 1}`;
  selfUs.set(f, (selfUs.get(f) ?? 0) + dt);
}
const pct = (us) => `${((100 * us) / total).toFixed(1).padStart(5)} %`;
const ms = (us) => `${(us / 1000).toFixed(0).padStart(7)} ms`;
console.log(`busy (not idle): ${(total / 1e6).toFixed(2)} s in [${from}, ${to === Infinity ? 'end' : to}] s`);
console.log('\nby where the code lives');
for (const [g, us] of [...groupUs].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${ms(us)} ${pct(us)}  ${g}`);
console.log('\nby function (self time)');
for (const [f, us] of [...selfUs].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${ms(us)} ${pct(us)}  ${f}`);
